"""Which queries should share a plan: WeaveShare with F1 edge counting.

The F1 paper (Shein, Chrysanthis, Labrinidis, CIKM'15) counts the partial
aggregations ("edges") of queries that share one plan and lets WeaveShare
partition the queries to minimise its eq. 1, ``C = m·λ + Σ E_i·Ω_i``: ``m``
plans each see every input row (``λ`` rows per second), plan ``i`` closes
``E_i`` partials per second and each partial is used by ``Ω_i`` final
aggregations (the sum of its queries' ``range / slide``).

Units. Count-window queries have slides in rows, so ``λ`` is one row per
row and the plan does not depend on any rate (``rate`` must be left out or
1). Time-window queries have slides in time: give ``rate=`` in rows per
second. Plain ``(range, slide)`` tuples are the paper's abstract ACQs:
slides in seconds, ``rate`` in tuples per second (default 1).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _slidewise
from ._query import Query

METHODS = ("bitset", "f1", "f1_memo", "fast")

_NS_PER_S = 1_000_000_000

#: What count_edges / plan take: Query objects or abstract (range, slide)
#: pairs, one or a list of them, or a numpy (n, 2) integer array.
Queries = Union[Query, Tuple[int, int], Iterable[Union[Query, Tuple[int, int], List[int]]], np.ndarray[Any, Any]]


def _normalise(queries: Any) -> Tuple[List[str], List[int], List[int], List[int], List[Any], str]:
    """Names, ranges, slides, phases, compatibility keys, and the kind:
    'count' (Query rows), 'time' (Query ns) or 'abstract' (tuples)."""
    if isinstance(queries, (Query, tuple)):
        queries = [queries]
    if hasattr(queries, "shape") and hasattr(queries, "dtype"):  # numpy (n, 2) array of (range, slide)
        return _from_array(queries)
    try:
        queries = list(queries)
    except TypeError:
        raise TypeError(f"queries must be a list of slidewise.Query or (range, slide) tuples, "
                        f"got {type(queries).__name__}") from None
    if not queries:
        raise ValueError("need at least one query")
    names: List[str] = []
    ranges: List[int] = []
    slides: List[int] = []
    phases: List[int] = []
    keys: List[Any] = []
    kinds = set()
    for i, q in enumerate(queries):
        if isinstance(q, Query) and q.session is not None:
            raise ValueError(f"query {q.name!r}: session windows have no slide edges to share; "
                             "plans apply to count and time windows")
        if isinstance(q, Query):
            names.append(q.name)
            ranges.append(q.range)
            slides.append(q.slide)
            # Spark time windows end at range mod slide (plan.rs Slide::time).
            phases.append(q.range % q.slide if q.time else 0)
            keys.append((q.agg, q.arg))
            kinds.add("time" if q.time else "count")
        elif isinstance(q, (tuple, list)) and len(q) == 2:
            r, s = q
            for what, v in (("range", r), ("slide", s)):
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise ValueError(f"query {i}: {what} must be a positive int, got {v!r}")
            names.append(f"q{i}")
            ranges.append(r)
            slides.append(s)
            phases.append(0)
            keys.append(None)
            kinds.add("abstract")
        else:
            raise TypeError(f"query {i}: expected a slidewise.Query or a (range, slide) tuple, got {q!r}")
    if len(kinds) > 1:
        raise ValueError("cannot mix count-window, time-window and (range, slide) queries in one plan: "
                         "their slides are in different units")
    dup = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) != len(names) else []
    if dup:
        raise ValueError(f"query names must be unique; repeated: {dup}")
    for r, s in zip(ranges, slides):
        if r >= 1 << 64 or s >= 1 << 64:
            raise ValueError(f"range and slide must fit in 64 bits, got {r}, {s}")
    return names, ranges, slides, phases, keys, kinds.pop()


def _method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    return method


def count_edges(queries: Queries, method: str = "f1") -> int:
    """Partial aggregations ("edges") in one composite slide (the LCM of the
    slides, ``math.lcm(*slides)``) of a plan shared by ``queries``: every
    slide edge and every Pairs fragment edge, counted once. Exactly
    ``len(plan.edges)`` of the plan a :class:`Stream` runs for them.

    ``method``: ``"bitset"`` (the baseline: one bit per unit of the composite
    slide; refuses composites over 2**30), ``"f1"`` (the F1 paper's Formula 1
    with shifts and the Overlap Check), ``"f1_memo"`` (F1 with a GCD table),
    ``"fast"`` (a prime-factor split that stays fast with many slides). All
    give the same number; they differ in speed and in what they refuse.
    """
    _, ranges, slides, phases, _, _ = _normalise(queries)
    edges, _ = _slidewise.count_edges(ranges, slides, phases, _method(method))
    return edges


class Plan:
    """A WeaveShare plan: which queries share one shared plan.

    * ``groups``: lists of query names, one list per shared plan.
    * ``cost``: eq. 1 for this plan; ``no_share_cost``: eq. 1 with one plan
      per query (per second; per row for count windows).
    * ``details``: per group a dict with ``queries`` (names),
      ``composite_slide`` (LCM of the slides; None if beyond 128 bits),
      ``edges`` (partials per composite slide), ``edge_rate`` (partials per
      second, per row for count windows) and ``overlap_factor``.
    """

    def __init__(self, groups: List[List[str]], details: List[Dict[str, Any]], cost: float,
                 no_share_cost: float, rate: float, method: str, merges: int, evaluations: int) -> None:
        self.groups = groups
        self.details = details
        self.cost = cost
        self.no_share_cost = no_share_cost
        self.rate = rate
        self.method = method
        self.merges = merges
        self.evaluations = evaluations

    def group_ids(self, names: Sequence[str]) -> List[int]:
        """For each name, the index of its group (what a Stream runs)."""
        where = {n: g for g, names_ in enumerate(self.groups) for n in names_}
        missing = [n for n in names if n not in where]
        extra = set(where) - set(names)
        if missing or extra:
            raise ValueError(f"this plan is for other queries (missing {sorted(missing)}, extra {sorted(extra)})")
        return [where[n] for n in names]

    def __repr__(self) -> str:
        return (f"Plan({len(self.groups)} groups, cost={self.cost:.6g}, no_share_cost={self.no_share_cost:.6g}, "
                f"method={self.method!r})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and self.groups == other.groups


def plan(
    queries: Queries,
    rate: Optional[float] = None,
    *,
    method: str = "fast",
    omega: Optional[Sequence[float]] = None,
    single_tree_check: bool = True,
) -> Plan:
    """Partition ``queries`` into shared plans with WeaveShare (F1 paper §2):
    start with one plan per query, repeatedly merge the two plans whose merge
    lowers eq. 1 the most, stop when no merge lowers it; then use one plan
    per aggregation instead if that is cheaper still. Only queries with the
    same aggregation and ``arg`` column can share a plan.

    ``rate``: input rows per second for time-window queries (required);
    tuples per second for ``(range, slide)`` tuples (default 1); must be left
    out for count-window queries (their rate is one row per row).
    ``omega``: per-query overlap factors (default ``range / slide``).
    ``method``: the edge counter (see :func:`count_edges`).
    """
    names, ranges, slides, phases, keys, kind = _normalise(queries)
    if kind == "count":
        if rate not in (None, 1, 1.0):
            raise ValueError("count-window queries count slides in rows: their rate is one row per row; "
                             "leave rate out")
        lam, scale = 1.0, 1.0
    elif kind == "time":
        if rate is None:
            raise ValueError("time-window queries need rate= (input rows per second) to plan")
        lam, scale = _rate(rate), float(_NS_PER_S)
    else:
        lam, scale = (1.0 if rate is None else _rate(rate)), 1.0
    if omega is None:
        omegas = [r / s for r, s in zip(ranges, slides)]
    else:
        omegas = [float(w) for w in omega]
        if len(omegas) != len(names):
            raise ValueError(f"omega has {len(omegas)} entries for {len(names)} queries")
        bad = [w for w in omegas if not (math.isfinite(w) and w > 0)]
        if bad:
            raise ValueError(f"overlap factors must be finite and > 0, got {bad[0]!r}")
    ids: Dict[Any, int] = {}
    key_ids = [ids.setdefault(k, len(ids)) for k in keys]
    details, cost, no_share, merges, evals = _slidewise.plan(
        ranges, slides, phases, omegas, key_ids, lam, scale, _method(method), single_tree_check)
    groups, info = [], []
    for members, composite, edges, density, omega_g in details:
        g = [names[i] for i in members]
        groups.append(g)
        info.append({
            "queries": g,
            "composite_slide": composite,
            "edges": edges,
            "edge_rate": density * scale,
            "overlap_factor": omega_g,
        })
    return Plan(groups, info, cost, no_share, lam, method, merges, evals)


def _rate(rate: Any) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise TypeError(f"rate must be a number (rows per second), got {type(rate).__name__}")
    r = float(rate)
    if not (math.isfinite(r) and r >= 0):
        raise ValueError(f"rate must be a finite number >= 0, got {rate!r}")
    return r


def stream_groups(queries: List[Query], plan_arg: Union[str, Plan, None], rate: Optional[float]) -> Optional[List[int]]:
    """The group id per query a Stream runs for its ``plan=`` argument, or
    None for the default (one plan per aggregation and arg column)."""
    if plan_arg is None or plan_arg == "default":
        if rate is not None:
            raise ValueError("rate= is only used with plan='weaveshare'")
        return None
    if isinstance(plan_arg, Plan):
        ids = plan_arg.group_ids([q.name for q in queries])
    elif plan_arg == "none":
        ids = list(range(len(queries)))
    elif plan_arg == "weaveshare":
        p = plan(queries, rate)
        ids = p.group_ids([q.name for q in queries])
    else:
        raise ValueError(f"plan must be 'default', 'weaveshare', 'none' or a slidewise.Plan, got {plan_arg!r}")
    # A group must hold one aggregation (and arg column).
    seen: Dict[int, Any] = {}
    for q, g in zip(queries, ids):
        if seen.setdefault(g, (q.agg, q.arg)) != (q.agg, q.arg):
            raise ValueError(f"plan group {g} mixes aggregations {seen[g]} and {(q.agg, q.arg)}: "
                             "only queries with the same agg and arg can share a plan")
    return ids


def _from_array(a: Any) -> Tuple[List[str], List[int], List[int], List[int], List[Any], str]:
    """A numpy (n, 2) integer array of (range, slide) rows: abstract ACQs,
    converted without a per-query Python loop (a million queries plan in
    seconds)."""
    a = np.asarray(a)
    if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] == 0 or a.dtype.kind not in "iu":
        raise ValueError(f"an array of queries must be a non-empty (n, 2) integer array of (range, slide), "
                         f"got shape {a.shape} dtype {a.dtype}")
    if (a <= 0).any():
        raise ValueError("range and slide must be positive")
    n = a.shape[0]
    ranges = a[:, 0].astype(np.uint64).tolist()
    slides = a[:, 1].astype(np.uint64).tolist()
    return [f"q{i}" for i in range(n)], ranges, slides, [0] * n, [None] * n, "abstract"
