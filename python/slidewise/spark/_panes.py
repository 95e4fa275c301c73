"""Panes on Spark: ``aggregate``'s time windows as partials of panes.

Li et al., "No pane, no gain" (SIGMOD Record 2005), §3: a window of
``range`` sliding by ``slide`` is a run of ``range / g`` panes of ``g =
gcd(range, slide)``, and a decomposable aggregate of a window is the
combination of its panes' partials. Spark's ``groupBy(k, F.window(t, range,
slide))`` instead copies every row into each of its ``range / slide``
windows (Expand) and aggregates the copies.

Here Spark's own aggregation reduces the rows to one partial per (key,
pane) (``groupBy(key, pane).agg(...)``, built by
:func:`slidewise.spark._aggregate._pane_partials`: partial aggregation in
each input partition, no copy of a row, no Python pass over the rows), the
partials are hash-partitioned by key (unkeyed: all to one partition: a
pane per ``g`` of event time, not a row), and :func:`_windows_fn` combines
each key's runs of panes into windows, every query's value in its own
column, vectorised over the partition (numpy), with no loop per key or per
window in Python.

Partials (one row per key and pane): ``__pane`` (event time // g),
``__rows`` (rows with a time: the window exists, as in Spark, even when
every value is null), ``__n`` (non-null values), and as the queries need
them ``__sum`` (bigint for an integer sum, else double; 0 without a value),
``__max`` / ``__min`` (Spark's, NaN its largest value) with ``__nan`` (the
max, or the min, is NaN) and ``__m2`` (the sum of squared deviations from
the pane's mean, ``var_pop * n``: Chan et al.'s merge gives the window's).

Values follow Spark's functions: nulls skipped; ``max`` is NaN when a NaN
is in the window, ``min`` only when every value is; ``sum`` of an integer
column is bigint (an overflow is an error, as under Spark's ANSI mode, the
default), of a float column double; ``mean``, ``var``, ``std`` double;
``var`` / ``std`` (sample) null below two values, ``var_pop`` /
``std_pop`` null without a value. Float sums add in IEEE arithmetic, as
Spark's do (not the in-process engine's exact sum: within rounding of
Spark's answer, in another order).

Aggregations outside these (first / last, whose value depends on row
order within a pane), sessions, count windows, ``min_periods`` and
timestamps without a time zone take the sorted path of
:mod:`slidewise.spark._aggregate`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ._kernels import _canon_key, _key_ids

# Aggregations a pane's partial can carry, and the partials each needs.
_NEEDS = {"sum": ("sum",), "count": (), "mean": ("sum",), "max": ("max",), "min": ("min",),
          "var": ("sum", "m2"), "std": ("sum", "m2"), "var_pop": ("sum", "m2"), "std_pop": ("sum", "m2")}


def panes_apply(queries: Sequence[Any]) -> bool:
    """Whether the queries (one window shape, time windows) run as panes:
    decomposable aggregations, no ``min_periods``, panes of whole
    microseconds (Spark's timestamps)."""
    return all(q.kind == "time" and q.agg in _NEEDS and q.min_periods is None and pane_ns(q) % 1000 == 0
               for q in queries)


def pane_ns(q: Any) -> int:
    return math.gcd(int(q.range), int(q.slide))


def _needs(aggs: Sequence[str]) -> List[str]:
    return sorted({p for a in aggs for p in _NEEDS[a]})


def partial_fields(keys: Sequence[Tuple[str, pa.DataType]], vtype: pa.DataType,
                   aggs: Sequence[str]) -> List[pa.Field]:
    """The partials' Arrow schema (see the module docstring)."""
    fields = [pa.field(k, t) for k, t in keys]
    fields += [pa.field("__pane", pa.int64()), pa.field("__rows", pa.int64()), pa.field("__n", pa.int64())]
    integer = pa.types.is_integer(vtype)
    for p in _needs(aggs):
        if p == "sum":
            fields.append(pa.field("__sum", pa.int64() if integer and "sum" in aggs else pa.float64()))
        elif p == "m2":
            fields.append(pa.field("__m2", pa.float64()))
        else:
            fields.append(pa.field(f"__{p}", vtype))
    if not integer and ("max" in aggs or "min" in aggs):
        fields.append(pa.field("__nan", pa.bool_()))
    return fields


def _filled(a: pa.Array) -> Tuple[np.ndarray, np.ndarray]:
    """(valid mask, values with nulls as 0) of a column, in its own dtype
    (numpy would give an integer column with nulls as float64)."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if not a.null_count:
        return np.ones(len(a), dtype=bool), a.to_numpy(zero_copy_only=False)
    valid = a.is_valid().to_numpy(zero_copy_only=False)
    return valid, a.fill_null(pa.scalar(0, a.type)).to_numpy(zero_copy_only=False)


# bigint's limit less the float64 sum's worst rounding: a window's sum of
# pane sums at or past it is an overflow (int64 addition would wrap
# silently; the float64 sum's relative error, below 2^-20 for fewer than
# 2^32 panes, keeps it under the bound while the exact sum fits)
_INT_BOUND = 2.0 ** 63 * (1 - 2.0 ** -20)


def _overflow() -> ArithmeticError:
    return ArithmeticError("slidewise.spark.aggregate: an integer sum overflows bigint ([ARITHMETIC_OVERFLOW], as in "
                           "Spark's ANSI mode); cast the value column to double first")


def _window_rows(kid: np.ndarray, pane: np.ndarray, wkey: np.ndarray, wfirst: np.ndarray,
                 R: int) -> Tuple[np.ndarray, np.ndarray]:
    """Each window's rows [lo, hi) among partials sorted by (key, pane):
    those of its key with pane in [wfirst, wfirst + R). One search over
    (key, pane) packed in an int64 when it fits, else per key."""
    base = int(pane.min())
    span = int(pane.max()) - base + R + 1
    if (int(kid[-1]) + 1) * span < 2 ** 62:
        comb = kid * span + (pane - base)
        return (np.searchsorted(comb, wkey * span + (wfirst - base), "left"),
                np.searchsorted(comb, wkey * span + (wfirst + R - base), "left"))
    lo, hi = np.empty_like(wfirst), np.empty_like(wfirst)
    kstart = np.searchsorted(kid, np.arange(int(kid[-1]) + 2), "left")
    wstart = np.searchsorted(wkey, np.arange(int(kid[-1]) + 2), "left")
    for k in range(int(kid[-1]) + 1):
        a, b, wa, wb = kstart[k], kstart[k + 1], wstart[k], wstart[k + 1]
        lo[wa:wb] = a + np.searchsorted(pane[a:b], wfirst[wa:wb], "left")
        hi[wa:wb] = a + np.searchsorted(pane[a:b], wfirst[wa:wb] + R, "left")
    return lo, hi


def _windows_fn(keys: List[str], queries: List[Tuple[str, str]], range_ns: int, slide_ns: int, g_ns: int,
                vtype: pa.DataType, ttype: pa.DataType, schema: pa.Schema,
                partials: pa.Schema) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow over the partials (one row per key and pane),
    hash-partitioned by key: every window holding a row, one column per
    query (name, agg)."""
    aggs = [a for _, a in queries]
    needs = _needs(aggs)
    nkeys = len(keys)
    floats = pa.types.is_floating(vtype)
    int_sum = pa.types.is_integer(vtype) and "sum" in aggs
    R, S = range_ns // g_ns, slide_ns // g_ns  # panes per window, per slide
    unit = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}[ttype.unit]

    def fn(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = list(it)
        if not batches:
            return
        t = pa.Table.from_batches(batches).cast(partials)
        if not t.num_rows:
            return
        # one row per (key, pane) (Spark's groupBy): sorted by key, then pane
        kid = (_key_ids([_canon_key(t.column(i)) for i in range(nkeys)]) if nkeys
               else np.zeros(t.num_rows, dtype=np.int64))
        order = np.lexsort((t.column("__pane").to_numpy(), kid))
        t = t.take(pa.array(order))
        kid = kid[order]  # ascending: each key's panes are one run
        pane = t.column("__pane").to_numpy()
        # Window j starts at pane j*S and holds panes [j*S, j*S + R): pane p
        # is in windows ceil((p - R + 1) / S) .. floor(p / S).
        lo = -((R - 1 - pane) // S)
        hi = pane // S
        # windows of each key with a row: the union of its panes' ranges,
        # walked in pane order (each pane's range starts after the last one's)
        newkey = np.empty(len(pane), dtype=bool)
        newkey[0] = True
        newkey[1:] = kid[1:] != kid[:-1]
        prev_hi = np.empty_like(hi)
        prev_hi[0] = lo[0] - 1
        prev_hi[1:] = hi[:-1]
        first = np.where(newkey, lo, np.maximum(lo, prev_hi + 1))
        count = np.maximum(hi - first + 1, 0)
        total = int(count.sum())
        owner = np.repeat(np.arange(len(pane)), count)
        offs = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
        win = first[owner] + offs  # window index j, per window row
        wkey = kid[owner]
        # each window's panes: the rows of its key with pane in [j*S, j*S + R)
        wlo, whi = _window_rows(kid, pane, wkey, win * S, R)
        idx = np.empty(2 * total, dtype=np.int64)
        idx[0::2], idx[1::2] = wlo, whi
        n_all = len(pane)

        def ranged(x: np.ndarray, red: Any) -> np.ndarray:
            """red over each window's rows [wlo, whi) (never empty)."""
            if not total:
                return x[:0]
            xp = np.append(x, x[:1])  # reduceat needs each index < len
            out: np.ndarray = red.reduceat(xp, np.minimum(idx, n_all))[0::2]
            return out

        n = ranged(t.column("__n").to_numpy(), np.add)
        cols: Dict[str, Any] = {}
        sums = ranged(t.column("__sum").to_numpy(), np.add) if "sum" in needs else np.zeros(total)
        if int_sum and total and np.abs(ranged(t.column("__sum").to_numpy().astype(np.float64),
                                                np.add)).max() >= _INT_BOUND:
            raise _overflow()
        if "m2" in needs:
            ps = t.column("__sum").to_numpy().astype(np.float64)
            pn = t.column("__n").to_numpy()
            with np.errstate(invalid="ignore", divide="ignore"):
                wmean = sums.astype(np.float64) / np.where(n > 0, n, 1)
                pmean = ps / np.where(pn > 0, pn, 1)
            # per (window, pane) pair: expand the windows' ranges
            lens = whi - wlo
            pair = np.repeat(np.arange(total), lens)
            prow = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(wlo, lens)
            with np.errstate(invalid="ignore"):
                d = np.where(pn[prow] > 0, pmean[prow] - wmean[pair], 0.0)
                part = np.where(pn[prow] > 0, t.column("__m2").to_numpy()[prow], 0.0) + pn[prow] * d * d
            m2 = np.add.reduceat(part, np.cumsum(lens) - lens) if total else part[:0]
        nan = (ranged(t.column("__nan").to_numpy(zero_copy_only=False).astype(np.int64), np.add) > 0
               if "__nan" in t.column_names else np.zeros(total, dtype=bool))
        for p in ("max", "min"):
            if p in needs:
                valid, v = _filled(t.column(f"__{p}").combine_chunks())
                if floats:
                    x = np.where(valid, v, -np.inf if p == "max" else np.inf).astype(v.dtype)
                    red = np.fmax if p == "max" else np.fmin
                else:
                    info = np.iinfo(v.dtype)
                    x = np.where(valid, v, info.min if p == "max" else info.max).astype(v.dtype)
                    red = np.maximum if p == "max" else np.minimum
                r = ranged(x, red)
                has = ranged(valid.astype(np.int64), np.add) > 0
                if floats:
                    # Spark orders NaN above every number
                    r = np.where(nan, np.nan, r) if p == "max" else np.where(~has & nan, np.nan, r)
                    has = has | nan
                cols[p] = pa.array(r.astype(v.dtype), mask=~has, type=vtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            for name, agg in queries:
                if agg == "count":
                    col = pa.array(n, pa.int64())
                elif agg == "sum":
                    col = pa.array(sums, mask=n == 0, type=pa.int64() if int_sum else pa.float64())
                elif agg == "mean":
                    col = pa.array(sums / np.where(n > 0, n, 1), mask=n == 0, type=pa.float64())
                elif agg in ("max", "min"):
                    col = cols[agg]
                else:
                    pop = agg.endswith("_pop")
                    var = m2 / np.where(n > (0 if pop else 1), n - (0 if pop else 1), 1)
                    if agg.startswith("std"):
                        var = np.sqrt(var)
                    col = pa.array(var, mask=n <= (0 if pop else 1), type=pa.float64())
                cols[name] = col
        start = (win * slide_ns) // unit
        arrays = [t.column(i).combine_chunks().take(pa.array(owner)) for i in range(nkeys)]
        arrays += [pa.array(start, pa.int64()).cast(ttype), pa.array(start + range_ns // unit, pa.int64()).cast(ttype)]
        arrays += [cols[name] for name, _ in queries]
        yield from pa.Table.from_arrays(arrays, schema=schema).to_batches(max_chunksize=1 << 16)
    return fn
