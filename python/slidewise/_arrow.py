"""Input normalisation: turn what users pass into one pyarrow.Array of a dtype
the Rust core aggregates, copying only where Arrow needs it.

Copies happen in exactly these cases (everything else is zero-copy):
* a ChunkedArray (or an ``__arrow_c_stream__`` object) with more than one
  chunk is concatenated (``combine_chunks``), because the core scans one
  contiguous buffer;
* narrow types are widened: int8/int16/uint8/uint16 -> int32,
  uint32 -> int64, float16 -> float32;
* numpy arrays that are not contiguous, Python lists, and masked arrays
  (which become nulls) are converted by pyarrow.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Mapping
from typing import Any, Optional, Tuple

import numpy as np
import pyarrow as pa

from . import _slidewise

DTYPES = tuple(_slidewise.DTYPES)
# Monoid aggregations: the FIFO aggregators, streams of every window kind,
# time windows, window shapes and the named algorithms run these.
MONOID_AGGS = tuple(_slidewise.AGGS)
# Order statistics (docs/DESIGN.md §5.10): not monoids; rolling (count and
# time windows, keyed or not), rolling_many, count-window Query and the Spark
# adapter's count windows only.
ORDER_AGGS = ("median", "quantile", "rank")
# Every aggregation name.
AGGS = MONOID_AGGS + ORDER_AGGS
ALGORITHMS = ("auto",) + tuple(_slidewise.ALGORITHMS)

_ACCEPTED = {pa.int32(), pa.int64(), pa.float32(), pa.float64()}
_WIDEN = {
    pa.int8(): pa.int32(),
    pa.int16(): pa.int32(),
    pa.uint8(): pa.int32(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.float16(): pa.float32(),
}
_DTYPE_ALIASES = {"double": "float64", "float": "float32", "f64": "float64", "f32": "float32",
                  "i64": "int64", "i32": "int32"}
_ACCEPTED_MSG = "int32, int64, float32 and float64 (int8/int16/uint8/uint16/uint32/float16 are widened)"


def _combine(ca: pa.ChunkedArray) -> pa.Array:
    if ca.num_chunks == 1:
        return ca.chunk(0)
    if ca.num_chunks == 0:
        return pa.array([], type=ca.type)
    return ca.combine_chunks()  # one copy: the core scans a contiguous buffer


def to_arrow(obj: Any, what: str = "values") -> pa.Array:
    """Any array-like -> pyarrow.Array (no dtype check)."""
    try:
        if isinstance(obj, pa.Array):
            return obj
        if isinstance(obj, pa.ChunkedArray):
            return _combine(obj)
        if isinstance(obj, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(obj)
            data = np.ma.getdata(obj)
            if data.ndim != 1:
                raise ValueError(f"{what} must be one-dimensional, got shape {data.shape}")
            return pa.array(data, mask=mask if mask.any() else None)
        if isinstance(obj, np.ndarray):
            if obj.ndim != 1:
                raise ValueError(f"{what} must be one-dimensional, got shape {obj.shape}")
            if obj.dtype.kind in "iufM" and not obj.dtype.isnative:
                # Arrow is little-endian: a big-endian array is read swapped (a copy)
                obj = obj.astype(obj.dtype.newbyteorder("="))
            if obj.dtype.kind == "M":
                return _datetimes(obj)
            return pa.array(obj)
        if hasattr(obj, "__arrow_c_array__"):
            return pa.array(obj)
        if hasattr(obj, "__arrow_c_stream__"):
            return _combine(pa.chunked_array(obj))
        if isinstance(obj, (list, tuple, range)):
            return pa.array(obj)
        if hasattr(obj, "__array__"):
            return to_arrow(np.asarray(obj), what)
    except pa.ArrowNotImplementedError:
        # numpy's longdouble, complex, ... have no Arrow type
        raise TypeError(f"unsupported {what} dtype {getattr(obj, 'dtype', type(obj).__name__)}; slidewise "
                        f"aggregates {_ACCEPTED_MSG}; cast the column first") from None
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise TypeError(f"cannot read {what} as an Arrow array: {e}") from None
    except OverflowError as e:
        # a Python int past int64 / uint64 (pyarrow's own message names no column)
        raise TypeError(f"cannot read {what} as an Arrow array: a number does not fit 64 bits ({e}); "
                        "pass floats, or values within int64") from None
    raise TypeError(
        f"{what} must be a pyarrow Array/ChunkedArray, an object with __arrow_c_array__ or "
        f"__arrow_c_stream__ (polars Series, ...), a numpy array or a list; got {type(obj).__name__}"
    )


_NAT = np.iinfo(np.int64).min  # numpy's NaT


def _datetimes(obj: np.ndarray) -> pa.Array:
    """A numpy datetime64 array (pandas' index and columns) as an Arrow
    timestamp array over the same buffer: ``pa.array`` copies it while it
    looks for NaT, 3.4 ms of a 24 ms time-window sum on 2M rows. With a
    NaT (or a unit Arrow has no timestamp of) ``pa.array`` reads it, NaT
    as null."""
    unit, step = np.datetime_data(obj.dtype)
    if step != 1 or unit not in ("s", "ms", "us", "ns"):
        return pa.array(obj)
    iv = np.ascontiguousarray(obj).view(np.int64)
    if len(iv) == 0 or iv.min() == _NAT:
        return pa.array(obj)
    return pa.Array.from_buffers(pa.timestamp(unit), len(iv), [None, pa.py_buffer(iv)])


def check_dtype(arr: pa.Array, what: str = "values") -> pa.Array:
    """Widen narrow numeric types; reject what the core cannot aggregate."""
    t = arr.type
    if t in _ACCEPTED:
        return arr
    if t in _WIDEN:
        return arr.cast(_WIDEN[t])
    if pa.types.is_null(t):
        # An empty list or an all-None list has no type: read it as float64.
        return pa.nulls(len(arr), pa.float64())
    raise TypeError(f"unsupported {what} dtype {t}; slidewise aggregates {_ACCEPTED_MSG}; cast the column first")


def values_array(obj: Any, what: str = "values") -> pa.Array:
    return check_dtype(to_arrow(obj, what), what)


def dtype_name(dtype: Any) -> str:
    """'float64', np.float64, np.dtype('f8'), pa.float64() -> 'float64'."""
    if isinstance(dtype, pa.DataType):
        name = str(dtype)
    elif isinstance(dtype, str):
        name = dtype
    else:
        try:
            name = str(np.dtype(dtype))
        except TypeError:
            raise TypeError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}") from None
    name = _DTYPE_ALIASES.get(name, name)
    if name not in DTYPES:
        raise TypeError(f"unsupported dtype {name!r}; expected one of {', '.join(DTYPES)}")
    return name


def integer(what: str, v: Any, lo: int, kind: str) -> int:
    """``v`` as an int of at least ``lo``; a bool, a float or anything else
    without ``__index__`` is an error, not rounded."""
    n = None
    if not isinstance(v, (bool, np.bool_)):
        try:
            n = operator.index(v)
        except TypeError:
            pass
    if n is None:
        raise ValueError(f"{what} must be a {kind}, got {v!r}")
    if n < lo:
        raise ValueError(f"{what} must be a {kind}, got {n}")
    return n


def flag(what: str, v: Any) -> bool:
    """A bool (numpy's too); anything else, 1 and 0 included, is an error."""
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{what} must be True or False, got {v!r}")
    return bool(v)


def positive_int(what: str, v: Any) -> int:
    """A positive row count; time spans are for later, other things are wrong."""
    if isinstance(v, (str, datetime.timedelta, np.timedelta64)):
        raise ValueError(
            f"{what} {v!r} is a time span, which needs event times: rolling(..., timestamps=ts) "
            "or Stream(..., time='ts'); otherwise pass a number of rows"
        )
    return integer(what, v, 1, "positive integer number of rows")


def min_periods_int(min_periods: Any, limit: int, limit_name: str) -> Optional[int]:
    if min_periods is None:
        return None
    m = integer("min_periods", min_periods, 0, "non-negative integer")
    if m > limit:
        raise ValueError(f"min_periods ({m}) must be <= {limit_name} ({limit})")
    return m


INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def order_args(agg: Any, q: Any, interpolation: Any) -> Tuple[bool, Optional[float], Optional[str]]:
    """``(is_order_stat, q, interpolation)`` checked: ``q`` (in [0, 1]) and
    ``interpolation`` belong to ``agg="quantile"`` only, which needs ``q``."""
    if not (isinstance(agg, str) and agg in ORDER_AGGS):
        if q is not None or interpolation is not None:
            raise ValueError(f"q and interpolation apply to agg='quantile' only, not {agg!r}")
        return False, None, None
    if agg != "quantile":
        if q is not None or interpolation is not None:
            raise ValueError(f"q and interpolation apply to agg='quantile' only, not {agg!r}")
        return True, None, None
    if q is None:
        raise ValueError("agg='quantile' needs q, a number in [0, 1] (e.g. q=0.9)")
    if isinstance(q, (bool, np.bool_)) or not isinstance(q, (int, float, np.integer, np.floating)):
        raise ValueError(f"q must be a number in [0, 1], got {q!r}")
    qf = float(q)
    if not 0.0 <= qf <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    if interpolation is None:
        interpolation = "linear"
    if not isinstance(interpolation, str) or interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {', '.join(INTERPOLATIONS)}, got {interpolation!r}")
    return True, qf, interpolation


def check_agg(agg: Any, ignore_nulls: bool = False) -> str:
    """The core's name of ``agg``. ``first`` / ``last`` are Spark's: the
    value of the window's first / last row, null if that row's value is
    null; ``ignore_nulls=True`` gives Spark's ``first(v, ignorenulls=True)``
    (the core's ``first_ignore_nulls``). Every other aggregation skips nulls
    always, so the flag changes nothing for them."""
    if isinstance(agg, str) and agg in ORDER_AGGS:
        raise ValueError(f"agg={agg!r} is an order statistic, which runs in rolling, rolling_many and "
                         "count-window Query only; it has no window shapes, named algorithms, FIFO "
                         "aggregators, or time / session / out-of-order stream queries")
    if not isinstance(agg, str) or agg not in MONOID_AGGS:
        raise ValueError(f"unknown agg {agg!r}; expected one of {', '.join(AGGS)}")
    if flag("ignore_nulls", ignore_nulls) and agg in ("first", "last"):
        return agg + "_ignore_nulls"
    return agg


def check_algorithm(algorithm: Any) -> str:
    if algorithm == "cbix":
        raise ValueError(
            "algorithm 'cbix' is for out-of-order streams and is not available for FIFO windows yet; "
            f"expected one of {', '.join(ALGORITHMS)}"
        )
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")
    return algorithm


def column(batch: Any, name: str) -> Any:
    """Column `name` of a RecordBatch, Table, dict of arrays, polars
    DataFrame or any ``__arrow_c_stream__`` / ``__arrow_c_array__`` table."""
    if isinstance(batch, (pa.RecordBatch, pa.Table)):
        if name not in batch.schema.names:
            raise ValueError(f"the batch has no column {name!r}; its columns are {batch.schema.names}")
        return batch.column(name)
    if isinstance(batch, Mapping):
        if name not in batch:
            raise ValueError(f"the batch has no column {name!r}; its columns are {list(batch.keys())}")
        return batch[name]
    # A single column (an Array, a ChunkedArray, a polars Series) also speaks
    # these protocols, but it is not a table: say so rather than let Arrow
    # report a non-struct schema.
    try:
        if hasattr(batch, "__arrow_c_stream__"):
            return column(pa.table(batch), name)
        if hasattr(batch, "__arrow_c_array__"):
            return column(pa.record_batch(batch), name)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise TypeError(
            f"a batch must be a table with a column {name!r} (a RecordBatch, Table, dict of arrays or "
            f"DataFrame); got {type(batch).__name__}, which Arrow cannot read as a table: {e}"
        ) from None
    raise TypeError(
        "a batch must be a pyarrow RecordBatch or Table, a dict of arrays, a polars DataFrame or an "
        f"object with __arrow_c_stream__; got {type(batch).__name__}"
    )
