"""Argument specs and types: one :class:`_Spec` per output column, the
aggregations with a Spark counterpart (and Spark's names for them), and the
mapping between Spark's and Arrow's types.

Output types follow Spark's functions: max/min/first/last keep the input
type, sum gives bigint for integers and double for floats, mean/std/var
double, count bigint. Value columns are byte/short/int/bigint/float/double.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

import numpy as np
import pyarrow as pa

# The default tiebreak column (monotonically_increasing_id of the input).
_TB = "__slidewise_tiebreak"


def _is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext, no
    py4j: nothing may reach for ``sparkContext``, ``_jvm`` or ``_jdf``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _functions(df_or_spark: Any) -> Any:
    """``pyspark.sql.functions`` for this DataFrame's (or session's) kind.
    pyspark's own module picks Connect or classic columns by a process-wide
    flag, which a process holding a classic session and a Connect client
    (the Connect builder used directly) does not have right for both."""
    spark = getattr(df_or_spark, "sparkSession", df_or_spark)
    if _is_connect(spark):
        from pyspark.sql.connect import functions as CF

        return CF
    from pyspark.sql import functions as F

    return F


def _arrow_udf(df: Any, fn: Any, return_type: Any) -> Any:
    """A scalar iterator Arrow UDF (pyspark >= 4.1's ``arrow_udf``) of the
    DataFrame's kind, Connect or classic, whatever the process-wide flag
    (see _functions); None where this pyspark has none."""
    try:
        from pyspark.sql.functions import arrow_udf  # type: ignore[attr-defined]  # pyspark >= 4.1; its hints lack it
        from pyspark.util import PythonEvalType
    except ImportError:
        return None
    if not _is_connect(df.sparkSession):
        return arrow_udf(fn, return_type)
    try:
        from pyspark.sql.connect.udf import _create_udf
    except ImportError:
        return None
    return _create_udf(fn, return_type, PythonEvalType.SQL_SCALAR_ARROW_ITER_UDF)


def _parallelism(spark: Any) -> int:
    """Partitions for a repartition of the driver's choosing: the
    SparkContext's default parallelism (classic), else Spark SQL's shuffle
    partitions (Connect has no SparkContext to ask)."""
    if not _is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    return int(spark.conf.get("spark.sql.shuffle.partitions") or 200)


# Driver data for executor functions (halos, Parquet layouts) at or below
# this many pickled bytes travels inside the function over Spark Connect;
# larger, as a session artifact file (see _share).
_INLINE_MAX = 8 << 20


class _Inline:
    """A value carried inside the pickled executor function (Spark Connect
    has no broadcast); ``.value`` as a Broadcast's."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _Artifact:
    """A value sent as a session artifact file (Spark Connect, too large to
    travel inside the function): loaded from the executor's SparkFiles
    once per worker process; ``.value`` as a Broadcast's."""

    _loaded: Dict[str, Any] = {}

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def value(self) -> Any:
        import pickle

        if self.name not in _Artifact._loaded:
            from pyspark import SparkFiles

            with open(SparkFiles.get(self.name), "rb") as f:
                _Artifact._loaded[self.name] = pickle.load(f)
        return _Artifact._loaded[self.name]


def _share(spark: Any, value: Any) -> Any:
    """``value`` for executor functions, read there as ``.value``: a
    broadcast on a classic session; over Spark Connect (no broadcast)
    inside the pickled function while it is small, else an artifact file
    of the session named by its content's hash."""
    if not _is_connect(spark):
        return spark.sparkContext.broadcast(value)
    import hashlib
    import os
    import pickle
    import tempfile

    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) <= _INLINE_MAX:
        return _Inline(value)
    name = f"slidewise-data-{hashlib.sha256(data).hexdigest()[:24]}.pickle"
    path = os.path.join(tempfile.mkdtemp(prefix="slidewise-"), name)
    with open(path, "wb") as f:
        f.write(data)
    spark.addArtifacts(path, file=True)
    return _Artifact(name)
_ALIAS = {"avg": "mean", "stddev": "std", "stddev_samp": "std", "variance": "var", "var_samp": "var",
          "stddev_pop": "std_pop", "percentile": "quantile"}
# aggregations with a Spark counterpart; output type rule per agg
_SPARK_AGGS = ("max", "min", "sum", "mean", "count", "std", "var", "std_pop", "var_pop", "first", "last")
# order statistics (count windows only): F.median, F.percentile, and rank
# (bottleneck's move_rank, no Spark counterpart)
_ROLLING_ORDER_AGGS = ("median", "quantile", "rank")


class _Spec:
    """One output column: agg over a count window (rows) or a time range."""

    def __init__(self, name: str, agg: str, window: Any, min_periods: Optional[int], algorithm: str):
        self.name = name
        self.agg = agg
        self.time = _is_span(window)
        self.window = window
        self.min_periods = min_periods
        self.algorithm = algorithm
        self.units: Optional[int] = None  # time range in timestamp units, set on executors
        self.arrow_type: Optional[pa.DataType] = None
        self.order_kw: Dict[str, Any] = {}  # q / interpolation of a quantile


def _copy_spec(s: _Spec) -> _Spec:
    c = _Spec.__new__(_Spec)
    c.__dict__.update(s.__dict__)
    return c


def _is_span(w: Any) -> bool:
    return isinstance(w, (str, datetime.timedelta, np.timedelta64))


