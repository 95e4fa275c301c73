"""Front ends (docs/pandas.md, docs/DESIGN.md §5.3, §5.9): output follows input
(polars, pandas, pyarrow), the NaN policy (``nan="skip"`` equals pandas and
bottleneck), the pandas accessor against pandas' own rolling, and errors."""

import pickle
import subprocess
import sys

import bottleneck as bn
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import slidewise as sw
import slidewise.pandas  # noqa: F401  (registers .sw)
from slidewise import _convert

# Values: small integers as floats (exact sums), a few wide ones, NaN and
# None (a null for pyarrow / polars, NaN for a numpy-backed pandas Series).
VALUE = st.one_of(st.integers(-50, 50).map(float), st.floats(-1e6, 1e6, allow_nan=False),
                  st.just(float("nan")), st.none())
VALUES = st.lists(VALUE, min_size=0, max_size=30)

# every rolling aggregation pandas has that slidewise has too
PANDAS_AGGS = ["sum", "mean", "min", "max", "std", "var", "count", "median", "quantile", "first", "last"]


def _np(xs):
    return np.array([np.nan if v is None else v for v in xs], dtype=np.float64)


def _same(a: pa.Array, b: pa.Array) -> bool:
    """Equal type, nulls and values, NaN equal to NaN (Array.equals is IEEE)."""
    def norm(xs):
        return [("nan" if isinstance(v, float) and v != v else v) for v in xs]
    return a.type == b.type and norm(a.to_pylist()) == norm(b.to_pylist())


def _index(n, kind):
    if kind == "range":
        return pd.RangeIndex(n)
    if kind == "shuffled":
        return pd.Index(np.random.default_rng(n).permutation(np.arange(100, 100 + 3 * n, 3)))
    return pd.Index([f"r{i}" for i in range(n)])


def _pandas_call(r, agg, ddof=1):
    if agg == "quantile":
        return r.quantile(0.3, interpolation="linear")
    if agg in ("std", "var"):
        return getattr(r, agg)(ddof=ddof)
    return getattr(r, agg)()


def _close(got: pd.Series, want: pd.Series, x):
    # var / std cancel: pandas' online update and slidewise's differ by
    # rounding of order eps * max|x|^2
    scale = max(1.0, float(np.nanmax(np.abs(x))) if len(x) and not np.isnan(x).all() else 1.0)
    pd.testing.assert_index_equal(got.index, want.index)
    assert got.name == want.name
    np.testing.assert_allclose(got.to_numpy(dtype=np.float64, na_value=np.nan), want.to_numpy(dtype=np.float64),
                               rtol=1e-7, atol=1e-7 * scale * scale, equal_nan=True)


# -- the pandas accessor equals pandas ---------------------------------------------


@settings(max_examples=40, deadline=None)
@given(xs=VALUES, w=st.integers(1, 8), mp=st.one_of(st.none(), st.integers(0, 8)),
       agg=st.sampled_from(PANDAS_AGGS), index=st.sampled_from(["range", "shuffled", "str"]))
def test_accessor_equals_pandas_rolling(xs, w, mp, agg, index):
    mp = None if mp is None else min(mp, w)
    x = _np(xs)
    s = pd.Series(x, index=_index(len(x), index), name="v")
    kw = {"q": 0.3} if agg == "quantile" else {}
    got = s.sw.rolling(w, agg, min_periods=mp, **kw)
    want = _pandas_call(s.rolling(w, min_periods=mp), agg)
    _close(got, want, x)


@settings(max_examples=25, deadline=None)
@given(xs=VALUES, w=st.integers(1, 6), mp=st.integers(0, 6), agg=st.sampled_from(["sum", "mean", "max", "std", "count"]),
       ddof=st.sampled_from([0, 1]), data=st.data())
