"""Window shape on sw.rolling (pandas' closed=, center=, step=): against
pandas' own window bounds (every aggregation, dtype and algorithm, through
the naive oracle, nulls and NaN included), against pandas' aggregations
(count and time windows, keyed and not), and the errors."""

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pandas.core.indexers.objects import FixedWindowIndexer, VariableWindowIndexer

import slidewise as sw
from conftest import valid_algos
from oracle import _over, assert_same_list, elements

CLOSED = ["right", "left", "both", "neither"]
# Every rolling aggregation pandas has that slidewise has too.
PANDAS_AGGS = ["sum", "mean", "max", "min", "count", "std", "var", "std_pop", "var_pop"]


def count_bounds(n, w, closed, center, step):
    """pandas' own count-window bounds ([start, end) per output row)."""
    s, e = FixedWindowIndexer(window_size=w).get_window_bounds(n, None, center, closed, step)
    return list(zip(s.tolist(), e.tolist()))


def time_bounds(ts, span, closed, center):
    """pandas' own time-window bounds (VariableWindowIndexer over int64 times)."""
    if len(ts) == 0:
        return []
    s, e = VariableWindowIndexer(index_array=np.asarray(ts, dtype=np.int64), window_size=span).get_window_bounds(
        len(ts), None, center, closed, None)
    return list(zip(s.tolist(), e.tolist()))


def oracle(values, bounds, agg, mp):
    return [_over(values, range(a, max(a, b)), agg, mp) for a, b in bounds]


# -- every aggregation x dtype x algorithm, pandas' bounds, the naive oracle ----

@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "float32"])
@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
@settings(max_examples=20, deadline=None)
@given(data=st.data(), window=st.integers(1, 9), closed=st.sampled_from(CLOSED), center=st.booleans(),
       step=st.one_of(st.just(1), st.integers(1, 12), st.integers(20, 90)))
def test_count_shape_matches_pandas_bounds(data, agg, dtype, window, closed, center, step):
    xs = data.draw(st.lists(elements(agg, dtype), max_size=40), label="xs")
    mp = data.draw(st.one_of(st.none(), st.integers(0, window)), label="min_periods")
    arr = pa.array(xs, type=pa.from_numpy_dtype(np.dtype(dtype)))
    vals = arr.to_pylist()
    want = oracle(vals, count_bounds(len(vals), window, closed, center, step), agg, mp)
    for algo in valid_algos(agg):
        got = sw.rolling(arr, window, agg, min_periods=mp, algorithm=algo, closed=closed, center=center,
                         step=step).to_pylist()
        assert_same_list(got, want, rel=1e-6 if agg == "geomean" else 1e-9, abs_=1e-9,
                         what=f"{agg}/{dtype} w={window} {closed} center={center} step={step} mp={mp} {algo}")


@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), span=st.integers(1, 8), closed=st.sampled_from(CLOSED), center=st.booleans())
def test_time_shape_matches_pandas_bounds(data, agg, span, closed, center):
    xs = data.draw(st.lists(elements(agg, "float64"), max_size=30), label="xs")
    gaps = data.draw(st.lists(st.integers(0, 3), min_size=len(xs), max_size=len(xs)), label="gaps")
    base = data.draw(st.sampled_from([0, -7, 2**60 + 1]), label="base")
    ts = (base + np.cumsum(gaps)).tolist() if xs else []
    mp = data.draw(st.one_of(st.none(), st.integers(0, 4)), label="min_periods")
    want = oracle(xs, time_bounds(ts, span, closed, center), agg, mp)
    tcol = pa.array(ts, type=pa.int64())
    for algo in valid_algos(agg):
        got = sw.rolling(pa.array(xs, type=pa.float64()), span, agg, timestamps=tcol, min_periods=mp,
                         algorithm=algo, closed=closed, center=center).to_pylist()
        assert_same_list(got, want, abs_=1e-9, what=f"{agg} span={span} {closed} center={center} mp={mp} {algo}")


