"""slidewise.polars (the ``sw`` expression namespace) against polars' own
rolling functions on the same data: count windows (``rolling_*``), time
windows (``rolling_*_by``), ``.over(k)``, nulls and NaN kept apart."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st
from polars.testing import assert_series_equal

import slidewise.polars  # noqa: F401  (registers .sw)

AGGS = ["sum", "mean", "max", "min", "std", "var", "median", "quantile"]

floats = st.one_of(st.none(), st.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 2)))
floats_nan = st.one_of(floats, st.just(float("nan")))
ints = st.one_of(st.none(), st.integers(-50, 50))


def polars_rolling(agg, window, min_samples, center=False, ddof=1, q=None, by=None, closed="right"):
    """polars' own expression for ``agg`` (the reference)."""
    e = pl.col("v")
    if by is not None:
        kw = {"closed": closed} if min_samples is None else {"min_samples": min_samples, "closed": closed}
        if agg in ("std", "var"):
            kw["ddof"] = ddof
        if agg == "quantile":
            return e.rolling_quantile_by(by, window, quantile=q, **kw)
        return getattr(e, f"rolling_{agg}_by")(by, window, **kw)
    kw = {"min_samples": min_samples, "center": center}
    if agg in ("std", "var"):
        kw["ddof"] = ddof
    if agg == "quantile":
        return e.rolling_quantile(q, "nearest", window, **kw)
    return getattr(e, f"rolling_{agg}")(window, **kw)


def same(got: pl.Series, want: pl.Series):
    # nulls and NaN compared apart; floats to rounding (sums of 2-decimal values)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.is_null().to_list() == want.is_null().to_list(), (got.to_list(), want.to_list())
    if got.dtype.is_float():
        assert got.is_nan().to_list() == want.is_nan().to_list(), (got.to_list(), want.to_list())
    tol = 1e-6 if got.dtype == pl.Float32 else 1e-9  # float32: polars rounds each step to float32
    assert_series_equal(got, want, check_names=False, check_exact=False, rel_tol=tol, abs_tol=tol * 100)


args = st.fixed_dictionaries({
    "agg": st.sampled_from(AGGS),
    "window": st.integers(1, 6),
    "min_samples": st.one_of(st.none(), st.integers(0, 6)),
    "center": st.booleans(),
    "ddof": st.sampled_from([0, 1]),
    "q": st.sampled_from([0.0, 0.3, 0.5, 1.0]),
})


def sw_args(a):
    kw = {"min_samples": a["min_samples"], "center": a["center"], "ddof": a["ddof"]}
    if a["agg"] == "quantile":
        kw["quantile"] = a["q"]
    return kw


def fix(a):
    """Drop what polars rejects or slidewise does not implement."""
    if a["min_samples"] is not None and a["min_samples"] > a["window"]:
        a["min_samples"] = a["window"]
    if a["agg"] in ("median", "quantile"):
        a["center"] = False  # not implemented for order statistics (a clear error, tested below)
    return a


@settings(max_examples=80, deadline=None)
@given(st.lists(floats_nan, max_size=25), args, st.sampled_from([pl.Float64, pl.Float32]))
def test_count_window_floats(vals, a, dtype):
    a = fix(a)
    df = pl.DataFrame({"v": pl.Series(vals, dtype=dtype)})
    if dtype == pl.Float32 and a["agg"] in ("std", "var", "mean", "sum"):
        return  # float32 sums accumulate in different widths: compared in float64 only
    got = df.select(pl.col("v").sw.rolling(a["window"], a["agg"], **sw_args(a))).to_series()
    want = df.select(polars_rolling(a["agg"], a["window"], a["min_samples"], a["center"], a["ddof"], a["q"])).to_series()
    same(got, want)


