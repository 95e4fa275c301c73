"""Time windows: per-row time rolling against pandas rolling("5s"), hopping
windows against a brute-force Spark-style window(ts, range, slide) and
against Spark itself (a real local[2] session), batch splits, pickling,
and the errors for unsorted or null event times."""

import datetime
import math
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from conftest import valid_algos
from oracle import assert_same_list, elements, rolling_time as naive_rolling_time, same

DTYPES = ["float64", "float32", "int64", "int32"]


def _events(n, seed, gap_ms=(0, 3000)):
    rng = np.random.default_rng(seed)
    ts = np.datetime64("2026-11-25", "ms") + np.cumsum(rng.integers(gap_ms[0], gap_ms[1], n)).astype("timedelta64[ms]")
    v = rng.integers(-50, 50, n).astype(float)
    v[rng.random(n) < 0.1] = np.nan  # missing in pandas' eyes; passed to slidewise as nulls (a mask)
    return ts, v


def _nulls_for_nan(v):
    """pandas' missing values as Arrow nulls, with an explicit mask (the data
    itself has no NaN that slidewise should see)."""
    return pa.array(np.nan_to_num(v), mask=np.isnan(v))


@pytest.mark.parametrize("agg,pd_name", [("sum", "sum"), ("max", "max"), ("min", "min"), ("mean", "mean"),
                                         ("count", "count"), ("std", "std")])
@pytest.mark.parametrize("window,pd_window", [("5s", "5s"), ("1m", "1min"),
                                              (datetime.timedelta(seconds=17), pd.Timedelta(seconds=17))])
def test_time_rolling_equals_pandas(agg, pd_name, window, pd_window):
    ts, v = _events(3000, 1)
    vals = _nulls_for_nan(v)
    got = sw.rolling(vals, window, agg, timestamps=pa.array(ts)).to_numpy(zero_copy_only=False)
    s = pd.Series(v, index=pd.DatetimeIndex(ts))
    want = getattr(s.rolling(pd_window, min_periods=1), pd_name)()
    want = want.to_numpy()
    if agg == "count":
        want = np.nan_to_num(want)
    got = np.asarray([np.nan if x is None else x for x in got], dtype=float)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)


# -- per-row time rolling against the naive oracle ------------------------------

# The timestamps' type and the window given in its unit, all meaning `span`
# units: int64 (nanoseconds) with an int, timestamp[s] with "Ns",
# timestamp[ms] with a timedelta, timestamp[us] with a numpy timedelta64.
TIME_TYPES = {
    "int": (pa.int64(), lambda span: span),
    "s": (pa.timestamp("s"), lambda span: f"{span}s"),
    "ms": (pa.timestamp("ms"), lambda span: datetime.timedelta(milliseconds=span)),
    "us": (pa.timestamp("us"), lambda span: np.timedelta64(span, "us")),
}


# One test per (aggregation, dtype) pair, every valid algorithm on each
# example; the values keep NaN apart from null (a list's None is a null,
# its NaN a NaN), and gaps of 0 make ties in time.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
@settings(max_examples=10, deadline=None)
@given(data=st.data(), span=st.integers(1, 30), unit=st.sampled_from(sorted(TIME_TYPES)))
def test_time_rolling_matches_the_oracle(data, agg, dtype, span, unit):
    xs = data.draw(st.lists(elements(agg, dtype), max_size=40), label="xs")
    gaps = data.draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7, 40]), min_size=len(xs), max_size=len(xs)),
                     label="gaps")
    t0 = data.draw(st.integers(-100, 100), label="t0")  # times before the epoch too
    ts = [t0 + int(g) for g in np.cumsum(gaps, dtype=np.int64)]
    mp = data.draw(st.one_of(st.none(), st.integers(0, 6)), label="min_periods")
    arr = pa.array(xs, type=pa.from_numpy_dtype(np.dtype(dtype)))
    ttype, window = TIME_TYPES[unit]
    tcol = pa.array(ts, pa.int64()).cast(ttype)
    # The oracle sees exactly the values the column holds (float32 rounding).
    want = naive_rolling_time(arr.to_pylist(), ts, span, agg, mp)
    for algo in valid_algos(agg):
        got = sw.rolling(arr, window(span), agg, timestamps=tcol, min_periods=mp, algorithm=algo)
        assert len(got) == len(xs)
        assert_same_list(got.to_pylist(), want, rel=1e-6 if agg == "geomean" else 1e-9, abs_=1e-9,
                         what=f"{agg}/{dtype} span={span}{unit} mp={mp} {algo} ts={ts}")


