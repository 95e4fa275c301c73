"""first / last: Spark's rule everywhere in-process (the value of the
window's first / last row, null when that value is null; docs/DESIGN.md,
"Nulls and NaN"), and ``ignore_nulls=True`` for Spark's ``ignorenulls=True``
(the first / last non-null value). The Spark adapter's equality with
``F.first`` / ``F.last`` is in test_spark_edges.py."""

import math
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from oracle import agg_window, assert_same_list

# Nulls at the start, the end, in runs and next to NaN: frames that start
# or end on a null, and an all-null frame.
VALUES = [None, 1.0, None, None, math.nan, 2.0, None, -0.0, 3.0, None, None, None, 4.0, None]


@pytest.mark.parametrize("agg", ["first", "last"])
@pytest.mark.parametrize("ignore_nulls", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rolling_first_last_follow_spark(agg, ignore_nulls, dtype):
    arr = pa.array(VALUES, pa.float64()).cast(dtype)
    name = agg + "_ignore_nulls" if ignore_nulls else agg
    for w in [1, 2, 3, 5, 100]:
        got = sw.rolling(arr, w, agg, ignore_nulls=ignore_nulls)
        assert got.type == arr.type
        want = [agg_window(name, VALUES[max(0, i - w + 1): i + 1], list(range(max(0, i - w + 1), i + 1)))
                for i in range(len(VALUES))]
        assert_same_list(got.to_pylist(), want, what=f"{name} w={w}")
        # the same through every FIFO algorithm and the keyed path
        for algo in ["two_stacks", "daba", "flatfat", "recalc"]:
            assert_same_list(sw.rolling(arr, w, agg, ignore_nulls=ignore_nulls, algorithm=algo).to_pylist(), want,
                             what=f"{name} w={w} {algo}")
        keyed = sw.rolling(arr, w, agg, keys=[0] * len(VALUES), ignore_nulls=ignore_nulls)
        assert_same_list(keyed.to_pylist(), want, what=f"{name} w={w} keyed")
    # the rule shows: frames ending on a null differ between the two
    last3 = sw.rolling(arr, 3, "last", ignore_nulls=ignore_nulls).to_pylist()
    assert (last3[2] is None) != ignore_nulls


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 700), p=st.sampled_from([0.0, 0.01, 0.5, 1.0]), run=st.integers(0, 300),
       off=st.integers(0, 70), w=st.sampled_from([1, 2, 7, 64, 65, 200, 1000]), seed=st.integers(0, 2**32 - 1))