# -- the aggregations themselves against pandas ---------------------------------

def _pandas_agg(r, agg):
    if agg == "count":
        # pandas applies min_periods to count by rows, not by non-null
        # values (test_rolling compares count with min_periods=None too):
        # the caller compares count with min_periods 0 / None.
        return r.count()
    if agg.endswith("_pop"):
        return getattr(r, agg[:3])(ddof=0)
    return getattr(r, agg)()


# pandas' var/std update running sums of squares: its error is absolute, up
# to a few ulps of sum(x^2) over the rows it has seen (<= 60 values of
# |x| <= 1e3 here), not relative to the variance. So var is compared with
# that absolute bound, and std through its square (near zero variance a
# drift of 1e-14 in var is 1e-7 in std: hypothesis found pandas' std_pop
# 1.7e-7 off an exact 0).
_VAR_ATOL = 64 * np.finfo(np.float64).eps * 60 * 1e3 ** 2


def _cmp(got: pa.Array, want: pd.Series, what, agg=None):
    g = got.to_numpy(zero_copy_only=False).astype(np.float64)
    w = want.to_numpy(dtype=np.float64)
    assert len(g) == len(w), what
    if agg in ("std", "std_pop"):
        g, w = g * g, w * w
    atol = _VAR_ATOL if agg in ("std", "std_pop", "var", "var_pop") else 1e-9
    np.testing.assert_allclose(g, w, rtol=1e-9, atol=atol, equal_nan=True, err_msg=what)


finite = st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: round(v, 3)))


@settings(max_examples=150, deadline=None)
@given(xs=st.lists(finite, max_size=60), window=st.integers(1, 12), closed=st.sampled_from(CLOSED),
       center=st.booleans(), step=st.one_of(st.just(1), st.integers(1, 70)), agg=st.sampled_from(PANDAS_AGGS),
       data=st.data())
def test_count_windows_equal_pandas(xs, window, closed, center, step, agg, data):
    # min_periods passed to both (pandas defaults to window, slidewise to
    # partial windows); >= 1 because slidewise's sum of no values is null
    # where pandas' is 0.
    mp = data.draw(st.integers(1, window), label="min_periods")
    mp, swmp = (0, None) if agg == "count" else (mp, mp)
    s = pd.Series([np.nan if v is None else v for v in xs], dtype=np.float64)
    want = _pandas_agg(s.rolling(window, min_periods=mp, closed=closed, center=center, step=step), agg)
    got = sw.rolling(pa.array(xs, type=pa.float64()), window, agg, min_periods=swmp, closed=closed, center=center,
                     step=step)
    _cmp(got, want, f"{agg} w={window} {closed} center={center} step={step} mp={mp}", agg)


def _times(gaps):
    return pd.to_datetime(np.cumsum(gaps), unit="s")


@settings(max_examples=150, deadline=None)
@given(data=st.data(), span=st.integers(1, 6), closed=st.sampled_from(CLOSED), center=st.booleans(),
       agg=st.sampled_from(PANDAS_AGGS))
def test_time_windows_equal_pandas(data, span, closed, center, agg):
    xs = data.draw(st.lists(finite, max_size=50), label="xs")
    gaps = data.draw(st.lists(st.integers(0, 3), min_size=len(xs), max_size=len(xs)), label="gaps")
    mp = data.draw(st.integers(1, 4), label="min_periods")
    mp, swmp = (0, None) if agg == "count" else (mp, mp)
    df = pd.DataFrame({"t": _times(gaps), "x": np.array([np.nan if v is None else v for v in xs], dtype=np.float64)})
    want = _pandas_agg(df.rolling(f"{span}s", on="t", min_periods=mp, closed=closed, center=center).x, agg)
    got = sw.rolling(pa.array(xs, type=pa.float64()), f"{span}s", agg, timestamps=df.t, min_periods=swmp,
                     closed=closed, center=center)
    _cmp(got, want, f"{agg} {span}s {closed} center={center} mp={mp}", agg)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), window=st.one_of(st.integers(1, 8), st.integers(9, 40)), closed=st.sampled_from(CLOSED), center=st.booleans(),
       agg=st.sampled_from(PANDAS_AGGS), time=st.booleans())
