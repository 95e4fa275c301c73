"""``aggregate``: one row per (key, window), as ``df.groupBy(key,
F.window(time, range, slide)).agg(F.sum(v), F.max(v), ...)`` gives, or per
(key, session) for ``Query(agg, session=gap)``: a column per query.

Two paths (named by :func:`aggregate_path`):

* ``"panes"`` (time windows of sum, count, mean, max, min, var, std over a
  timestamp column): Spark's own aggregation reduces the rows to one
  partial per (key, pane) in each input partition, with no copy of a row
  and no Python pass over the rows; the partials are hash-partitioned by
  key (one partition unkeyed: they are few) and combined into windows
  (:mod:`slidewise.spark._panes`). Unkeyed windows so use every core for
  the rows.
* ``"sorted"`` (sessions, count windows, first / last, ``min_periods``):
  repartition by key (one partition unkeyed), sort within partitions, one
  :class:`slidewise.Stream` per key run (:func:`~slidewise.spark._kernels._agg_fn`),
  flushed at the key's end.

Either way the result is one lazy DataFrame from one ``mapInArrow`` pass
over the input: computing it reads the input once, whatever the number of
queries. Key columns come out as Spark's groupBy gives them (float keys
normalised).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, List, Sequence, Tuple, Union, overload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .._query import Query

from ._kernels import _agg_fn
from ._panes import _needs, _windows_fn, pane_ns, panes_apply, partial_fields
from ._ship import ship
from ._specs import (_ALIAS, _SPARK_AGGS, _TB, _arrow_to_spark_type, _functions, _listify, _result_type,
                     _spark_type_to_arrow)


@overload
def aggregate(df: DataFrame, query_or_queries: Query, value: str, time: str, key: Union[None, str, Sequence[str]] = None,
              tiebreak: Union[None, str, Sequence[str]] = None, algorithm: str = "auto") -> DataFrame: ...
@overload
def aggregate(df: DataFrame, query_or_queries: Iterable[Query], value: str, time: str,
              key: Union[None, str, Sequence[str]] = None, tiebreak: Union[None, str, Sequence[str]] = None,
              algorithm: str = "auto") -> DataFrame: ...
def aggregate(df: DataFrame, query_or_queries: Union[Query, Iterable[Query]], value: str, time: str,
              key: Union[None, str, Sequence[str]] = None, tiebreak: Union[None, str, Sequence[str]] = None,
              algorithm: str = "auto") -> DataFrame:
    """One row per (key, window) with a column per query, as ``df.groupBy(key,
    F.window(time, range, slide)).agg(F.sum(value).alias(name), ...)``:
    columns ``key..., window_start, window_end`` then each query's value,
    named by the query (one ``Query``: ``value``). The queries share one
    window (range and slide, or a session gap, or a count window); for
    another window call ``aggregate`` again, as Spark needs another
    ``groupBy``. Session queries (``Query(agg, session="30s")``) give
    ``groupBy(key, F.session_window(time, "30 seconds"))``'s sessions: from
    the first row to the last row plus the gap, rows at most a gap apart in
    one session. Rows with a null time belong to no window (as in Spark).
    Count-window queries (range/slide in rows) run over each key's rows in
    ``(time, tiebreak)`` order; their window bounds are row positions.
    Only windows holding a row are given, as by Spark.

    ``algorithm``: ``"auto"`` (the default) takes the fastest path
    (:func:`aggregate_path`); a named algorithm (``"two_stacks"``, ...) runs
    the sorted path with it.
    """
    F = _functions(df)
    from pyspark.sql import types as T

    import slidewise as sw

    single = isinstance(query_or_queries, sw.Query)
    queries = _queries(query_or_queries)
    keys = [] if key is None else _listify(key)
    for c in [value, time, *keys]:
        if c not in df.columns:
            raise ValueError(f"column {c!r} is not in the DataFrame (columns: {df.columns})")
    names = ["value"] if single else [q.name for q in queries]
    clash = sorted(set(names) & set(keys + ["window_start", "window_end"]))
    if clash:
        raise ValueError(f"query names {clash} clash with the output's key or window columns; pass name=...")
    is_time = queries[0].time
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    aggs = [_ALIAS.get(q.agg, q.agg) for q in queries]
    for q, a in zip(queries, aggs):
        if a not in _SPARK_AGGS:
            raise ValueError(f"{q.name}: aggregation {q.agg!r} has no Spark counterpart here; "
                             f"choose from {', '.join(_SPARK_AGGS)}")
    ship(df.sparkSession)
    ktypes = [df.schema[k] for k in keys]
    tfield = df.schema[time].dataType if is_time else T.LongType()
    outs = [(n, _result_type(a, vtype)) for n, a in zip(names, aggs)]
    schema = T.StructType([T.StructField(k.name, k.dataType, True) for k in ktypes] +
                          [T.StructField("window_start", tfield), T.StructField("window_end", tfield)] +
                          [T.StructField(n, _arrow_to_spark_type(t), True) for n, t in outs])
    rows = df.select(*keys, value, time).filter(F.col(time).isNotNull()) if is_time else None
    if aggregate_path(queries, algorithm) == "panes" and isinstance(tfield, T.TimestampType):
        assert rows is not None
        return _panes(rows, queries, names, aggs, keys, value, time, vtype, schema)
    if tiebreak is None and not is_time:
        df = df.withColumn(_TB, F.monotonically_increasing_id())
        tb = [_TB]
    else:
        tb = [] if is_time else _listify(tiebreak)
    cols = keys + [value, time] + [c for c in tb if c not in keys + [value, time]]
    parts = rows if rows is not None else df.select(*cols)
    parts = parts.repartition(*keys) if keys else parts.repartition(1)
    parts = parts.sortWithinPartitions(*keys, time, *tb)
    return parts.mapInArrow(_agg_fn(list(zip(names, queries)), keys, value, time, is_time, algorithm, outs), schema)


def aggregate_path(queries: Union[Query, Iterable[Query]], algorithm: str = "auto") -> str:
    """The path :func:`aggregate` takes for these queries over a timestamp
    column: ``"panes"`` or ``"sorted"`` (see the module docstring; a
    timestamp without a time zone, or a date, takes ``"sorted"``)."""
    qs = _queries(queries)
    return "panes" if algorithm == "auto" and panes_apply(qs) else "sorted"


def _queries(query_or_queries: Any) -> List[Query]:
    """The queries as a list, checked: Query objects, unique names, one window."""
    import slidewise as sw

    queries = [query_or_queries] if isinstance(query_or_queries, sw.Query) else list(query_or_queries)
    if not queries:
        raise ValueError("aggregate needs at least one Query")
    for q in queries:
        if not isinstance(q, sw.Query):
            raise TypeError(f"queries must be slidewise.Query objects, got {type(q).__name__}")
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise ValueError(f"query names must be unique, got {names}")
    shapes = {_shape(q) for q in queries}
    if len(shapes) > 1:
        raise ValueError("aggregate's queries share one window (one row per key and window, a column per query, "
                         "as one groupBy(key, F.window(...)).agg(...)); these have "
                         f"{len(shapes)}: {sorted(shapes)}; call aggregate once per window")
    return queries


def _shape(q: Query) -> Tuple[Any, ...]:
    return (q.kind, q.range, q.slide, q.session)


def _panes(rows: DataFrame, queries: List[Query], names: List[str], aggs: List[str], keys: List[str], value: str,
           time: str, vtype: Any, schema: Any) -> DataFrame:
    """The panes path: partials per input partition, then windows per key."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    q = queries[0]
    g = pane_ns(q)
    # timestamps reach Python as UTC instants (a time zone's label does not
    # change them)
    ttype = to_arrow_schema(rows.select(time).schema, timezone="UTC").field(time).type
    karrow = [(f.name, f.type) for f in to_arrow_schema(rows.select(*keys).schema, timezone="UTC")] if keys else []
    partials = pa.schema(partial_fields(karrow, vtype, aggs))
    parts = _pane_partials(rows, keys, value, time, g, aggs, vtype)
    # all of a key's panes in one partition (after Spark's partial
    # aggregation before its shuffle, so a hot key or many rows per pane
    # shuffle as partials; a repartition by key first measured 0.8x the time
    # on 1,000 sparse keys, but moves every row and a hot key's to one task)
    parts = parts.repartition(*keys) if keys else parts.repartition(1)
    out = to_arrow_schema(schema, timezone="UTC")
    return parts.mapInArrow(_windows_fn(keys, list(zip(names, aggs)), int(q.range), int(q.slide), g, vtype, ttype,
                                        out, partials), schema)


