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


@settings(max_examples=300, deadline=None)
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


@settings(max_examples=300, deadline=None)
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


@pytest.mark.parametrize("w", [1, 2, 10, 100, 191, 192, 193, 500, 513, 2500, 20_000])
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
        ({"agg": "median", "timestamps": pa.array([0, 1, 2], pa.timestamp("s"))}, "count windows only"),
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