def test_keyed_equals_pandas_groupby_rolling(data, window, closed, center, agg, time):
    """Short keys run batched (one padded column, or restarted per key);
    windows up to 40 rows are wider than most keys."""
    xs = data.draw(st.lists(finite, max_size=50), label="xs")
    n = len(xs)
    ks = data.draw(st.lists(st.integers(0, data.draw(st.sampled_from([3, 12]))), min_size=n, max_size=n), label="keys")
    mp = data.draw(st.integers(1, window), label="min_periods")
    mp, swmp = (0, None) if agg == "count" else (mp, mp)
    x = np.array([np.nan if v is None else v for v in xs], dtype=np.float64)
    df = pd.DataFrame({"k": ks, "x": x})
    if time:
        # times non-decreasing in input order, so within each key too
        gaps = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="gaps")
        df["t"] = _times(gaps)
        # aggregate the frame, then pick "x": pandas 3 indexes a
        # Series-level rolling(on=) result by the times (as test_keys)
        r = df.groupby("k")[["t", "x"]].rolling(f"{window}s", on="t", min_periods=mp, closed=closed, center=center)
        want = _pandas_agg(r, agg)["x"]
        got = sw.rolling(pa.array(xs, type=pa.float64()), f"{window}s", agg, keys=ks, timestamps=df.t,
                         min_periods=swmp, closed=closed, center=center)
    else:
        want = _pandas_agg(df.groupby("k").rolling(window, min_periods=mp, closed=closed, center=center).x, agg)
        got = sw.rolling(pa.array(xs, type=pa.float64()), window, agg, keys=ks, min_periods=swmp, closed=closed,
                         center=center)
    if n:
        want = want.droplevel(0).sort_index()
    else:
        want = pd.Series([], dtype=np.float64)
    _cmp(got, want, f"{agg} w={window} {closed} center={center} time={time} mp={mp}", agg)


@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), window=st.one_of(st.integers(1, 6), st.integers(7, 30)), closed=st.sampled_from(CLOSED),
       center=st.booleans())
def test_keyed_shape_matches_pandas_bounds_per_key(data, agg, window, closed, center):
    """Every aggregation, keyed, against pandas' own bounds over each
    key's rows and the naive oracle: short keys run batched (a padded
    column, restarted per key, first / last gathered, a centred rank
    clipped to its key), nulls and NaN included; argmax / argmin give
    input rows."""
    xs = data.draw(st.lists(elements(agg, "float64"), max_size=45), label="xs")
    n = len(xs)
    ks = data.draw(st.lists(st.integers(0, data.draw(st.sampled_from([2, 9]))), min_size=n, max_size=n), label="keys")
    mp = data.draw(st.one_of(st.none(), st.integers(0, window)), label="min_periods")
    got = sw.rolling(pa.array(xs, type=pa.float64()), window, agg, keys=ks, min_periods=mp, closed=closed,
                     center=center).to_pylist()
    want = [None] * n
    for k in set(ks):
        rows = [i for i, x in enumerate(ks) if x == k]
        vals = [xs[i] for i in rows]
        alone = oracle(vals, count_bounds(len(vals), window, closed, center, 1), agg, mp)
        for j, i in enumerate(rows):
            w = alone[j]
            if agg in ("argmax", "argmin") and w is not None:
                w = rows[w]  # positions within the key are input rows
            want[i] = w
    assert_same_list(got, want, rel=1e-6 if agg == "geomean" else 1e-9, abs_=1e-9,
                     what=f"{agg} w={window} {closed} center={center} mp={mp}")