def test_accessor_keyed_equals_groupby_rolling(xs, w, mp, agg, ddof, data):
    mp = min(mp, w)
    x = _np(xs)
    k = data.draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=len(x), max_size=len(x)))
    df = pd.DataFrame({"k": k, "v": x}, index=_index(len(x), "shuffled"))
    got = df.sw.rolling("v", w, agg, keys="k", min_periods=mp, ddof=ddof)
    want = _pandas_call(df.groupby("k")["v"].rolling(w, min_periods=mp), agg, ddof)
    want = want.droplevel(0).reindex(df.index) if len(df) else pd.Series([], dtype=np.float64, name="v")
    _close(got, want.rename("v").set_axis(df.index), x)
    # the Series form with keys= gives the same
    _close(df["v"].sw.rolling(w, agg, keys=df["k"], min_periods=mp, ddof=ddof), got, x)


@settings(max_examples=20, deadline=None)
@given(xs=VALUES, gaps=st.lists(st.integers(0, 3), min_size=30, max_size=30), span=st.integers(1, 5),
       agg=st.sampled_from(["sum", "mean", "min", "max", "var", "count"]))
def test_accessor_time_window_equals_pandas(xs, gaps, span, agg):
    x = _np(xs)
    ts = pd.to_datetime(np.cumsum(gaps[:len(x)]), unit="s")
    s = pd.Series(x, index=pd.DatetimeIndex(ts), name="v")
    _close(s.sw.rolling(f"{span}s", agg), _pandas_call(s.rolling(f"{span}s"), agg), x)
    df = pd.DataFrame({"t": ts, "v": x}, index=_index(len(x), "str"))
    want = _pandas_call(df.rolling(f"{span}s", on="t")["v"], agg)
    _close(df.sw.rolling("v", pd.Timedelta(seconds=span), agg, on="t"), want, x)


def test_accessor_defaults_are_pandas_defaults():
    s = pd.Series([1.0, np.nan, 3.0, 4.0])
    # min_periods = window: null until the window is full; NaN skipped
    assert np.isnan(s.sw.rolling(2, "sum").iloc[:3]).all() and s.sw.rolling(2, "sum").iloc[3] == 7.0
    # the empty window's sum is 0 with min_periods=0, as pandas
    assert pd.Series([np.nan, np.nan]).sw.rolling(1, "sum", min_periods=0).tolist() == [0.0, 0.0]
    # nan="propagate" asks for Spark's rule in the accessor too
    assert np.isnan(s.sw.rolling(2, "sum", nan="propagate").iloc[1:3]).all()


# -- nan="skip" equals bottleneck; "propagate" is unchanged ---------------------------


@settings(max_examples=30, deadline=None)
@given(xs=st.lists(VALUE, min_size=1, max_size=30), w=st.integers(1, 8), mp=st.integers(1, 8),
       agg=st.sampled_from(["sum", "mean", "std", "var", "min", "max", "median"]))
def test_skip_equals_bottleneck(xs, w, mp, agg):
    w = min(w, len(xs))  # bottleneck refuses a window longer than the data
    mp = min(mp, w)
    if agg in ("std", "var"):
        # bottleneck divides by n - 1 = 0 for one value (inf or NaN); both
        # give null / NaN below 2 values, so compare from 2 on
        assume(w >= 2)
        mp = max(mp, 2)
    x = _np(xs)
    fn = getattr(bn, f"move_{agg}")
    want = fn(x, w, min_count=mp, **({"ddof": 1} if agg in ("std", "var") else {}))
    got = sw.rolling(x, w, agg, min_periods=mp, nan="skip").to_numpy(zero_copy_only=False)
    scale = max(1.0, float(np.nanmax(np.abs(x)))) if len(x) and not np.isnan(x).all() else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-7, atol=1e-7 * scale * scale, equal_nan=True)


