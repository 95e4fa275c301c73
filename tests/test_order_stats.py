"""Rolling median / quantile / rank: against pandas (median, quantile) and
bottleneck (rank) on random data with many ties and nulls, every kernel
(sorted buffer, Suomela's median_sort, the Fenwick rank) forced in turn;
keyed and rolling_many against per-key / per-window runs; the NaN rule
(Spark's: NaN is a value above every number) pinned on its own; errors."""

import bottleneck as bn
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from slidewise import _slidewise

INTERP = ["linear", "lower", "higher", "midpoint", "nearest"]


def _np(a) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.float64)


def pandas_stat(x: np.ndarray, w: int, mp, agg: str, q=None, interp="linear") -> np.ndarray:
    """pandas on `x` (NaN for null), min_periods as slidewise's (None: 1)."""
    r = pd.Series(x).rolling(w, min_periods=max(mp or 0, 1))
    if agg == "median":
        return r.median().to_numpy()
    return r.quantile(q, interpolation=interp).to_numpy()


def bn_rank(x: np.ndarray, w: int, mp) -> np.ndarray:
    w = min(w, len(x))
    mc = max(mp or 0, 1)
    if mc > w:  # fewer rows than min_periods: never enough values
        return np.full(len(x), np.nan)
    return bn.move_rank(x, w, min_count=mc)


# Few distinct values: many ties; None is a null.
cells = st.one_of(st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), st.none())
columns = st.lists(cells, min_size=0, max_size=160)


@st.composite
def cases(draw, max_w=40):
    xs = draw(columns)
    w = draw(st.integers(1, max_w))
    mp = draw(st.one_of(st.none(), st.integers(0, w)))
    q = draw(st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.floats(0.0, 1.0)))
    interp = draw(st.sampled_from(INTERP))
    return xs, w, mp, q, interp


def as_np(xs):
    return np.array([np.nan if v is None else v for v in xs], dtype=np.float64)


def as_arrow(xs):
    return pa.array(xs, type=pa.float64())


def run(xs, w, agg, mp, q=None, interp=None, kernel="auto"):
    (out,) = _slidewise.rolling_order(as_arrow(xs), [w], agg, q, interp, mp, kernel)
    return _np(out)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_median_quantile_equal_pandas(case):
    xs, w, mp, q, interp = case
    x = as_np(xs)
    want_med = pandas_stat(x, w, mp, "median")
    want_q = pandas_stat(x, w, mp, "quantile", q, interp)
    np.testing.assert_array_equal(_np(sw.rolling(xs, w, "median", min_periods=mp)), want_med)
    np.testing.assert_array_equal(_np(sw.rolling(xs, w, "quantile", q=q, interpolation=interp, min_periods=mp)), want_q)
    for kernel in ["sorted_buffer", "median_sort"]:
        np.testing.assert_array_equal(run(xs, w, "median", mp, kernel=kernel), want_med)
        np.testing.assert_array_equal(run(xs, w, "quantile", mp, q, interp, kernel), want_q)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_rank_equals_bottleneck(case):
    xs, w, mp, _, _ = case
    if not xs:
        return
    x = as_np(xs)
    want = bn_rank(x, w, mp)
    np.testing.assert_allclose(_np(sw.rolling(xs, w, "rank", min_periods=mp)), want, rtol=0, atol=1e-12)
    for kernel in ["sorted_buffer", "fenwick"]:
        np.testing.assert_allclose(run(xs, w, "rank", mp, kernel=kernel), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("w", [1, 2, 10, 95, 96, 97, 500, 513, 2500, 20_000])
def test_long_columns_every_kernel(w):
    """Past the auto crossovers and over many median_sort blocks."""
    rng = np.random.default_rng(w)
    n = 20_000
    x = np.round(rng.normal(0, 3, n))  # ties
    x[rng.random(n) < 0.05] = np.nan  # nulls for pandas
    xs = pa.array(x, mask=np.isnan(x))
    for q, interp in [(0.5, "linear"), (0.9, "linear"), (0.1, "nearest"), (0.33, "midpoint")]:
        want = pandas_stat(x, w, None, "quantile", q, interp)
        np.testing.assert_array_equal(_np(sw.rolling(xs, w, "quantile", q=q, interpolation=interp)), want)
        np.testing.assert_array_equal(run(xs, w, "quantile", None, q, interp, "median_sort"), want)
    np.testing.assert_array_equal(_np(sw.rolling(xs, w, "median")), pandas_stat(x, w, None, "median"))
    want = bn_rank(x, w, None)
    np.testing.assert_allclose(_np(sw.rolling(xs, w, "rank")), want, atol=1e-12, rtol=0)
    np.testing.assert_allclose(run(xs, w, "rank", None, kernel="fenwick"), want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("agg", ["median", "quantile", "rank"])
def test_dtypes_widen_to_float64(dtype, agg):
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, 3000)
    mask = rng.random(3000) < 0.1
    arr = pa.array(x.astype(dtype), mask=mask)
    kw = {"q": 0.3} if agg == "quantile" else {}
    got = sw.rolling(arr, 25, agg, **kw)
    assert got.type == pa.float64()
    want = sw.rolling(pa.array(x.astype("float64"), mask=mask), 25, agg, **kw)
    assert got.equals(want)


@settings(max_examples=100, deadline=None)
@given(cases(max_w=12), st.lists(st.integers(0, 3), min_size=160, max_size=160))
def test_keyed_equals_pandas_groupby(case, ks):
    xs, w, mp, q, interp = case
    keys = ks[: len(xs)]
    x = as_np(xs)
    for agg, kw in [("median", {}), ("quantile", {"q": q, "interpolation": interp}), ("rank", {})]:
        got = _np(sw.rolling(xs, w, agg, keys=keys, min_periods=mp, **kw))
        want = np.full(len(xs), np.nan)
        for k in set(keys):
            rows = np.flatnonzero(np.array(keys) == k)
            if agg == "rank":
                want[rows] = bn_rank(x[rows], w, mp)
            else:
                want[rows] = pandas_stat(x[rows], w, mp, agg, q, interp)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 if agg == "rank" else 0)