def test_huge_windows_equal_a_window_past_every_row():
    """A window longer than the column (up to 2^63 - 1 rows) gives what a
    window reaching past every row gives, for every aggregation, shape and
    key layout: no crash (a centred tail once padded `window / 2` rows), no
    overflow of the offsets, nothing sized by the window."""
    x = pa.array([1.0, None, 3.0, 2.0, 5.0, float("nan")])
    k = [0, 0, 1, 0, 1, 1]
    shapes = [{}, {"center": True}, {"closed": "left"}, {"closed": "both", "center": True},
              {"closed": "neither", "center": True}, {"step": 2}]
    for w in (2**40, 2**63 - 1):
        for kw in shapes + [dict(s, keys=k) for s in shapes if "step" not in s]:
            for agg in sw.MONOID_AGGS + ("median", "rank"):
                for mp in (None, 2):
                    want = sw.rolling(x, 2 * len(x) + 1, agg, min_periods=mp, **kw).to_pylist()
                    got = sw.rolling(x, w, agg, min_periods=mp, **kw).to_pylist()
                    assert str(got) == str(want), (w, kw, agg, mp)
        many = sw.rolling_many(x, [w, 3], ["first", "sum", "max"], keys=k)
        ref = sw.rolling_many(x, [2 * len(x) + 1, 3], ["first", "sum", "max"], keys=k)
        assert [str(c.to_pylist()) for c in many.columns] == [str(c.to_pylist()) for c in ref.columns]


def test_keyed_argmax_gives_input_rows_with_a_shape():
    x = [5.0, 1.0, 7.0, 2.0, 6.0, 3.0]
    k = [0, 1, 0, 1, 0, 1]
    got = sw.rolling(x, 2, "argmax", keys=k, closed="left").to_pylist()
    # key 0 rows 0, 2, 4; key 1 rows 1, 3, 5; the two rows before each
    assert got == [None, None, 0, 1, 2, 3]
    got = sw.rolling(x, 3, "argmax", keys=k, center=True).to_pylist()
    assert got == [2, 3, 2, 5, 2, 5]


# -- a long column: the padded fast kernels against the FIFO path ----------------

@pytest.mark.parametrize("agg", ["sum", "mean", "max", "min", "std", "count", "argmin", "first", "last_ignore_nulls"])
@pytest.mark.parametrize("closed", CLOSED)
@pytest.mark.parametrize("center", [False, True])
def test_long_column_fast_path_equals_fifo(agg, closed, center):
    rng = np.random.default_rng(7)
    x = pa.array(rng.normal(size=5000), mask=rng.random(5000) < 0.1)
    for w in (1, 2, 255, 256, 4999, 7000):
        fast = sw.rolling(x, w, agg, closed=closed, center=center, step=3)
        fifo = sw.rolling(x, w, agg, closed=closed, center=center, step=3, algorithm="two_stacks")
        assert_same_list(fast.to_pylist(), fifo.to_pylist(), what=f"{agg} w={w} {closed} {center}")


def test_step_beyond_the_window_jumps():
    x = np.arange(100_000, dtype=np.float64)
    got = sw.rolling(x, 3, "sum", step=1000).to_pylist()
    assert got == [float(sum(x[max(0, i - 2):i + 1])) for i in range(0, 100_000, 1000)]


def test_default_shape_is_the_plain_call():
    x = pa.array([1.0, None, 3.0, 4.0])
    plain = sw.rolling(x, 2, "sum")
    assert sw.rolling(x, 2, "sum", closed="right", center=False, step=1).equals(plain)
    assert sw.rolling(x, 2, "sum", closed=None, step=None).equals(plain)


def test_results_keep_the_input_types():
    x = pa.array([1, 2, 3, 4], type=pa.int32())
    assert sw.rolling(x, 2, "max", closed="left").type == pa.int32()
    assert sw.rolling(x, 2, "sum", closed="neither", min_periods=2).to_pylist() == [None] * 4
    assert sw.rolling(x, 1, "count", closed="neither").to_pylist() == [0, 0, 0, 0]
    assert sw.rolling(x[:0], 3, "mean", center=True, step=2).to_pylist() == []