@settings(max_examples=30, deadline=None)
@given(xs=VALUES, w=st.integers(1, 6), agg=st.sampled_from(sorted(set(sw.AGGS) - {"collect"})))
def test_skip_is_nan_as_null_and_propagate_is_the_old_answer(xs, w, agg):
    # every aggregation, order statistics included (quantile needs its q)
    kw = {"q": 0.3} if agg == "quantile" else {}
    x = pa.array(xs, type=pa.float64())
    nulled = pa.array([None if v is None or v != v else v for v in xs], type=pa.float64())
    assert _same(sw.rolling(x, w, agg, nan="skip", **kw), sw.rolling(nulled, w, agg, **kw))
    assert _same(sw.rolling(x, w, agg, nan="propagate", **kw), sw.rolling(x, w, agg, **kw))
    many = sw.rolling_many(x, [1, w + 1], agg, nan="skip", **kw)
    want = sw.rolling_many(nulled, [1, w + 1], agg, **kw)
    assert many.column_names == want.column_names
    assert all(_same(a.combine_chunks(), b.combine_chunks()) for a, b in zip(many.columns, want.columns))


def test_apply_nan_policy_copies_only_the_bitmap():
    x = np.array([1.0, np.nan, 3.0, np.nan])
    a = pa.array(x, mask=np.array([False, False, True, False]))
    out = _convert.apply_nan_policy(a, "skip")
    assert out.buffers()[1].address == a.buffers()[1].address  # the values are shared
    assert out.to_pylist() == [1.0, None, None, None]
    assert _convert.apply_nan_policy(a, "propagate") is a
    clean = pa.array([1.0, 2.0])
    assert _convert.apply_nan_policy(clean, "skip") is clean  # no NaN: nothing made
    ints = pa.array([1, None])
    assert _convert.apply_nan_policy(ints, "skip") is ints
    sliced = pa.array([np.nan, 1.0, np.nan, 2.0])[1:]  # an offset: the copying path
    assert _convert.apply_nan_policy(sliced, "skip").to_pylist() == [1.0, None, 2.0]
    # no NaN, though the quick sum test is NaN (inf - inf, a NaN under a null,
    # a NaN before the slice): the column as it is
    for a in (pa.array([1.0, np.inf, -np.inf]), pa.array(x, mask=np.isnan(x)), pa.array([np.nan, 1.0])[1:],
              pa.array([np.float32(np.nan), np.float32(2)], type=pa.float32())[1:]):
        assert _convert.apply_nan_policy(a, "skip") is a
    f32 = pa.array([np.float32(2), np.float32(np.nan)], type=pa.float32())
    assert _convert.apply_nan_policy(f32, "skip").to_pylist() == [2.0, None]


# -- output follows input -----------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(xs=VALUES, w=st.integers(1, 6), agg=st.sampled_from(["sum", "max", "count", "argmax", "std"]),
       index=st.sampled_from(["range", "shuffled", "str"]), nan=st.sampled_from(["propagate", "skip"]))
def test_pandas_in_pandas_out(xs, w, agg, index, nan):
    x = _np(xs)
    s = pd.Series(x, index=_index(len(x), index), name="price")
    got = sw.rolling(s, w, agg, nan=nan)
    want = sw.rolling(x, w, agg, nan=nan)  # numpy in: pyarrow out, NaN kept as NaN
    assert isinstance(got, pd.Series) and got.name == "price"
    pd.testing.assert_index_equal(got.index, s.index)
    # nulls become NaN; an integer result with a null becomes float64
    np.testing.assert_array_equal(got.to_numpy(dtype=np.float64),
                                  want.to_numpy(zero_copy_only=False).astype(np.float64))
    if want.null_count == 0 and pa.types.is_integer(want.type):
        assert got.dtype == np.int64
    many = sw.rolling_many(s, [1, w + 1], agg, nan=nan)
    assert isinstance(many, pd.DataFrame) and list(many.columns) == [f"{agg}_1", f"{agg}_{w + 1}"]
    pd.testing.assert_index_equal(many.index, s.index)
    np.testing.assert_array_equal(many[f"{agg}_{w + 1}"].to_numpy(dtype=np.float64),
                                  sw.rolling(s, w + 1, agg, nan=nan).to_numpy(dtype=np.float64))