def test_rolling_many_equals_rolling():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 20, 5000).astype(float)
    arr = pa.array(x, mask=rng.random(5000) < 0.1)
    ws = [1, 3, 50, 300, 7000]
    for agg, kw in [("median", {}), ("quantile", {"q": 0.8, "interpolation": "higher"}), ("rank", {})]:
        t = sw.rolling_many(arr, ws, agg, min_periods=1, **kw)
        assert t.column_names == [f"{agg}_{w}" for w in ws]
        for w in ws:
            assert t[f"{agg}_{w}"].combine_chunks().equals(sw.rolling(arr, w, agg, min_periods=1, **kw))
        keys = np.arange(5000) % 3
        t = sw.rolling_many(arr, ws, agg, keys=keys, **kw)
        for w in ws:
            assert t[f"{agg}_{w}"].combine_chunks().equals(sw.rolling(arr, w, agg, keys=keys, **kw))


def test_nan_is_a_value_above_every_number():
    """Spark's order (percentile / median over a frame): NaN sorts above
    +inf, NaNs tie; a quantile that lands on NaN, or interpolates with it,
    is NaN. Nulls are skipped."""
    x = pa.array([1.0, float("nan"), 2.0, None, float("inf"), float("nan")])
    assert _np(sw.rolling(x, 3, "median")).tolist()[:3] == [1.0, pytest.approx(float("nan"), nan_ok=True), 2.0]
    med = _np(sw.rolling(x, 3, "median"))
    # windows: [1], [1,NaN] -> (1+NaN)/2, [1,NaN,2] -> 2, [NaN,2] -> NaN, [2,inf] -> inf, [inf,NaN] -> NaN
    np.testing.assert_array_equal(med, [1.0, np.nan, 2.0, np.nan, np.inf, np.nan])
    lower = _np(sw.rolling(x, 3, "quantile", q=0.5, interpolation="lower"))
    np.testing.assert_array_equal(lower, [1.0, 1.0, 2.0, 2.0, 2.0, np.inf])
    top = _np(sw.rolling(x, 3, "quantile", q=1.0))
    np.testing.assert_array_equal(top, [1.0, np.nan, np.nan, np.nan, np.inf, np.nan])
    bottom = _np(sw.rolling(x, 3, "quantile", q=0.0))
    np.testing.assert_array_equal(bottom, [1.0, 1.0, 1.0, 2.0, 2.0, np.inf])
    rank = sw.rolling(x, 3, "rank").to_pylist()
    # NaN ranks top; two NaNs tie; the null row has no rank
    assert rank == [0.0, 1.0, 0.0, None, 1.0, 1.0]
    assert sw.rolling([float("nan"), float("nan")], 2, "rank").to_pylist() == [0.0, 0.0]
    # linear between two equal infinities is the infinity (Spark; pandas: NaN)
    inf = float("inf")
    assert sw.rolling([inf, inf], 2, "quantile", q=0.3).to_pylist() == [inf, inf]
    assert sw.rolling([-inf, -inf], 2, "median").to_pylist() == [-inf, -inf]
    # -0.0 equals 0.0
    assert sw.rolling([0.0, -0.0, 0.0], 3, "rank").to_pylist() == [0.0, 0.0, 0.0]