# -- errors ------------------------------------------------------------------------

@pytest.mark.parametrize("kw,msg", [
    (dict(closed="middle"), "closed must be"),
    (dict(closed=1), "closed must be"),
    (dict(step=0), "step must be a positive integer"),
    (dict(step=-2), "step must be a positive integer"),
    (dict(step=1.5), "step must be a positive integer"),
    (dict(step=True), "step must be a positive integer"),
    (dict(center=1), "center must be True or False"),
    (dict(center="yes"), "center must be True or False"),
])
def test_bad_shape_keywords(kw, msg):
    with pytest.raises(ValueError, match=msg):
        sw.rolling([1.0, 2.0], 2, "sum", **kw)
    with pytest.raises(ValueError, match=msg):
        sw.rolling([1.0, 2.0], "2s", "sum", timestamps=pd.to_datetime([0, 1], unit="s"), **kw)


def test_step_refused_where_pandas_has_none():
    ts = pd.to_datetime([0, 1, 2], unit="s")
    with pytest.raises(ValueError, match="step is not supported with time windows"):
        sw.rolling([1.0, 2.0, 3.0], "2s", "sum", timestamps=ts, step=2)
    with pytest.raises(NotImplementedError):  # pandas too
        pd.DataFrame({"t": ts, "x": [1.0, 2, 3]}).rolling("2s", on="t", step=2).x.sum()
    with pytest.raises(ValueError, match="step is not supported with keys"):
        sw.rolling([1.0, 2.0, 3.0], 2, "sum", keys=[0, 0, 1], step=2)
    with pytest.raises(TypeError):  # pandas has no groupby().rolling(step=)
        pd.DataFrame({"k": [0, 0, 1], "x": [1.0, 2, 3]}).groupby("k").rolling(2, step=2)


def test_min_periods_above_window_is_refused_with_a_shape():
    with pytest.raises(ValueError, match="min_periods"):
        sw.rolling([1.0, 2.0], 2, "sum", min_periods=3, closed="both")


def test_the_binding_checks_too():
    from slidewise import _slidewise
    with pytest.raises(ValueError, match="closed must be"):
        _slidewise.rolling(pa.array([1.0]), 1, "sum", None, "auto", "up", False, 1)
    with pytest.raises(ValueError, match="step must be"):
        _slidewise.rolling(pa.array([1.0]), 1, "sum", None, "auto", "left", False, 0)
    with pytest.raises(ValueError, match="step is not supported"):
        _slidewise.rolling_time(pa.array([1.0]), pa.array([0]), 1, "sum", None, "auto", "left", False, 2)
    with pytest.raises(ValueError, match="step is not supported"):
        _slidewise.rolling_keyed(pa.array([0]), pa.array([1.0]), 1, "sum", None, "auto", "left", False, 2)


# -- median / quantile / rank with a shape ----------------------------------------

ORDER = [("median", None, None)] + [("quantile", q, i) for q in (0.0, 0.25, 0.5, 0.9, 1.0)
                                      for i in ("linear", "lower", "higher", "midpoint", "nearest")]
# few distinct values: many ties
tied = st.one_of(st.none(), st.integers(-3, 3).map(float), st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: round(v, 1)))


def _order_pandas(r, agg, q, interp):
    return r.median() if agg == "median" else r.quantile(q, interpolation=interp)


def _move_rank(values, bounds, mp):
    """bottleneck.move_rank's formula over each frame, ranking the frame's
    last row (as pandas' rolling().rank() picks values[end - 1]): numpy."""
    out = []
    for a, b in bounds:
        win = np.array([np.nan if v is None else v for v in values[a:max(a, b)]], dtype=np.float64)
        ok = win[~np.isnan(win)]
        if b <= a or len(ok) < max(mp or 0, 1) or np.isnan(win[-1]):
            out.append(None)
            continue
        if len(ok) == 1:
            out.append(0.0)
            continue
        me = win[-1]
        g, e = np.sum(ok < me), np.sum(ok == me)
        out.append(2.0 * ((g + (e - 1) / 2.0) / (len(ok) - 1) - 0.5))
    return out