def test_pandas_nullable_dtypes_give_nullable_results():
    # Float64 / Int64 (masked): a null is pd.NA (pandas 3 makes a NaN NA too)
    s = pd.Series([1.0, None, 4.0], dtype="Float64", index=[7, 8, 9])
    got = sw.rolling(s, 1, "max")
    assert str(got.dtype) == "Float64" and got.isna().tolist() == [False, True, False]
    assert got.index.tolist() == [7, 8, 9]
    c = sw.rolling(pd.Series([1, None, 3], dtype="Int64"), 1, "sum")
    assert str(c.dtype) == "Int64" and c.isna().tolist() == [False, True, False] and c.iloc[2] == 3
    # ArrowDtype keeps null and NaN apart, in and out
    a = sw.rolling(pd.Series(pa.array([1.0, None, float("nan")]), dtype="float64[pyarrow]"), 1, "max")
    assert isinstance(a.dtype, pd.ArrowDtype) and a.iloc[1] is pd.NA and np.isnan(a.iloc[2])
    skip = sw.rolling(pd.Series(pa.array([float("nan"), 1.0]), dtype="float64[pyarrow]"), 2, "max", nan="skip")
    assert skip.iloc[0] is pd.NA and skip.iloc[1] == 1.0


def test_pandas_step_keeps_every_step_th_label():
    s = pd.Series(np.arange(7.0), index=list("abcdefg"))
    got = sw.rolling(s, 2, "sum", step=3, min_periods=1)
    pd.testing.assert_series_equal(got, s.rolling(2, min_periods=1, step=3).sum())


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(st.one_of(st.none(), st.floats(-100, 100, allow_nan=False), st.just(float("nan"))), max_size=30),
       w=st.integers(1, 6), name=st.sampled_from(["", "x", "a b"]))
def test_polars_in_polars_out(xs, w, name):
    s = pl.Series(name, xs, dtype=pl.Float64)
    for agg in ("sum", "min", "count"):
        got = sw.rolling(s, w, agg)
        assert isinstance(got, pl.Series) and got.name == name
        assert _same(got.to_arrow(), sw.rolling(s.to_arrow(), w, agg))  # nulls stay nulls, NaN NaN
    many = sw.rolling_many(s, [1, w + 1], ["mean", "max"], nan="skip")
    assert isinstance(many, pl.DataFrame) and many.columns == ["mean_1", f"mean_{w + 1}", "max_1", f"max_{w + 1}"]
    want = sw.rolling_many(s.to_arrow(), [1, w + 1], ["mean", "max"], nan="skip")
    assert all(_same(many[c].to_arrow(), want[c].combine_chunks()) for c in want.column_names)


@pytest.mark.parametrize("agg", ["sum", "mean", "min", "max", "std", "var"])
def test_polars_out_equals_polars_rolling_with_nulls(agg):
    rng = np.random.default_rng(17)
    s = pl.Series("v", rng.normal(0, 1, 300)).scatter(rng.integers(0, 300, 60), None)
    got = sw.rolling(s, 9, agg, min_periods=9)
    want = getattr(s, f"rolling_{agg}")(9)
    assert got.name == "v" and got.is_null().to_list() == want.is_null().to_list()
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_numeric_results_are_not_copied():
    res = pa.array(np.arange(5.0))
    addr = res.buffers()[1].address
    p = _convert.series_out(res, pd.Series(np.zeros(5), index=list("abcde")))
    assert p.to_numpy().ctypes.data == addr
    q = _convert.series_out(res, pl.Series("v", np.zeros(5)))
    assert q.to_numpy().ctypes.data == addr
    t = _convert.frame_out(pa.table({"a": res}), pd.Series(np.zeros(5)))
    assert t["a"].to_numpy().ctypes.data == addr


def test_other_inputs_give_pyarrow():
    x = np.array([1.0, 2.0, 3.0])
    for inp in (x, list(x), pa.array(x), pa.chunked_array([x])):
        assert isinstance(sw.rolling(inp, 2, "sum"), pa.Array)
        assert isinstance(sw.rolling_many(inp, [2], "sum"), pa.Table)


