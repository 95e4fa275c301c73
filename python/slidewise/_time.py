"""Event time: durations ("10s", "5m", "1h", timedelta) and timestamp
columns, both turned into int64 counts of the timestamp column's unit."""

from __future__ import annotations

import datetime
import re
from typing import Any, Optional, Tuple

import numpy as np
import pyarrow as pa

from . import _arrow

_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_UNITS = {
    "ns": 1, "nanosecond": 1, "nanoseconds": 1,
    "us": 1_000, "microsecond": 1_000, "microseconds": 1_000,
    "ms": 1_000_000, "millisecond": 1_000_000, "milliseconds": 1_000_000,
    "s": 10**9, "sec": 10**9, "secs": 10**9, "second": 10**9, "seconds": 10**9,
    "m": 60 * 10**9, "min": 60 * 10**9, "mins": 60 * 10**9, "minute": 60 * 10**9, "minutes": 60 * 10**9,
    "h": 3600 * 10**9, "hour": 3600 * 10**9, "hours": 3600 * 10**9,
    "d": 86400 * 10**9, "day": 86400 * 10**9, "days": 86400 * 10**9,
    "w": 7 * 86400 * 10**9, "week": 7 * 86400 * 10**9, "weeks": 7 * 86400 * 10**9,
}
_SPAN = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*$")


def is_duration(v: Any) -> bool:
    return isinstance(v, (str, datetime.timedelta, np.timedelta64))


def duration_ns(what: str, v: Any) -> int:
    """'10s', '5 minutes', '1h', timedelta, numpy timedelta64 -> nanoseconds (> 0)."""
    if isinstance(v, str):
        unit = v.strip().lstrip("0123456789").strip()
        if unit in ("M", "MS", "ME", "mo", "Y", "YS", "YE", "y", "Q", "QS", "QE", "q"):
            # pandas' 'M' / 'MS' are month ends / starts (and lower-cased
            # they would read as minutes / milliseconds): not fixed spans
            raise ValueError(
                f"{what} {v!r} is a calendar offset (months, quarters or years), not a fixed time span; "
                "slidewise windows are fixed: write minutes as 'min' or 'm', milliseconds as 'ms', "
                "or a number of days such as '30d'"
            )
        m = _SPAN.match(v.lower())
        if not m or m.group(2) not in _UNITS:
            raise ValueError(
                f"{what} {v!r} is not a time span; use e.g. '500ms', '10s', '5m', '1h', '2d' or a datetime.timedelta"
            )
        ns = int(m.group(1)) * _UNITS[m.group(2)]
    elif isinstance(v, datetime.timedelta):
        ns = (v.days * 86400 + v.seconds) * 10**9 + v.microseconds * 1000
    elif isinstance(v, np.timedelta64):
        ns = int(v.astype("timedelta64[ns]").astype(np.int64))
    else:
        raise ValueError(f"{what} must be a time span (e.g. '10s' or a timedelta), got {v!r}")
    if ns <= 0:
        raise ValueError(f"{what} must be a positive time span, got {v!r}")
    return ns


def to_units(what: str, ns: int, unit_ns: int) -> int:
    if ns % unit_ns:
        raise ValueError(f"{what} ({ns} ns) is not a whole number of the timestamps' unit ({unit_ns} ns)")
    return ns // unit_ns


def time_column(obj: Any, what: str = "timestamps") -> Tuple[pa.Array, int, pa.DataType]:
    """A timestamp column -> (int64 view, nanoseconds per unit, original type).
    Plain integer columns are taken as nanoseconds since the epoch."""
    arr = _arrow.to_arrow(obj, what)
    t = arr.type
    if pa.types.is_timestamp(t):
        unit_ns = _NS[t.unit]
    elif pa.types.is_date64(t):
        unit_ns = _NS["ms"]
    elif pa.types.is_date32(t):
        arr = arr.cast(pa.timestamp("s"))
        unit_ns = _NS["s"]
    elif pa.types.is_integer(t):
        unit_ns = 1
    else:
        raise TypeError(f"{what} must be a timestamp (or date, or integer) column, got {t}")
    if arr.null_count:
        first = arr.is_null().to_numpy(zero_copy_only=False).argmax()
        raise ValueError(f"{what}: row {first} has a null event time; every row needs one")
    return arr.cast(pa.int64()), unit_ns, t


def int_window_units(typ: pa.DataType, unit_ns: int) -> int:
    """Units of ``unit_ns`` in one step of an integer window over a column of
    ``typ``: its own unit, but a day for a date column (date32 counts days;
    date64 counts milliseconds of whole days), as a date user means."""
    return 86_400 * _NS["s"] // unit_ns if pa.types.is_date(typ) else 1


def restore(arr: pa.Array, typ: Optional[pa.DataType]) -> pa.Array:
    """int64 window bounds back to the timestamp column's type."""
    if typ is None or pa.types.is_integer(typ):
        return arr
    if pa.types.is_date(typ):
        return arr.cast(pa.timestamp("ms" if pa.types.is_date64(typ) else "s"))
    return arr.cast(typ)