def _pane_partials(rows: DataFrame, keys: List[str], value: str, time: str, g_ns: int, aggs: List[str],
                   vtype: Any) -> DataFrame:
    """The partials of :mod:`slidewise.spark._panes` by Spark's own
    aggregation, ``groupBy(key, pane).agg(...)``: its partial aggregation
    runs in each input partition, and no row is copied or passed through
    Python. A pane is ``floor(unix_micros(time) / g)``, exact in integers."""
    import pyarrow as pa

    F = _functions(rows)
    us = F.unix_micros(F.col(time))
    g = g_ns // 1000
    # (us - pmod(us, g)) is an exact multiple of g below 2^53: the quotient is exact
    pane = ((us - F.pmod(us, F.lit(g))) / F.lit(g)).cast("long")
    v = F.col(value)
    needs = _needs(aggs)
    integer = pa.types.is_integer(vtype)
    cols = [F.count(F.lit(1)).alias("__rows"), F.count(v).alias("__n")]
    for p in needs:
        if p == "sum":
            # a pane without a value sums to 0 (Spark's sum of no value is null)
            zero = F.lit(0) if integer and "sum" in aggs else F.lit(0.0)
            cols.append(F.coalesce(F.sum(v if integer and "sum" in aggs else v.cast("double")), zero).alias("__sum"))
        elif p == "m2":
            cols.append(F.coalesce(F.var_pop(v.cast("double")) * F.count(v), F.lit(0.0)).alias("__m2"))
        else:
            cols.append((F.max(v) if p == "max" else F.min(v)).alias(f"__{p}"))
    if not integer and ("max" in needs or "min" in needs):
        cols.append(F.coalesce(F.isnan(F.max(v) if "max" in needs else F.min(v)), F.lit(False)).alias("__nan"))
    out = rows.groupBy(*keys, pane.alias("__pane")).agg(*cols)
    return out.select(*keys, "__pane", *[c for c in out.columns if c.startswith("__") and c != "__pane"])
