"""Type stubs of the Rust extension module (rust/python/src/lib.rs)."""

from typing import Any, List, Optional, Sequence, Tuple

import pyarrow as pa

__version__: str
AGGS: List[str]
ALGORITHMS: List[str]
DTYPES: List[str]

_Spec = Tuple[str, int, int, Optional[int]]
_Windows = Tuple[pa.Int64Array, pa.Int64Array, pa.Array]

def rolling(
    values: Any, window: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto"
) -> pa.Array:
    """Per-row rolling aggregate of an int32/int64/float32/float64 Arrow array."""

def rolling_many(
    values: Any, windows: Sequence[int], agg: str, min_periods: Optional[int] = None, algorithm: str = "auto"
) -> list[pa.Array]:
    """``rolling`` for each window, one array per window in order; max/min in one shared pass."""

class CountStream:
    """Count-window queries over one value column; queries with the same
    group id share one plan (one set of partials, one final aggregator)."""

    def __init__(
        self,
        specs: Sequence[_Spec],
        dtype: str,
        algorithm: str,
        groups: Optional[Sequence[int]] = None,
        partial: str = "pairs",
    ) -> None: ...
    @staticmethod
    def load(
        specs: Sequence[_Spec],
        dtype: str,
        algorithm: str,
        state: bytes,
        groups: Optional[Sequence[int]] = None,
        partial: str = "pairs",
    ) -> "CountStream": ...
    def save(self) -> bytes: ...
    def push(self, values: Any, args: Optional[Sequence[Optional[Any]]] = None) -> List[_Windows]: ...
    def flush(self) -> List[_Windows]: ...
    def rows_seen(self) -> int: ...
    def __len__(self) -> int: ...
    def plans(self) -> int: ...

def rolling_time(
    values: Any, ts: Any, range: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto"
) -> Any: ...

class TimeStream:
    """Spark-style time-window queries over one value column and an int64
    event-time column (non-decreasing); same group id = one shared plan."""

    def __init__(
        self, specs: Sequence[_Spec], dtype: str, algorithm: str, groups: Optional[Sequence[int]] = None
    ) -> None: ...
    @staticmethod
    def load(
        specs: Sequence[_Spec], dtype: str, algorithm: str, state: bytes, groups: Optional[Sequence[int]] = None
    ) -> "TimeStream": ...
    def save(self) -> bytes: ...
    def push(self, values: Any, ts: Any) -> List[_Windows]: ...
    def flush(self) -> List[_Windows]: ...
    def plans(self) -> int: ...

class LateStream:
    """Time-window queries over an out-of-order stream: watermark = max event
    time - lateness; rows behind it come back through take_late()."""

    def __init__(
        self,
        specs: Sequence[_Spec],
        lateness: int,
        dtype: str,
        algorithm: str,
        groups: Optional[Sequence[int]] = None,
    ) -> None: ...
    @staticmethod
    def load(
        specs: Sequence[_Spec],
        lateness: int,
        dtype: str,
        algorithm: str,
        state: bytes,
        groups: Optional[Sequence[int]] = None,
    ) -> "LateStream": ...
    def save(self) -> bytes: ...
    def push(self, values: Any, ts: Any) -> List[_Windows]: ...
    def flush(self) -> List[_Windows]: ...
    def take_late(self) -> Tuple[Any, Any]: ...
    def counts(self) -> Tuple[int, int, int]: ...
    def watermark(self) -> Optional[int]: ...

_KeyedWindows = Tuple[Any, Any, Any, Any]  # key, window_start, window_end, value

class KeyedStream:
    """Count-window (or, with ``time=True``, time-window) queries run per key
    of a key column; same group id = one shared plan per key; ``partial``:
    the count windows' partial aggregation (pairs, panes, cutty)."""

    def __init__(
        self, specs: Sequence[_Spec], dtype: str, algorithm: str, time: bool = False,
        groups: Optional[Sequence[int]] = None, partial: str = "pairs",
    ) -> None: ...
    @staticmethod
    def load(
        specs: Sequence[_Spec], dtype: str, algorithm: str, state: bytes, time: bool = False,
        groups: Optional[Sequence[int]] = None, partial: str = "pairs",
    ) -> "KeyedStream": ...
    def save(self) -> bytes: ...
    def push(
        self, keys: Any, values: Any, ts: Optional[Any] = None, args: Optional[Sequence[Optional[Any]]] = None
    ) -> List[_KeyedWindows]: ...
    def flush(self) -> List[_KeyedWindows]: ...
    def num_keys(self) -> int: ...

def rolling_keyed(
    keys: Any, values: Any, window: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto"
) -> Any: ...
def rolling_many_keyed(
    keys: Any, values: Any, windows: Sequence[int], agg: str, min_periods: Optional[int] = None,
    algorithm: str = "auto",
) -> List[Any]: ...
def rolling_time_keyed(
    keys: Any, values: Any, ts: Any, range: int, agg: str, min_periods: Optional[int] = None,
    algorithm: str = "auto",
) -> Any: ...

class RawAggregator:
    """One FIFO final aggregator over Python values."""

    algorithm: str
    agg: str
    dtype: str
    def __init__(self, algorithm: str, agg: str, dtype: str = "float64", capacity: int = 1024) -> None: ...
    def insert(self, value: Any, pos: Optional[int] = None) -> None: ...
    def insert_many(self, values: Any) -> None: ...
    def evict(self, n: int = 1) -> None: ...
    def query(self) -> Any: ...
    def query_last(self, k: int) -> Any: ...
    def __len__(self) -> int: ...

# optimizer (rust/python/src/optimizer.rs): WeaveShare with F1 edge counts.
def count_edges(ranges: List[int], slides_: List[int], phases: List[int], method: str) -> Tuple[int, int]: ...
def plan(
    ranges: List[int],
    slides_: List[int],
    phases: List[int],
    omegas: List[float],
    keys: List[int],
    rate: float,
    scale: float,
    method: str,
    single_tree_check: bool = True,
) -> Tuple[List[Tuple[List[int], Optional[int], Optional[int], float, float]], float, float, int, int]: ...