@settings(max_examples=80, deadline=None)
@given(st.lists(ints, max_size=25), args, st.sampled_from([pl.Int64, pl.Int32, pl.Int16, pl.UInt8]))
def test_count_window_ints(vals, a, dtype):
    a = fix(a)
    if dtype == pl.UInt8:
        vals = [None if v is None else abs(v) for v in vals]
    df = pl.DataFrame({"v": pl.Series(vals, dtype=dtype)})
    got = df.select(pl.col("v").sw.rolling(a["window"], a["agg"], **sw_args(a))).to_series()
    want = df.select(polars_rolling(a["agg"], a["window"], a["min_samples"], a["center"], a["ddof"], a["q"])).to_series()
    same(got, want)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), floats_nan), max_size=30), args)
def test_over_equals_polars_over(rows, a):
    a = fix(a)
    df = pl.DataFrame({"k": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema={"k": pl.Int64, "v": pl.Float64})
    want = df.select(polars_rolling(a["agg"], a["window"], a["min_samples"], a["center"], a["ddof"], a["q"]).over("k")).to_series()
    sw = pl.col("v").sw.rolling(a["window"], a["agg"], **sw_args(a))
    same(df.select(sw.over("k")).to_series(), want)  # rewritten to over="k": one call
    kw = sw_args(a)
    same(df.select(pl.col("v").sw.rolling(a["window"], a["agg"], over="k", **kw)).to_series(), want)  # one call


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), floats_nan), max_size=30),
       st.sampled_from(AGGS[:6]), st.integers(1, 5), st.one_of(st.none(), st.integers(0, 3)),
       st.sampled_from(["right", "left", "both", "none"]), st.booleans(), st.booleans())
def test_time_window_equals_rolling_by(rows, agg, span, min_samples, closed, keyed, increasing):
    # times unsorted and tied: polars sorts, and a row's window holds every row of its time;
    # or strictly increasing (slidewise's direct path: keys interleaved, no sort)
    t = [2 * i + r[1] % 2 for i, r in enumerate(rows)] if increasing else [r[1] for r in rows]
    df = pl.DataFrame({"k": [r[0] for r in rows], "t": t, "v": [r[2] for r in rows]},
                      schema={"k": pl.Int64, "t": pl.Int64, "v": pl.Float64})
    w = f"{span}i"
    ref = polars_rolling(agg, w, min_samples, by="t", closed=closed)
    kw = {"min_samples": min_samples, "closed": closed}
    if keyed:
        want = df.select(ref.over("k")).to_series()
        got = df.select(pl.col("v").sw.rolling(w, agg, by="t", over="k", **kw)).to_series()
        same(df.select(pl.col("v").sw.rolling(w, agg, by="t", **kw).over("k")).to_series(), want)
    else:
        want = df.select(ref).to_series()
        got = df.select(pl.col("v").sw.rolling(w, agg, by="t", **kw)).to_series()
    same(got, want)


def test_sum_by_of_nulls_only_is_zero_by_default():
    # polars' rolling_sum_by defaults to min_samples=0 (the other *_by to
    # 1): 0 over a window of nulls only (or of no row, closed="left")
    df = pl.DataFrame({"k": [0, 0, 1, 0, 1], "t": [1, 2, 5, 9, 10], "v": [None, 1.0, None, None, 2.0]})
    for closed in ("right", "left", "both", "none"):
        for ms in (None, 1, 0):
            got = pl.col("v").sw.rolling("2i", "sum", by="t", closed=closed, min_samples=ms)
            want = pl.col("v").rolling_sum_by("t", "2i", closed=closed, **({} if ms is None else {"min_samples": ms}))
            same(df.select(got).to_series(), df.select(want).to_series())
            same(df.select(got.over("k")).to_series(), df.select(want.over("k")).to_series())