@pytest.mark.parametrize("date_type", [pa.date32(), pa.date64()])
@pytest.mark.parametrize("agg", ["sum", "max", "count", "median"])
def test_an_int_window_over_dates_counts_days(date_type, agg):
    """An int window is in the timestamps' unit, and a date column's unit is
    a day (date32 stores days; date64 milliseconds of whole days): equal to
    pandas' rolling(f"{w}D") and to the same window as a span."""
    rng = np.random.default_rng(2)
    days = np.datetime64("2024-02-25") + np.cumsum(rng.integers(0, 4, 300)).astype("timedelta64[D]")
    v = rng.normal(size=300)
    dates = pa.array(days).cast(date_type)
    for w in (1, 3, 10):
        got = sw.rolling(v, w, agg, timestamps=dates)
        want = getattr(pd.Series(v, index=pd.DatetimeIndex(days)).rolling(f"{w}D"), agg)().to_numpy()
        np.testing.assert_allclose(got.to_numpy(zero_copy_only=False), want, rtol=1e-12)
        assert got.equals(sw.rolling(v, f"{w}d", agg, timestamps=dates))
        keyed = sw.rolling(v, w, agg, timestamps=dates, keys=np.zeros(300, dtype=np.int64))
        np.testing.assert_allclose(keyed.to_numpy(zero_copy_only=False), want, rtol=1e-12)


def test_time_rolling_keeps_nan_and_null_apart():
    nan = math.nan
    v = pa.array([1.0, nan, 0.0, 5.0, 0.0], mask=[False, False, True, False, True])  # rows 2 and 4 are null
    ts = pa.array([0, 1, 1, 3, 9], pa.timestamp("s"))
    got = {agg: sw.rolling(v, "2s", agg, timestamps=ts).to_pylist()
           for agg in ["max", "min", "count", "argmax", "sum", "first", "last"]}
    # windows (t - 2s, t]: {0}, {0,1}, {0,1,2}, {3}, {4}
    assert got["count"] == [1, 2, 2, 1, 0]
    assert got["max"][0] == 1.0 and math.isnan(got["max"][1]) and math.isnan(got["max"][2])
    assert got["max"][3:] == [5.0, None]
    assert got["min"] == [1.0, 1.0, 1.0, 5.0, None]  # NaN is above every number
    assert got["argmax"] == [0, 1, 1, 3, None]  # row indices
    assert got["sum"][0] == 1.0 and math.isnan(got["sum"][1]) and got["sum"][3:] == [5.0, None]
    assert got["first"] == [1.0, 1.0, 1.0, 5.0, None]
    # Spark's last (ignorenulls=False): the window's last row, null or not
    assert got["last"][0] == 1.0 and math.isnan(got["last"][1]) and got["last"][2:] == [None, 5.0, None]
    # ignore_nulls=True: the last non-null value
    last_nn = sw.rolling(v, "2s", "last", timestamps=ts, ignore_nulls=True).to_pylist()
    assert last_nn[0] == 1.0 and math.isnan(last_nn[1]) and math.isnan(last_nn[2]) and last_nn[3:] == [5.0, None]


@settings(max_examples=30, deadline=None)
@given(data=st.data(), agg=st.sampled_from(sw.MONOID_AGGS))
def test_unsorted_timestamps_are_refused_naming_the_row(data, agg):
    ts = data.draw(st.lists(st.integers(-50, 50), min_size=2, max_size=20).filter(
        lambda t: any(b < a for a, b in zip(t, t[1:]))), label="ts")
    first = next(i for i in range(1, len(ts)) if ts[i] < ts[i - 1])
    algo = data.draw(st.sampled_from(valid_algos(agg)), label="algorithm")
    with pytest.raises(ValueError, match=f"non-decreasing: row {first} has time {ts[first]}, after {ts[first - 1]}"):
        sw.rolling([1.0] * len(ts), "5s", agg, timestamps=pa.array(ts, pa.int64()).cast(pa.timestamp("s")),
                   algorithm=algo)


