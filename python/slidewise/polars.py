"""polars expression namespace ``sw`` (``import slidewise.polars``).

>>> import polars as pl, slidewise.polars
>>> df = pl.DataFrame({"k": [1, 1, 2, 1, 2], "v": [1.0, 5.0, 2.0, 4.0, 3.0]})
>>> df.select(pl.col("v").sw.rolling(2, "max", over="k"))["v"].to_list()
[None, 5.0, None, 5.0, 3.0]

``pl.col(v).sw.rolling(window, agg, ...)`` and ``.sw.rolling_many(windows,
aggs, ...)`` are polars expressions: they work in ``select``,
``with_columns``, on ``LazyFrame``s and under ``.over(k)``. The parameters
and the answers are polars' own (``rolling_sum`` ... ``rolling_quantile``
and their ``*_by`` time forms); docs/polars.md lists the rules mapped.

Speed: polars calls a Python function once per group under ``.over(k)``
(measured: 1,000 keys, 1,000 calls), so the expression rewrites
``.sw.rolling(...).over("k")`` to ``.sw.rolling(..., over="k")``, which gives
the same column in one call: slidewise groups the rows itself, all keys in
one Rust call (:class:`_Windowed`).

The expression is a ``map_batches`` (non-elementwise, so polars hands it
whole columns) over the value column, or over a struct of the value, ``by``
and key columns when there are any; the data
cross into slidewise through the Arrow C interface, no copy for one-chunk
columns.
"""

from __future__ import annotations

import datetime
import re
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import slidewise as _sw
from slidewise._arrow import flag as _flag
from slidewise._convert import apply_nan_policy as _apply_nan_policy, check_nan as _check_nan

__all__ = ["SlidewiseExpr"]

# polars' own rolling functions (the answers must equal theirs) and the
# slidewise aggregations offered beside them.
POLARS_AGGS = ("sum", "mean", "max", "min", "std", "var", "median", "quantile")
EXTRA_AGGS = ("count", "first", "last", "argmax", "argmin", "geomean")
_BY, _KEY, _ORD = "__sw_by", "__sw_key", "__sw_ord"

# polars durations: "1d2h", "500ms", "3i" (rows of an integer column); no
# calendar units (months, quarters, years), which have no fixed length.
_DUR_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9,
              "d": 86400 * 10**9, "w": 7 * 86400 * 10**9}
_DUR_PART = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y|i)")


def _duration(window: Any) -> Tuple[str, int]:
    """A time window -> ("ns", nanoseconds) or ("i", integer span)."""
    if isinstance(window, datetime.timedelta):
        ns = (window.days * 86400 + window.seconds) * 10**9 + window.microseconds * 1000
        if ns <= 0:
            raise ValueError(f"window must be a positive duration, got {window!r}")
        return "ns", ns
    if not isinstance(window, str):
        raise ValueError(f"with by=, window must be a duration such as '5m', '1d2h', '3i' or a timedelta, got {window!r}")
    parts = _DUR_PART.findall(window)
    if not parts or "".join(n + u for n, u in parts) != window:
        raise ValueError(f"window {window!r} is not a polars duration such as '5m', '1d2h', '500ms' or '3i'")
    units = {u for _, u in parts}
    if units & {"mo", "q", "y"}:
        raise ValueError(f"window {window!r}: calendar units (mo, q, y) are not supported; use days")
    if "i" in units:
        if len(parts) != 1:
            raise ValueError(f"window {window!r}: 'i' (integer) cannot be mixed with time units")
        n = int(parts[0][0])
        kind = "i"
    else:
        n = sum(int(v) * _DUR_UNITS[u] for v, u in parts)
        kind = "ns"
    if n <= 0:
        raise ValueError(f"window must be a positive duration, got {window!r}")
    return kind, n