def test_first_last_with_nulls_equal_the_gather(n, p, run, off, w, seed):
    """The null-aware paths (issue 36: the values and the validity bits of
    full windows copied as ranges, the ignore_nulls forms from the next /
    last valid row a word at a time) on columns long enough for whole
    words, with runs of nulls longer than the window, on an array sliced
    at a bit offset (its null buffer starts mid-byte), against each row's
    window gathered by hand (NaN stays a value)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n + off).round(2)
    x[rng.random(n + off) < 0.02] = np.nan
    miss = rng.random(n + off) < p
    at = int(rng.integers(0, max(n + off, 1)))
    miss[at:at + run] = True
    arr = pa.array(x, mask=miss).slice(off)
    vals = arr.to_pylist()
    for name in ["first", "last", "first_ignore_nulls", "last_ignore_nulls"]:
        for mp in [None, 1, min(3, w)]:
            got = sw.rolling(arr, w, name, min_periods=mp).to_pylist()
            want = [agg_window(name, vals[max(0, i - w + 1): i + 1], list(range(max(0, i - w + 1), i + 1)), mp)
                    for i in range(n)]
            assert_same_list(got, want, what=f"{name} w={w} min_periods={mp}")


def test_ignore_nulls_is_the_named_aggregation():
    arr = pa.array(VALUES)
    assert_same_list(sw.rolling(arr, 3, "first", ignore_nulls=True).to_pylist(),
                     sw.rolling(arr, 3, "first_ignore_nulls").to_pylist())
    t = sw.rolling_many(arr, [2, 4], "last", ignore_nulls=True)
    assert t.column_names == ["last_ignore_nulls_2", "last_ignore_nulls_4"]
    # every other aggregation skips nulls already: the flag changes nothing
    assert_same_list(sw.rolling(arr, 3, "max", ignore_nulls=True).to_pylist(), sw.rolling(arr, 3, "max").to_pylist())
    with pytest.raises(ValueError, match="ignore_nulls must be True or False"):
        sw.rolling(arr, 3, "first", ignore_nulls="yes")
    q = sw.Query("first", range=4, slide=2, ignore_nulls=True)
    assert q.agg == "first_ignore_nulls" and q.name == "first_ignore_nulls_4_2"


def test_stream_first_last_with_null_rows():
    # count windows of 3 rows, slide 3: [None, 1, None], [None, NaN, 2], [None, -0.0, 3], ...
    qs = [sw.Query(a, range=3, slide=3, ignore_nulls=i, name=f"{a}{int(i)}") for a in ("first", "last") for i in (False, True)]
    out = sw.Stream(qs).push({"v": pa.array(VALUES[:12])})
    vals = {q.name: out[q.name]["value"].to_pylist() for q in qs}
    assert vals["first0"] == [None, None, None, None]
    assert vals["last0"][0] is None and vals["last0"][1:3] == [2.0, 3.0] and vals["last0"][3] is None
    assert vals["first1"][0] == 1.0 and math.isnan(vals["first1"][1]) and vals["first1"][2:] == [-0.0, None]
    assert vals["last1"] == [1.0, 2.0, 3.0, None]


def test_a_stream_pickled_before_the_rule_keeps_its_meaning():
    # State version 7 pickles had first / last skipping nulls: they restore
    # as first_ignore_nulls, and continue with the same answers.
    s = sw.Stream([sw.Query("first", range=2, slide=2, ignore_nulls=True, name="f")])
    s.push({"v": pa.array([None, 5.0, None])})
    st = s._state()  # the dict a version-8 pickle held, unsealed
    st["version"] = 7
    st["queries"] = [sw.Query("first", range=2, slide=2, name="f")]  # how version 7 named it
    old = sw.Stream.__new__(sw.Stream)
    old.__setstate__(st)
    assert old.queries[0].agg == "first_ignore_nulls"
    # windows [2, 4) = (null, 7.0) and [4, 6) = (null, null): Spark's first
    # would give null, null
    nxt = {"v": pa.array([7.0, None, None, 1.0])}
    assert old.push(nxt)["f"]["value"].to_pylist() == s.push(nxt)["f"]["value"].to_pylist() == [7.0, None]
    assert pickle.loads(pickle.dumps(old)).queries[0].agg == "first_ignore_nulls"


def test_narrow_checkpoint_of_an_older_format_is_refused():
    # int32 / float32 streams compute in int64 / float64 since checkpoint
    # format 42; a format 41 checkpoint of one holds narrow partials.
    from slidewise import _slidewise

    spec = ([("max", "count", 4, 2, None, None)], "float32")
    s = _slidewise.Stream(*spec)
    s.push(pa.array([1.0, 2.0, 3.0], pa.float32()))
    state = bytes(s.save())
    assert state[0] == 42
    _slidewise.Stream.restore(state, *spec)  # today's format restores
    with pytest.raises(ValueError, match="older slidewise"):
        _slidewise.Stream.restore(bytes([41]) + state[1:], *spec)
    # for a float64 stream formats 41 and 42 are the same bytes
    s64 = _slidewise.Stream([("max", "count", 4, 2, None, None)], "float64")
    s64.push(pa.array([1.0, 2.0, 3.0]))
    b = bytes(s64.save())
    back = _slidewise.Stream.restore(bytes([41]) + b[1:], [("max", "count", 4, 2, None, None)], "float64")
    assert back.push(pa.array([9.0]))[0][3].to_pylist() == [9.0]


@pytest.mark.parametrize("p", [0.01, 0.1])
def test_ignore_nulls_on_a_long_column_split_over_threads(p):
    """2^20 rows and more split over threads (issue 36: the words' copies
    with their null rows filled), nulls at random, a run longer than the
    window and runs at the cuts, NaN kept as a value: against numpy's
    running last / next valid row."""
    rng = np.random.default_rng(7)
    n = (1 << 20) + 4_321
    x = rng.normal(size=n)
    x[rng.random(n) < 0.01] = np.nan
    valid = rng.random(n) >= p
    valid[500_000:503_000] = False
    for c in (n // 2, n // 3, 2 * n // 3, n // 4, 3 * n // 4):
        valid[c - 70:c + 5] = False
    arr = pa.array(np.where(valid, x, 7.5), mask=~valid)
    rows = np.arange(n)
    last = np.maximum.accumulate(np.where(valid, rows, -1))
    nxt = np.minimum.accumulate(np.where(valid, rows, n)[::-1])[::-1]
    for w in (1, 16, 1000, 70_000):
        start = np.maximum(rows - w + 1, 0)
        for name, pick, ok in (("last_ignore_nulls", last, last >= start),
                               ("first_ignore_nulls", nxt[start], nxt[start] <= rows)):
            got = sw.rolling(arr, w, name)
            got_ok = ~np.asarray(got.is_null())
            np.testing.assert_array_equal(got_ok, ok, err_msg=f"{name} p={p} w={w}")
            vals = got.to_numpy(zero_copy_only=False)[ok]
            np.testing.assert_array_equal(vals, x[pick[ok]], err_msg=f"{name} p={p} w={w}")