def test_datetime_by_and_timedelta():
    t0 = datetime(2024, 1, 1)
    ts = [t0 + timedelta(seconds=s) for s in (0, 30, 60, 61, 200, 200, 400)]
    df = pl.DataFrame({"t": ts, "v": [1.0, 2, None, 4, 5, float("nan"), 7]})
    for unit in ("ns", "us", "ms"):
        d = df.with_columns(pl.col("t").dt.cast_time_unit(unit))
        for w in ("1m", "2m30s", timedelta(seconds=90)):
            for agg in ("sum", "max", "mean"):
                same(d.select(pl.col("v").sw.rolling(w, agg, by="t")).to_series(),
                     d.select(polars_rolling(agg, w, None, by="t")).to_series())
    dd = pl.DataFrame({"t": [t0.date() + timedelta(days=i) for i in (0, 1, 1, 3, 9)], "v": [1, 2, 3, 4, 5]})
    same(dd.select(pl.col("v").sw.rolling("2d", "sum", by="t")).to_series(),
         dd.select(pl.col("v").rolling_sum_by("t", "2d")).to_series())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), floats_nan), max_size=30), st.one_of(st.none(), st.integers(0, 1)),
       st.booleans())
def test_rolling_many_equals_each_polars_function(rows, min_samples, keyed):
    df = pl.DataFrame({"k": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema={"k": pl.Int64, "v": pl.Float64})
    aggs, windows = ["sum", "mean", "min", "max", "std", "median", "quantile"], [1, 3, 5]
    got = df.select(pl.col("v").sw.rolling_many(windows, aggs, min_samples=min_samples, quantile=0.3,
                                                over="k" if keyed else None)).to_series()
    assert got.struct.fields == [f"{a}_{w}" for a in aggs for w in windows]
    for a in aggs:
        for w in windows:
            ref = polars_rolling(a, w, min_samples, q=0.3)
            want = df.select(ref.over("k") if keyed else ref).to_series()
            same(got.struct.field(f"{a}_{w}"), want)


def test_select_with_columns_lazy_streaming_over():
    df = pl.DataFrame({"k": ["a", "b", "a", "a", "b", None, None],
                       "v": [1, 2, 3, 4, 5, 6, 7]})
    want = df.select(pl.col("v").rolling_sum(2).over("k")).to_series()
    e = pl.col("v").sw.rolling(2, "sum", over="k")
    same(df.select(e).to_series(), want)  # string keys, null keys a group of their own (as polars)
    same(df.with_columns(e.alias("s"))["s"], want)
    for engine in ("in-memory", "streaming"):
        same(df.lazy().with_columns(e.alias("s")).collect(engine=engine)["s"], want)
    lf = df.lazy().select(pl.col("v").sw.rolling(2, "mean"), pl.col("v").sw.rolling_many([2], ["sum", "max"]).alias("m"))
    assert lf.collect_schema() == pl.Schema({"v": pl.Float64, "m": pl.Struct({"sum_2": pl.Int64, "max_2": pl.Int64})})
    assert lf.collect().schema == lf.collect_schema()
    # group_by().agg: polars hands each group over (one call per group), lists out
    g = df.group_by("k", maintain_order=True)
    assert g.agg(pl.col("v").sw.rolling(2, "sum")).equals(g.agg(pl.col("v").rolling_sum(2)))
    # several key columns
    d2 = pl.DataFrame({"a": [1, 1, 2, 1, 1], "b": ["x", "y", "x", "x", "y"], "v": [1.0, 2, 3, 4, 5]})
    same(d2.select(pl.col("v").sw.rolling(2, "max", over=["a", "b"])).to_series(),
         d2.select(pl.col("v").rolling_max(2).over("a", "b")).to_series())


def test_over_forms():
    """Every way of writing ``.over`` gives polars' answer: the forms
    rewritten to ``over=`` (one call; ``order_by=`` sorts stably first, ties
    in ``a`` and ``b`` here), and the ones polars keeps per group (an
    expression chained in between, ``mapping_strategy``, arg indices, which
    are within the group under ``.over``)."""
    rng = np.random.default_rng(5)
    n = 400
    v = rng.normal(size=n)
    v[rng.random(n) < 0.05] = np.nan
    df = pl.DataFrame({"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y", None], n),
                       "t": rng.permutation(n), "v": pl.Series(v).fill_nan(None).to_list()})
    df = df.with_columns(pl.when(pl.int_range(n) % 7 == 0).then(float("nan")).otherwise(pl.col("v")).alias("v"))
    e, p = pl.col("v").sw.rolling(3, "mean"), pl.col("v").rolling_mean(3)
    cases = [
        (e.over("a"), p.over("a")),
        (e.alias("m").over("a"), p.over("a").alias("m")),
        (e.over("a", "b"), p.over("a", "b")),
        (e.over(["a", pl.col("b")]), p.over(["a", "b"])),
        (e.over("a", order_by="t"), p.over("a", order_by="t")),
        (e.over("b", order_by=["a", "t"], descending=True), p.over("b", order_by=["a", "t"], descending=True)),
        (e.over(order_by="a", descending=True, nulls_last=True), p.over(order_by="a", descending=True, nulls_last=True)),
        (e.over("a", order_by="b", nulls_last=True), p.over("a", order_by="b", nulls_last=True)),
        (e.over("b", mapping_strategy="join"), p.over("b", mapping_strategy="join")),
        ((e * 2).over("a"), (p * 2).over("a")),
        (pl.col("v").sw.rolling("3i", "sum", by="t").over("b"), pl.col("v").rolling_sum_by("t", "3i").over("b")),
    ]
    for got, want in cases:
        g, w = df.select(got), df.select(want)
        assert g.columns == w.columns
        same(g.to_series(), w.to_series())
        same(df.lazy().select(got).collect().to_series(), w.to_series())
    # arg indices under .over are within each group, as if each group ran alone
    arg = pl.col("v").sw.rolling(4, "argmax", min_samples=1)
    got = df.with_row_index("i").select("i", "a", arg.over("a"))
    for (g,), sub in got.group_by("a"):
        alone = df.filter(pl.col("a") == g).select(arg).to_series()
        same(sub["v"], alone)
    for kw in ({}, {"order_by": "b"}):
        m = df.select(pl.col("v").sw.rolling_many([2, 5], ["max", "std"]).over("a", **kw)).to_series()
        for agg in ("max", "std"):
            for w_ in (2, 5):
                same(m.struct.field(f"{agg}_{w_}"), df.select(polars_rolling(agg, w_, None).over("a", **kw)).to_series())


