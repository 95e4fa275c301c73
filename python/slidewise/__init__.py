"""slidewise: incremental sliding-window aggregation over Arrow data.

>>> import slidewise as sw
>>> sw.rolling([1, 5, 2, 4], 2, "max").to_pylist()
[1, 5, 5, 4]

* :func:`rolling` / :func:`rolling_many`: per-row rolling aggregates of a column.
* :class:`Query` and :class:`Stream`: count-window continuous queries over a
  stream of Arrow batches, picklable mid-stream.
* :mod:`slidewise.aggregators`: the FIFO final aggregators of the papers
  (Recalc, SoE, TwoStacks, DABA, FlatFAT, BInt, FlatFIT, SlideSide).

Inputs are anything speaking the Arrow PyCapsule interface, numpy arrays,
lists, pandas Series; outputs follow inputs: polars in, polars out; pandas
in, pandas out (the input's index); anything else, pyarrow (docs/pandas.md).
``nan="skip"`` treats NaN as missing (pandas' rule); the default,
``"propagate"``, is Spark's. The GIL is released while Rust computes.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _arrow, _convert, _keys, _shape, _slidewise, _time, aggregators
from ._arrow import AGGS, ALGORITHMS, DTYPES, MONOID_AGGS, ORDER_AGGS
from ._query import Query
from ._stream import Stream
from ._plan import Plan, count_edges, plan
from ._typing import ArrayLike, Rows, Window

__version__: str = _slidewise.__version__

__all__ = ["rolling", "rolling_many", "Query", "Stream", "Plan", "plan", "count_edges", "aggregators", "AGGS", "MONOID_AGGS", "ORDER_AGGS", "ALGORITHMS",
           "DTYPES",
           "__version__"]


def _rolling_array(arr: pa.Array, window: int, agg: str, min_periods: Optional[int], algorithm: str,
                   nan_skip: bool = False) -> pa.Array:
    # The extension caps a window longer than the data and answers an
    # unreachable min_periods with nulls of the aggregate's type.
    return _slidewise.rolling(arr, window, agg, min_periods, algorithm, nan_skip=nan_skip)


def rolling(
    values: ArrayLike,
    window: Window,
    agg: str = "sum",
    *,
    keys: Optional[ArrayLike] = None,
    timestamps: Optional[ArrayLike] = None,
    min_periods: Optional[int] = None,
    algorithm: str = "auto",
    ignore_nulls: bool = False,
    closed: Optional[str] = None,
    center: bool = False,
    step: Optional[int] = None,
    q: Optional[float] = None,
    interpolation: Optional[str] = None,
    nan: str = "propagate",
) -> Any:
    """Per-row rolling aggregate: row ``i`` gets ``agg`` over rows
    ``(i - window, i]`` (fewer at the start, as Spark's ``ROWS BETWEEN
    window-1 PRECEDING AND CURRENT ROW``). Nulls are skipped, but for
    ``first`` / ``last``, which follow Spark's default (``ignorenulls=False``):
    the value of the window's first / last row, null if that value is null;
    ``ignore_nulls=True`` gives the first / last non-null value instead;
    ``min_periods=k`` gives null where fewer than ``k`` non-null values are in
    the window (pandas). ``argmax``/``argmin`` give the absolute row index of
    the extreme, ties to the oldest.

    With ``timestamps`` (a timestamp column, non-decreasing) the window is a
    time span (``"5m"``, ``"10s"``, a ``timedelta``; an int is in the
    timestamps' unit, days for a date column) and row ``i`` aggregates the rows ``j <= i`` with
    ``ts[j] > ts[i] - window``, as pandas ``rolling("5m")``.

    ``values``: pyarrow Array/ChunkedArray, polars Series, numpy array (masked
    entries are nulls), list, or any ``__arrow_c_array__``/``__arrow_c_stream__``
    object of int32/int64/float32/float64 (narrower numeric types are widened;
    a multi-chunk input is concatenated once).

    With ``keys`` (an integer or string column, no nulls) each row's window
    holds only rows of its own key: the last ``window`` rows of that key up
    to and including it (with ``timestamps``: that key's rows in the time
    span, times non-decreasing within each key). The result is aligned with
    the input rows, keys in any order: pandas
    ``df.groupby(k).rolling(...)`` re-aligned to the input. ``argmax`` /
    ``argmin`` give input row indices.

    Window shape, as pandas (docs/DESIGN.md "Window shape"):
    ``closed="right"`` (default) / ``"left"`` / ``"both"`` / ``"neither"``
    says which ends of the window are in it: for a count window ``"left"``
    is the ``window`` rows before row ``i``, ``"both"`` one row more than
    ``"right"``, ``"neither"`` one fewer; for a time window ``(t-w, t]``,
    ``[t-w, t)``, ``[t-w, t]``, ``(t-w, t)``. ``center=True`` centres the
    window on the row (count windows: rows ``i - window//2`` ..., pandas'
    convention for even windows; time windows: ``t - w/2`` to ``t + w/2``).
    ``step=k`` returns rows 0, k, 2k, ... only (count windows without
    ``keys``; pandas supports it nowhere else). Windows still start partial
    unless ``min_periods`` is given; pandas' default is
    ``min_periods=window``. The shape applies to every aggregation,
    median / quantile / rank included (rank ranks the last row of the
    shaped window, as pandas' ``rolling(...).rank()``).

    ``nan="propagate"`` (default): a NaN is a value (Spark's rule,
    docs/DESIGN.md §5.3); ``nan="skip"``: a NaN is missing, as a null
    (pandas' and bottleneck's rule; ``min_periods`` does not count it).

    Returns a pyarrow Array; a polars Series for a polars Series (its name
    kept); a pandas Series for a pandas Series, on its index (with
    ``step``, every ``step``-th label) and name (nulls become NaN in numpy
    dtypes, pd.NA in nullable ones; docs/pandas.md).
    """
    # A plain count window takes the NaN policy to the extension, whose
    # sums and means mask NaN in their kernels with no NaN-to-null pass
    # over the column first (issue 36); the other calls read the column
    # with its NaN rows null.
    nan_skip = (_convert.check_nan(nan) == "skip" and agg not in ORDER_AGGS and keys is None
                and timestamps is None and _shape.is_default(closed, center, step))
    arr = _convert.values_in(values, "propagate" if nan_skip else nan)
    out = _rolling(arr, window, agg, keys, timestamps, min_periods, algorithm, ignore_nulls,
                   closed, center, step, q, interpolation, nan_skip)
    return _convert.series_out(out, values, step)


def _rolling(values: pa.Array, window: Any, agg: str, keys: Any, timestamps: Any, min_periods: Optional[int],
             algorithm: str, ignore_nulls: bool, closed: Optional[str], center: bool, step: Optional[int],
             q: Optional[float], interpolation: Optional[str], nan_skip: bool = False) -> pa.Array:
    """:func:`rolling` over a checked pyarrow Array; ``nan_skip``: its NaN
    are missing (a plain count window, no keys)."""
    order, q, interpolation = _arrow.order_args(agg, q, interpolation)
    if order:
        return _rolling_order(values, [window], agg, q, interpolation, keys, timestamps, min_periods, algorithm,
                              (closed, center, step))[0]
    if keys is not None:
        keys = _keys.key_array(keys)
    if timestamps is not None:
        return _rolling_time(values, window, agg, timestamps, min_periods, algorithm, keys, ignore_nulls,
                             (closed, center, step))
    w = _arrow.positive_int("window", window)
    agg = _arrow.check_agg(agg, ignore_nulls)
    algorithm = _arrow.check_algorithm(algorithm)
    mp = _arrow.min_periods_int(min_periods, w, "window")
    if not _shape.is_default(closed, center, step):
        return _shape.rolling_count(values, keys, w, agg, mp, algorithm, closed, center, step)
    if keys is not None:
        arr = _arrow.values_array(values)
        if len(keys) != len(arr):
            raise ValueError(f"keys have {len(keys)} rows, values {len(arr)}")
        return _slidewise.rolling_keyed(keys, arr, w, agg, mp, algorithm)
    return _rolling_array(_arrow.values_array(values), w, agg, mp, algorithm, nan_skip)


def _rolling_order(values: ArrayLike, windows: Sequence[Window], agg: str, q: Optional[float],
                   interpolation: Optional[str], keys: Optional[ArrayLike], timestamps: Optional[ArrayLike],
                   min_periods: Optional[int], algorithm: str,
                   shape: Tuple[Optional[str], bool, Optional[int]] = (None, False, None)) -> List[pa.Array]:
    """median / quantile / rank for each window (one list of arrays);
    ``shape``: pandas' ``(closed, center, step)``, checked as for the other
    aggregations (the default shape passes nothing: the plain kernels)."""
    if algorithm != "auto":
        raise ValueError(f"agg={agg!r} has no FIFO algorithms: algorithm must be 'auto', got {algorithm!r}")
    kw: Dict[str, Any] = {}
    if not _shape.is_default(*shape):
        closed, center, step = _shape.check(*shape, time=timestamps is not None, keyed=keys is not None)
        kw = {"closed": closed, "center": center, "step": step}
    if timestamps is not None:  # a time window: (t - window, t], as pandas rolling("5m")
        arr = _arrow.values_array(values)
        ts, unit_ns, ts_type = _time.time_column(timestamps)
        if len(ts) != len(arr):
            raise ValueError(f"timestamps have {len(ts)} rows, values {len(arr)}")
        span = _time_span(windows[0], unit_ns, ts_type)
        mp = _arrow.min_periods_int(min_periods, 1 << 62, "2**62")
        if keys is not None:
            keys = _keys.key_array(keys)
            if len(keys) != len(arr):
                raise ValueError(f"keys have {len(keys)} rows, values {len(arr)}")
        return [_slidewise.rolling_order_time(arr, ts, span, agg, q, interpolation, mp, keys, **kw)]
    ws = [_arrow.positive_int("window", w) for w in windows]
    mp = None
    for w in ws:
        mp = _arrow.min_periods_int(min_periods, w, "window")
    arr = _arrow.values_array(values)
    if keys is not None:
        keys = _keys.key_array(keys)
        if len(keys) != len(arr):
            raise ValueError(f"keys have {len(keys)} rows, values {len(arr)}")
    return _slidewise.rolling_order(arr, ws, agg, q, interpolation, mp, "auto", keys, **kw)


def _time_span(window: Window, unit_ns: int, ts_type: pa.DataType) -> int:
    """A time window in units of ``unit_ns``: a span ("5m", timedelta) or an
    int in the timestamps' unit (days for a date column)."""
    if _time.is_duration(window):
        return _time.to_units("window", _time.duration_ns("window", window), unit_ns)
    return _arrow.positive_int("window", window) * _time.int_window_units(ts_type, unit_ns)


def _rolling_time(values: ArrayLike, window: Window, agg: str, timestamps: ArrayLike, min_periods: Optional[int],
                  algorithm: str, keys: Optional[pa.Array] = None, ignore_nulls: bool = False,
                  shape: Tuple[Optional[str], bool, Optional[int]] = (None, False, None)) -> pa.Array:
    agg = _arrow.check_agg(agg, ignore_nulls)
    algorithm = _arrow.check_algorithm(algorithm)
    arr = _arrow.values_array(values)
    ts, unit_ns, ts_type = _time.time_column(timestamps)
    if len(ts) != len(arr):
        raise ValueError(f"timestamps have {len(ts)} rows, values {len(arr)}")
    span = _time_span(window, unit_ns, ts_type)
    mp = _arrow.min_periods_int(min_periods, 1 << 62, "2**62")
    if keys is not None and len(keys) != len(arr):
        raise ValueError(f"keys have {len(keys)} rows, values {len(arr)}")
    if not _shape.is_default(*shape):
        return _shape.rolling_time(arr, ts, keys, span, agg, mp, algorithm, *shape)
    if keys is not None:
        return _slidewise.rolling_time_keyed(keys, arr, ts, span, agg, mp, algorithm)
    return _slidewise.rolling_time(arr, ts, span, agg, mp, algorithm)


def rolling_many(
    values: ArrayLike,
    windows: Iterable[Rows],
    agg: Union[str, Sequence[str]] = "sum",
    *,
    keys: Optional[ArrayLike] = None,
    min_periods: Optional[int] = None,
    algorithm: str = "auto",
    ignore_nulls: bool = False,
    q: Optional[float] = None,
    interpolation: Optional[str] = None,
    nan: str = "propagate",
) -> Any:
    """:func:`rolling` for several window lengths over the same column: a
    table with one column ``f"{agg}_{window}"`` per window. ``agg`` may be a
    list: one column per (aggregation, window), aggregation-major.

    max / min share one pass over the column for all windows (a sparse
    table of power-of-two blocks), and so do sum / mean of float64 (one
    compensated prefix sum, each window a difference); other aggregations
    run window by window. The shared passes split the rows over up to 4
    threads when windows x rows >= 2^24. The GIL is released for the whole
    call.

    With ``keys`` every window is per key, as :func:`rolling` with ``keys``:
    the rows are grouped once for all windows, and each key's rows run the
    same shared pass.

    ``ignore_nulls=True``: ``first`` / ``last`` of the non-null values (the
    columns are then named ``first_ignore_nulls_{window}``), as in
    :func:`rolling`.

    ``median`` / ``quantile`` (with ``q``, ``interpolation``) / ``rank`` as in
    :func:`rolling`, window by window (the column converted once); columns
    are named ``median_{window}`` etc.

    ``nan`` as in :func:`rolling`. Returns a pyarrow Table; a polars
    DataFrame for a polars Series; a pandas DataFrame on the input's index
    for a pandas Series.
    """
    table = _rolling_many(_convert.values_in(values, nan), windows, agg, keys, min_periods, algorithm,
                          ignore_nulls, q, interpolation)
    return _convert.frame_out(table, values)


def _rolling_many(values: pa.Array, windows: Iterable[Rows], agg: Union[str, Sequence[str]], keys: Any,
                  min_periods: Optional[int], algorithm: str, ignore_nulls: bool, q: Optional[float],
                  interpolation: Optional[str]) -> pa.Table:
    """:func:`rolling_many` over a checked pyarrow Array."""
    aggs = [agg] if isinstance(agg, str) else list(agg)
    if not aggs:
        raise ValueError("rolling_many needs at least one aggregation")
    if len(set(aggs)) != len(aggs):
        raise ValueError(f"aggregations must be distinct, got {aggs}")
    if any(isinstance(a, str) and a in _arrow.ORDER_AGGS for a in aggs):
        if len(aggs) > 1:
            raise ValueError(f"median / quantile / rank take one aggregation per rolling_many call, got {aggs}")
        order, q, interpolation = _arrow.order_args(aggs[0], q, interpolation)
        ws = [_arrow.positive_int("window", w) for w in windows]
        if not ws:
            raise ValueError("rolling_many needs at least one window")
        if len(set(ws)) != len(ws):
            raise ValueError(f"windows must be distinct, got {ws}")
        cols = _rolling_order(values, ws, aggs[0], q, interpolation, keys, None, min_periods, algorithm)
        return pa.Table.from_arrays(cols, names=[f"{aggs[0]}_{w}" for w in ws])
    _arrow.order_args(aggs[0], q, interpolation)  # q / interpolation given without quantile: an error
    named = aggs
    aggs = [_arrow.check_agg(a, ignore_nulls) for a in aggs]
    if len(set(aggs)) != len(aggs):
        # ignore_nulls=True makes "first" the same as "first_ignore_nulls"
        raise ValueError(f"aggregations must be distinct, got {named}, which are {aggs} with ignore_nulls=True")
    algorithm = _arrow.check_algorithm(algorithm)
    ws = [_arrow.positive_int("window", w) for w in windows]
    if not ws:
        raise ValueError("rolling_many needs at least one window")
    if len(set(ws)) != len(ws):
        raise ValueError(f"windows must be distinct, got {ws}")
    mps = [_arrow.min_periods_int(min_periods, w, "window") for w in ws]
    arr = _arrow.values_array(values)
    if keys is not None:
        # per-key windows, as rolling(..., keys=keys) for each window
        keys = _keys.key_array(keys)
        if len(keys) != len(arr):
            raise ValueError(f"keys have {len(keys)} rows, values {len(arr)}")
        # one grouping of the rows for all windows and aggregations
        cols = _slidewise.rolling_many_keyed(keys, arr, ws, aggs, mps[0], algorithm)
    else:
        cols = [c for a in aggs for c in _slidewise.rolling_many(arr, ws, a, mps[0], algorithm)]
    return pa.Table.from_arrays(cols, names=[f"{a}_{w}" for a in aggs for w in ws])
