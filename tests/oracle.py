"""Naive Python oracles: the definition of every aggregate, written as plainly
as possible, so that the Rust results can be checked value by value; and
``split``, which cuts a stream into the batches the tests push."""

from __future__ import annotations

import math
from typing import List, Optional, Sequence

import numpy as np
import pyarrow as pa

# Total order of DESIGN.md: NaN above every number, all NaNs equal.
def _key(x: float):
    return (1, 0.0) if isinstance(x, float) and math.isnan(x) else (0, x)


def _fsum(xs):
    """Exact float sum; NaN/inf follow IEEE (math.fsum refuses inf - inf)."""
    if all(math.isfinite(x) for x in xs):
        return math.fsum(xs)
    return float(sum(xs))


def agg_values(agg: str, xs: Sequence, pos: Sequence[int]):
    """Aggregate the non-null values ``xs`` (oldest first), whose row
    positions (or argument values) are ``pos``."""
    n = len(xs)
    if agg == "count":
        return n
    if agg == "collect":
        return list(xs)
    if n == 0:
        return None
    if agg == "sum":
        return _fsum(xs) if any(isinstance(x, float) for x in xs) else sum(xs)
    if agg == "mean":
        return _fsum(xs) / n
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
        return float(hi) - float(lo) if isinstance(hi, float) or isinstance(lo, float) else hi - lo
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
    if agg == "first":
        return xs[0]
    if agg == "last":
        return xs[-1]
    raise AssertionError(agg)


def rolling(values: Sequence, window: int, agg: str, min_periods: Optional[int] = None) -> List:
    out = []
    for i in range(len(values)):
        lo = max(0, i - window + 1)
        pos = [j for j in range(lo, i + 1) if values[j] is not None]
        xs = [values[j] for j in pos]
        if min_periods is not None and len(xs) < min_periods:
            out.append(None)
        else:
            out.append(agg_values(agg, xs, pos))
    return out


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
        pos = [j for j in range(start, end) if values[j] is not None]
        xs = [values[j] for j in pos]
        p = [args[j] for j in pos] if args is not None else pos
        v = None if (min_periods and len(xs) < min_periods) else agg_values(agg, xs, p)
        out.append((start, end, v))
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