def test_min_periods_and_empty_windows():
    x = [None, 1.0, None, None, 5.0]
    assert sw.rolling(x, 2, "median").to_pylist() == [None, 1.0, 1.0, None, 5.0]
    assert sw.rolling(x, 3, "median", min_periods=2).to_pylist() == [None, None, None, None, None]
    assert sw.rolling(x, 5, "median", min_periods=2).to_pylist() == [None, None, None, None, 3.0]
    assert sw.rolling([], 3, "median").to_pylist() == []
    assert sw.rolling([1.0, 2.0], 10, "quantile", q=0.5).to_pylist() == [1.0, 1.5]


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"agg": "quantile"}, "needs q"),
        ({"agg": "quantile", "q": 1.5}, r"q must be in \[0, 1\]"),
        ({"agg": "quantile", "q": -0.1}, r"q must be in \[0, 1\]"),
        ({"agg": "quantile", "q": float("nan")}, r"q must be in \[0, 1\]"),
        ({"agg": "quantile", "q": True}, "q must be a number"),
        ({"agg": "quantile", "q": "0.5"}, "q must be a number"),
        ({"agg": "quantile", "q": 0.5, "interpolation": "cubic"}, "interpolation must be one of"),
        ({"agg": "median", "q": 0.5}, "apply to agg='quantile' only"),
        ({"agg": "rank", "interpolation": "linear"}, "apply to agg='quantile' only"),
        ({"agg": "sum", "q": 0.5}, "apply to agg='quantile' only"),
        ({"agg": "median", "timestamps": pa.array([0, 2, 1], pa.timestamp("s"))}, "non-decreasing: row 2"),
        ({"agg": "median", "closed": "middle"}, "closed must be"),
        ({"agg": "rank", "step": 0}, "step must be a positive integer"),
        ({"agg": "median", "algorithm": "twostacks"}, "algorithm must be 'auto'"),
        ({"agg": "median", "min_periods": 4}, r"min_periods \(4\) must be <= window"),
        ({"agg": "mediann"}, "unknown agg"),
    ],
)
def test_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        sw.rolling([1.0, 2.0, 3.0], 3, **kw)


def test_errors_window_and_dtype():
    with pytest.raises(ValueError, match="window"):
        sw.rolling([1.0], 0, "median")
    with pytest.raises(TypeError, match="unsupported values dtype string"):
        sw.rolling(pa.array(["a", "b"]), 2, "median")
    with pytest.raises(ValueError, match="q must be in"):
        sw.rolling_many([1.0], [1, 2], "quantile", q=2)
    with pytest.raises(ValueError, match="kernel"):
        _slidewise.rolling_order(pa.array([1.0]), [1], "median", None, None, None, "heap")


# -- time windows --------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(data=st.data(), agg=st.sampled_from(["median", "quantile", "rank"]), keyed=st.booleans())
def test_time_windows_equal_pandas(data, agg, keyed):
    """rolling("Ns") as pandas (median / quantile, per key as groupby) and
    rank as a sort of each row's window (t - span, t]; ties in time."""
    xs = data.draw(st.lists(st.one_of(st.integers(-3, 3).map(float), st.none()), max_size=80), label="xs")
    gaps = data.draw(st.lists(st.integers(0, 3), min_size=len(xs), max_size=len(xs)), label="gaps")
    ks = data.draw(st.lists(st.integers(0, 2), min_size=len(xs), max_size=len(xs)), label="ks")
    span = data.draw(st.integers(1, 12), label="span")
    mp = data.draw(st.one_of(st.none(), st.integers(0, 4)), label="mp")
    q, interp = (data.draw(st.floats(0, 1), label="q"), data.draw(st.sampled_from(INTERP))) if agg == "quantile" \
        else (None, None)
    ts = np.cumsum(gaps).astype("datetime64[s]")
    got = _np(sw.rolling(as_arrow(xs), f"{span}s", agg, timestamps=pa.array(ts), min_periods=mp, q=q,
                         interpolation=interp, keys=ks if keyed else None))
    x = as_np(xs)
    k = np.array(ks) if keyed else np.zeros(len(xs), dtype=int)
    if agg == "rank":
        want = np.full(len(xs), np.nan)
        for i in range(len(xs)):
            rows = [j for j in range(i + 1) if k[j] == k[i] and ts[j] > ts[i] - np.timedelta64(span, "s")]
            w = naive_window([xs[j] for j in rows], agg, mp, q, interp)
            want[i] = np.nan if w is None else w
    else:
        df = pd.DataFrame({"x": x, "k": k}, index=pd.DatetimeIndex(ts))
        r = df.groupby("k")["x"].rolling(f"{span}s", min_periods=max(mp or 0, 1))
        r = r.median() if agg == "median" else r.quantile(q, interpolation=interp)
        # back to input order: groupby sorts by key, stable within a key
        want = np.empty(len(xs))
        want[np.argsort(k, kind="stable")] = r.to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