@settings(max_examples=150, deadline=None)
@given(xs=st.lists(tied, max_size=60), window=st.integers(1, 12), closed=st.sampled_from(CLOSED),
       center=st.booleans(), step=st.one_of(st.just(1), st.integers(1, 70)), spec=st.sampled_from(ORDER),
       data=st.data())
def test_count_order_stats_equal_pandas(xs, window, closed, center, step, spec, data):
    agg, q, interp = spec
    mp = data.draw(st.integers(1, window), label="min_periods")
    s = pd.Series([np.nan if v is None else v for v in xs], dtype=np.float64)
    want = _order_pandas(s.rolling(window, min_periods=mp, closed=closed, center=center, step=step), agg, q, interp)
    got = sw.rolling(pa.array(xs, type=pa.float64()), window, agg, q=q, interpolation=interp, min_periods=mp,
                     closed=closed, center=center, step=step)
    _cmp(got, want, f"{spec} w={window} {closed} center={center} step={step} mp={mp}")


@settings(max_examples=100, deadline=None)
@given(xs=st.lists(tied, max_size=60), window=st.integers(1, 12), closed=st.sampled_from(CLOSED),
       center=st.booleans(), step=st.one_of(st.just(1), st.integers(1, 70)), data=st.data())
def test_count_rank_equals_numpy(xs, window, closed, center, step, data):
    mp = data.draw(st.one_of(st.none(), st.integers(1, window)), label="min_periods")
    want = _move_rank(xs, count_bounds(len(xs), window, closed, center, step), mp)
    got = sw.rolling(pa.array(xs, type=pa.float64()), window, "rank", min_periods=mp, closed=closed, center=center,
                     step=step).to_pylist()
    assert_same_list(got, want, abs_=1e-12, what=f"rank w={window} {closed} center={center} step={step} mp={mp}")


@settings(max_examples=100, deadline=None)
@given(data=st.data(), span=st.integers(1, 6), closed=st.sampled_from(CLOSED), center=st.booleans(),
       spec=st.sampled_from(ORDER + [("rank", None, None)]))
def test_time_order_stats_equal_pandas(data, span, closed, center, spec):
    agg, q, interp = spec
    xs = data.draw(st.lists(tied, max_size=50), label="xs")
    gaps = data.draw(st.lists(st.integers(0, 3), min_size=len(xs), max_size=len(xs)), label="gaps")
    mp = data.draw(st.integers(1, 4), label="min_periods")
    df = pd.DataFrame({"t": _times(gaps), "x": np.array([np.nan if v is None else v for v in xs], dtype=np.float64)})
    got = sw.rolling(pa.array(xs, type=pa.float64()), f"{span}s", agg, q=q, interpolation=interp, timestamps=df.t,
                     min_periods=mp, closed=closed, center=center)
    what = f"{spec} {span}s {closed} center={center} mp={mp}"
    if agg == "rank":
        ts = df.t.to_numpy().astype("datetime64[ns]").astype(np.int64)
        want = _move_rank(xs, time_bounds(ts, span * 10**9, closed, center), mp)
        assert_same_list(got.to_pylist(), want, abs_=1e-12, what=what)
    else:
        want = _order_pandas(df.rolling(f"{span}s", on="t", min_periods=mp, closed=closed, center=center).x, agg, q,
                             interp)
        _cmp(got, want, what)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), window=st.one_of(st.integers(1, 8), st.integers(9, 40)), closed=st.sampled_from(CLOSED), center=st.booleans(),
       spec=st.sampled_from(ORDER), time=st.booleans())