def _check_agg(agg: Any) -> str:
    if not isinstance(agg, str) or agg not in POLARS_AGGS + EXTRA_AGGS:
        raise ValueError(f"unknown agg {agg!r}; expected one of {', '.join(POLARS_AGGS + EXTRA_AGGS)}")
    return agg


def _probe(agg: str, e: pl.Expr, ddof: int, q: Optional[float], interpolation: str) -> pl.Expr:
    """An expression of the dtype polars gives ``agg`` (its own rolling
    function where it has one): the declared dtype of our result."""
    if agg in ("sum", "mean", "max", "min", "median"):
        probe: pl.Expr = getattr(e, f"rolling_{agg}")(1)
        return probe
    if agg in ("std", "var"):
        probe = getattr(e, f"rolling_{agg}")(1, ddof=ddof)
        return probe
    if agg == "quantile":
        return e.rolling_quantile(0.5 if q is None else q, interpolation, 1)  # type: ignore[arg-type]
    if agg in ("first", "last"):
        return e
    if agg == "geomean":
        return pl.lit(0.0, pl.Float64)
    return pl.lit(0, pl.Int64)  # count, argmax, argmin


@lru_cache(maxsize=256)
def _out_dtype(agg: str, dtype: pl.DataType, ddof: int, q: Optional[float], interpolation: str) -> pl.DataType:
    """The dtype polars gives ``agg`` over a column of ``dtype`` (cached: under
    ``.over`` this runs once per group)."""
    empty = pl.DataFrame({"v": pl.Series([], dtype=dtype)})
    return empty.select(_probe(agg, pl.col("v"), ddof, q, interpolation)).to_series().dtype


def _key_array(fields: List[pl.Series]) -> Optional[pa.Array]:
    """The ``over=`` columns as one slidewise key column. Integer / string
    columns without nulls go as they are; otherwise the rows are numbered by
    a dense rank of the struct of keys (null a group of its own, as polars'
    ``over``)."""
    if not fields:
        return None
    if len(fields) == 1:
        k = fields[0]
        if k.null_count() == 0 and (k.dtype.is_integer() and k.dtype != pl.UInt64 or k.dtype == pl.String):
            return k.to_arrow()
    return pl.DataFrame(fields).select(pl.struct(pl.all()).rank("dense"))[:, 0].to_arrow()


def _time_args(window: Any, ts: pl.Series) -> Tuple[int, pa.Array]:
    """(window for slidewise, timestamps for slidewise) from a polars ``by``."""
    kind, n = _duration(window)
    dt = ts.dtype
    if kind == "i":
        if not dt.is_integer():
            raise ValueError(f"window {window!r} (integer 'i') needs an integer by column, got {dt}")
        return n, ts.cast(pl.Int64).to_arrow()
    if isinstance(dt, pl.Datetime):
        if dt.time_zone not in (None, "UTC") and isinstance(window, str) and re.search(r"\d+[dw]", window):
            raise ValueError(f"window {window!r} on a {dt.time_zone} column: polars counts days in local time "
                             "(23 or 25 h across DST); slidewise does not; give hours ('24h') or a timedelta instead")
        unit = {"ns": 1, "us": 1_000, "ms": 1_000_000}[dt.time_unit]  # a column's Datetime always has its unit
        if n % unit:
            raise ValueError(f"window {window!r} is not a whole number of the by column's unit ({dt.time_unit})")
        return n // unit, ts.to_physical().to_arrow()  # UTC instants
    if dt == pl.Date:
        day = 86400 * 10**9
        if n % day:
            raise ValueError(f"window {window!r} on a Date by column must be whole days")
        return n // day, ts.to_physical().cast(pl.Int64).to_arrow()
    raise ValueError(f"by must be a Datetime, Date or integer column for a time window, got {dt}")


