"""sw.Stream(partial=...): Panes, Pairs and Cutty slicing (FlatFIT §2.1)
give the same windows as each other and as the naive oracle, for several
queries sharing one plan, any batch cuts, nulls, NaN, flush, and pickling
mid-stream (the slicing travels with the state). Plus sw.rolling_many
against sw.rolling per window, bit for bit."""

import math
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from conftest import valid_algos
from oracle import count_windows, same, split
from test_gil import assert_threads_progress_during

PARTIALS = ["pairs", "panes", "cutty"]
AGGS = ["sum", "max", "min", "count", "mean", "argmax", "first", "last", "first_ignore_nulls", "collect"]


def run(stream, batches, pickle_after=None):
    out = {q.name: [] for q in stream.queries}
    results = []
    for i, b in enumerate(batches):
        results.append(stream.push(b))
        if pickle_after == i:
            stream = pickle.loads(pickle.dumps(stream))
    results.append(stream.flush())
    for r in results:
        for name, t in r.items():
            out[name].extend(zip(*(t.column(c).to_pylist() for c in t.column_names)))
    return out


values = st.lists(
    st.one_of(st.integers(-50, 50).map(float), st.just(float("nan")), st.none()), min_size=0, max_size=300
)


@settings(max_examples=60, deadline=None)
@given(
    xs=values,
    qs=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 10)), min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 300), max_size=4),
    agg=st.sampled_from(AGGS),
    mp=st.integers(0, 2),
    pickle_after=st.one_of(st.none(), st.integers(0, 3)),
    data=st.data(),
)
def test_every_partial_equals_oracle_and_pairs(xs, qs, cuts, agg, mp, pickle_after, data):
    algo = data.draw(st.sampled_from(valid_algos(agg)))
    mp = min(mp, min(r for r, _ in qs)) or None
    queries = [sw.Query(agg, r, s, name=f"q{i}", min_periods=mp) for i, (r, s) in enumerate(qs)]
    arr = pa.array(xs, pa.float64())
    got = {p: run(sw.Stream(queries, algorithm=algo, partial=p), split(arr, cuts), pickle_after) for p in PARTIALS}
    for i, (r, s) in enumerate(qs):
        want = count_windows(xs, r, s, agg, min_periods=mp)
        for p in PARTIALS:
            g = got[p][f"q{i}"]
            assert len(g) == len(want), (p, i)
            for a, b in zip(g, want):
                assert a[:2] == b[:2] and same(a[2], b[2]), (p, agg, r, s, a, b)
            # the slicings agree exactly (small integers: sums are exact)
            for a, b in zip(g, got["pairs"][f"q{i}"]):
                assert a[:2] == b[:2]
                # exact, with NaN equal to NaN (also inside collect's lists)
                assert _nan_key(a[2]) == _nan_key(b[2]), (p, agg, r, s, a, b)


def test_partial_is_validated_and_kept():
    q = [sw.Query("sum", 5, 3)]
    with pytest.raises(ValueError, match="pairs, panes, cutty"):
        sw.Stream(q, partial="slices")
    s = sw.Stream(q, partial="cutty")
    assert "cutty" in repr(s)
    s.push({"v": np.arange(10.0)})
    s2 = pickle.loads(pickle.dumps(s))
    assert s2._partial == "cutty"
    assert s2.push({"v": np.arange(10.0)})["sum_5_3"].to_pydict() == s.push({"v": np.arange(10.0)})["sum_5_3"].to_pydict()


def _bits(a: pa.Array):
    np_a = a.to_numpy(zero_copy_only=False)
    valid = a.is_valid().to_numpy(zero_copy_only=False)
    if np_a.dtype.kind == "f":
        # bit for bit (the sign of a zero too), but one NaN for every NaN
        # payload: docs/DESIGN.md's order holds all NaNs equal, and which
        # payload a kernel passes through is not part of the result
        np_a = np.where(np.isnan(np_a), np.array(np.nan, np_a.dtype), np_a)
        np_a = np_a.view(np.uint64 if np_a.dtype.itemsize == 8 else np.uint32)
    return [int(v) if ok else None for v, ok in zip(np_a, valid)]


@settings(max_examples=40, deadline=None)
@given(
    xs=st.lists(st.one_of(st.floats(allow_nan=True, width=64), st.just(-0.0), st.none()), max_size=400),
    ws=st.lists(st.integers(1, 600), min_size=1, max_size=6, unique=True),
    agg=st.sampled_from(["max", "min", "sum", "mean"]),
    dtype=st.sampled_from(["float64", "float32", "int64"]),
    mp=st.one_of(st.none(), st.integers(0, 3)),
)
def test_rolling_many_equals_rolling(xs, ws, agg, dtype, mp):
    if dtype == "int64":
        xs = [None if x is None or not math.isfinite(x) else int(max(-1e12, min(1e12, x))) for x in xs]
    arr = pa.array(xs, pa.float64() if dtype != "int64" else pa.int64())
    if dtype == "float32":
        arr = arr.cast(pa.float32(), safe=False)
    mp = None if mp is None else min(mp, min(ws))
    t = sw.rolling_many(arr, ws, agg, min_periods=mp)
    assert t.column_names == [f"{agg}_{w}" for w in ws]
    for w in ws:
        one = sw.rolling(arr, w, agg, min_periods=mp)
        assert t.column(f"{agg}_{w}").type == one.type
        assert _bits(t.column(f"{agg}_{w}").combine_chunks()) == _bits(one), (agg, w)


def test_rolling_many_releases_the_gil():
    x = pa.array(np.random.default_rng(0).normal(0, 1, 2_000_000))
    assert_threads_progress_during(lambda: sw.rolling_many(x, [3, 100, 5000, 40000], "max"))


def test_rolling_many_errors():
    with pytest.raises(ValueError, match="distinct"):
        sw.rolling_many([1.0, 2.0], [2, 2], "max")
    with pytest.raises(ValueError, match="min_periods"):
        sw.rolling_many([1.0, 2.0], [2, 5], "max", min_periods=3)
    with pytest.raises(TypeError):
        sw.rolling_many(pa.array(["a"]), [2], "max")
    # a window longer than the data is the whole prefix; min_periods beyond
    # the data gives nulls
    t = sw.rolling_many([1.0, 3.0, 2.0], [5, 10], "max", min_periods=4)
    assert t.column("max_5").to_pylist() == [None, None, None]
    assert t.column("max_10").to_pylist() == [None, None, None]
    t = sw.rolling_many([1.0, 3.0, 2.0], [2, 10], "max")
    assert t.column("max_2").to_pylist() == [1.0, 3.0, 3.0]
    assert t.column("max_10").to_pylist() == [1.0, 3.0, 3.0]
    t = sw.rolling_many([1.0, 3.0, 2.0], [5, 10], "sum", min_periods=4)
    assert t.column("sum_5").to_pylist() == [None, None, None]


def _nan_key(v):
    """A value with every NaN replaced by a marker, so that == is exact
    equality with NaN equal to NaN, also inside lists."""
    if isinstance(v, list):
        return [_nan_key(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v