def test_keyed_order_stats_equal_pandas_groupby_rolling(data, window, closed, center, spec, time):
    agg, q, interp = spec
    xs = data.draw(st.lists(tied, max_size=50), label="xs")
    n = len(xs)
    ks = data.draw(st.lists(st.integers(0, data.draw(st.sampled_from([3, 12]))), min_size=n, max_size=n), label="keys")
    mp = data.draw(st.integers(1, window), label="min_periods")
    df = pd.DataFrame({"k": ks, "x": np.array([np.nan if v is None else v for v in xs], dtype=np.float64)})
    if time:
        gaps = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="gaps")
        df["t"] = _times(gaps)
        r = df.groupby("k")[["t", "x"]].rolling(f"{window}s", on="t", min_periods=mp, closed=closed, center=center)
        want = _order_pandas(r, agg, q, interp)["x"]
        got = sw.rolling(pa.array(xs, type=pa.float64()), f"{window}s", agg, q=q, interpolation=interp, keys=ks,
                         timestamps=df.t, min_periods=mp, closed=closed, center=center)
    else:
        r = df.groupby("k").rolling(window, min_periods=mp, closed=closed, center=center).x
        want = _order_pandas(r, agg, q, interp)
        got = sw.rolling(pa.array(xs, type=pa.float64()), window, agg, q=q, interpolation=interp, keys=ks,
                         min_periods=mp, closed=closed, center=center)
    want = want.droplevel(0).sort_index() if n else pd.Series([], dtype=np.float64)
    _cmp(got, want, f"{spec} w={window} {closed} center={center} time={time} mp={mp}")


@pytest.mark.parametrize("agg", ["median", "rank"])
@pytest.mark.parametrize("closed", CLOSED)
@pytest.mark.parametrize("center", [False, True])
def test_order_long_windows_use_every_kernel(agg, closed, center):
    # windows past the sorted buffer's range run median_sort / the Fenwick
    # rank shifted; the centred tail and a long step run the frames
    rng = np.random.default_rng(3)
    x = pa.array(rng.integers(0, 50, 3000).astype(np.float64), mask=rng.random(3000) < 0.05)
    s = pd.Series(x.to_numpy(zero_copy_only=False))
    for w in (200, 700, 2999, 4000):
        for step in (1, 7, 5000):
            got = sw.rolling(x, w, agg, min_periods=1, closed=closed, center=center, step=step)
            if agg == "median":
                want = s.rolling(w, min_periods=1, closed=closed, center=center, step=step).median()
                _cmp(got, want, f"median w={w} {closed} {center} step={step}")
            else:
                want = _move_rank(x.to_pylist(), count_bounds(len(x), w, closed, center, step), 1)
                assert_same_list(got.to_pylist(), want, abs_=1e-12, what=f"rank w={w} {closed} {center} step={step}")


def test_order_default_shape_is_the_plain_call():
    x = pa.array([1.0, None, 3.0, 4.0, 2.0])
    for agg in ("median", "rank"):
        plain = sw.rolling(x, 3, agg)
        assert sw.rolling(x, 3, agg, closed="right", center=False, step=1).equals(plain)


def test_order_step_refused_where_pandas_has_none():
    ts = pd.to_datetime([0, 1, 2], unit="s")
    with pytest.raises(ValueError, match="step is not supported with time windows"):
        sw.rolling([1.0, 2.0, 3.0], "2s", "median", timestamps=ts, step=2)
    with pytest.raises(ValueError, match="step is not supported with keys"):
        sw.rolling([1.0, 2.0, 3.0], 2, "quantile", q=0.5, keys=[0, 0, 1], step=2)
    from slidewise import _slidewise
    with pytest.raises(ValueError, match="step is not supported"):
        _slidewise.rolling_order_time(pa.array([1.0]), pa.array([0]), 1, "median", step=2)
    with pytest.raises(ValueError, match="step is not supported"):
        _slidewise.rolling_order(pa.array([1.0]), [1], "rank", keys=pa.array([0]), step=2)