def test_polars_is_imported_only_for_polars_input():
    code = ("import sys, numpy as np, slidewise as sw\n"
            "assert 'pandas' not in sys.modules\n"
            "sw.rolling(np.arange(5.0), 2, 'sum', nan='skip'); sw.rolling_many(np.arange(5.0), [2], 'sum')\n"
            "st = sw.Stream(sw.Query('sum', 2, 1)); st.push({'v': np.arange(3.0)}); st.flush()\n"
            "assert 'polars' not in sys.modules, 'polars imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- Stream ------------------------------------------------------------------------


def test_stream_output_and_nan_policy():
    x = np.array([1.0, np.nan, 3.0, 4.0, np.nan, 6.0, 7.0])
    q = [sw.Query("sum", 3, 2), sw.Query("max", 2, 1)]
    arrow = sw.Stream(q)
    want = arrow.push({"v": pa.array([1.0, None, 3.0, 4.0, None, 6.0, 7.0])})
    want_flush = arrow.flush()
    for output, frame in (("polars", pl.DataFrame), ("pandas", pd.DataFrame)):
        stream = sw.Stream(q, nan="skip", output=output)
        stream = pickle.loads(pickle.dumps(stream))  # the options survive a checkpoint
        got, got_flush = stream.push(pd.DataFrame({"v": x})), stream.flush()  # NaN of a pandas frame kept as NaN
        for name in want:
            for g, w in ((got[name], want[name]), (got_flush[name], want_flush[name])):
                assert isinstance(g, frame)
                back = pa.Table.from_pandas(g, preserve_index=False) if output == "pandas" else g.to_arrow()
                assert back.cast(w.schema).equals(w)
    # propagate (default): the NaN is a value
    assert np.isnan(sw.Stream(q).push(pd.DataFrame({"v": x}))["max_2_1"]["value"][1].as_py())


def test_stream_late_rows_follow_output():
    s = sw.Stream(sw.Query("sum", "2s", "2s"), time="ts", lateness="1s", output="polars")
    s.push({"ts": pa.array([5_000], pa.timestamp("ms")), "v": [1.0]})
    s.push({"ts": pa.array([1_000], pa.timestamp("ms")), "v": [2.0]})  # behind the watermark (4 s)
    late = s.late_rows()
    assert isinstance(late, pl.DataFrame) and late["v"].to_list() == [2.0]


# -- errors ------------------------------------------------------------------------


def test_errors():
    x = pd.Series([1.0, 2.0])
    for bad in ("foo", None, True, "SKIP"):
        with pytest.raises(ValueError, match="nan must be"):
            sw.rolling([1.0], 1, nan=bad)
        with pytest.raises(ValueError, match="nan must be"):
            sw.rolling_many([1.0], [1], nan=bad)
        with pytest.raises(ValueError, match="nan must be"):
            sw.Stream(sw.Query("sum", 2, 1), nan=bad)
        with pytest.raises(ValueError, match="nan must be"):
            x.sw.rolling(1, nan=bad)
    with pytest.raises(ValueError, match="output must be"):
        sw.Stream(sw.Query("sum", 2, 1), output="numpy")
    with pytest.raises(TypeError, match="pandas DataFrame"):
        sw.rolling(pd.DataFrame({"v": [1.0]}), 1)
    with pytest.raises(TypeError, match="unsupported values dtype"):
        sw.rolling(pd.Series(["a", "b"]), 1)
    with pytest.raises(ValueError, match="move_rank"):
        x.sw.rolling(2, "rank")
    with pytest.raises(ValueError, match="ddof"):
        x.sw.rolling(2, "std", ddof=2)
    with pytest.raises(ValueError, match="DatetimeIndex"):
        x.sw.rolling("2s", "sum")
    with pytest.raises(ValueError, match="not a fixed time span"):
        pd.DataFrame({"v": [1.0], "t": pd.to_datetime([0])}).sw.rolling("v", pd.offsets.MonthBegin(1), on="t")
    with pytest.raises(ValueError, match="no column 'w'"):
        pd.DataFrame({"v": [1.0]}).sw.rolling("w", 1)
    with pytest.raises(ValueError, match="on= is for time windows"):
        pd.DataFrame({"v": [1.0], "t": pd.to_datetime([0])}).sw.rolling("v", 1, on="t")