# -- count-window Stream queries ----------------------------------------------

def naive_window(vals, agg, mp, q, interp):
    """One window's statistic from its rows (None = null), by sorting."""
    xs = np.sort(np.array([v for v in vals if v is not None], dtype=np.float64))
    if len(xs) < max(mp or 0, 1):
        return None
    if agg == "rank":
        me = vals[-1]
        if me is None:
            return None
        if len(xs) == 1:
            return 0.0
        less, equal = np.sum(xs < me), np.sum(xs == me)
        return 2.0 * ((2 * less + equal - 1) / 2.0 / (len(xs) - 1) - 0.5)
    if agg == "median":
        q, interp = 0.5, "midpoint"
    return float(np.quantile(xs, q, method=interp))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), keyed=st.booleans(), agg=st.sampled_from(["median", "quantile", "rank"]),
       r=st.integers(1, 12), s=st.integers(1, 5))
def test_stream_queries_equal_a_naive_sort_per_window(data, keyed, agg, r, s):
    """Windows (keys, starts, ends, in order) are the core's count windows
    (a count query beside it); each value is the sorted window's statistic."""
    import pickle

    xs = data.draw(st.lists(cells, max_size=70), label="xs")
    ks = data.draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=len(xs), max_size=len(xs)), label="ks")
    mp = data.draw(st.one_of(st.none(), st.integers(0, r)), label="mp")
    q, interp = (data.draw(st.floats(0, 1), label="q"), data.draw(st.sampled_from(INTERP))) if agg == "quantile" \
        else (None, None)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(xs)), max_size=4), label="cuts"))
    qs = [sw.Query(agg, r, s, name="o", min_periods=mp, q=q, interpolation=interp), sw.Query("count", r, s, name="c")]
    stream = sw.Stream(qs, key="k" if keyed else None)
    got, seen = [], {}
    for a, b in zip([0] + cuts, cuts + [len(xs)]):
        res = stream.push({"v": pa.array(xs[a:b], pa.float64()), "k": pa.array(ks[a:b], pa.string())})
        got.append(res)
        stream = pickle.loads(pickle.dumps(stream))  # a checkpoint between any two pushes
    got.append(stream.flush())
    assert stream.rows_seen == len(xs)
    rows = {}
    for x, k in zip(xs, ks):
        rows.setdefault(k if keyed else None, []).append(x)
    for res in got:
        o, c = res["o"].to_pylist(), res["c"].to_pylist()
        assert [{**w, "value": None} for w in o] == [{**w, "value": None} for w in c]
        for w in o:
            vals = rows[w["k"] if keyed else None][w["window_start"]:w["window_end"]]
            want = naive_window(vals, agg, mp, q, interp)
            assert (w["value"] is None) == (want is None), (w, vals)
            if want is not None:
                assert w["value"] == pytest.approx(want, rel=1e-12, abs=1e-12), (w, vals)


def test_stream_query_errors_and_repr():
    with pytest.raises(ValueError, match="count windows only"):
        sw.Query("median", "10s")
    with pytest.raises(ValueError, match="count windows only"):
        sw.Query("rank", session="10s")
    with pytest.raises(ValueError, match="needs q"):
        sw.Query("quantile", 5)
    with pytest.raises(ValueError, match="apply to agg='quantile' only"):
        sw.Query("median", 5, q=0.5)
    with pytest.raises(ValueError, match="argmax/argmin"):
        sw.Query("median", 5, arg="x")
    with pytest.raises(ValueError, match="order statistic, which runs in rolling, rolling_many and count-window Query only"):
        sw.aggregators.SoE("median")
    assert "q=0.9, interpolation='lower'" in repr(sw.Query("quantile", 5, q=0.9, interpolation="lower"))
    st_ = sw.Stream(sw.Query("median", 3, name="m"))
    st_.push({"v": pa.array([3.0, 1.0, 2.0])})
    st_.flush()
    assert st_.flush()["m"].num_rows == 0
    with pytest.raises(ValueError, match="flushed"):
        st_.push({"v": pa.array([1.0])})


