"""max / min return the value of the earliest row among those tied at the
extreme, as Spark's greatest / least fold over a frame (-0.0 == 0.0, NaN
equal to NaN and above every number; docs/DESIGN.md section 5.3), checked bit
for bit (np.signbit; any NaN equal) through the public API: rolling with
every algorithm, time windows, keyed, rolling_many, Stream.

The oracle is a plain left-to-right fold that replaces its value only with a
strictly better one."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import slidewise as sw

VALUES = st.one_of(st.sampled_from([-0.0, 0.0, -0.0, 0.0, math.nan]), st.integers(-2, 2).map(float), st.none())


def beats(agg, a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(b) and not math.isnan(a) if agg == "max" else math.isnan(a) and not math.isnan(b)
    return b > a if agg == "max" else b < a


def fold(agg, vals):
    acc = None
    for v in vals:
        if v is not None and (acc is None or beats(agg, acc, v)):
            acc = v
    return acc


def same_bits(got, want, what):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        ok = (g is None and w is None) or (
            g is not None and w is not None
            and ((math.isnan(g) and math.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w))))
        assert ok, f"{what}: row {i}: got {g!r}, want {w!r}"


def test_examples():
    assert np.signbit(sw.rolling(pa.array([-0.0, 0.0]), 2, "max").to_numpy()).tolist() == [True, True]
    assert np.signbit(sw.rolling(pa.array([0.0, -0.0]), 2, "max").to_numpy()).tolist() == [False, False]
    assert np.signbit(sw.rolling(pa.array([0.0, -0.0, 0.0]), 2, "min").to_numpy()).tolist() == [False, False, True]
    assert np.signbit(sw.rolling(pa.array([-0.0]), 1, "min").to_numpy()).tolist() == [True]


@settings(max_examples=150, deadline=None)
@given(xs=st.lists(VALUES, max_size=80), w=st.integers(1, 90), f32=st.booleans())
def test_rolling_every_algorithm(xs, w, f32):
    arr = pa.array(xs, type=pa.float32() if f32 else pa.float64())
    for agg in ("max", "min"):
        want = [fold(agg, xs[max(0, i - w + 1):i + 1]) for i in range(len(xs))]
        for algo in sw.ALGORITHMS:
            if algo == "soe":
                continue  # max / min are not invertible
            same_bits(sw.rolling(arr, w, agg, algorithm=algo).to_pylist(), want, f"{agg} {algo} w={w} f32={f32}")


@settings(max_examples=100, deadline=None)
@given(xs=st.lists(VALUES, max_size=60), data=st.data(), span=st.integers(1, 6))
def test_time_windows(xs, data, span):
    gaps = data.draw(st.lists(st.integers(0, 2), min_size=len(xs), max_size=len(xs)))
    ts = np.cumsum(gaps).astype("int64").tolist()
    arr = pa.array(xs, type=pa.float64())
    times = pa.array(ts, type=pa.timestamp("s"))
    for agg in ("max", "min"):
        want = [fold(agg, [xs[j] for j in range(i + 1) if ts[j] > ts[i] - span]) for i in range(len(xs))]
        got = sw.rolling(arr, f"{span}s", agg, timestamps=times).to_pylist()
        same_bits(got, want, f"time {agg} span={span}")


@settings(max_examples=100, deadline=None)
@given(xs=st.lists(VALUES, max_size=80), data=st.data(), w=st.integers(1, 12))
def test_keyed(xs, data, w):
    ks = data.draw(st.lists(st.integers(0, 2), min_size=len(xs), max_size=len(xs)))
    arr = pa.array(xs, type=pa.float64())
    for agg in ("max", "min"):
        want = []
        for i in range(len(xs)):
            mine = [j for j in range(i + 1) if ks[j] == ks[i]][-w:]
            want.append(fold(agg, [xs[j] for j in mine]))
        got = sw.rolling(arr, w, agg, keys=pa.array(ks, type=pa.int64())).to_pylist()
        same_bits(got, want, f"keyed {agg} w={w}")


@settings(max_examples=100, deadline=None)
@given(xs=st.lists(VALUES, max_size=120), ws=st.lists(st.integers(1, 40), min_size=1, max_size=4, unique=True))
def test_rolling_many(xs, ws):
    arr = pa.array(xs, type=pa.float64())
    for agg in ("max", "min"):
        t = sw.rolling_many(arr, ws, agg)
        for k, w in enumerate(ws):
            want = [fold(agg, xs[max(0, i - w + 1):i + 1]) for i in range(len(xs))]
            same_bits(t.column(k).to_pylist(), want, f"many {agg} w={w}")


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(VALUES, min_size=1, max_size=60), r=st.integers(1, 10), s=st.integers(1, 4),
       cuts=st.lists(st.integers(0, 60), max_size=4))
def test_stream(xs, r, s, cuts):
    arr = pa.array(xs, type=pa.float64())
    bounds = sorted({c for c in cuts if 0 < c < len(xs)})
    pieces = [arr.slice(a, b - a) for a, b in zip([0] + bounds, bounds + [len(xs)])]
    for agg in ("max", "min"):
        q = sw.Query(agg, r, s)
        for algo in sw.ALGORITHMS:
            if algo == "soe":
                continue
            st_ = sw.Stream([q], algorithm=algo)
            rows = []
            for p in pieces:
                rows += st_.push({"v": p})[q.name].to_pylist()
            rows += st_.flush()[q.name].to_pylist()
            got = [x["value"] for x in rows]
            want = [fold(agg, xs[max(0, x["window_start"]):x["window_end"]]) for x in rows]
            same_bits(got, want, f"stream {agg} {algo} r={r} s={s}")


@pytest.mark.parametrize("agg", ["max", "min"])
def test_long_columns_every_kernel(agg):
    """Past the kernels' chunk sizes (4096-row NaN chunks, the two-level
    kernel from 2^17 rows, rolling_many's threads): mostly zeros of both signs."""
    rng = np.random.default_rng(15)
    n = 400_000
    x = rng.choice(np.array([-0.0, 0.0, 1.0, -1.0]), p=[0.45, 0.45, 0.05, 0.05], size=n)
    x[rng.integers(0, n, 5)] = np.nan
    for w in (3, 1000, 1 << 17):
        got = sw.rolling(pa.array(x), w, agg).to_numpy(zero_copy_only=False)
        many = sw.rolling_many(pa.array(x), [w], agg).column(0).to_numpy(zero_copy_only=False)
        want = deque(x, w, agg)
        for g in (got, many):
            nan = np.isnan(want)
            assert (np.isnan(g) == nan).all()
            assert (g[~nan] == want[~nan]).all() and (np.signbit(g[~nan]) == np.signbit(want[~nan])).all(), w


