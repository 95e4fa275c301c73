"""sw.rolling against pandas, polars and a naive oracle."""

import math

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from conftest import INVERTIBLE, valid_algos
from oracle import assert_same_list, rolling as naive_rolling

RNG = np.random.default_rng(20240607)
N = 12_000
DATA = RNG.normal(100.0, 25.0, N)
MASK = RNG.random(N) < 0.1  # ~10% nulls
ARR = pa.array(DATA, mask=MASK)
WINDOWS = [1, 2, 3, 7, 64, 1000, 10_000]


def _np(a: pa.Array) -> np.ndarray:
    return a.to_numpy(zero_copy_only=False).astype(np.float64)


@pytest.mark.parametrize("w", WINDOWS)
@pytest.mark.parametrize("agg", ["sum", "mean", "min", "max", "var", "std", "var_pop", "std_pop", "count"])
def test_matches_pandas(agg, w):
    s = pd.Series(np.where(MASK, np.nan, DATA)).rolling(w, min_periods=1)
    want = {"var_pop": lambda: s.var(ddof=0), "std_pop": lambda: s.std(ddof=0)}.get(agg, getattr(s, agg, None))()
    got = sw.rolling(ARR, w, agg, min_periods=None if agg == "count" else 1)
    assert len(got) == N
    got, want = _np(got), want.to_numpy()
    if agg.startswith("std"):
        # pandas' online variance leaves ~1e-12 residues where the exact
        # answer is 0 (one value in the window); compare variances so their
        # square roots (~1e-6) do not count as errors.
        got, want = got**2, want**2
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("w", WINDOWS)
@pytest.mark.parametrize("agg", ["sum", "mean", "min", "max", "var", "std"])
def test_matches_polars(agg, w):
    s = pl.Series(DATA).scatter(np.flatnonzero(MASK), None)
    want = getattr(s, f"rolling_{agg}")(w, min_samples=1)
    got = sw.rolling(s, w, agg, min_periods=1)  # a polars Series goes in as is
    np.testing.assert_allclose(_np(got), want.to_numpy().astype(np.float64), rtol=1e-9, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("w", [1, 5, 333])
def test_int_columns_match_pandas_and_keep_int_types(w):
    x = RNG.integers(-1000, 1000, 3000).astype(np.int32)
    got = sw.rolling(x, w, "sum")
    assert got.type == pa.int64()  # integer sums are exact i64
    assert got.to_pylist() == pd.Series(x.astype(np.int64)).rolling(w, min_periods=1).sum().astype(np.int64).tolist()
    got = sw.rolling(x, w, "max")
    assert got.type == pa.int32()
    assert got.to_pylist() == pd.Series(x).rolling(w, min_periods=1).max().astype(np.int64).tolist()


def test_min_periods_like_pandas():
    for mp in [0, 1, 3, 10]:
        got = sw.rolling(ARR[:2000], 10, "mean", min_periods=mp)
        want = pd.Series(np.where(MASK[:2000], np.nan, DATA[:2000])).rolling(10, min_periods=mp).mean()
        np.testing.assert_allclose(_np(got), want.to_numpy(), rtol=1e-9, equal_nan=True)


def test_window_longer_than_data_and_min_periods_never_reached():
    x = [1.0, 2.0, None, 4.0]
    assert sw.rolling(x, 10**12, "sum").to_pylist() == [1.0, 3.0, 3.0, 7.0]
    out = sw.rolling(x, 100, "sum", min_periods=50)
    assert out.type == pa.float64() and out.to_pylist() == [None] * 4


# -- the naive oracle, every operation, NaN/inf included ------------------------

FLOATS = st.one_of(
    st.none(),
    st.floats(-1e6, 1e6, allow_nan=False, width=32),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, 2.0]),
)
INTS = st.one_of(st.none(), st.integers(-1000, 1000), st.sampled_from([0, 1, 2, -1]))


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    agg=st.sampled_from(sw.AGGS),
    dtype=st.sampled_from(["float64", "float32", "int64", "int32"]),
    window=st.integers(1, 12),
)
def test_every_op_and_algorithm_matches_the_oracle(data, agg, dtype, window):
    elems = INTS if dtype.startswith("int") else FLOATS
    if dtype.startswith("float") and agg in ("var", "std", "var_pop", "std_pop", "sum", "mean", "geomean"):
        # Keep magnitudes modest so the exact oracle and compensated sums
        # agree to 1e-9 (the float contract is relative).
        elems = st.one_of(st.none(), st.floats(-100, 100, allow_nan=False, width=32),
                          st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0])).map(
                              lambda x: 0.0 if x == 0 else x)
    xs = data.draw(st.lists(elems, max_size=40))
    mp = data.draw(st.one_of(st.none(), st.integers(0, window)))
    arr = pa.array(xs, type=pa.from_numpy_dtype(np.dtype(dtype)))
    # The oracle sees exactly the values the column holds (float32 rounding).
    vals = arr.to_pylist()
    want = naive_rolling(vals, window, agg, mp)
    for algo in valid_algos(agg):
        got = sw.rolling(arr, window, agg, min_periods=mp, algorithm=algo).to_pylist()
        assert_same_list(got, want, rel=1e-6 if agg == "geomean" else 1e-9, abs_=1e-9,
                         what=f"{agg}/{dtype}/w={window}/{algo}")