def test_many_columns_and_many_time_windows():
    df = pl.DataFrame({"t": [1, 2, 2, 5, 6], "a": [1.0, None, 3, 4, 5], "b": [5, 4, 3, 2, 1]})
    got = df.select(pl.col(c).sw.rolling(2, "sum") for c in "ab")
    assert got.equals(df.select(pl.col("a", "b").rolling_sum(2)))
    d = df.rename({"a": "v"})
    m = d.select(pl.col("v").sw.rolling_many(["1i", "3i"], ["sum", "max"], by="t")).to_series()
    for a in ("sum", "max"):
        for w in ("1i", "3i"):
            same(m.struct.field(f"{a}_{w}"), d.select(polars_rolling(a, w, None, by="t")).to_series())
    with pytest.raises(ValueError, match="one column per expression"):
        pl.col("a", "b").sw.rolling(2)


def test_extra_aggs():
    df = pl.DataFrame({"v": [3, None, 5, 1, 1]})
    out = df.select(c=pl.col("v").sw.rolling(2, "count", min_samples=0),
                    f=pl.col("v").sw.rolling(2, "first", min_samples=1),
                    a=pl.col("v").sw.rolling(3, "argmax", min_samples=1))
    assert out.schema == pl.Schema({"c": pl.Int64, "f": pl.Int64, "a": pl.Int64})
    assert out.to_dict(as_series=False) == {"c": [1, 1, 1, 2, 2], "f": [3, 3, None, 5, 1], "a": [0, 0, 2, 2, 2]}


