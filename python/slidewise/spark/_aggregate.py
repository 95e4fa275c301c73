"""``aggregate``: one row per (key, window) like ``df.groupBy(key,
F.window(time, range, slide)).agg(F.<agg>(value))``, or per (key, session)
like ``df.groupBy(key, F.session_window(time, gap)).agg(...)`` for
``Query(agg, session=gap)``: repartition by key (one partition when
unkeyed), sort within partitions, one :class:`slidewise.Stream` per key run
(:func:`~slidewise.spark._kernels._agg_fn`), flushed at the key's end. Key
columns come out as Spark's groupBy gives them (float keys normalised).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Sequence, Union, overload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .._query import Query

from ._kernels import _agg_fn
from ._ship import ship
from ._specs import _ALIAS, _SPARK_AGGS, _TB, _arrow_to_spark_type, _listify, _result_type, _spark_type_to_arrow


@overload
def aggregate(df: DataFrame, query_or_queries: Query, value: str, time: str, key: Union[None, str, Sequence[str]] = None,
              tiebreak: Union[None, str, Sequence[str]] = None, algorithm: str = "auto") -> DataFrame: ...
@overload
def aggregate(df: DataFrame, query_or_queries: Iterable[Query], value: str, time: str,
              key: Union[None, str, Sequence[str]] = None, tiebreak: Union[None, str, Sequence[str]] = None,
              algorithm: str = "auto") -> Dict[str, DataFrame]: ...
def aggregate(df: DataFrame, query_or_queries: Union[Query, Iterable[Query]], value: str, time: str,
              key: Union[None, str, Sequence[str]] = None, tiebreak: Union[None, str, Sequence[str]] = None,
              algorithm: str = "auto") -> Union[DataFrame, Dict[str, DataFrame]]:
    """One row per (key, window): like ``df.groupBy(key, F.window(time,
    range, slide)).agg(F.<agg>(value))`` with columns ``key..., window_start,
    window_end, value``; session queries (``Query(agg, session="30s")``) like
    ``df.groupBy(key, F.session_window(time, "30 seconds")).agg(...)``: a
    session from its first row to its last row plus the gap, rows at most a
    gap apart in one session. Time and session queries can share a call;
    rows with a null time belong to no window (as in Spark). A list of
    queries gives ``{query.name: DataFrame}``. Count-window queries
    (range/slide in rows) run over each key's rows in ``(time, tiebreak)``
    order; their window bounds are row positions.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    import slidewise as sw

    single = isinstance(query_or_queries, sw.Query)
    queries: List[Query] = ([query_or_queries] if isinstance(query_or_queries, sw.Query)
                            else list(query_or_queries))
    if not queries:
        raise ValueError("aggregate needs at least one Query")
    for q in queries:
        if not isinstance(q, sw.Query):
            raise TypeError(f"queries must be slidewise.Query objects, got {type(q).__name__}")
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise ValueError(f"query names must be unique, got {names}")
    for c in [value, time]:
        if c not in df.columns:
            raise ValueError(f"column {c!r} is not in the DataFrame (columns: {df.columns})")
    keys = [] if key is None else _listify(key)
    kinds = {q.time for q in queries}
    if len(kinds) > 1:
        raise ValueError("mix of count-window and time-window queries; call aggregate once per kind")
    is_time = kinds.pop()
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    ship(df.sparkSession)
    if tiebreak is None and not is_time:
        df = df.withColumn(_TB, F.monotonically_increasing_id())
        tb = [_TB]
    else:
        tb = [] if is_time else _listify(tiebreak)
    ktypes = [df.schema[k] for k in keys]
    tfield = df.schema[time].dataType if is_time else T.LongType()
    fields = [T.StructField("__q", T.IntegerType())] + [T.StructField(k.name, k.dataType, True) for k in ktypes] + \
        [T.StructField("window_start", tfield), T.StructField("window_end", tfield)]
    vfields = {}
    for i, q in enumerate(queries):
        core = _ALIAS.get(q.agg, q.agg)
        if core not in _SPARK_AGGS:
            raise ValueError(f"{q.name}: aggregation {q.agg!r} has no Spark counterpart here; "
                             f"choose from {', '.join(_SPARK_AGGS)}")
        vfields[i] = _result_type(core, vtype)
    # one value column per distinct output type; each query fills its own
    vtypes = sorted({str(v) for v in vfields.values()})
    vcol = {t: f"__v_{t}" for t in vtypes}
    vcols = [(vcol[str(v)], v) for v in sorted(set(vfields.values()), key=str)]
    schema = T.StructType(fields + [T.StructField(n, _arrow_to_spark_type(t), True) for n, t in vcols])
    cols = keys + [value, time] + [c for c in tb if c not in keys + [value, time]]
    parts = df.select(*cols)
    if is_time:
        # Spark's window() and session_window() put a row with a null time
        # in no window
        parts = parts.filter(F.col(time).isNotNull())
    if keys:
        parts = parts.repartition(*keys)
    else:
        parts = parts.repartition(1)
    parts = parts.sortWithinPartitions(*keys, time, *tb)
    qspec = [(i, q, vcol[str(vfields[i])]) for i, q in enumerate(queries)]
    out = parts.mapInArrow(_agg_fn(qspec, keys, value, time, is_time, algorithm, vcols), schema)
    res = {}
    for i, q, vc in qspec:
        r = out.filter(F.col("__q") == i).select(*keys, "window_start", "window_end", F.col(vc).alias("value"))
        res[q.name] = r
    return res[queries[0].name] if single else res