def test_nan_semantics():
    nan = math.nan
    x = [1.0, nan, 3.0, None, 2.0]
    assert math.isnan(sw.rolling(x, 2, "max")[2].as_py())
    assert sw.rolling(x, 2, "min").to_pylist() == [1.0, 1.0, 3.0, 3.0, 2.0]  # NaN only if all NaN
    assert math.isnan(sw.rolling([nan, nan], 2, "min")[1].as_py())
    s = sw.rolling(x, 2, "sum").to_pylist()
    assert s[0] == 1.0 and math.isnan(s[1]) and math.isnan(s[2]) and s[3] == 3.0 and s[4] == 2.0
    assert sw.rolling(x, 3, "argmax").to_pylist() == [0, 1, 1, 1, 2]
    assert sw.rolling(x, 5, "count").to_pylist() == [1, 2, 3, 3, 4]


def test_signed_zero_is_equal_to_zero():
    # -0.0 == 0.0 numerically (IEEE, Spark, numpy): both are the maximum,
    # and ties go to the oldest.
    assert sw.rolling([0.0, -0.0], 2, "maxcount").to_pylist() == [1, 2]
    assert sw.rolling([-0.0, 0.0], 2, "argmax").to_pylist() == [0, 0]


@pytest.mark.parametrize("agg", sw.AGGS)
def test_every_algorithm_equals_auto(agg, algo):
    x = pa.array(RNG.normal(0, 1, 3000), mask=RNG.random(3000) < 0.05)
    if algo == "soe" and agg not in INVERTIBLE:
        with pytest.raises(ValueError, match="soe.*" + agg):
            sw.rolling(x, 50, agg, algorithm=algo)
        return
    want = sw.rolling(x, 50, agg).to_pylist()
    got = sw.rolling(x, 50, agg, algorithm=algo).to_pylist()
    assert_same_list(got, want, rel=1e-9, abs_=1e-9, what=f"{agg}/{algo}")


def test_float_sum_does_not_drift_over_a_long_stream():
    # Huge values pass through the window first; a naive subtract-on-evict
    # would leave their rounding errors behind in the small sums after them.
    x = np.concatenate([RNG.normal(0, 1, 2000) * 1e15, RNG.normal(0, 1, 100_000)])
    want = np.array([math.fsum(x[max(0, i - 9): i + 1]) for i in range(len(x) - 500, len(x))])
    for algo in ["auto", "soe", "recalc"]:
        got = sw.rolling(x, 10, "sum", algorithm=algo).to_numpy()[-500:]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_rolling_many_is_one_column_per_window():
    t = sw.rolling_many(ARR[:500], [2, 10, 100], "max")
    s = sw.Stream(sw.Query("sum", 2, 1))
    assert s.push(CStream(pa.table({"v": [1, 2]})))["sum_2_1"].column("value").to_pylist() == [1, 3]
    assert t.column_names == ["max_2", "max_10", "max_100"]
    for w in [2, 10, 100]:
        assert t.column(f"max_{w}").combine_chunks().equals(sw.rolling(ARR[:500], w, "max"))


# -- input types ------------------------------------------------------------


class CArray:
    """Speaks only the Arrow PyCapsule array protocol (like nanoarrow)."""

    def __init__(self, a):
        self._a = a

    def __arrow_c_array__(self, requested_schema=None):
        return self._a.__arrow_c_array__(requested_schema)


class CStream:
    """Speaks only the Arrow PyCapsule stream protocol (like duckdb)."""

    def __init__(self, a):
        self._a = a

    def __arrow_c_stream__(self, requested_schema=None):
        return self._a.__arrow_c_stream__(requested_schema)


def test_input_types_agree():
    x = RNG.normal(0, 1, 1000)
    want = sw.rolling(pa.array(x), 7, "std")
    chunked = pa.chunked_array([x[:300], x[300:700], x[700:]])
    for inp in [x, list(x), pl.Series(x), chunked, pa.chunked_array([x]), pa.record_batch({"v": x}).column(0),
                pd.Series(x), pa.array(np.concatenate([[0.0], x]))[1:], CArray(pa.array(x)), CStream(chunked)]:
        got = sw.rolling(inp, 7, "std")
        assert got.equals(want), type(inp)


def test_numpy_is_zero_copy_and_masked_arrays_are_nulls():
    x = np.arange(10, dtype=np.float64)
    assert pa.array(x).buffers()[1].address == x.ctypes.data  # what rolling() receives
    m = np.ma.masked_array(x, mask=[i % 3 == 0 for i in range(10)])
    got = sw.rolling(m, 2, "sum").to_pylist()
    want = naive_rolling([None if i % 3 == 0 else float(i) for i in range(10)], 2, "sum")
    assert got == want


def test_narrow_types_are_widened():
    for t, wide in [(pa.int8(), pa.int32()), (pa.uint16(), pa.int32()), (pa.uint32(), pa.int64()),
                    (pa.float16(), pa.float32())]:
        a = pa.array([1, 2, 3], type=pa.int64()).cast(t)
        assert sw.rolling(a, 2, "max").type == wide


@pytest.mark.parametrize("agg", sw.AGGS)
def test_empty_input_gives_empty_result_of_the_right_type(agg):
    got = sw.rolling(pa.array([], pa.int32()), 3, agg)
    full = sw.rolling(pa.array([1], pa.int32()), 3, agg)
    assert len(got) == 0 and got.type == full.type
    assert len(sw.rolling([], 3, agg)) == 0