@pytest.mark.parametrize("call, msg", [
    (lambda: pl.col("v").sw.rolling(2, "nope"), "unknown agg"),
    (lambda: pl.col("v").sw.rolling("1mo", by="t"), "calendar"),
    (lambda: pl.col("v").sw.rolling("5 minutes", by="t"), "not a polars duration"),
    (lambda: pl.col("v").sw.rolling(0), "positive"),
    (lambda: pl.col("v").sw.rolling("5m"), "time span"),
    (lambda: pl.col("v").sw.rolling(2, "quantile"), "needs quantile"),
    (lambda: pl.col("v").sw.rolling(2, "quantile", quantile=1.5), "needs quantile"),
    (lambda: pl.col("v").sw.rolling(2, min_samples=3), "min_samples"),
    (lambda: pl.col("v").sw.rolling_many([2, 5], min_samples=3), "min_samples"),
    (lambda: pl.col("v").sw.rolling(2, ddof=2), "ddof"),
    (lambda: pl.col("v").sw.rolling(2, closed="left"), "closed"),
    (lambda: pl.col("v").sw.rolling("2i", by="t", center=True), "center"),
    (lambda: pl.col("v").sw.rolling_many([2, 2]), "distinct"),
    (lambda: pl.col("v").sw.rolling("2i", "median", by="t"), "not implemented"),
])
def test_bad_arguments(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_bad_data():
    with pytest.raises(TypeError, match="unsupported dtype"):
        pl.DataFrame({"v": ["a", "b"]}).select(pl.col("v").sw.rolling(2))
    with pytest.raises(ValueError, match="integer by column"):
        pl.DataFrame({"t": [0.5, 1.0], "v": [1, 2]}).select(pl.col("v").sw.rolling("2i", by="t"))
    tz = pl.DataFrame({"t": [datetime(2024, 3, 30), datetime(2024, 3, 31, 12)], "v": [1.0, 2.0]}).with_columns(
        pl.col("t").dt.replace_time_zone("Europe/Amsterdam"))
    with pytest.raises(ValueError, match="local time"):  # polars' days there are 23 or 25 h across DST
        tz.select(pl.col("v").sw.rolling("1d", by="t"))
    same(tz.select(pl.col("v").sw.rolling("24h", by="t")).to_series(),
         tz.select(pl.col("v").rolling_sum_by("t", "24h")).to_series())
    with pytest.raises(ValueError, match="null time"):
        pl.DataFrame({"t": [1, None], "v": [1, 2]}).select(pl.col("v").sw.rolling("2i", by="t"))


def test_nan_rule_is_polars():
    # polars: NaN in a window makes sum, mean, max AND min NaN; slidewise's own
    # min (Spark order) would skip it, the namespace follows polars
    df = pl.DataFrame({"v": [1.0, float("nan"), 3.0, 4.0]})
    got = df.select(pl.col("v").sw.rolling(2, "min")).to_series().to_list()
    assert got[0] is None and math.isnan(got[1]) and math.isnan(got[2]) and got[3] == 3.0


@settings(max_examples=60, deadline=None)
@given(st.lists(floats_nan, max_size=25), args)
def test_nan_skip_equals_polars_on_nan_as_null(vals, a):
    # nan="skip": NaN is missing, so the answer is polars' own on the column
    # with every NaN made null (fill_nan(None)); min_samples counts non-NaN.
    a = fix(a)
    df = pl.DataFrame({"v": pl.Series(vals, dtype=pl.Float64)})
    got = df.select(pl.col("v").sw.rolling(a["window"], a["agg"], nan="skip", **sw_args(a))).to_series()
    nulled = df.select(pl.col("v").fill_nan(None))
    want = nulled.select(polars_rolling(a["agg"], a["window"], a["min_samples"], a["center"], a["ddof"], a["q"])).to_series()
    same(got, want)
    many = df.select(pl.col("v").sw.rolling_many([a["window"]], ["sum", "max"], nan="skip")).to_series().struct.unnest()
    for agg in ("sum", "max"):
        same(many[f"{agg}_{a['window']}"], nulled.select(polars_rolling(agg, a["window"], None)).to_series())
    with pytest.raises(ValueError, match="nan must be 'propagate'"):
        pl.col("v").sw.rolling(2, "sum", nan="drop")