def _last_of_ties(ts: np.ndarray, keys: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """For rows sorted by (key, time): the index of the last row with the same
    key and time as each row, or None without ties. polars' time window of a
    row holds every row with its time, later ones too; slidewise stops at the
    row itself (pandas), so a tie takes the answer of its run's last row."""
    same = ts[1:] == ts[:-1]
    if keys is not None:
        same &= keys[1:] == keys[:-1]
    if not same.any():
        return None
    n = len(ts)
    end = np.where(np.append(~same, True), np.arange(n), n)
    return np.minimum.accumulate(end[::-1])[::-1]


# ``run(agg, **kw)``: slidewise's rolling ``agg`` over one window shape (see
# :func:`_count_runner`), a pyarrow array.
_Runner = Callable[..., pa.Array]


class _Spec:
    """The arguments of one rolling expression, checked once when it is built."""

    def __init__(self, agg: str, min_samples: Optional[int], center: bool, closed: str, ddof: int,
                 quantile: Optional[float], interpolation: str, ignore_nulls: bool, by: Any) -> None:
        self.agg = _check_agg(agg)
        if ddof not in (0, 1) or isinstance(ddof, bool):
            raise ValueError(f"ddof must be 0 or 1 (slidewise has var/std and var_pop/std_pop), got {ddof!r}")
        if agg == "quantile":
            if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not 0 <= quantile <= 1:
                raise ValueError(f"agg='quantile' needs quantile=, a number in [0, 1], got {quantile!r}")
            if interpolation not in ("nearest", "higher", "lower", "midpoint", "linear"):
                raise ValueError(f"interpolation must be nearest, higher, lower, midpoint or linear, got {interpolation!r}")
        elif quantile is not None:
            raise ValueError(f"quantile= applies to agg='quantile' only, not {agg!r}")
        center = _flag("center", center)
        if by is not None and center:
            raise ValueError("center= applies to count windows; polars' rolling_*_by has no center either")
        if closed not in ("right", "left", "both", "none"):
            raise ValueError(f"closed must be 'right', 'left', 'both' or 'none', got {closed!r}")
        if by is None and closed != "right":
            raise ValueError("closed= applies to time windows (by=); polars' count windows have no closed either")
        if by is not None and agg in ("median", "quantile"):
            raise ValueError(f"agg={agg!r} with by= (a time window) is not implemented in slidewise yet")
        if center and agg in ("median", "quantile"):
            raise ValueError("center=True is not implemented for median / quantile yet")
        if min_samples is not None and (isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 0):
            raise ValueError(f"min_samples must be a non-negative integer, got {min_samples!r}")
        ignore_nulls = _flag("ignore_nulls", ignore_nulls)
        self.min_samples, self.center, self.closed, self.ddof = min_samples, center, closed, ddof
        self.q = None if quantile is None else float(quantile)
        self.interpolation = interpolation if agg == "quantile" else "nearest"
        self.ignore_nulls = ignore_nulls
        self.core = {"var": "var" if ddof else "var_pop", "std": "std" if ddof else "std_pop"}.get(agg, agg)

    def out_dtype(self, dtype: pl.DataType) -> pl.DataType:
        return _out_dtype(self.agg, dtype, self.ddof, self.q, self.interpolation)

    def kwargs(self) -> Dict[str, Any]:
        kw: Dict[str, Any] = {"ignore_nulls": self.ignore_nulls}
        if self.agg == "quantile":
            kw.update(q=self.q, interpolation=self.interpolation)
        if self.center:
            kw["center"] = True
        if self.closed != "right":
            kw["closed"] = "neither" if self.closed == "none" else self.closed
        return kw


def _nan_policy(values: pl.Series, nan: str) -> pl.Series:
    """``nan="skip"``: NaN made null (slidewise's ``nan=`` rule, shared with
    ``sw.rolling``); the values buffer is kept, only the validity changes."""
    if nan == "propagate":
        return values
    out = pl.from_arrow(_apply_nan_policy(values.to_arrow(), nan))
    assert isinstance(out, pl.Series)
    return out.alias(values.name)


def _nan_min(values: pl.Series, spec: _Spec) -> bool:
    """polars' rolling_min is NaN where a NaN is in the window; slidewise
    orders NaN above every number (Spark), so its min skips NaN but its max
    keeps it: with NaN in the column, min(x) is computed as -max(-x)."""
    return spec.agg == "min" and values.dtype.is_float() and bool(values.is_nan().any())


def _first_pass(values: pl.Series, run: _Runner, spec: _Spec) -> pa.Array:
    if _nan_min(values, spec):
        return pc.negate(run("max", values=pc.negate(values.to_arrow())))
    return run(spec.core, **spec.kwargs())


def _polars_rules(values: pl.Series, out: pa.Array, run: _Runner, spec: _Spec, mp: Optional[int]) -> pa.Array:
    """Where polars' rule differs from slidewise's, fix ``out`` (computed by
    ``run(agg, **kw)`` with min_periods ``mp``; min with NaN already by
    :func:`_first_pass`) to polars' answer:

    * a sum over no value is 0 (with min_samples=0), slidewise's null;
    * quantile "nearest" rounds the position (n-1)*q half up, slidewise half
      to even: at an exact .5 polars takes the higher value."""
    if spec.agg == "sum" and mp == 0:
        out = pc.fill_null(out, pa.scalar(0, out.type))
    if spec.agg == "quantile" and spec.interpolation == "nearest":
        n = pc.cast(run("count", min_periods=0), pa.float64()).to_numpy(zero_copy_only=False)
        pos = (n - 1) * spec.q
        half = pa.array(pos - np.floor(pos) == 0.5)
        out = pc.if_else(half, run("quantile", q=spec.q, interpolation="higher", min_periods=mp), out)
    return out


def _rolling_one(values: pl.Series, window: Any, spec: _Spec, keys: Optional[pa.Array],
                 by: Optional[pl.Series]) -> pa.Array:
    """One rolling column with polars' rules, as a pyarrow array (the
    slidewise dtype; the caller casts)."""
    if by is not None:
        return _rolling_by(values, window, spec, keys, by)
    mp = spec.min_samples if spec.min_samples is not None else window  # polars: null until full
    run = _count_runner(values, window, spec, keys, mp)
    return _polars_rules(values, _first_pass(values, run, spec), run, spec, mp)


def _count_runner(values: pl.Series, window: int, spec: _Spec, keys: Optional[pa.Array], mp: Optional[int]) -> _Runner:
    """``run(agg, **kw)``: slidewise's count window with this shape."""
    shape = {k: v for k, v in spec.kwargs().items() if k == "center"}

    def run(agg: str, values: pa.Array = values.to_arrow(), min_periods: Optional[int] = mp, **kw: Any) -> pa.Array:
        return _sw.rolling(values, window, agg, keys=keys, min_periods=min_periods, **{**shape, **kw})
    return run


def _time_runner(values: pl.Series, span: int, spec: _Spec, keys: Optional[pa.Array], ts: pa.Array,
                 mp: Optional[int]) -> _Runner:
    """``run(agg, **kw)``: slidewise's time window with this shape."""
    shape = {k: v for k, v in spec.kwargs().items() if k == "closed"}

    def run(agg: str, values: pa.Array = values.to_arrow(), min_periods: Optional[int] = mp, **kw: Any) -> pa.Array:
        return _sw.rolling(values, span, agg, keys=keys, timestamps=ts, min_periods=min_periods, **{**shape, **kw})
    return run


def _rolling_by(values: pl.Series, window: Any, spec: _Spec, keys: Optional[pa.Array], by: pl.Series) -> pa.Array:
    """A time window: polars' ``rolling_*_by`` (``by`` need not be sorted;
    rows tied in time share one window)."""
    if by.null_count():
        raise ValueError("by: a row has a null time; every row needs one")
    span, ts = _time_args(window, by)
    # polars' *_by defaults: min_samples=1, but 0 for rolling_sum_by (a
    # window of nulls only, or of no row, sums to 0)
    mp = (0 if spec.agg == "sum" else 1) if spec.min_samples is None else spec.min_samples
    t = ts.to_numpy()
    if len(t) < 2 or bool((t[1:] > t[:-1]).all()):
        # times strictly increasing (the common case): no ties, and slidewise
        # takes the keys interleaved as they are; no sorting, no gathering
        run = _time_runner(values, span, spec, keys, pa.array(t), mp)
        return _polars_rules(values, _first_pass(values, run, spec), run, spec, mp)
    k = None
    if keys is not None:  # integer key ids, to sort rows by (key, time)
        k = (pl.Series(keys).rank("dense") if pa.types.is_string(keys.type) else pl.Series(keys)).to_numpy()
    order = np.lexsort((t, k)) if k is not None else np.argsort(t, kind="stable")
    is_sorted = bool((order == np.arange(len(t))).all())
    if not is_sorted:
        values, t = values.gather(order), t[order]
        k = None if k is None else k[order]
    run = _time_runner(values, span, spec, None if k is None else pa.array(k), pa.array(t), mp)
    out = _polars_rules(values, _first_pass(values, run, spec), run, spec, mp)
    last = _last_of_ties(t, k)
    if last is not None:
        out = out.take(pa.array(last))
    if not is_sorted:
        inv = np.empty_like(order)
        inv[order] = np.arange(len(order))
        out = out.take(pa.array(inv))
    return out


def _finish(name: str, out: pa.Array, dtype: pl.DataType) -> pl.Series:
    s = pl.Series(name, out)
    return s if s.dtype == dtype else s.cast(dtype, wrap_numerical=True)


def _unpack(s: pl.Series, has_by: bool) -> Tuple[pl.Series, Optional[pl.Series], Optional[pa.Array]]:
    """(values, by, keys) from what :func:`_inputs` built."""
    if not isinstance(s.dtype, pl.Struct) or not (s.dtype.fields and s.dtype.fields[-1].name.startswith("__sw_")):
        return s, None, None  # the value column alone
    fields = s.struct.unnest().get_columns()
    values = fields[0]
    by = fields[1] if has_by else None
    keys = _key_array(fields[2 if has_by else 1:])
    return values, by, keys


def _check_values(values: pl.Series) -> None:
    if not values.dtype.is_numeric() or values.dtype in (pl.UInt64, pl.Int128) or isinstance(values.dtype, pl.Decimal):
        raise TypeError(f"sw.rolling: unsupported dtype {values.dtype} of column {values.name!r}; "
                        "slidewise aggregates Int8..Int64, UInt8..UInt32, Float32 and Float64: cast the column first")


def _check_min_samples(min_samples: Optional[int], windows: List[int]) -> None:
    if min_samples is not None and min_samples > min(windows):
        raise ValueError(f"min_samples ({min_samples}) must be <= the window ({min(windows)}), as in polars")


def _inputs(expr: pl.Expr, by: Any, over: Any, order: Optional["_Order"] = None) -> pl.Expr:
    """What the batch function gets: the value column alone, or a struct of
    value, by, keys and the columns to order by (:func:`_ordered`)."""
    if by is None and over is None and order is None:
        return expr
    fields = [expr]
    if by is not None:
        fields.append((pl.col(by) if isinstance(by, str) else by).alias(_BY))
    if over is not None:
        keys = [over] if isinstance(over, (str, pl.Expr)) else list(over)
        if not keys:
            raise ValueError("over= needs at least one key column")
        fields += [(pl.col(k) if isinstance(k, str) else k).alias(f"{_KEY}{i}") for i, k in enumerate(keys)]
    if order is not None:
        fields += [(pl.col(c) if isinstance(c, str) else c).alias(f"{_ORD}{i}") for i, c in enumerate(order.by)]
    return pl.struct(fields)


class _Order:
    """``.over(k, order_by=..., descending=, nulls_last=)``: the rows of each
    group are taken in this order (polars: a stable sort)."""

    def __init__(self, by: Any, descending: Any, nulls_last: Any) -> None:
        self.by = [by] if isinstance(by, (str, pl.Expr)) else list(by)
        self.descending, self.nulls_last = descending, nulls_last


def _ordered(run: Callable[[pl.Series], pl.Series], order: Optional[_Order]) -> Callable[[pl.Series], pl.Series]:
    """``run`` on the rows sorted by the order columns (stable, so rows tied
    in order keep theirs, and grouping the sorted rows by key gives each key
    its rows in that order, as polars' ``.over(k, order_by=)``), the result
    put back in row order."""
    if order is None:
        return run

    def sorted_run(s: pl.Series) -> pl.Series:
        cols = s.struct.unnest()
        names = [c for c in cols.columns if c.startswith(_ORD)]
        perm = cols.select(names).with_row_index("__sw_i").sort(
            names, descending=order.descending, nulls_last=order.nulls_last, maintain_order=True)["__sw_i"]
        rest = cols.drop(names)[perm]
        out = run(rest.to_series(0) if rest.width == 1 else rest.to_struct(s.name))
        return out.gather(perm.arg_sort())

    return sorted_run


# Aggregations whose answer depends on where a group starts (a row index):
# under `.over(k)` polars hands each group alone, so the index is within the
# group, while `over=` gives the index in the column. `.over(k)` on these
# keeps polars' per-group call.
_GROUP_INDEXED = ("argmax", "argmin")


class _Windowed(pl.Expr):
    """The expression ``.sw.rolling`` / ``.sw.rolling_many`` return: a polars
    expression that also knows how to rebuild itself with ``over=``.

    polars calls a Python function once per group under ``.over(k)`` (module
    docs), so ``.over(k)`` here is rewritten to the ``over=k`` form, which
    groups the rows in Rust in one call and gives the same column (same
    groups, null keys a group of their own, rows in order within a key).
    ``order_by=`` (with ``descending`` / ``nulls_last``) is rewritten too:
    the rows are sorted stably by it first, and the results put back.
    Another ``mapping_strategy``, or anything chained in between (such as
    ``* 2``, which returns a plain polars expression), keeps polars' own
    ``.over``.
    ``alias`` is kept, so ``.alias("m").over("k")`` is rewritten too."""

    _sw_make: Callable[[Any, Optional[_Order]], pl.Expr]
    _sw_alias: Optional[str]

    @classmethod
    def of(cls, make: Callable[[Any, Optional[_Order]], pl.Expr], alias: Optional[str] = None) -> "_Windowed":
        e = make(None, None)
        out = cls.__new__(cls)  # as polars' Expr._from_pyexpr
        out._pyexpr = (e.alias(alias) if alias is not None else e)._pyexpr
        out._sw_make, out._sw_alias = make, alias
        return out

    def alias(self, name: str) -> pl.Expr:
        return _Windowed.of(self._sw_make, name)

    def over(self, partition_by: Any = None, *more_exprs: Any, order_by: Any = None,
             descending: bool = False, nulls_last: bool = False,
             mapping_strategy: Any = "group_to_rows") -> pl.Expr:
        if mapping_strategy != "group_to_rows" or (partition_by is None and order_by is None):
            return super().over(partition_by, *more_exprs, order_by=order_by, descending=descending,
                                nulls_last=nulls_last, mapping_strategy=mapping_strategy)
        keys = None
        if partition_by is not None:
            keys = ([partition_by] if isinstance(partition_by, (str, pl.Expr)) else list(partition_by)) + list(more_exprs)
        order = None if order_by is None else _Order(order_by, descending, nulls_last)
        e = self._sw_make(keys, order)
        return e.alias(self._sw_alias) if self._sw_alias is not None else e


def _windowed(make: Callable[[Any, Optional[_Order]], pl.Expr], over: Any, rewritable: bool) -> pl.Expr:
    """``make(over, None)`` as a polars expression; without ``over=`` (and
    for an aggregation whose answer is the same under ``.over``) one whose
    ``.over(k)`` runs in one call (:class:`_Windowed`)."""
    if over is not None or not rewritable:
        return make(over, None)
    return _Windowed.of(make)


@pl.api.register_expr_namespace("sw")
class SlidewiseExpr:
    """``pl.col(v).sw``: slidewise rolling aggregates as polars expressions."""

    def __init__(self, expr: pl.Expr) -> None:
        if expr.meta.has_multiple_outputs():
            # the declared dtype (pl.dtype_of) and the struct of inputs need one column
            raise ValueError("the sw namespace takes one column per expression: "
                             "[pl.col(c).sw.rolling(...) for c in cols] rather than pl.col(a, b) or pl.all()")
        self._expr = expr

    def rolling(
        self,
        window: Union[int, str, datetime.timedelta],
        agg: str = "sum",
        *,
        by: Any = None,
        over: Any = None,
        min_samples: Optional[int] = None,
        center: bool = False,
        closed: str = "right",
        ddof: int = 1,
        quantile: Optional[float] = None,
        interpolation: str = "nearest",
        ignore_nulls: bool = False,
        nan: str = "propagate",
    ) -> pl.Expr:
        """``agg`` over a rolling window, equal to polars' ``rolling_{agg}``
        (count window, ``window`` rows, ``min_samples`` defaults to
        ``window``: null until full) or with ``by=`` to ``rolling_{agg}_by``
        (``window`` a duration such as ``"5m"``/``"3i"``, ``min_samples``
        defaults to 1, 0 for ``sum``, as polars, ``closed=``). ``over=`` (a
        column or list) computes each key's windows separately in one call;
        so does ``.over(k)`` on the returned expression (it is rewritten to
        ``over=``). ``agg`` may also be ``count``, ``first``,
        ``last`` (``ignore_nulls=``), ``argmax``, ``argmin``, ``geomean``.
        ``nan="propagate"`` (default: a NaN is a value, as in polars) or
        ``"skip"`` (NaN is missing, as a null: pandas' and bottleneck's rule)."""
        nan = _check_nan(nan)
        spec = _Spec(agg, min_samples, center, closed, ddof, quantile, interpolation, ignore_nulls, by)
        if by is None:
            window = _sw._arrow.positive_int("window", window)
            _check_min_samples(min_samples, [window])
        else:
            _duration(window)
        has_by = by is not None

        def run(s: pl.Series) -> pl.Series:
            values, bys, keys = _unpack(s, has_by)
            _check_values(values)
            values = _nan_policy(values, nan)
            out = _rolling_one(values, window, spec, keys, bys)
            return _finish(values.name, out, spec.out_dtype(values.dtype))

        dtype = pl.dtype_of(_probe(spec.agg, self._expr, ddof, spec.q, spec.interpolation))
        return _windowed(lambda keys, order: _inputs(self._expr, by, keys, order).map_batches(
            _ordered(run, order), return_dtype=dtype), over, spec.agg not in _GROUP_INDEXED)

    def rolling_many(
        self,
        windows: Sequence[Union[int, str, datetime.timedelta]],
        aggs: Union[str, Sequence[str]] = "sum",
        *,
        by: Any = None,
        over: Any = None,
        min_samples: Optional[int] = None,
        center: bool = False,
        closed: str = "right",
        ddof: int = 1,
        quantile: Optional[float] = None,
        interpolation: str = "nearest",
        ignore_nulls: bool = False,
        nan: str = "propagate",
    ) -> pl.Expr:
        """:meth:`rolling` for every (agg, window): one struct column with a
        field ``f"{agg}_{window}"`` per pair, aggregation-major
        (``.struct.unnest()`` makes them columns). Count windows of sum /
        mean / max / min ... share one slidewise ``rolling_many`` call."""
        nan = _check_nan(nan)
        aggs = [aggs] if isinstance(aggs, str) else list(aggs)
        windows = list(windows)
        if not aggs or not windows:
            raise ValueError("rolling_many needs at least one aggregation and one window")
        if len(set(aggs)) != len(aggs) or len(set(map(str, windows))) != len(windows):
            raise ValueError(f"aggregations and windows must be distinct, got {aggs} and {windows}")
        specs = [_Spec(a, min_samples, center, closed, ddof, quantile if a == "quantile" else None,
                       interpolation, ignore_nulls, by) for a in aggs]
        if by is None:
            counts = [_sw._arrow.positive_int("window", w) for w in windows]
            _check_min_samples(min_samples, counts)
            windows = list(counts)
        else:
            for w in windows:
                _duration(w)
        names = [f"{s.agg}_{w}" for s in specs for w in windows]
        has_by = by is not None

        def run(s: pl.Series) -> pl.Series:
            values, bys, keys = _unpack(s, has_by)
            _check_values(values)
            values = _nan_policy(values, nan)
            cols = _many(values, windows, specs, keys, bys)
            series = [_finish(n, c, sp.out_dtype(values.dtype))
                      for (n, c, sp) in zip(names, cols, [sp for sp in specs for _ in windows])]
            return pl.struct(series, eager=True).alias(values.name)

        probes = [_probe(sp.agg, self._expr, ddof, sp.q, sp.interpolation) for sp in specs for _ in windows]
        dtype = pl.dtype_of(pl.struct([p.alias(n) for p, n in zip(probes, names)]))
        return _windowed(lambda keys, order: _inputs(self._expr, by, keys, order).map_batches(
            _ordered(run, order), return_dtype=dtype), over, not any(sp.agg in _GROUP_INDEXED for sp in specs))


_SHARED = ("sum", "mean", "max", "min", "std", "var", "count", "first", "last", "argmax", "argmin", "geomean")


def _many(values: pl.Series, windows: List[Any], specs: List[_Spec], keys: Optional[pa.Array],
          by: Optional[pl.Series]) -> List[pa.Array]:
    """The columns of rolling_many, aggregation-major. Count windows of the
    aggregations slidewise's rolling_many shares go through one call (with
    a count column when polars' null-until-full rule needs it); the rest
    (time windows, median, quantile, center) window by window."""
    shared = [sp for sp in specs if sp.agg in _SHARED and by is None and not sp.center and not _nan_min(values, sp)]
    res: Dict[Tuple[str, Any], pa.Array] = {}
    if shared:
        cores = [sp.core for sp in shared]
        need_count = specs[0].min_samples is None
        if need_count and "count" not in cores:
            cores.append("count")
        table = _sw.rolling_many(values.to_arrow(), windows, cores, keys=keys,
                                 min_periods=specs[0].min_samples, ignore_nulls=specs[0].ignore_nulls)
        for sp in shared:
            for w in windows:
                col = table.column(f"{_sw._arrow.check_agg(sp.core, sp.ignore_nulls)}_{w}")
                col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
                if need_count:
                    cnt = table.column(f"count_{w}").combine_chunks()
                    col = pc.if_else(pc.greater_equal(cnt, w), col, pa.nulls(len(col), col.type))
                mp = sp.min_samples if sp.min_samples is not None else w
                res[(sp.agg, w)] = _polars_rules(values, col, _count_runner(values, w, sp, keys, mp), sp, mp)
    out = []
    for sp in specs:
        for w in windows:
            out.append(res[(sp.agg, w)] if (sp.agg, w) in res else _rolling_one(values, w, sp, keys, by))
    return out
