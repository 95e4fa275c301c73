"""Window shape for :func:`slidewise.rolling`: pandas' ``closed=``,
``center=`` and ``step=`` (docs/DESIGN.md "Window shape").

Only argument checks live here; the windows are computed in Rust
(``rust/core/src/rolling/shape.rs``).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import pyarrow as pa

from . import _arrow, _slidewise

CLOSED = ("right", "left", "both", "neither")


def is_default(closed: Optional[str], center: bool, step: Optional[int]) -> bool:
    """Whether the shape keywords ask for pandas' default window (no work)."""
    return (closed is None or closed == "right") and center is False and (step is None or (type(step) is int and step == 1))


def check(closed: Optional[str], center: Any, step: Any, *, time: bool, keyed: bool) -> Tuple[str, bool, int]:
    """Normalised ``(closed, center, step)``; a clear ValueError where pandas
    raises, or where the keyword is not meaningful."""
    if closed is None:
        closed = "right"
    if not isinstance(closed, str) or closed not in CLOSED:
        raise ValueError(f"closed must be 'right', 'left', 'both' or 'neither', got {closed!r}")
    center = _arrow.flag("center", center)
    step = 1 if step is None else _arrow.integer("step", step, 1, "positive integer")
    if step != 1 and time:
        raise ValueError("step is not supported with time windows (pandas raises NotImplementedError too)")
    if step != 1 and keyed:
        raise ValueError("step is not supported with keys: pandas' groupby().rolling() has no step "
                         "(take every step-th row of each key's result yourself)")
    return closed, center, step


def rolling_count(values: Any, keys: Optional[pa.Array], w: int, agg: str, mp: Optional[int], algorithm: str,
                  closed: Optional[str], center: Any, step: Any) -> pa.Array:
    closed, center, step = check(closed, center, step, time=False, keyed=keys is not None)
    arr = _arrow.values_array(values)
    if keys is not None:
        if len(keys) != len(arr):
            raise ValueError(f"keys have {len(keys)} rows, values {len(arr)}")
        return _slidewise.rolling_keyed(keys, arr, w, agg, mp, algorithm, closed, center, step)
    return _slidewise.rolling(arr, w, agg, mp, algorithm, closed, center, step)


def rolling_time(arr: pa.Array, ts: pa.Array, keys: Optional[pa.Array], span: int, agg: str, mp: Optional[int],
                 algorithm: str, closed: Optional[str], center: Any, step: Any) -> pa.Array:
    closed, center, step = check(closed, center, step, time=True, keyed=keys is not None)
    if keys is not None:
        return _slidewise.rolling_time_keyed(keys, arr, ts, span, agg, mp, algorithm, closed, center, step)
    return _slidewise.rolling_time(arr, ts, span, agg, mp, algorithm, closed, center, step)