def test_aggs_lists_order_statistics_apart():
    assert set(sw.ORDER_AGGS) == {"median", "quantile", "rank"}
    assert sw.AGGS == sw.MONOID_AGGS + sw.ORDER_AGGS
    assert not set(sw.ORDER_AGGS) & set(sw.MONOID_AGGS)


# -- slidewise.spark.rolling against Spark's F.median / F.percentile -----------

def _same_floats(got: pa.Array, want: pa.Array, what: str) -> None:
    """Null and NaN apart, the rest within 1e-12 relative (Spark computes
    (1 - w) lo + w hi, slidewise lo + (hi - lo) w)."""
    g, w = got.to_pylist(), want.to_pylist()
    assert [x is None for x in g] == [x is None for x in w], what
    for i, (a, b) in enumerate(zip(g, w)):
        if a is None:
            continue
        assert (a != a) == (b != b), (what, i, a, b)
        if a == a:
            assert a == pytest.approx(b, rel=1e-12, abs=1e-300), (what, i, a, b)


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
def test_spark_rolling_equals_spark_percentile(spark, keyed):
    """median and percentile against Spark's percentile over the same ROWS
    frame (Spark 4 refuses F.median and percentile_cont over a frame; its
    median is percentile 0.5), with ties, nulls, NaN and inf; rank against
    slidewise.rolling on the rows in Spark's order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    import slidewise.spark as ss

    rng = np.random.default_rng(15)
    n = 300
    v = rng.integers(-4, 5, n).astype(float) + np.where(rng.random(n) < 0.3, rng.random(n), 0.0)
    v[rng.random(n) < 0.05] = np.nan
    v[rng.random(n) < 0.05] = np.inf
    t = pa.table({"id": np.arange(n), "t": rng.integers(0, 60, n), "k": rng.integers(0, 3, n),
                  "v": pa.array(v, mask=rng.random(n) < 0.15)})
    sdf = spark.createDataFrame(t).repartition(3)  # from Arrow: nulls and NaN stay apart
    keys = ["k"] if keyed else None
    windows = [1, 4, 9]
    got = ss.rolling(sdf, "v", "t", windows, ["median", "percentile", "rank"], partition_by=keys, tiebreak="id",
                     q=0.3).toArrow().sort_by("id")
    cols = []
    for w in windows:
        win = (Window.partitionBy("k") if keyed else Window).orderBy("t", "id").rowsBetween(-(w - 1), 0)
        cols += [F.percentile("v", 0.5).over(win).alias(f"m{w}"), F.percentile("v", 0.3).over(win).alias(f"p{w}")]
    want = sdf.select("id", *cols).toArrow().sort_by("id")
    rows = t.sort_by([("t", "ascending"), ("id", "ascending")])
    for w in windows:
        _same_floats(got[f"median_{w}"], want[f"m{w}"], f"median_{w}")
        _same_floats(got[f"percentile_{w}"], want[f"p{w}"], f"percentile_{w}")
        local = sw.rolling(rows["v"], w, "rank", keys=rows["k"] if keyed else None)
        _same_floats(got[f"rank_{w}"], pa.table({"id": rows["id"], "r": local}).sort_by("id")["r"], f"rank_{w}")


def test_spark_specs_carry_q_and_interpolation():
    from slidewise.spark._specs import _make_specs

    (s,) = _make_specs(pa.int32(), 5, "percentile", None, 2, "auto", q=0.75, interpolation="lower")
    assert (s.agg, s.order_kw, s.arrow_type, s.min_periods) == ("quantile", {"q": 0.75, "interpolation": "lower"},
                                                               pa.float64(), 2)


def test_spark_rolling_order_errors(spark):
    import slidewise.spark as ss

    sdf = spark.createDataFrame(pd.DataFrame({"t": [1, 2], "v": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="needs q"):
        ss.rolling(sdf, "v", "t", 3, "percentile")
    with pytest.raises(ValueError, match="apply to agg='quantile'"):
        ss.rolling(sdf, "v", "t", 3, "median", q=0.5)
    with pytest.raises(ValueError, match="count windows only"):
        ss.rolling(sdf, "v", "t", "5s", "median")
    with pytest.raises(ValueError, match="algorithm must be 'auto'"):
        ss.rolling(sdf, "v", "t", 3, "rank", algorithm="two_stacks")