def _listify(x: Any) -> List[Any]:
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _result_type(agg: str, in_type: pa.DataType) -> pa.DataType:
    if agg in ("max", "min", "first", "last", "first_ignore_nulls", "last_ignore_nulls"):
        return in_type
    if agg == "count":
        return pa.int64()
    if agg == "sum":
        return pa.int64() if pa.types.is_integer(in_type) else pa.float64()
    return pa.float64()


def _spark_type_to_arrow(dt: DataType) -> pa.DataType:
    from pyspark.sql import types as T

    m = {T.ByteType: pa.int8(), T.ShortType: pa.int16(), T.IntegerType: pa.int32(), T.LongType: pa.int64(),
         T.FloatType: pa.float32(), T.DoubleType: pa.float64()}
    for k, v in m.items():
        if isinstance(dt, k):
            return v
    raise TypeError(f"slidewise.spark aggregates byte/short/int/bigint/float/double columns, got {dt.simpleString()}; "
                    "cast the column first (e.g. F.col(c).cast('double'))")


def _arrow_to_spark_type(t: pa.DataType) -> DataType:
    from pyspark.sql import types as T

    return {pa.int8(): T.ByteType(), pa.int16(): T.ShortType(), pa.int32(): T.IntegerType(),
            pa.int64(): T.LongType(), pa.float32(): T.FloatType(), pa.float64(): T.DoubleType()}[t]


def _groupable(dt: DataType) -> bool:
    """Key types the executor kernels group exactly as Spark does: Arrow
    equality for these, and float/double keys canonicalised first
    (_kernels._canon_key: NaN keys one group, -0.0 the same key as 0.0, as
    Spark's NormalizeFloatingNumbers); null keys are one group."""
    from pyspark.sql import types as T

    return isinstance(dt, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.BooleanType,
                           T.DateType, T.TimestampType, T.TimestampNTZType, T.FloatType, T.DoubleType))


def _schema_with(df: DataFrame, specs: List[_Spec], drop: List[str]) -> StructType:
    """df's Spark schema without ``drop``, plus one column per spec."""
    from pyspark.sql import types as T

    fields = [f for f in df.schema.fields if f.name not in drop]
    names = {f.name for f in fields}
    for s in specs:
        if s.name in names:
            raise ValueError(f"output column {s.name!r} already exists in the DataFrame; pass output=...")
        fields.append(T.StructField(s.name, _arrow_to_spark_type(s.arrow_type), True))
    return T.StructType(fields)


def _make_specs(value_type: pa.DataType, window: Any, agg: Any, output: Any, min_periods: Optional[int],
                algorithm: str, ignore_nulls: bool = False, q: Optional[float] = None,
                interpolation: Optional[str] = None) -> List[_Spec]:
    import slidewise as sw

    windows, aggs = _listify(window), _listify(agg)
    if not windows or not aggs:
        raise ValueError("rolling needs at least one window and one agg")
    if (q is not None or interpolation is not None) and \
            not any(isinstance(a, str) and _ALIAS.get(a.lower(), a.lower()) == "quantile" for a in aggs):
        raise ValueError(f"q and interpolation apply to agg='quantile' (or 'percentile') only, not {aggs}")
    specs = []
    names = _listify(output) if output is not None else None
    pairs = [(w, a) for w in windows for a in aggs]
    if names is not None and len(names) != len(pairs):
        raise ValueError(f"output has {len(names)} names for {len(pairs)} (window, agg) columns "
                         f"(windows x aggs = {pairs})")
    for i, (w, a) in enumerate(pairs):
        if not isinstance(a, str):
            raise ValueError(f"agg must be a string, got {a!r}")
        core = _ALIAS.get(a.lower(), a.lower())
        order_kw: Dict[str, Any] = {}
        if core in _ROLLING_ORDER_AGGS:
            if _is_span(w):
                raise ValueError(f"agg {a!r} takes count windows only on Spark, got window {w!r}")
            if algorithm != "auto":
                raise ValueError(f"agg {a!r} has no FIFO algorithms: algorithm must be 'auto', got {algorithm!r}")
            if core == "quantile":
                _, qf, interp = sw._arrow.order_args(core, q, interpolation)
                order_kw = {"q": qf, "interpolation": interp}
        elif core not in _SPARK_AGGS:
            raise ValueError(f"unsupported agg {a!r} on Spark; choose from "
                             f"{', '.join(_SPARK_AGGS + _ROLLING_ORDER_AGGS)} (or the Spark names {', '.join(_ALIAS)})")
        else:
            # first / last: Spark's (null rows count) or, with ignore_nulls,
            # the core's first_ignore_nulls / last_ignore_nulls
            core = sw._arrow.check_agg(core, ignore_nulls)
        if _is_span(w):
            sw._time.duration_ns("window", w)
        else:
            w = sw._arrow.positive_int("window", w)
        sw._arrow.check_algorithm(algorithm)
        if min_periods is not None:
            sw._arrow.min_periods_int(min_periods, 1 << 62, "2**62")
        name = names[i] if names is not None else f"{a}_{w if not isinstance(w, datetime.timedelta) else int(w.total_seconds())}"
        s = _Spec(name, core, w, min_periods, algorithm)
        s.order_kw = order_kw
        s.arrow_type = _result_type(core, value_type)
        specs.append(s)
    kinds = {s.time for s in specs}
    if len(kinds) > 1:
        raise ValueError("mix of count windows (ints) and time windows (spans) in one call; make two calls")
    dup = sorted({s.name for s in specs if [t.name for t in specs].count(s.name) > 1})
    if dup:
        raise ValueError(f"output column names repeat: {dup}")
    return specs
