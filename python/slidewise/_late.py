"""Out-of-order streams (``Stream(..., time="ts", lateness=...)``): argument
checks and the late-row side output. The windowing itself is in Rust
(slidewise-core ``stream``)."""

from __future__ import annotations

import datetime
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from . import _time

#: Algorithms that can run an out-of-order stream (general aggregators).
LATE_ALGORITHMS = ("auto", "cbix", "flatfat", "two_stacks", "recalc")


def lateness_ns(v: Any) -> int:
    """'30s', timedelta, numpy timedelta64 or an int of nanoseconds -> ns (>= 0)."""
    if isinstance(v, bool):
        raise ValueError(f"lateness must be a time span (e.g. '30s', a timedelta) or nanoseconds, got {v!r}")
    if isinstance(v, (int, np.integer)):
        ns = int(v)
    elif isinstance(v, datetime.timedelta):
        ns = (v.days * 86400 + v.seconds) * 10**9 + v.microseconds * 1000
    elif isinstance(v, np.timedelta64):
        ns = int(v.astype("timedelta64[ns]").astype(np.int64))
    elif isinstance(v, str):
        m = _time._SPAN.match(v.lower())
        if m and int(m.group(1)) == 0 and m.group(2) in _time._UNITS:
            ns = 0
        else:
            ns = _time.duration_ns("lateness", v)
    else:
        raise ValueError(f"lateness must be a time span (e.g. '30s', a timedelta) or nanoseconds, got {v!r}")
    if ns < 0:
        raise ValueError(f"lateness must be >= 0, got {v!r}")
    if ns >= 1 << 62:
        raise ValueError(f"lateness {v!r} is too large")
    return ns


def check_algorithm(algorithm: Any) -> str:
    if not isinstance(algorithm, str) or algorithm not in LATE_ALGORITHMS:
        raise ValueError(
            f"algorithm {algorithm!r} cannot run an out-of-order stream (lateness=...); "
            f"expected one of {', '.join(LATE_ALGORITHMS)}"
        )
    return algorithm


def late_table(values: Optional[pa.Array], ts: Optional[pa.Array], ts_type: Optional[pa.DataType],
               time: str, value: str) -> pa.Table:
    """The late rows as a table (time column, value column)."""
    if values is None:
        return pa.table({time: pa.array([], ts_type or pa.int64()), value: pa.array([], pa.float64())})
    return pa.Table.from_arrays([_time.restore(ts, ts_type), values], names=[time, value])
