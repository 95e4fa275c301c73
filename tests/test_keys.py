"""Keys: keyed rolling against pandas groupby().rolling() (count and time
windows, nulls), against the oracle per key (NaN largest, argmax as input
rows); keyed Streams against one unkeyed Stream per key on that key's rows
(count and time windows, any batch split, pickled mid-stream); bad keys."""

import datetime
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from slidewise import _arrow
from oracle import assert_same_list, rolling as oracle_rolling


def _frame(draw_keys, values):
    return pd.DataFrame({"k": draw_keys, "v": values})


def _pandas_keyed(df, window, agg, min_periods, **kw):
    r = getattr(df.groupby("k", sort=False).rolling(window, min_periods=min_periods, **kw)["v"], agg)()
    return r.reset_index(level=0, drop=True).sort_index().to_numpy(dtype=float)


keys_st = st.lists(st.integers(0, 6), min_size=0, max_size=200)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    window=st.integers(1, 15),
    agg=st.sampled_from(["sum", "mean", "max", "min", "count", "std"]),
    strings=st.booleans(),
)
def test_keyed_rolling_equals_pandas_groupby(data, window, agg, strings):
    ks = data.draw(keys_st)
    vals = data.draw(st.lists(st.one_of(st.none(), st.integers(-50, 50).map(float)), min_size=len(ks),
                              max_size=len(ks)))
    mp = data.draw(st.integers(0, window)) if agg != "count" else 0
    keys = [f"key{k}" for k in ks] if strings else ks
    v = np.array([np.nan if x is None else x for x in vals], dtype=float)
    got = sw.rolling(pa.array(v, from_pandas=True), window, agg, keys=keys, min_periods=mp)
    assert len(got) == len(ks)
    got = got.to_numpy(zero_copy_only=False).astype(float)
    if not ks:
        return
    want = _pandas_keyed(_frame(keys, v), window, agg, mp)
    if agg == "sum" and mp == 0:
        # pandas sums an all-null window to 0 under min_periods=0; slidewise
        # gives null there, as Spark SQL and its unkeyed rolling do
        # (DESIGN "Nulls and NaN": an all-null window gives null).
        empty = _pandas_keyed(_frame(keys, v), window, "count", 0) == 0
        want = np.where(empty, np.nan, want)
        unkeyed = sw.rolling(pa.array([np.nan], from_pandas=True), 1, "sum", min_periods=0)
        assert unkeyed.to_pylist() == [None]
    if agg == "std":
        got, want = got**2, want**2  # pandas' online variance leaves tiny residues
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_keys=st.integers(1, 120),
    window=st.integers(1, 12),
    agg=st.sampled_from(["sum", "mean", "std", "var"]),
    dtype=st.sampled_from(["float64", "float32", "int32"]),
    min_periods=st.integers(0, 3),
)
def test_short_keys_sum_mean_moments_equal_pandas(seed, n_keys, window, agg, dtype, min_periods):
    """Many short keys (a few rows each: they run batched, restarted per
    key) with real-valued data on two scales, nulls and every value dtype,
    against pandas' groupby().rolling()."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    ks = rng.integers(0, n_keys, n)
    v = rng.normal(size=n) * np.where(rng.random(n) < 0.5, 1e6, 1e-3)
    if dtype == "int32":
        v = np.round(v).clip(-1e6, 1e6)
    v = v.astype(dtype)
    holes = rng.random(n) < 0.1
    mp = min(min_periods, window)
    got = sw.rolling(pa.array(v, mask=holes), window, agg, keys=ks, min_periods=mp)
    got = got.to_numpy(zero_copy_only=False).astype(float)
    if n == 0:
        return
    want = _pandas_keyed(_frame(ks, np.where(holes, np.nan, v.astype(float))), window, agg, mp)
    if agg == "sum" and mp == 0:
        empty = _pandas_keyed(_frame(ks, np.where(holes, np.nan, 1.0)), window, "count", 0) == 0
        want = np.where(empty, np.nan, want)
    # pandas' online sums keep the rounding of earlier rows of the key
    scale = np.abs(v.astype(float)).max(initial=0.0) * window
    tol = scale**2 * 1e-12 if agg in ("std", "var") else scale * 1e-12
    if agg == "std":
        got, want = got**2, want**2
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=tol, equal_nan=True)
    # rolling_many: the same window beside another, and max (padded, its
    # windows capped to the longest short key: some short of min_periods)
    # beside it
    t = sw.rolling_many(pa.array(v, mask=holes), [window, window + 3], [agg, "max"], keys=ks, min_periods=mp)
    for a in (agg, "max"):
        one = sw.rolling(pa.array(v, mask=holes), window + 3, a, keys=ks, min_periods=mp)
        np.testing.assert_allclose(t.column(f"{a}_{window + 3}").to_numpy(zero_copy_only=False).astype(float),
                                   one.to_numpy(zero_copy_only=False).astype(float), rtol=1e-12, atol=tol, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    window=st.integers(1, 12),
    agg=st.sampled_from(["max", "min", "sum", "argmax", "argmin", "range", "first", "last", "collect"]),
    min_periods=st.one_of(st.none(), st.integers(0, 3)),
)
def test_keyed_rolling_with_nan_and_nulls_equals_oracle_per_key(data, window, agg, min_periods):
    ks = data.draw(keys_st)
    vals = data.draw(st.lists(st.one_of(st.none(), st.just(float("nan")), st.integers(-9, 9).map(float)),
                              min_size=len(ks), max_size=len(ks)))
    mp = None if min_periods is None else min(min_periods, window)
    got = sw.rolling(pa.array(vals, pa.float64()), window, agg, keys=ks, min_periods=mp).to_pylist()
    want = [None] * len(ks)
    for k in set(ks):
        rows = [i for i, x in enumerate(ks) if x == k]
        alone = oracle_rolling([vals[i] for i in rows], window, agg, mp)
        for j, i in enumerate(rows):
            w = alone[j]
            if agg in ("argmax", "argmin") and w is not None:
                w = rows[w]  # positions within the key are input rows
            want[i] = w
    assert_same_list(got, want, what=agg)


def test_keyed_rolling_int_keys_any_order_and_rolling_many():
    rng = np.random.default_rng(3)
    ks = rng.integers(0, 50, 5000)
    v = rng.normal(size=5000)
    got = sw.rolling(v, 7, "max", keys=pa.array(ks, pa.int32()))
    want = _pandas_keyed(_frame(ks, v), 7, "max", 1)
    np.testing.assert_array_equal(got.to_numpy(), want)
    t = sw.rolling_many(v, [3, 9], "sum", keys=ks)
    assert t.column_names == ["sum_3", "sum_9"]
    for w in (3, 9):
        np.testing.assert_allclose(t.column(f"sum_{w}").to_numpy(), _pandas_keyed(_frame(ks, v), w, "sum", 1))
    # dictionary-encoded string keys are decoded
    sk = pa.array([f"s{k}" for k in ks]).dictionary_encode()
    np.testing.assert_array_equal(sw.rolling(v, 7, "max", keys=sk).to_numpy(), want)


def test_polars_string_and_categorical_keys_equal_pyarrow_string_keys():
    """polars exports strings as string_view and a Categorical / Enum as a
    dictionary of string_view: keyed rolling, rolling_many and a keyed
    Stream read them as the same strings."""
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(5)
    names = np.array(["x", "", "ab", "é", "y" * 30])
    ks = names[rng.integers(0, len(names), 3000)]
    v = rng.normal(size=3000)
    want = sw.rolling(v, 5, "sum", keys=pa.array(ks))
    np.testing.assert_allclose(want.to_numpy(), _pandas_keyed(_frame(ks, v), 5, "sum", 1))
    s = pl.Series("k", ks)
    many = sw.rolling_many(v, [2, 5], "mean", keys=pa.array(ks))
    # what slidewise receives through the Arrow C interface
    assert _arrow.to_arrow(s).type == pa.string_view()
    assert _arrow.to_arrow(s.cast(pl.Categorical)).type.value_type == pa.string_view()
    for keys in (s, s.cast(pl.Categorical), s.cast(pl.Enum(sorted(set(ks)))), pa.array(ks).cast(pa.string_view())):
        assert sw.rolling(v, 5, "sum", keys=keys).equals(want), keys.dtype
        assert sw.rolling_many(v, [2, 5], "mean", keys=keys).equals(many), keys.dtype
    frame = pl.DataFrame({"k": ks, "v": v})
    outs = []
    for f in (frame, frame.with_columns(pl.col("k").cast(pl.Categorical)), pa.table({"k": ks, "v": v})):
        st_ = sw.Stream(sw.Query("sum", 4, 2), value="v", key="k")
        outs.append(st_.push(f)["sum_4_2"])
    assert outs[0].num_rows > 0 and outs[0].equals(outs[1]) and outs[0].equals(outs[2])


def test_keyed_rolling_on_two_threads_gives_the_bits_of_one(monkeypatch):
    """Keyed rolling spreads a column of 2^18 rows or more over threads (a
    contiguous run of keys each): SLIDEWISE_THREADS=2 (read per call) gives
    the bits of SLIDEWISE_THREADS=1, nulls, NaN and -0.0 included, for few
    and many keys, count and time windows, rolling_many and the order
    statistics (their values are checked against pandas above)."""
    import pyarrow.compute as pc

    rng = np.random.default_rng(21)
    n = (1 << 18) + 77
    x = rng.normal(size=n)
    x[rng.integers(0, n, 40)] = np.nan
    x[rng.integers(0, n, 40)] = -0.0
    valid = rng.random(n) > 0.05
    arr = pa.array(x, mask=~valid)
    t = pa.array(np.arange(n, dtype=np.int64) * 1_000_000, pa.timestamp("ns"))

    def bits(a):
        return pc.is_null(a), a.to_numpy(zero_copy_only=False).view(np.uint64)

    def same(f):
        monkeypatch.setenv("SLIDEWISE_THREADS", "1")
        one = f()
        monkeypatch.setenv("SLIDEWISE_THREADS", "2")
        two = f()
        cols = zip(one.columns, two.columns) if isinstance(one, pa.Table) else [(one, two)]
        for a, b in cols:
            (na, va), (nb, vb) = bits(a), bits(b)
            assert na.equals(nb)
            assert np.array_equal(va[~na.to_numpy(zero_copy_only=False)], vb[~nb.to_numpy(zero_copy_only=False)])
        return two

    for n_keys in (3, 1000, 60_000):
        ks = pa.array(rng.integers(0, n_keys, n))
        for agg in ("sum", "max", "std"):
            same(lambda: sw.rolling(arr, 10, agg, keys=ks, min_periods=1))
            same(lambda: sw.rolling(arr, "5ms", agg, keys=ks, timestamps=t))
        same(lambda: sw.rolling_many(arr, [3, 30], "max", keys=ks))
        same(lambda: sw.rolling(arr, 9, "median", keys=ks))


@pytest.mark.parametrize("agg", ["sum", "max", "min", "mean", "count", "std"])
@pytest.mark.parametrize("window,pd_window", [("5s", "5s"), ("1m", "1min")])
def test_keyed_time_rolling_equals_pandas(agg, window, pd_window):
    rng = np.random.default_rng(7)
    n = 3000
    ks = rng.integers(0, 8, n)
    # per key non-decreasing times; keys interleave out of global time order
    gaps = rng.integers(0, 4000, n)
    ts = np.empty(n, dtype="int64")
    clock = {}
    for i, k in enumerate(ks):
        clock[k] = clock.get(k, int(k) * 10_000) + int(gaps[i])
        ts[i] = clock[k]
    ts = np.datetime64("2026-11-25", "ms") + ts.astype("timedelta64[ms]")
    v = rng.integers(-50, 50, n).astype(float)
    v[rng.random(n) < 0.1] = np.nan
    got = sw.rolling(pa.array(v, from_pandas=True), window, agg, keys=ks, timestamps=pa.array(ts))
    got = got.to_numpy(zero_copy_only=False).astype(float)
    df = pd.DataFrame({"k": ks, "ts": ts, "v": v})
    # Aggregate the frame, then pick "v": the result keeps the row index
    # (pandas 3 indexes a Series-level rolling(on=) result by the times).
    r = df.groupby("k", sort=False)[["ts", "v"]].rolling(pd_window, on="ts", min_periods=1)
    want = getattr(r, agg)()["v"]
    want = want.reset_index(level=0, drop=True).sort_index().to_numpy(dtype=float)
    if agg == "count":
        want = np.nan_to_num(want)
    if agg == "std":
        got, want = got**2, want**2
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)


def test_keyed_time_rolling_names_the_first_row_out_of_order_within_its_key():
    ts = pa.array([10, 3, 11, 2, 9], pa.int64())
    with pytest.raises(ValueError, match=r"row 3 \(key 2\) has time 2, after 3"):
        sw.rolling([1.0] * 5, 5, "sum", keys=[1, 2, 1, 2, 1], timestamps=ts)


# -- keyed streams ------------------------------------------------------------


def _split(n, cuts):
    bounds = sorted({0, n, *[c % (n + 1) for c in cuts]})
    return list(zip(bounds, bounds[1:]))


def _rows(table_dict):
    return {name: t.to_pylist() for name, t in table_dict.items()}


def _run(stream, batches, pickle_at=None):
    out = {}
    for bi, b in enumerate(batches):
        for name, rows in _rows(stream.push(b)).items():
            out.setdefault(name, []).extend(rows)
        if bi == pickle_at:
            stream = pickle.loads(pickle.dumps(stream))
    for name, rows in _rows(stream.flush()).items():
        out.setdefault(name, []).extend(rows)
    return out


def _by_key(rows, key="k"):
    res = {}
    for r in rows:
        res.setdefault(r[key], []).append((r["window_start"], r["window_end"], r["value"]))
    return res


def _assert_same_windows(got, want):
    assert got.keys() == want.keys()
    for k in got:
        g, w = got[k], want[k]
        assert [x[:2] for x in g] == [x[:2] for x in w], k
        assert_same_list([x[2] for x in g], [x[2] for x in w], what=f"key {k}")


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    queries=st.lists(st.tuples(st.integers(1, 10), st.integers(1, 4)), min_size=1, max_size=3),
    agg=st.sampled_from(["sum", "max", "mean", "count", "std", "argmax"]),
    cuts=st.lists(st.integers(0, 300), max_size=5),
    pickle_at=st.one_of(st.none(), st.integers(0, 5)),
    strings=st.booleans(),
    partial=st.sampled_from(["pairs", "panes", "cutty"]),
    plan=st.sampled_from([None, "none", "weaveshare"]),
)
def test_keyed_count_stream_equals_one_stream_per_key(data, queries, agg, cuts, pickle_at, strings, partial, plan):
    # Every key runs what an unkeyed stream with the same partial
    # aggregation and plan= runs over that key's rows alone.
    ks = data.draw(st.lists(st.integers(0, 5), max_size=300))
    vals = data.draw(st.lists(st.one_of(st.none(), st.just(float("nan")), st.integers(-20, 20).map(float)),
                              min_size=len(ks), max_size=len(ks)))
    keys = [f"k{k}" for k in ks] if strings else ks
    qs = [sw.Query(agg, r, s, name=f"q{i}") for i, (r, s) in enumerate(queries)]
    batches = [{"k": pa.array(keys[a:b], pa.string() if strings else pa.int64()),
                "v": pa.array(vals[a:b], pa.float64())} for a, b in _split(len(ks), cuts)]
    rate = None  # count windows: one row per row
    got = _run(sw.Stream(qs, value="v", key="k", partial=partial, plan=plan, rate=rate), batches, pickle_at)
    for q in qs:
        want = {}
        for k in dict.fromkeys(keys):
            rows = [vals[i] for i, x in enumerate(keys) if x == k]
            alone = _run(sw.Stream([q], value="v"), [{"v": pa.array(rows, pa.float64())}])[q.name]
            if alone:
                want[k] = [(r["window_start"], r["window_end"], r["value"]) for r in alone]
        _assert_same_windows(_by_key(got.get(q.name, [])), want)


@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    agg=st.sampled_from(["sum", "max", "count", "mean"]),
    rng_slide=st.sampled_from([("10s", "10s"), ("10s", "3s"), ("1m", "20s")]),
    cuts=st.lists(st.integers(0, 200), max_size=4),
    pickle_at=st.one_of(st.none(), st.integers(0, 4)),
)
def test_keyed_time_stream_equals_one_stream_per_key(data, agg, rng_slide, cuts, pickle_at):
    rows = data.draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5000),
                                        st.one_of(st.none(), st.integers(-9, 9).map(float))), max_size=200))
    clock = {}
    ks, ts, vals = [], [], []
    for k, dt, x in rows:
        clock[k] = clock.get(k, k * 3000) + dt
        ks.append(k)
        ts.append(clock[k])
        vals.append(x)
    base = np.datetime64("2026-11-25T00:00:00", "ms")
    tsa = pa.array(base + np.asarray(ts, dtype="int64").astype("timedelta64[ms]"), pa.timestamp("ms"))
    q = sw.Query(agg, rng_slide[0], rng_slide[1], name="q")
    batches = [{"k": pa.array(ks[a:b], pa.int64()), "t": tsa[a:b], "v": pa.array(vals[a:b], pa.float64())}
               for a, b in _split(len(ks), cuts)]
    got = _run(sw.Stream(q, value="v", time="t", key="k"), batches, pickle_at)
    want = {}
    for k in dict.fromkeys(ks):
        idx = [i for i, x in enumerate(ks) if x == k]
        b = {"t": tsa.take(pa.array(idx)), "v": pa.array([vals[i] for i in idx], pa.float64())}
        alone = _run(sw.Stream(q, value="v", time="t"), [b])["q"]
        if alone:
            want[k] = [(r["window_start"], r["window_end"], r["value"]) for r in alone]
    _assert_same_windows(_by_key(got.get("q", [])), want)


def test_keyed_stream_tables_have_the_key_column_first():
    s = sw.Stream([sw.Query("sum", 2, name="s")], value="v", key="user")
    out = s.push({"user": pa.array(["a", "b", "a", "a"]), "v": [1.0, 2.0, 3.0, 4.0]})["s"]
    assert out.column_names == ["user", "window_start", "window_end", "value"]
    assert out.schema.field("user").type == pa.string()
    assert out.to_pylist() == [
        {"user": "a", "window_start": 0, "window_end": 1, "value": 1.0},
        {"user": "a", "window_start": 0, "window_end": 2, "value": 4.0},
        {"user": "a", "window_start": 1, "window_end": 3, "value": 7.0},
        {"user": "b", "window_start": 0, "window_end": 1, "value": 2.0},
    ]
    assert s.rows_seen == 4
    s2 = pickle.loads(pickle.dumps(s))
    assert s2.push({"user": ["b"], "v": [5.0]})["s"].to_pylist() == [
        {"user": "b", "window_start": 0, "window_end": 2, "value": 7.0}]
    # empty flush of a stream that saw nothing still has the key column
    assert sw.Stream(sw.Query("sum", 2), value="v", key="k").flush()["sum_2_1"].column_names[0] == "k"


def test_bad_keys():
    s = sw.Stream(sw.Query("sum", 3), value="v", key="k")
    with pytest.raises(ValueError, match="key of row 1 is null"):
        s.push({"k": pa.array([1, None, 2]), "v": [1.0, 2.0, 3.0]})
    with pytest.raises(TypeError, match="key"):
        s.push({"k": pa.array([1.5, 2.5]), "v": [1.0, 2.0]})
    s.push({"k": pa.array([1, 2]), "v": [1.0, 2.0]})
    with pytest.raises(TypeError, match="changed type"):
        s.push({"k": pa.array(["a"]), "v": [1.0]})
    with pytest.raises(ValueError, match="key of row 0 is null"):
        sw.rolling([1.0, 2.0], 2, "sum", keys=pa.array([None, 1]))
    with pytest.raises(TypeError, match="key"):
        sw.rolling([1.0, 2.0], 2, "sum", keys=pa.array([True, False]))
    with pytest.raises(ValueError, match="rows"):
        sw.rolling([1.0, 2.0], 2, "sum", keys=[1, 2, 3])

def test_keyed_time_stream_order_is_per_key():
    s = sw.Stream(sw.Query("sum", "10s"), value="v", time="t", key="k")
    t = pa.array([20_000, 1_000, 21_000], pa.timestamp("ms"))
    s.push({"k": [1, 2, 1], "t": t, "v": [1.0, 2.0, 3.0]})  # key 2 behind key 1: fine
    with pytest.raises(ValueError, match=r"row 1 \(key 2\)"):
        s.push({"k": [1, 2], "t": pa.array([22_000, 500], pa.timestamp("ms")), "v": [1.0, 1.0]})
