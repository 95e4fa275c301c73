"""Type stubs of the Rust extension module (rust/python/src/*.rs).

Each signature follows its ``#[pyo3(signature = ...)]``: an argument the
binding extracts as ``PyArray`` takes any object with ``__arrow_c_array__``
(pyo3-arrow calls it; the Python package passes pyarrow Arrays), a
``Vec<T>`` any sequence, ``&[u8]`` bytes. Results are pyarrow objects,
``Any`` to a checker as pyarrow ships no type information.
"""

from typing import Any, List, Optional, Protocol, Sequence, Tuple, final

import pyarrow as pa

class _ArrowArray(Protocol):
    # what pyo3-arrow's PyArray extracts
    def __arrow_c_array__(self, requested_schema: Any = ...) -> Tuple[Any, Any]: ...

__all__ = ['rolling_order', 'rolling', 'rolling_many', 'rolling_time', 'rolling_keyed', 'rolling_many_keyed',
           'rolling_time_keyed', 'Stream', 'RawAggregator', 'count_edges', 'plan', 'AGGS', 'ALGORITHMS', 'DTYPES',
           '__version__']

__version__: str
AGGS: List[str]  # the core's (monoid) aggregations; slidewise.AGGS adds the order statistics
ALGORITHMS: List[str]
DTYPES: List[str]

# rolling.rs. closed= / center= / step=: pandas' window shape (step must be 1
# with keys or time windows); the defaults run the plain kernels.
def rolling(
    values: _ArrowArray, window: int, agg: str, min_periods: Optional[int] = None, algorithm: str = "auto",
    closed: str = "right", center: bool = False, step: int = 1, nan_skip: bool = False,
) -> pa.Array:
    """Per-row rolling aggregate of an int32/int64/float32/float64 Arrow array;
    ``nan_skip``: a NaN is missing, as a null."""

def rolling_many(
    values: _ArrowArray, windows: Sequence[int], agg: str, min_periods: Optional[int] = None, algorithm: str = "auto"
) -> List[pa.Array]:
    """``rolling`` for each window, one array per window in order; max/min in one shared pass."""

def rolling_time(
    values: _ArrowArray, ts: _ArrowArray, range: int, agg: str, min_periods: Optional[int] = None,
    algorithm: str = "auto", closed: str = "right", center: bool = False, step: int = 1,
) -> pa.Array:
    """Rolling aggregate over the rows ``j <= i`` with ``ts[j] > ts[i] - range`` (int64 times)."""

def rolling_keyed(
    keys: _ArrowArray, values: _ArrowArray, window: int, agg: str, min_periods: Optional[int] = None,
    algorithm: str = "auto", closed: str = "right", center: bool = False, step: int = 1,
) -> pa.Array: ...
def rolling_many_keyed(
    keys: _ArrowArray, values: _ArrowArray, windows: Sequence[int], aggs: Sequence[str],
    min_periods: Optional[int] = None, algorithm: str = "auto",
) -> List[pa.Array]: ...
def rolling_time_keyed(
    keys: _ArrowArray, values: _ArrowArray, ts: _ArrowArray, range: int, agg: str, min_periods: Optional[int] = None,
    algorithm: str = "auto", closed: str = "right", center: bool = False, step: int = 1,
) -> pa.Array: ...
def nan_to_null(values: _ArrowArray) -> Optional[pa.Array]:
    """The float array with its NaN rows null (values shared), or None when
    it holds no valid NaN."""
def rolling_order(
    values: _ArrowArray,
    windows: Sequence[int],
    agg: str,
    q: Optional[float] = None,
    interpolation: Optional[str] = None,
    min_periods: Optional[int] = None,
    kernel: str = "auto",
    keys: Optional[_ArrowArray] = None,
) -> List[pa.Array]:
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

# stream.rs. A query: (agg, kind, a, b, min_periods, arg column); kind "count"
# (a = range, b = slide, rows), "time" (a = range, b = slide) or "session"
# (a = gap), times in the time column's unit.
_Query = Tuple[str, str, int, int, Optional[int], Optional[str]]
_QueryWindows = Tuple[Optional[pa.Array], pa.Int64Array, pa.Int64Array, pa.Array]  # keys, start, end, value

@final  # a frozen pyclass: not subclassable
class Stream:
    """Every continuous query (count, time or session windows; keyed or
    not; in order, or out of order with a lateness) over one stream
    (slidewise-core ``stream``)."""

    # pyo3's #[new] is __new__
    def __new__(
        cls,
        queries: Sequence[_Query],
        dtype: str,
        algorithm: str = "auto",
        lateness: Optional[int] = None,
        keyed: bool = False,
        partial: str = "pairs",
        groups: Optional[Sequence[int]] = None,
    ) -> Stream: ...
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
    ) -> Stream: ...
    def save(self) -> bytes: ...
    def push(
        self,
        values: _ArrowArray,
        time: Optional[_ArrowArray] = None,
        keys: Optional[_ArrowArray] = None,
        args: Optional[Sequence[Optional[_ArrowArray]]] = None,
    ) -> List[_QueryWindows]: ...
    def flush(self) -> List[_QueryWindows]: ...
    def take_late(self) -> Tuple[Optional[pa.Array], pa.Int64Array, pa.Array]: ...
    def counts(self) -> Tuple[int, int, int]: ...
    def watermark(self) -> Optional[int]: ...
    def num_keys(self) -> int: ...
    def plans(self) -> int: ...
    def out_type(self, q: int) -> pa.DataType: ...

# raw.rs
@final
class RawAggregator:
    """One FIFO final aggregator over Python values."""

    @property
    def algorithm(self) -> str: ...
    @property
    def agg(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    def __new__(cls, algorithm: str, agg: str, dtype: str = "float64", capacity: int = 1024) -> RawAggregator: ...
    def insert(self, value: Any, pos: Optional[int] = None) -> None: ...
    def insert_many(self, values: _ArrowArray) -> None: ...
    def evict(self, n: int = 1) -> None: ...
    # None when empty; otherwise int, float, a list (collect) or a tuple
    # (maxcount / mincount), by the aggregation.
    def query(self) -> Any: ...
    def query_last(self, k: int) -> Any: ...
    def __len__(self) -> int: ...

# optimizer.rs: WeaveShare with F1 edge counts.
def count_edges(ranges: Sequence[int], slides_: Sequence[int], phases: Sequence[int], method: str) -> Tuple[int, int]:
    """(edges, composite slide) of one shared plan."""

def plan(
    ranges: Sequence[int],
    slides_: Sequence[int],
    phases: Sequence[int],
    omegas: Sequence[float],
    keys: Sequence[int],
    rate: float,
    scale: float,
    method: str,
    single_tree_check: bool = True,
) -> Tuple[List[Tuple[List[int], Optional[int], Optional[int], float, float]], float, float, int, int]:
    """(per group: members, composite slide, edges, density, omega), cost,
    no-share cost, merges, pair evaluations."""
