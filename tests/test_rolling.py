"""sw.rolling against pandas, polars and a naive oracle."""

import functools
import math
import statistics
import zlib

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from conftest import INVERTIBLE, valid_algos
from oracle import agg_rows, agg_window, assert_same_list, elements, rolling as naive_rolling, same, wrap64

DTYPES = ["float64", "float32", "int64", "int32"]


def rng_for(*names) -> np.random.Generator:
    """A generator seeded from the test's names (crc32: the same in every
    process, unlike hash()), so that each test's data is fixed whatever
    runs before it."""
    return np.random.default_rng(zlib.crc32("/".join(map(str, names)).encode()))


RNG = np.random.default_rng(20240607)  # only for the module constants below
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
    got = sw.rolling(s, w, agg, min_periods=1)  # a polars Series goes in as is, and comes out a polars Series
    assert isinstance(got, pl.Series)
    np.testing.assert_allclose(_np(got.to_arrow()), want.to_numpy().astype(np.float64), rtol=1e-9, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("w", [1, 5, 333])
def test_int_columns_match_pandas_and_keep_int_types(w):
    x = rng_for("int_columns", w).integers(-1000, 1000, 3000).astype(np.int32)
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


# -- the naive oracle, every operation x dtype, edge values included ------------

def check_rolling_against_oracle(arr, window, agg, mp, what):
    # The oracle sees exactly the values the column holds (float32 rounding).
    want = naive_rolling(arr.to_pylist(), window, agg, mp)
    for algo in valid_algos(agg):
        got = sw.rolling(arr, window, agg, min_periods=mp, algorithm=algo).to_pylist()
        assert_same_list(got, want, rel=1e-6 if agg == "geomean" else 1e-9, abs_=1e-9,
                         what=f"{what} w={window} mp={mp} {algo}")


# Every (aggregation, dtype) pair is its own test with 25 examples of its own,
# so each pair is checked on every run (drawing agg and dtype too gave fewer
# examples than pairs).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), window=st.one_of(st.integers(1, 8), st.integers(9, 50)))
def test_every_op_and_algorithm_matches_the_oracle(data, agg, dtype, window):
    xs = data.draw(st.lists(elements(agg, dtype), max_size=40), label="xs")
    mp = data.draw(st.one_of(st.none(), st.integers(0, window)), label="min_periods")
    arr = pa.array(xs, type=pa.from_numpy_dtype(np.dtype(dtype)))
    check_rolling_against_oracle(arr, window, agg, mp, f"{agg}/{dtype}")


def test_int64_sums_wrap_modulo_2_64():
    # Integer sums are int64 and wrap modulo 2**64, two's complement, as
    # numpy and Spark with ANSI off do (pandas sums ints in float64).
    big = 2**63 - 1
    vals = [big, 1, big, -(2**63), -1, None, 5]
    exact = [big, big + 1, 2 * big + 1, 1 + big - 2**63, big - 2**63 - 1, -(2**63) - 1, 4]  # windows of 3
    want = [big, -(2**63), -1, 0, -2, big, 4]
    assert want == [((s + 2**63) % 2**64) - 2**63 for s in exact] == [wrap64(s) for s in exact]
    x = pa.array(vals, pa.int64())
    for algo in valid_algos("sum"):
        got = sw.rolling(x, 3, "sum", algorithm=algo)
        assert got.type == pa.int64() and got.to_pylist() == want, algo
    with np.errstate(over="ignore"):
        assert want[:3] == np.cumsum(np.array(vals[:3], dtype=np.int64)).tolist()  # numpy wraps alike


@pytest.mark.parametrize("algo", valid_algos("mean"))
@pytest.mark.parametrize("keyed", [False, True])
def test_int64_mean_is_exact_not_a_wrapped_sum(algo, keyed):
    # Spark (avg of a long is a double sum) and pandas (float64) both give
    # the exact mean here; a mean is not an int64 result and must not wrap
    # (an exact i128 sum, rounded once, then divided: Python's int / int).
    vals = [2**62, 2**62, 2**62, 2**63 - 1, -(2**63), None, 2**63 - 1, 2**63 - 1]
    x = pa.array(vals, pa.int64())
    keys = pa.array([1] * len(vals)) if keyed else None
    got = sw.rolling(x, 3, "mean", algorithm=algo, keys=keys).to_pylist()
    want = []
    for i in range(len(vals)):
        w = [v for v in vals[max(0, i - 2):i + 1] if v is not None]
        want.append(sum(w) / len(w))
    assert got == want, (algo, got)
    # int32 means were exact in int64 already; the sum still wraps (see above)
    assert sw.rolling(x, 3, "sum").to_pylist()[2] == wrap64(3 * 2**62)


@pytest.mark.parametrize("keyed", [False, True])
def test_int64_mean_at_the_edges_of_the_fast_path(keyed):
    # `auto` sums in i64 where no window can reach 2^63 (largest |x| times
    # the window), else in i128: both sides of that line, and window 1 with
    # the type's limits (where an incoming minus an outgoing value passes
    # 2^63), all exact.
    lo, hi = -(2**63), 2**63 - 1
    third = (2**63 - 1) // 3
    for vals, w in [([hi, lo, hi, lo, 0, hi], 1), ([third] * 6 + [-third] * 3, 3), ([third + 1] * 6, 3), ([hi, hi, 1, lo], 2)]:
        x = pa.array(vals, pa.int64())
        keys = pa.array([7] * len(vals)) if keyed else None
        got = sw.rolling(x, w, "mean", keys=keys).to_pylist()
        want = [sum(vals[max(0, i - w + 1):i + 1]) / len(vals[max(0, i - w + 1):i + 1]) for i in range(len(vals))]
        assert got == want, (vals, w, got, want)


@pytest.mark.parametrize("algo", ["auto", "recalc", "two_stacks", "flatfit", "daba", "slideside"])
def test_var_of_a_large_offset_plus_small_noise_keeps_full_precision(algo):
    # Chan's merge keeps the mean in double-double: in plain f64 it carried
    # the mean's rounding (ulp(1e9) ~ 1e-7) into M2 (a strict xfail here)
    x = 1e9 + rng_for("var_offset").integers(0, 4, 2000) / 4  # exact in float64
    got = sw.rolling(x, 10, "var", algorithm=algo).to_pylist()
    # the oracle subtracts the correctly rounded mean of the window: no such loss
    assert_same_list(got, naive_rolling(x.tolist(), 10, "var"), rel=1e-9, abs_=1e-12, what=algo)


def test_var_of_int64_near_1e15_on_every_path():
    """int64 values 1e15 +- 5 (nanosecond-scale timestamps, say) are exact
    in f64; their variance is exact to rounding on every path: count and time
    windows, keyed, named algorithms, rolling_many, a Stream. (With the mean
    in plain f64 the Chan paths were 3e-2 off here.)"""
    n, w = 1500, 100
    x = (10**15 + rng_for("var_1e15").integers(-5, 6, n)).astype(np.int64)
    exact = [None] + [float(statistics.variance([int(v) for v in x[max(0, i - w + 1):i + 1]])) for i in range(1, n)]
    ts = pa.array(np.arange(n), pa.int64())
    paths = {
        "auto": sw.rolling(x, w, "var"),
        "time": sw.rolling(x, w, "var", timestamps=ts),
        "keyed": sw.rolling(x, w, "var", keys=np.zeros(n, np.int64)),
        "keyed time": sw.rolling(x, w, "var", timestamps=ts, keys=np.zeros(n, np.int64)),
        "two_stacks": sw.rolling(x, w, "var", algorithm="two_stacks"),
        "slideside": sw.rolling(x, w, "var", algorithm="slideside"),
        "many": sw.rolling_many(x, [w, 7], "var")[f"var_{w}"],
    }
    for name, got in paths.items():
        assert_same_list(got.to_pylist(), exact, rel=1e-12, abs_=0.0, what=name)
    out = sw.Stream(sw.Query("var", w, 10), value="v").push({"v": pa.array(x)})["var_100_10"]
    assert out.num_rows > 100
    for a, b, v in zip(*(out.column(c).to_pylist() for c in ("window_start", "window_end", "value"))):
        want = float(statistics.variance([int(u) for u in x[a:b]])) if b - a > 1 else None
        assert_same_list([v], [want], rel=1e-12, abs_=0.0, what=f"stream [{a}, {b})")


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


def edge_column(n, seed):
    """Normal data with nulls, NaN (alone and in runs), +-inf and signed
    zeros, the cases where algorithms could disagree."""
    rng = rng_for("edge_column", n, seed)
    x = rng.normal(0, 1, n)
    for v, p in [(math.nan, 0.01), (-0.0, 0.01), (0.0, 0.01), (math.inf, 0.002), (-math.inf, 0.002)]:
        x[rng.random(n) < p] = v
    x[n // 3: n // 3 + 60] = math.nan  # a run longer than the window below
    return pa.array(x, mask=rng.random(n) < 0.05)


EDGE_COLUMN = edge_column(3000, "every_algorithm")


@functools.lru_cache(maxsize=None)
def _auto_checked(agg):
    """auto's result on EDGE_COLUMN (window 50), checked against the oracle
    on every 7th row (all rows would take seconds) so that equal-to-auto
    also means right."""
    want = sw.rolling(EDGE_COLUMN, 50, agg).to_pylist()
    vals = EDGE_COLUMN.to_pylist()
    rows = range(0, len(vals), 7)
    pos = [list(range(max(0, i - 49), i + 1)) for i in rows]
    assert_same_list([want[i] for i in rows], [agg_window(agg, [vals[j] for j in p], p) for p in pos],
                     rel=1e-6 if agg == "geomean" else 1e-9, abs_=1e-9, what=f"{agg}/auto vs oracle")
    return want


@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
def test_every_algorithm_equals_auto(agg, algo):
    if algo == "soe" and agg not in INVERTIBLE:
        with pytest.raises(ValueError, match="soe.*" + agg):
            sw.rolling(EDGE_COLUMN, 50, agg, algorithm=algo)
        return
    got = sw.rolling(EDGE_COLUMN, 50, agg, algorithm=algo).to_pylist()
    assert_same_list(got, _auto_checked(agg), rel=1e-9, abs_=1e-9, what=f"{agg}/{algo}")


def test_float_sum_does_not_drift_over_a_long_stream():
    # Huge values pass through the window first; a naive subtract-on-evict
    # would leave their rounding errors behind in the small sums after them.
    rng = rng_for("no_drift")
    x = np.concatenate([rng.normal(0, 1, 2000) * 1e15, rng.normal(0, 1, 100_000)])
    want = np.array([math.fsum(x[max(0, i - 9): i + 1]) for i in range(len(x) - 500, len(x))])
    for algo in ["auto", "soe", "recalc"]:
        got = sw.rolling(x, 10, "sum", algorithm=algo).to_numpy()[-500:]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=algo)


def test_rolling_many_is_one_column_per_window():
    t = sw.rolling_many(ARR[:500], [2, 10, 100], "max")
    assert t.column_names == ["max_2", "max_10", "max_100"]
    for w in [2, 10, 100]:
        assert t.column(f"max_{w}").combine_chunks().equals(sw.rolling(ARR[:500], w, "max"))



@pytest.mark.parametrize("keyed", [False, True])
def test_rolling_many_with_several_aggregations_is_each_call_alone(keyed):
    """A list of aggregations: one column per (aggregation, window),
    aggregation-major, each equal to its own call (keyed: the rows grouped
    once for all, each column as rolling_many with that one aggregation)."""
    rng = rng_for("many_aggs", keyed)
    x = pa.array(rng.normal(0, 10, 3000), mask=rng.random(3000) < 0.05)
    keys = pa.array(rng.integers(0, 7, 3000)) if keyed else None
    aggs, ws = ["max", "mean", "std", "first", "argmin", "count"], [1, 5, 64]
    t = sw.rolling_many(x, ws, aggs, keys=keys, min_periods=1)
    assert t.column_names == [f"{a}_{w}" for a in aggs for w in ws]
    for a in aggs:
        alone = sw.rolling_many(x, ws, a, keys=keys, min_periods=1)
        for w in ws:
            assert t.column(f"{a}_{w}").equals(alone.column(f"{a}_{w}")), (a, w)
    with pytest.raises(ValueError, match="at least one aggregation"):
        sw.rolling_many(x, ws, [], keys=keys)
    with pytest.raises(ValueError, match="distinct"):
        sw.rolling_many(x, ws, ["max", "max"], keys=keys)
    with pytest.raises(ValueError, match="unknown"):
        sw.rolling_many(x, ws, ["max", "nope"], keys=keys)

# -- columns longer than every kernel's chunk ----------------------------------
#
# The auto kernels work in pieces: max/min look for NaN / -0.0 per chunk of
# about 4096 rows (switching to ordered keys in chunks that hold one, and in
# the chunk after), windows of 2**17 rows and more take a two-level kernel
# over 16384-row sub-blocks that gives up at the first sub-block holding a
# NaN or -0.0, and float sums run as four segments per group, a segment
# that meets a NaN / inf being redone. The columns below put NaN (sparse and
# in runs), -0.0 and nulls on both sides of those boundaries.

LONG_AGGS = ["max", "min", "range", "argmax", "argmin", "sum", "mean", "std"]
KINDS = ["plain", "neg0", "nan_sparse", "nan_runs"]


@functools.lru_cache(maxsize=None)
def long_column(n, kind, nulls, dtype):
    """(pyarrow column, float64 values, validity) of ``n`` rows: eighths in
    [-500, 500) (exact in float32 and in sums; many ties for argmax),
    ``kind`` of special values, 5% nulls if ``nulls``."""
    rng = rng_for("long_column", n, kind, nulls, dtype)
    x = rng.integers(-4000, 4000, n) / 8.0
    # Special values start past a few 4096-row chunks (and 16384-row
    # sub-blocks at 140_000 rows), so the fast paths run first and then
    # switch or give up; nan_runs also has NaN right at the start.
    late = int(n * 0.55)
    if kind == "neg0":
        x[late: late + 3000][rng.random(3000) < 0.2] = -0.0  # a stretch over a chunk edge
        x[late: late + 3000][rng.random(3000) < 0.2] = 0.0
    elif kind == "nan_sparse":
        x[[late, late + 1, n - 1]] = math.nan
        x[rng.integers(late, n, 5)] = math.nan
        if n < 2**17:
            x[[0, 4095, 4096]] = math.nan  # on a chunk edge
    elif kind == "nan_runs":
        x[100:150] = math.nan
        x[late: late + max(5000, n // 7)] = math.nan  # longer than a chunk (and a sub-block at 140k)
        x[n - 300: n - 290] = math.nan
    if kind != "plain":
        x[late:][rng.random(n - late) < 0.01] = -0.0
    valid = ~(rng.random(n) < 0.05) if nulls else np.ones(n, dtype=bool)
    x = x.astype(dtype).astype(np.float64)
    arr = pa.array(x.astype(dtype), mask=~valid if nulls else None)
    return arr, x, valid


def _values_and_nulls(a: pa.Array):
    """float64 values (0 where null) and the null mask of a result."""
    nulls = a.is_null().to_numpy(zero_copy_only=False)
    vals = a.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
    return vals, nulls


def _window_count(flags: np.ndarray, w: int) -> np.ndarray:
    """How many of ``flags`` lie in each row's window (i - w, i]."""
    c = np.concatenate([[0], np.cumsum(flags)])
    i = np.arange(1, len(flags) + 1)
    return c[i] - c[np.maximum(i - w, 0)]


def check_long_column_against_pandas(got, x, valid, w, what):
    """Every row, through pandas where its semantics agree with ours:
    pandas skips NaN as missing, so rows whose window holds a NaN are
    checked against the NaN rule instead (NaN for max/range/sum/mean/std,
    min NaN only when every value is NaN)."""
    n = len(x)
    isnan = np.isnan(x) & valid
    n_valid = _window_count(valid, w)
    n_nan = _window_count(isnan, w)
    r = pd.Series(np.where(valid, x, np.nan)).rolling(w, min_periods=1)
    hi, lo = r.max().to_numpy(), r.min().to_numpy()
    expect = {
        "max": np.where(n_nan > 0, np.nan, hi),
        "min": np.where(n_nan == n_valid, np.nan, lo),
        "sum": np.where(n_nan > 0, np.nan, r.sum().to_numpy()),
        "mean": np.where(n_nan > 0, np.nan, r.mean().to_numpy()),
        # variances: pandas' online algorithm leaves ~1e-12 where the exact
        # answer is 0; their square roots would count as errors
        "std": np.where(n_nan > 0, np.nan, r.var().to_numpy()),
    }
    expect["range"] = expect["max"] - expect["min"]
    for agg, want in expect.items():
        vals, nulls = _values_and_nulls(got[agg])
        want_null = n_valid < (2 if agg == "std" else 1)
        assert (nulls == want_null).all(), f"{what} {agg}: null at rows {np.flatnonzero(nulls != want_null)[:10]}"
        atol = 1e-9
        if agg == "std":
            # (pandas' residues grow with the data's scale, values**2 ~ 1e5)
            vals, atol = vals**2, 1e-6
        np.testing.assert_allclose(vals[~nulls], want[~nulls], rtol=1e-9, atol=atol, equal_nan=True,
                                   err_msg=f"{what} {agg}")
    # argmax / argmin (no pandas peer): a non-null row of the window holding
    # the max / min (ties to the oldest are checked on sampled rows)
    for agg, extreme in [("argmax", "max"), ("argmin", "min")]:
        idx, nulls = _values_and_nulls(got[agg])
        assert (nulls == (n_valid == 0)).all(), f"{what} {agg}"
        rows = np.flatnonzero(~nulls)
        idx = idx[rows].astype(np.int64)
        assert ((idx <= rows) & (idx > rows - w)).all() and valid[idx].all(), f"{what} {agg}: outside the window"
        m = _values_and_nulls(got[extreme])[0][rows]
        at = x[idx]
        ok = (at == m) | (np.isnan(at) & np.isnan(m))
        assert ok.all(), f"{what} {agg}: rows {rows[~ok][:10]} point at {at[~ok][:5]}, {extreme} is {m[~ok][:5]}"


def sample_rows(n, w, x, rng, k):
    """``k`` rows worth an exact check, drawn from those around the
    kernels' chunk, sub-block and block edges and every NaN run's ends."""
    marks = {0, n - 1, w - 1, w, 2 * w - 1, 2 * w}
    marks |= {k * 4096 for k in range(1, n // 4096 + 1)} | {k * 16384 for k in range(1, n // 16384 + 1)}
    nan = np.isnan(x)
    marks |= set(np.flatnonzero(nan[1:] != nan[:-1]).tolist())  # NaN run starts / ends
    marks |= {m + w for m in list(marks)}  # where the window's far end passes those rows
    rows = sorted({r + d for r in marks for d in (-1, 0, 1)} & set(range(n)))
    return sorted(rng.choice(rows, min(k, len(rows)), replace=False).tolist())


def check_long_column_against_oracle(got, x, valid, w, rows, what):
    # pandas has checked sum / mean / std on every row already: a few rows
    # of those here, more of the order statistics (numpy-fast in agg_rows)
    for agg in LONG_AGGS:
        vals = got[agg]
        for i in rows if agg not in ("sum", "mean", "std") else rows[::4]:
            want = agg_rows(x, valid, max(0, i - w + 1), i + 1, agg)
            if agg == "std" and want is not None and vals[i].as_py() is not None:
                g, want = vals[i].as_py() ** 2, want**2  # as above: compare variances
            else:
                g = vals[i].as_py()
            assert same(g, want, 1e-9, 1e-9), f"{what} {agg} row {i}: got {g!r}, want {want!r}"


# (n, window): around the 4096-row chunk, whole-column windows, and at 140_000
# rows the two-level kernel's threshold 2**17 and a window longer than the data
LONG_SHAPES = [(10_000, w) for w in [3, 4095, 4097, 10_000]] + [(140_000, 2**17), (140_000, 2**18)]


# float32 (whose NaN / -0.0 check reads 32-bit patterns) at 10_000 rows only
LONG_CASES = [(n, w, dtype, nulls) for n, w in LONG_SHAPES
              for dtype, nulls in [("float64", False), ("float64", True), ("float32", False)]
              if dtype == "float64" or n < 100_000]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,w,dtype,nulls", LONG_CASES)
def test_long_columns_with_nan_and_signed_zeros(n, w, dtype, nulls, kind):
    arr, x, valid = long_column(n, kind, nulls, dtype)
    what = f"{dtype} n={n} w={w} {kind} nulls={nulls}"
    got = {agg: sw.rolling(arr, w, agg) for agg in LONG_AGGS}
    check_long_column_against_pandas(got, x, valid, w, what)
    rows = sample_rows(n, w, x, rng_for("sample_rows", what), 24 if n < 100_000 else 8)
    check_long_column_against_oracle(got, x, valid, w, rows, what)


def test_the_vectorised_oracle_equals_the_plain_one():
    # agg_rows (numpy, for long windows) must be agg_values (plain Python)
    rng = rng_for("agg_rows")
    x = rng.integers(-3, 3, 400).astype(np.float64)
    for v in [math.nan, -0.0, math.inf, -math.inf]:
        x[rng.random(400) < 0.05] = v
    x[200:230] = math.nan
    valid = rng.random(400) > 0.1
    vals = [float(v) if ok else None for v, ok in zip(x, valid)]
    for lo, hi in [(0, 1), (0, 400), (190, 240), (205, 225), (3, 17), (390, 400)]:
        for agg in LONG_AGGS + ["maxcount", "first"]:
            want = agg_window(agg, vals[lo:hi], list(range(lo, hi)))
            assert same(agg_rows(x, valid, lo, hi, agg), want), (agg, lo, hi)


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
    x = rng_for("input_types").normal(0, 1, 1000)
    want = sw.rolling(pa.array(x), 7, "std")
    chunked = pa.chunked_array([x[:300], x[300:700], x[700:]])
    for inp in [x, list(x), pl.Series(x), chunked, pa.chunked_array([x]), pa.record_batch({"v": x}).column(0),
                pd.Series(x), pa.array(np.concatenate([[0.0], x]))[1:], CArray(pa.array(x)), CStream(chunked)]:
        got = sw.rolling(inp, 7, "std")
        if isinstance(inp, (pl.Series, pd.Series)):  # output follows input (test_frontends.py)
            # (pandas: the std of one value is null, NaN in pandas; x holds no NaN)
            got = pa.array(got, from_pandas=True) if isinstance(inp, pd.Series) else got.to_arrow()
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
        got = sw.rolling(a, 2, "max")
        assert got.type == wide and got.to_pylist() == [1, 2, 3], t


@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
def test_empty_input_gives_empty_result_of_the_right_type(agg):
    got = sw.rolling(pa.array([], pa.int32()), 3, agg)
    full = sw.rolling(pa.array([1], pa.int32()), 3, agg)
    assert len(got) == 0 and got.type == full.type
    assert len(sw.rolling([], 3, agg)) == 0


def test_threads_give_the_bits_of_one_thread(monkeypatch):
    """rolling() splits a column of 2^20 rows or more over threads, cutting
    only where the kernels restart: SLIDEWISE_THREADS=2 (read per call)
    gives the bits of SLIDEWISE_THREADS=1, nulls, NaN and -0.0 included."""
    import pyarrow.compute as pc

    rng = np.random.default_rng(15)
    n = (1 << 21) + 123
    x = rng.normal(size=n).cumsum()
    x[rng.integers(0, n, 50)] = np.nan
    x[rng.integers(0, n, 50)] = -0.0
    valid = rng.random(n) > 0.05
    arr = pa.array(x, mask=~valid)
    for agg in ("mean", "std", "max"):
        for w in (16, 70_000):
            for col in (arr, pa.array(x)):
                monkeypatch.setenv("SLIDEWISE_THREADS", "1")
                one = sw.rolling(col, w, agg)
                monkeypatch.setenv("SLIDEWISE_THREADS", "2")
                two = sw.rolling(col, w, agg)
                assert pc.is_null(one).equals(pc.is_null(two))
                a = one.to_numpy(zero_copy_only=False)
                b = two.to_numpy(zero_copy_only=False)
                assert np.array_equal(a.view(np.uint64), b.view(np.uint64)), (agg, w, col.null_count)


def test_large_outputs_kept_by_the_allocator_come_back_clean():
    """The extension keeps the last large blocks freed (rust/python
    src/alloc.rs) and hands them to the next call of the same size: a kept
    block must never be handed out twice nor show an earlier call's rows.
    Outputs of 3M rows (24 MB, above the 16 MB threshold) of two columns,
    some kept alive, some freed between calls, each checked against pandas
    (same as `test_matches_pandas`, nulls too)."""
    n = 3_000_000
    rng = np.random.default_rng(7)
    xs = [rng.normal(size=n), rng.normal(size=n) * 1e3 + 5]
    masks = [None, rng.random(n) < 0.05]
    want = {}
    for i, (x, m) in enumerate(zip(xs, masks)):
        s = pd.Series(np.where(m, np.nan, x) if m is not None else x)
        for agg in ("sum", "max", "std", "count"):
            want[i, agg] = getattr(s.rolling(50, min_periods=1), agg)().to_numpy()

    def check(key, got):
        g = got.to_numpy(zero_copy_only=False).astype(float)
        w = want[key]
        if key[1] == "count":
            w = np.nan_to_num(w)  # slidewise counts 0 where pandas gives NaN
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=str(key))

    alive = []
    for rnd in range(3):
        for i, (x, m) in enumerate(zip(xs, masks)):
            for agg in ("sum", "max", "std", "count"):
                got = sw.rolling(pa.array(x, mask=m), 50, agg)
                check((i, agg), got)
                alive.append(((i, agg), got))
                if rnd < 2:
                    alive = alive[-3:]  # the rest freed: their blocks kept
    for key, got in alive:  # no later call wrote into a live output
        check(key, got)
