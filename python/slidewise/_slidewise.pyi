"""Type stubs of the Rust extension module (rust/python/src/lib.rs)."""

from typing import Any, List, Optional, Sequence, Tuple

import pyarrow as pa

__version__: str
AGGS: List[str]  # the core's (monoid) aggregations; slidewise.AGGS adds the order statistics
ALGORITHMS: List[str]
DTYPES: List[str]


def rolling(
    values: Any, window: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto",
    closed: str = "right", center: bool = False, step: int = 1,
) -> pa.Array:
    """Per-row rolling aggregate of an int32/int64/float32/float64 Arrow array."""

def rolling_many(
    values: Any, windows: Sequence[int], agg: str, min_periods: Optional[int] = None, algorithm: str = "auto"
) -> list[pa.Array]:
    """``rolling`` for each window, one array per window in order; max/min in one shared pass."""

def rolling_time(
    values: Any, ts: Any, range: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto",
    closed: str = "right", center: bool = False, step: int = 1,
) -> Any: ...

def rolling_order(
    values: Any,
    windows: Sequence[int],
    agg: str,
    q: Optional[float] = None,
    interpolation: Optional[str] = None,
    min_periods: Optional[int] = None,
    kernel: str = "auto",
    keys: Optional[Any] = None,
) -> list[pa.Array]:
    """Rolling median / quantile / rank (float64) for each window, per key
    with ``keys``; ``kernel``: auto, sorted_buffer, median_sort or fenwick."""

def rolling_order_time(
    values: Any,
    ts: Any,
    range: int,
    agg: str,
    q: Optional[float] = None,
    interpolation: Optional[str] = None,
    min_periods: Optional[int] = None,
    keys: Optional[Any] = None,
) -> pa.Array:
    """Rolling median / quantile / rank (float64) over the time window
    ``(t - range, t]`` (int64 times), per key with ``keys``."""

# A query: (agg, kind, a, b, min_periods, arg column); kind "count" (a =
# range, b = slide, rows), "time" (a = range, b = slide) or "session" (a =
# gap), times in the time column's unit.
_Query = Tuple[str, str, int, int, Optional[int], Optional[str]]
_QueryWindows = Tuple[Optional[pa.Array], pa.Int64Array, pa.Int64Array, pa.Array]  # keys, start, end, value

class Stream:
    """Every continuous query (count, time or session windows; keyed or
    not; in order, or out of order with a lateness) over one stream
    (slidewise-core ``stream``)."""

    def __init__(
        self,
        queries: Sequence[_Query],
        dtype: str,
        algorithm: str = "auto",
        lateness: Optional[int] = None,
        keyed: bool = False,
        partial: str = "pairs",
        groups: Optional[Sequence[int]] = None,
    ) -> None: ...
    @staticmethod
    def restore(
        state: bytes,
        queries: Sequence[_Query],
        dtype: str,
        algorithm: str = "auto",
        lateness: Optional[int] = None,
        keyed: bool = False,
        partial: str = "pairs",
        groups: Optional[Sequence[int]] = None,
    ) -> "Stream": ...
    def save(self) -> bytes: ...
    def push(
        self,
        values: Any,
        time: Optional[Any] = None,
        keys: Optional[Any] = None,
        args: Optional[Sequence[Optional[Any]]] = None,
    ) -> List[_QueryWindows]: ...
    def flush(self) -> List[_QueryWindows]: ...
    def take_late(self) -> Tuple[Optional[pa.Array], pa.Int64Array, pa.Array]: ...
    def counts(self) -> Tuple[int, int, int]: ...
    def watermark(self) -> Optional[int]: ...
    def num_keys(self) -> int: ...
    def plans(self) -> int: ...
    def out_type(self, q: int) -> pa.DataType: ...

# closed= / center= / step=: pandas' window shape (step must be 1 with keys or
# time windows); the defaults run the plain kernels.
def rolling_keyed(
    keys: Any, values: Any, window: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto",
    closed: str = "right", center: bool = False, step: int = 1,
) -> Any: ...
def rolling_many_keyed(
    keys: Any, values: Any, windows: Sequence[int], aggs: Sequence[str], min_periods: Optional[int] = None,
    algorithm: str = "auto",
) -> List[Any]: ...
def rolling_time_keyed(
    keys: Any, values: Any, ts: Any, range: int, agg: str, min_periods: Optional[int] = None,
    algorithm: str = "auto", closed: str = "right", center: bool = False, step: int = 1,
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