def _brute(ts, v, range_, slide):
    """{(start, end): (max, count)} of Spark window(ts, range, slide) on int times."""
    out = {}
    for t in ts:
        s = (t // slide) * slide
        while s > t - range_:
            out.setdefault((s, s + range_), None)
            s -= slide
    res = {}
    for (s, e) in out:
        xs = [x for t, x in zip(ts, v) if s <= t < e and x is not None]
        res[(s, e)] = (max(xs) if xs else None, len(xs))
    return res


@settings(max_examples=50, deadline=None)
@given(
    data=st.data(),
    shapes=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 12)), min_size=1, max_size=3, unique=True),
)
def test_stream_time_windows_equal_brute_force(data, shapes):
    n = data.draw(st.integers(0, 120))
    gaps = data.draw(st.lists(st.sampled_from([0, 0, 1, 2, 5, 30, 200]), min_size=n, max_size=n))
    ts = list(np.cumsum(gaps) - 17)
    v = data.draw(st.lists(st.one_of(st.none(), st.integers(-9, 9).map(float)), min_size=n, max_size=n))
    queries = [sw.Query("max", f"{r}s", f"{s}s") for r, s in shapes]
    stream = sw.Stream(queries, value="v", time="ts")
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    got = {q.name: [] for q in queries}
    prev = 0
    t_type = pa.timestamp("s")
    for c in cuts + [n]:
        b = pa.table({"v": pa.array(v[prev:c], pa.float64()), "ts": pa.array(ts[prev:c], pa.int64()).cast(t_type)})
        for k, t in stream.push(b).items():
            got[k] += t.to_pylist()
        prev = c
        if c == cuts[0] if cuts else False:
            stream = pickle.loads(pickle.dumps(stream))
    for k, t in stream.flush().items():
        got[k] += t.to_pylist()
    epoch = datetime.datetime(1970, 1, 1)
    for q, (r, s) in zip(queries, shapes):
        want = _brute(ts, v, r, s)
        rows = got[q.name]
        keys = [(int((x["window_start"] - epoch).total_seconds()), int((x["window_end"] - epoch).total_seconds()))
                for x in rows]
        assert sorted(keys) == sorted(want), q
        for k, x in zip(keys, rows):
            assert x["value"] == want[k][0]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns", "D"])
def test_numpy_datetimes_equal_arrow_timestamps(unit):
    # numpy datetime64 (pandas' index) is read over its own buffer: every
    # unit, a strided view, big-endian, keyed, the same as Arrow's column
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.integers(0, 4, 400)).astype(f"datetime64[{unit}]")
    x = rng.standard_normal(400)
    keys = rng.integers(0, 3, 400)
    for ts in (t, t[::2], t.astype(t.dtype.newbyteorder(">"))):
        xs, ks = x[: len(ts)], keys[: len(ts)]
        want = pa.array(ts.astype(ts.dtype.newbyteorder("=")))
        for agg in ("sum", "max", "std"):
            got = sw.rolling(xs, 5, agg, timestamps=ts)
            assert got.equals(sw.rolling(xs, 5, agg, timestamps=want)), (unit, agg)
            got = sw.rolling(xs, 5, agg, timestamps=ts, keys=ks)
            assert got.equals(sw.rolling(xs, 5, agg, timestamps=want, keys=ks)), (unit, agg)
    # a NaT anywhere is a null event time, named by row
    for at in (0, 7, 399):
        bad = t.copy()
        bad[at] = np.datetime64("NaT")
        with pytest.raises(ValueError, match=f"row {at} has a null event time"):
            sw.rolling(x, 5, "sum", timestamps=bad)


