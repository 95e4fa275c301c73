"""Naive Python oracles: the definition of every aggregate, written as plainly
as possible, so that the Rust results can be checked value by value;
``split``, which cuts a stream into the batches the tests push; and
``elements``, the column values the property tests draw."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import List, Optional, Sequence

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

# Total order of docs/DESIGN.md: NaN above every number, all NaNs equal.
def _key(x: float):
    return (1, 0.0) if isinstance(x, float) and math.isnan(x) else (0, x)


def wrap64(s: int) -> int:
    """An integer result as int64 arithmetic gives it: modulo 2**64, two's
    complement (numpy, Spark with ANSI off, slidewise's integer sums)."""
    return ((s + 2**63) % 2**64) - 2**63


def _fsum(xs):
    """The sum in the extended reals, rounded once: NaN with a NaN or both
    infinities, else the infinity, else the exact sum of the finite values,
    ±inf where it is beyond the float range (math.fsum raises there). So
    ``[1e308, 1e308, -inf]`` sums to -inf, where a left-to-right float sum
    (1e308 + 1e308 = inf first) gives NaN."""
    special = [x for x in xs if not math.isfinite(x)]
    if special:
        if any(math.isnan(x) for x in special) or len(set(special)) > 1:
            return math.nan
        return special[0]
    try:
        return math.fsum(xs)
    except OverflowError:
        exact = sum(Fraction(x) for x in xs)
        try:
            return float(exact)
        except OverflowError:
            return math.inf if exact > 0 else -math.inf


def agg_window(agg: str, vals: Sequence, pos: Sequence[int], min_periods: Optional[int] = None):
    """``agg`` over a window's rows: ``vals`` oldest first (None: a null
    row), ``pos`` their positions (or argument values). ``first`` / ``last``
    are Spark's: the first / last *row*'s value, null when that value is;
    every other aggregation (``first_ignore_nulls`` too) skips null rows.
    Null where fewer than ``min_periods`` values are non-null."""
    live = [(x, p) for x, p in zip(vals, pos) if x is not None]
    if min_periods and len(live) < min_periods:
        return None
    if agg in ("first", "last"):
        return (vals[0] if agg == "first" else vals[-1]) if len(vals) else None
    return agg_values(agg, [x for x, _ in live], [p for _, p in live])


def agg_values(agg: str, xs: Sequence, pos: Sequence[int]):
    """Aggregate the non-null values ``xs`` (oldest first), whose row
    positions (or argument values) are ``pos`` (``first`` / ``last``: of
    these non-null values; :func:`agg_window` for the rows with nulls)."""
    n = len(xs)
    if agg == "count":
        return n
    if agg == "collect":
        return list(xs)
    if n == 0:
        return None
    ints = all(isinstance(x, (int, np.integer)) for x in xs)
    if agg == "sum":
        return wrap64(sum(int(x) for x in xs)) if ints else _fsum(xs)
    if agg == "mean":
        # Integers: the exact mean, rounded once (Python's int / int): what
        # pandas and Spark give wherever their float sums are exact, and no
        # wrapping (Spark averages longs as doubles).
        return sum(int(x) for x in xs) / n if ints else _fsum(xs) / n
    if agg == "geomean":
        with np.errstate(all="ignore"):
            return float(np.exp(np.mean(np.log(np.asarray(xs, dtype=np.float64)))))
    if agg in ("max", "min", "maxcount", "mincount", "range", "argmax", "argmin"):
        keys = [_key(x) for x in xs]
        best = max(keys) if agg in ("max", "maxcount", "argmax") else min(keys)
        i = keys.index(best)  # ties: the oldest
        if agg in ("max", "min"):
            return xs[i]
        if agg in ("maxcount", "mincount"):
            return keys.count(best)
        if agg in ("argmax", "argmin"):
            return pos[i]
        hi, lo = xs[keys.index(max(keys))], xs[keys.index(min(keys))]
        return wrap64(int(hi) - int(lo)) if ints else float(hi) - float(lo)
    if agg in ("var", "std", "var_pop", "std_pop"):
        ddof = 0 if agg.endswith("_pop") else 1
        if n <= ddof:
            return None
        a = np.asarray(xs, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            return math.nan
        m = math.fsum(a) / n
        v = math.fsum((a - m) ** 2) / (n - ddof)
        return math.sqrt(v) if agg.startswith("std") else v
    if agg in ("first", "first_ignore_nulls"):
        return xs[0]
    if agg in ("last", "last_ignore_nulls"):
        return xs[-1]
    raise AssertionError(agg)


def _over(values: Sequence, rows, agg: str, min_periods: Optional[int]):
    """``agg`` over the ``values`` at ``rows``; null below ``min_periods``
    non-null ones."""
    rows = list(rows)
    return agg_window(agg, [values[j] for j in rows], rows, min_periods)


def rolling(values: Sequence, window: int, agg: str, min_periods: Optional[int] = None) -> List:
    return [_over(values, range(max(0, i - window + 1), i + 1), agg, min_periods) for i in range(len(values))]


def rolling_time(values: Sequence, ts: Sequence[int], span: int, agg: str, min_periods: Optional[int] = None) -> List:
    """Per-row time rolling as pandas ``rolling("5s")``: row ``i`` aggregates
    the rows ``j <= i`` with ``ts[j] > ts[i] - span`` (so rows after ``i``
    with the same time are not in ``i``'s window); argmax/argmin give row
    indices."""
    return [_over(values, [j for j in range(i + 1) if ts[j] > ts[i] - span], agg, min_periods)
            for i in range(len(values))]


def agg_rows(x: np.ndarray, valid: np.ndarray, lo: int, hi: int, agg: str):
    """``agg_values`` over rows ``[lo, hi)`` of a float column ``x`` whose
    non-null rows are ``valid``: the same definition, with numpy doing the
    order statistics so that windows of 10^5 rows take milliseconds
    (test_rolling checks it against ``agg_values``)."""
    if agg in ("first", "last"):
        return agg_window(agg, [float(x[j]) if valid[j] else None for j in range(lo, hi)], list(range(lo, hi)))
    pos = lo + np.flatnonzero(valid[lo:hi])
    v = x[pos]
    if len(v) and agg in ("sum", "mean", "var", "std") and np.isfinite(v).all():
        # agg_values' formulas, minus its per-element Python loops
        s = _fsum(v.tolist())
        if agg == "sum":
            return s
        if agg == "mean":
            return s / len(v)
        if len(v) < 2:
            return None
        var = math.fsum(((v - s / len(v)) ** 2).tolist()) / (len(v) - 1)
        return var if agg == "var" else math.sqrt(var)
    if agg not in ("max", "min", "range", "argmax", "argmin") or len(v) == 0:
        return agg_values(agg, v.tolist(), pos.tolist())
    nan = np.isnan(v)
    # NaN above every number; -0.0 == 0.0 under numpy's comparisons, and
    # argmax/argmin return the first of equal values (ties to the oldest).
    i_max = int(np.argmax(nan)) if nan.any() else int(np.argmax(v))
    if nan.all():
        i_min = 0
    else:
        num = np.flatnonzero(~nan)
        i_min = int(num[np.argmin(v[num])])
    if agg == "range":
        return float(v[i_max]) - float(v[i_min])
    i = i_max if agg in ("max", "argmax") else i_min
    return int(pos[i]) if agg.startswith("arg") else float(v[i])


def count_windows(values: Sequence, range_: int, slide: int, agg: str, min_periods=None, args=None, flush=True):
    """(start, end, value) of every window of a count-window query, in order;
    with ``flush``, the end-of-stream window of window.rs's docs."""
    n = len(values)
    ends = [(e, e) for e in range(slide, n + 1, slide)]
    if flush and n % slide and n - n % slide + slide - range_ < n:
        # the next slide edge's window, cut to the rows that arrived; none
        # when the tail lies in the gap of slide > range
        ends.append((n - n % slide + slide, n))
    out = []
    for edge, end in ends:
        start = max(0, edge - range_)
        rows = range(start, end)
        p = [args[j] for j in rows] if args is not None else list(rows)
        out.append((start, end, agg_window(agg, [values[j] for j in rows], p, min_periods)))
    return out


def same(a, b, rel=1e-9, abs_=1e-12) -> bool:
    """Floats within a relative tolerance (NaN equals NaN); lists elementwise;
    everything else exactly."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            same(x, y, rel, abs_) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return a == b


def assert_same_list(got: Sequence, want: Sequence, rel=1e-9, abs_=1e-12, what=""):
    assert len(got) == len(want), f"{what}: length {len(got)} != {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert same(g, w, rel, abs_), f"{what}: row {i}: got {g!r}, want {w!r}"


def split(arr, cuts):
    """``arr`` as one-column ("v") record batches cut at ``cuts`` (ignored
    when out of range or repeated; empty batches where cuts meet the ends)."""
    cuts = sorted(set(c for c in cuts if 0 <= c <= len(arr)))
    edges = [0] + cuts + [len(arr)]
    return [pa.record_batch({"v": arr.slice(a, b - a)}) for a, b in zip(edges, edges[1:])]


# -- what the property tests draw ---------------------------------------------

ARITH = {"sum", "mean", "geomean", "var", "std", "var_pop", "std_pop"}
FLOAT_EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, 2.0]
HUGE = [1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308]


def int_edges(dtype: str) -> List[int]:
    info = np.iinfo(dtype)
    return [0, 1, -1, 2, int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1]


@functools.lru_cache(maxsize=None)  # one strategy object per pair: building them is slow
def elements(agg: str, dtype: str):
    """Column values for ``agg`` over ``dtype``: nulls, small numbers, and
    the edge values (NaN, +-inf, -0.0; the integer type's limits, where
    int64 sums wrap)."""
    if dtype.startswith("int"):
        edges = int_edges(dtype)
        if agg in ("var", "std", "var_pop", "std_pop"):
            # Not limit +- 1: values a huge offset apart by 1 have a variance
            # ~1e-7 off (the mean's rounding enters M2; test_rolling's
            # test_var_of_a_large_offset_plus_small_noise_keeps_full_precision).
            edges = edges[:6]
        return st.one_of(st.none(), st.integers(-1000, 1000), st.sampled_from(edges))
    width = 32 if dtype == "float32" else 64
    if agg in ("sum", "mean") and dtype == "float64":
        # Magnitudes whose sums pass f64's range: a window beyond it is ±inf,
        # and the windows after it are their exact sums again. Every sum of
        # these is exact or overflows (all are multiples of 2^971), so the
        # 1e-9 comparison still holds beside small values.
        finite = st.one_of(st.floats(-100, 100, allow_nan=False, width=width), st.sampled_from(HUGE))
    elif agg in ARITH:
        # Modest magnitudes, so that the exact oracle and the compensated
        # (or Chan-merged) results agree to 1e-9: the float contract is
        # relative, and a variance that 1e300 has passed through is not.
        finite = st.floats(-100, 100, allow_nan=False, width=width)
    else:
        finite = st.floats(allow_nan=False, width=width)  # order statistics: any magnitude
    return st.one_of(st.none(), finite, st.sampled_from(FLOAT_EDGES))