def deque(x, w, agg):
    """Monotonic deque, popping the back only for a strictly better value, so
    the earliest tied stays in front (an O(n) oracle for long columns)."""
    from collections import deque as dq
    xs = x.tolist()
    q, out = dq(), np.empty(len(xs))
    for i, v in enumerate(xs):
        while q and beats(agg, xs[q[-1]], v):
            q.pop()
        q.append(i)
        if q[0] + w <= i:
            q.popleft()
        out[i] = xs[q[0]]
    return out


@pytest.mark.parametrize("agg", ["max", "min", "first", "last", "first_ignore_nulls", "last_ignore_nulls"])
@settings(max_examples=150, deadline=None)
@example(ops=[("insert", -0.0), ("insert", -0.0), ("evict", None), ("insert", 1.0), ("insert", 0.0), ("query_last", 1)])
@given(ops=st.lists(st.one_of(VALUES.map(lambda v: ("insert", v)), st.just(("evict", None)),
                             st.integers(0, 6).map(lambda k: ("query_last", k))), max_size=60))
def test_raw_aggregators_keep_the_sign_of_zero(agg, ops):
    """The FIFO structures of slidewise.aggregators, through any mix of
    insert, evict, query and query_last (which may reorganise them), give
    the sign of a zero bit for bit: max / min the earliest tied row's,
    first / last that row's. (SlideSide's front once took -0.0 == 0.0 for
    an unchanged last and kept the older zero.)"""
    from slidewise import aggregators as A

    def want(vals):
        if agg in ("max", "min"):
            return fold(agg, vals)
        if agg in ("first", "last"):
            return (vals[0] if agg == "first" else vals[-1]) if vals else None
        live = [v for v in vals if v is not None]
        return (live[0] if agg.startswith("first") else live[-1]) if live else None

    for cls in (A.SlideSide, A.TwoStacks, A.DABA, A.FlatFAT, A.BInt, A.FlatFIT, A.Recalc):
        a, window = cls(agg, "float64"), []
        for op, v in ops:
            if op == "insert":
                a.insert(v)
                window.append(v)
            elif op == "evict" and window:
                a.evict()
                window.pop(0)
            elif op == "query_last":
                same_bits([a.query_last(v)], [want(window[max(0, len(window) - v):])], f"{cls.__name__} last({v})")
            same_bits([a.query()], [want(window)], f"{agg} {cls.__name__} after {op}")