def test_long_time_windows_on_threads_give_the_bits_of_one(monkeypatch):
    """Time sums, means, counts and std over 2^20 rows or more run in parts
    on threads, cut where the one pass restarts its prefix (at gaps and
    every 4,096 rows), max and min cut anywhere: SLIDEWISE_THREADS=2 gives
    the bits of 1, with nulls, NaN, a gap and a 1e300 spike (redone in its
    own part); without NaN and the spike, pandas' time rolling's values."""
    import pyarrow.compute as pc

    rng = np.random.default_rng(36)
    n = (1 << 20) + 4_321
    t = np.cumsum(rng.integers(0, 3, n)).astype("datetime64[s]")
    t[700_000:] += np.timedelta64(10_000, "s")  # a gap: nothing before reaches past it
    x = rng.normal(size=n).cumsum()
    valid = rng.random(n) > 0.02
    hard = x.copy()
    hard[rng.integers(0, n, 30)] = np.nan
    hard[900_000], hard[900_001] = 1.3e300, -1.3e300
    want = pd.Series(np.where(valid, x, np.nan), index=pd.DatetimeIndex(t)).rolling("40s")
    for agg in ("sum", "mean", "count", "std", "max", "min"):
        for col in (pa.array(hard, mask=~valid), pa.array(x, mask=~valid)):
            monkeypatch.setenv("SLIDEWISE_THREADS", "1")
            one = sw.rolling(col, "40s", agg, timestamps=t)
            monkeypatch.setenv("SLIDEWISE_THREADS", "2")
            two = sw.rolling(col, "40s", agg, timestamps=t)
            assert pc.is_null(one).equals(pc.is_null(two)), agg
            a, b = (c.to_numpy(zero_copy_only=False).astype(np.float64) for c in (one, two))
            assert np.array_equal(a.view(np.uint64), b.view(np.uint64)), agg
        if agg != "std":
            np.testing.assert_allclose(b, getattr(want, agg)().to_numpy(), rtol=1e-9, atol=1e-9, err_msg=agg)
            continue
        # pandas' running std drifts on a random walk's large mean (2e-8):
        # sampled rows against numpy's two-pass std of the window instead
        tv = t.astype(np.int64)
        for i in rng.integers(0, n, 300):
            lo = np.searchsorted(tv, tv[i] - 40, side="right")
            w = x[lo:i + 1][valid[lo:i + 1]]
            if len(w) < 2:
                assert np.isnan(b[i]), i
            else:
                assert abs(b[i] - np.std(w, ddof=1)) <= 1e-9 * np.std(w, ddof=1), i


def test_unsorted_and_null_times_are_refused():
    with pytest.raises(ValueError, match="row 2"):
        sw.rolling([1.0, 2.0, 3.0], "5s", timestamps=pa.array([5, 7, 6], pa.timestamp("s")))
    with pytest.raises(ValueError, match="null event time"):
        sw.rolling([1.0, 2.0], "5s", timestamps=pa.array([5, None], pa.timestamp("s")))
    s = sw.Stream(sw.Query("sum", "10s", "5s"), time="ts")
    s.push({"v": [1.0], "ts": pa.array([10], pa.timestamp("s"))})
    with pytest.raises(ValueError, match="non-decreasing"):
        s.push({"v": [1.0], "ts": pa.array([9], pa.timestamp("s"))})
    with pytest.raises(ValueError, match="time span"):
        sw.rolling([1.0], "5s")
    with pytest.raises(ValueError, match="needs the stream's event-time column"):
        sw.Stream(sw.Query("sum", "10s"))
    with pytest.raises(ValueError, match="not a time span"):
        sw.Query("sum", "10 parsecs")


def test_time_windows_equal_spark(spark):
    """The same data through Spark's groupBy(window(ts, range, slide))."""
    from pyspark.sql import functions as F

    ts, v = _events(2000, 3, gap_ms=(0, 900))
    pdf = pd.DataFrame({"ts": pd.DatetimeIndex(ts), "v": v})
    sdf = spark.createDataFrame(pdf)
    for rng_, slide in [("10 seconds", "3 seconds"), ("1 minute", "1 minute"), ("7 seconds", "2 seconds")]:
        want = (sdf.groupBy(F.window("ts", rng_, slide)).agg(F.max("v").alias("max"), F.sum("v").alias("sum"))
                .select(F.col("window.start").alias("s"), "max", "sum").toPandas())
        want = want.sort_values("s").reset_index(drop=True)
        r, sl = rng_.replace(" seconds", "s").replace(" minute", "m"), slide.replace(" seconds", "s").replace(" minute", "m")
        stream = sw.Stream([sw.Query("max", r, sl, name="max"), sw.Query("sum", r, sl, name="sum")], time="ts")
        t = pa.table({"v": _nulls_for_nan(v), "ts": pa.array(ts)})
        out = {k: [x] for k, x in stream.push(t).items()}
        for k, x in stream.flush().items():
            out[k].append(x)
        got_max = pa.concat_tables(out["max"]).to_pandas()
        got_sum = pa.concat_tables(out["sum"]).to_pandas()
        assert len(got_max) == len(want)
        assert (got_max["window_start"].to_numpy() == want["s"].to_numpy().astype("datetime64[ms]")).all()
        np.testing.assert_allclose(got_max["value"].astype(float), want["max"].astype(float), equal_nan=True)
        np.testing.assert_allclose(got_sum["value"].astype(float), want["sum"].astype(float), rtol=1e-9,
                                   equal_nan=True)
