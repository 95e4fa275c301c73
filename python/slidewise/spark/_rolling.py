"""``rolling``: per-row rolling aggregates, and the choice of execution path.

:func:`plan_rolling` checks the arguments, ships slidewise, runs the small
jobs the choice needs and returns a :class:`RollingPlan` naming the path it
chose; :func:`rolling` is ``plan_rolling(...).run()``. The paths:

* keyed (``partition_by``): first, for count windows over Parquet files
  in time order, ``"parquet-tails"`` (:mod:`slidewise.spark._parquet`: no
  check pass; the driver reads the scan's file splits and the footers, each
  task checks its rows' order against its files and reads its halo from
  the files before it); then ``"ordered"``, with per-key halos: for
  count windows the check pass collects each partition's last ``max(w)-1``
  rows of every key and each partition gets, per key, the last such rows of
  its predecessors (a rare key's halo spans several partitions); for time
  windows the rows within the longest range, as unkeyed, with their keys.
  One ``mapInArrow`` pass over the input as it is then runs the extension's
  keyed rolling over the interleaved keys: no shuffle, no sort. Otherwise
  (input out of order, seen by the check pass in its first batch or by the
  Parquet footers' overlapping row groups before it; ``method="map"``,
  ``num_partitions``): ``"shuffle"``,
  repartition by key, sort within partitions, one ``mapInArrow`` pass whose
  state (the halo: the last ``w-1`` rows or the last ``range`` of time of the
  current key) is carried across Arrow batches and reset at key boundaries;
  ``method="apply"``: ``"apply"``, ``groupBy().applyInArrow``, one key group
  in memory per call. Float keys group as Spark groups them (NaN keys one
  key, -0.0 the key 0.0, null keys one key; see
  :mod:`slidewise.spark._kernels`).
* unkeyed: Spark's own window moves every row to one partition. Here a
  first Python pass over (value, order) checks whether the input already is
  in order (each partition sorted, the partitions in sequence: Parquet
  written sorted, ``spark.range``, a sorted and checkpointed DataFrame) and
  collects each partition's tail; if so (``"ordered"``), every partition gets
  the tail of its predecessors (spanning several when they are short)
  broadcast as its halo and one ``mapInArrow`` pass runs over the input as
  it is: no shuffle, no sort, every core busy, exact at partition
  boundaries. Count windows skip the check pass when the caller vouches for
  the order (``assume_sorted``: ``"assumed"``) or Spark's plan knows it
  (``"planned"``): one JVM job collects each partition's first rows and each
  task also computes the next partition's first rows (``"-tails"``: two JVM
  jobs find the tails instead); the order is verified row by row. Otherwise
  (``"range"``) the rows are range-partitioned by the order column, sorted,
  materialised once (``localCheckpoint``) and the tails collected from that.
  Either way the unkeyed plan runs its small jobs when it is made; the
  returned DataFrame is lazy as usual. An expensive input is computed twice
  on the ordered path: cache it.
"""

from __future__ import annotations

import datetime
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

from ._kernels import _TAIL_SCHEMA, _apply_fn, _native_keys, _roll_fn, _roll_udf_fn, _tail_fn
from ._order import (_check_pass, _count_halos, _forward_heads, _halos, _in_order, _plan_sorted,
                     _ranges_in_sequence, _run_sequence)
from ._parquet import _Overlapping, _parquet_layout, _parquet_udf_fn
from ._ship import ship
from ._specs import (_TB, _arrow_to_spark_type, _groupable, _listify, _make_specs, _parallelism, _schema_with,
                     _share, _spark_type_to_arrow, _arrow_udf, _functions)

@dataclass(frozen=True)
class RollingPlan:
    """What :func:`rolling` runs: the execution path chosen and the (lazy)
    DataFrame it builds.

    ``path``: keyed (``keyed=True``) ``"parquet-tails"`` (Parquet files in
    time order: halos read from the files, no check pass), ``"ordered"`` (input in order: per-key
    halos, no shuffle), ``"shuffle"`` (repartition by key, sort,
    ``mapInArrow``) or ``"apply"`` (``groupBy().applyInArrow``); unkeyed
    ``"assumed"`` (``assume_sorted``) or ``"planned"`` (Spark's plan knows
    the order): no check pass, halos from each partition's first rows
    (``"-tails"``: from two JVM jobs); ``"ordered"`` (a check pass found the
    input in order); ``"range"`` (range partitioned, sorted, checkpointed).
    The jobs that chose the path have run; :meth:`run` returns the
    DataFrame."""

    path: str
    keyed: bool
    _build: Callable[[], DataFrame] = field(repr=False, compare=False)

    def run(self) -> DataFrame:
        """The input DataFrame with the rolling columns added (lazy)."""
        return self._build()


def rolling(
    df: DataFrame,
    value: str,
    order_by: str,
    window: Union[int, str, datetime.timedelta, Sequence[Any]],
    agg: Union[str, Sequence[str]] = "sum",
    partition_by: Union[None, str, Sequence[str]] = None,
    output: Union[None, str, Sequence[str]] = None,
    min_periods: Optional[int] = None,
    algorithm: str = "auto",
    tiebreak: Union[None, str, Sequence[str]] = None,
    num_partitions: Optional[int] = None,
    method: str = "auto",
    assume_sorted: bool = False,
    ignore_nulls: bool = False,
    q: Optional[float] = None,
    interpolation: Optional[str] = None,
) -> DataFrame:
    """Add rolling aggregate column(s) of ``value`` to ``df``.

    ``window``: rows (int: the row and the ``w-1`` before it in
    ``(order_by, tiebreak)`` order, Spark ``rowsBetween(-(w-1), 0)``) or a
    time span (``"5s"``, ``timedelta``: rows with time in ``(t - range, t]``,
    ``order_by`` a timestamp column; ties are peers as in Spark's RANGE
    frame). ``window`` and ``agg`` may be lists: one column per (window,
    agg), named ``output`` or ``f"{agg}_{window}"``, all in one pass.
    ``partition_by``: key column(s); windows restart per key (float keys as
    Spark groups them: NaN keys one key, -0.0 the key 0.0, null keys one key).
    ``tiebreak``: column(s) ordering rows with equal ``order_by``; default
    the input order. ``method`` (keyed only): ``"auto"`` (the default:
    input already in ``(order_by, tiebreak)`` order takes the no-shuffle
    ordered path, as unkeyed; for Parquet files in time order the files'
    statistics tell (count windows, ``"parquet-tails"``; the order is then
    verified while computing and a violation raises ValueError), otherwise
    a check pass finds out, and anything else
    runs as ``"map"``), ``"map"`` (repartition by key,
    mapInArrow over sorted partitions: it streams in bounded memory, and
    in two runs of benches/compare_spark.py on a loaded machine neither
    shuffle method was consistently faster, 18 vs 22 s and 23 vs 16 s) or
    ``"apply"`` (groupBy().applyInArrow, one whole key group in memory per
    call).
    ``assume_sorted`` (unkeyed count windows): the caller vouches that each
    partition's rows are in ``(order_by, tiebreak)`` order and that the
    partitions follow one another (sorted Parquet, ``spark.range``). The
    check pass is skipped: one JVM job collects each partition's first
    ``max(w) - 1`` rows, and each task computes its own rows and then the
    next partition's first rows (whose windows reach back into its tail).
    The order is verified row by row while the result is computed, across
    each partition boundary too, and a violation raises ValueError (never a
    wrong answer). Partitions whose first rows are out of sequence take the
    shuffle path; windows longer than a partition, or more than 2M rows of
    first rows, find the tails with two JVM jobs instead. Without
    ``assume_sorted`` this path also runs when Spark's plan says the rows
    are in order (a DataFrame from ``spark.range``, or cached from one).

    ``first`` / ``last`` are Spark's ``F.first(v)`` / ``F.last(v)``
    (``ignorenulls=False``): the value of the frame's first / last row, null
    if that value is null. ``ignore_nulls=True`` gives ``F.first(v,
    ignorenulls=True)``: the first / last non-null value.

    ``median``, ``quantile`` (Spark's name ``percentile``; ``q=``,
    ``interpolation=`` as :func:`slidewise.rolling`, ``linear`` being
    Spark's ``percentile``) and ``rank`` (``bottleneck.move_rank``; no Spark
    counterpart) take count windows only: Spark's ``F.percentile(v, 0.5)``
    / ``F.percentile(v, q)`` over ``rowsBetween(-(w-1), 0)`` (Spark 4
    refuses ``F.median`` over a frame; nulls skipped, NaN above every number
    as in Spark).

    ``plan_rolling`` takes the same arguments and tells which path runs.
    """
    return _plan(**locals()).run()


def plan_rolling(*args: Any, **kwargs: Any) -> RollingPlan:
    """:func:`rolling`'s arguments (the same signature) checked and its
    execution path chosen: a :class:`RollingPlan` whose ``path`` names it and
    whose ``run()`` gives the DataFrame ``rolling`` returns. Runs the jobs the
    choice needs (the check pass, the halos) now."""
    bound = _SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    return _plan(**bound.arguments)


_SIGNATURE = inspect.signature(rolling)
plan_rolling.__signature__ = _SIGNATURE.replace(return_annotation=RollingPlan)  # type: ignore[attr-defined]


def _plan(df, value, order_by, window, agg, partition_by, output, min_periods, algorithm, tiebreak, num_partitions,
          method, assume_sorted, ignore_nulls, q=None, interpolation=None) -> RollingPlan:
    """:func:`plan_rolling` with every argument given."""
    F = _functions(df)

    if not isinstance(value, str) or value not in df.columns:
        raise ValueError(f"value column {value!r} is not in the DataFrame (columns: {df.columns})")
    if not isinstance(order_by, str) or order_by not in df.columns:
        raise ValueError(f"order_by column {order_by!r} is not in the DataFrame (columns: {df.columns})")
    keys = [] if partition_by is None else _listify(partition_by)
    for k in keys:
        if k not in df.columns:
            raise ValueError(f"partition_by column {k!r} is not in the DataFrame (columns: {df.columns})")
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    specs = _make_specs(vtype, window, agg, output, min_periods, algorithm, ignore_nulls, q, interpolation)
    if specs[0].time:
        from pyspark.sql import types as T

        if not isinstance(df.schema[order_by].dataType, (T.TimestampType, T.TimestampNTZType, T.DateType)):
            raise TypeError(f"a time window needs a timestamp order_by column; {order_by!r} is "
                            f"{df.schema[order_by].dataType.simpleString()}")
    if method not in ("auto", "map", "apply"):
        raise ValueError(f"method must be 'auto', 'map' or 'apply', got {method!r}")
    ship(df.sparkSession)
    if not keys:
        if tiebreak is not None:
            for c in _listify(tiebreak):
                if c not in df.columns:
                    raise ValueError(f"tiebreak column {c!r} is not in the DataFrame")
        return _plan_unkeyed(df, specs, value, order_by, tiebreak, num_partitions, assume_sorted)
    tb = [] if tiebreak is None else _listify(tiebreak)
    for c in tb:
        if c not in df.columns:
            raise ValueError(f"tiebreak column {c!r} is not in the DataFrame")
    if method == "auto" and num_partitions is None:
        try:
            plan = _plan_parquet(df, specs, value, order_by, keys, tb)
            if plan is None:
                plan = _plan_keyed_ordered(df, specs, value, order_by, keys, tb)
        except _Overlapping:  # Parquet files out of order: the shuffle, without a check pass
            plan = None
        if plan is not None:
            return plan
    drop: List[str] = []
    if specs[0].time:
        tb = []  # tied times are peers sharing one value: no tiebreak needed
    elif not tb:
        tb = [_TB]
        drop = [_TB]
        df = df.withColumn(_TB, F.monotonically_increasing_id())
    schema = _schema_with(df, specs, drop)
    if method == "apply":
        return RollingPlan("apply", True,
                           lambda: df.groupBy(*keys).applyInArrow(_apply_fn(specs, value, order_by, tb, drop), schema))

    def shuffle():
        parts = df.repartition(num_partitions, *keys) if num_partitions else df.repartition(*keys)
        parts = parts.sortWithinPartitions(*keys, order_by, *tb)
        return parts.mapInArrow(_roll_fn(specs, value, order_by, keys, drop), schema)

    return RollingPlan("shuffle", True, shuffle)


def _plan_keyed_ordered(df, specs, value, order_by, keys, tb) -> Optional[RollingPlan]:
    """Keyed windows over input already in (order_by, tiebreak) order, as
    the unkeyed ordered path: one check pass collects each partition's
    order range and tail (count windows: the last ``max(w)-1`` rows of
    every key; time windows: the rows within the longest range, with their
    keys); partition p's halo is, per key, the last such rows before p
    (spanning several partitions for a rare key); then one ``mapInArrow``
    pass over the input as it is, the keys interleaved (native keyed
    rolling): no shuffle, no sort. None when the path does not apply (key
    types, an extension without keyed rolling, input out of order, for
    time windows a tied time across a partition boundary)."""
    import slidewise as sw

    if not _native_keys(sw) or not all(_groupable(df.schema[k].dataType) for k in keys):
        return None
    time = specs[0].time
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    schema = _schema_with(df, specs, [])
    if time:
        rows = _check_pass(df, value, order_by, specs, [], keys)
        if not _in_order(rows, strict_ties=True):
            return None
        halos = _halos([(r.pid, r.n, r.tail) for r in rows], specs, vtype, keyed=True)
        halos = _share(df.sparkSession, halos)
        return RollingPlan("ordered", True,
                           lambda: df.mapInArrow(_roll_fn(specs, value, order_by, keys, [], halos), schema))
    # Count windows: each partition may be several sorted runs (Parquet
    # files in order, which Spark packs into partitions largest first), in
    # any partition order, as long as the runs follow one another.
    runs = _run_sequence(_check_pass(df, value, order_by, specs, tb, keys, runs=True), input_ties=not tb)
    if runs is None:
        return None
    tails = _halos([((p, j), n, tail) for p, j, n, tail, _, _ in runs], specs, vtype, keyed=True, ordered=True)
    plan: Dict[Any, Any] = {}
    for p, j, n, _, first, _ in sorted(runs, key=lambda r: (r[0], r[1])):
        plan.setdefault(p, []).append((n, first, tails.get((p, j))))
    # a partition of one run: its halo as the other ordered paths have it
    plan = {p: (r[0][2] if len(r) == 1 else r) for p, r in plan.items()}
    halos = _share(df.sparkSession, {p: h for p, h in plan.items() if h is not None})
    udf = _udf_columns(df, specs, value, keys, halos)
    if udf is not None:
        return RollingPlan("ordered", True, udf)
    return RollingPlan("ordered", True,
                       lambda: df.mapInArrow(_roll_fn(specs, value, order_by, keys, [], halos), schema))


def _plan_parquet(df, specs, value, order_by, keys, tb) -> Optional[RollingPlan]:
    """Keyed count windows over Parquet files in time order, without a
    check pass (``"parquet-tails"``, :mod:`slidewise.spark._parquet`): the
    driver reads the scan's file splits and the files' footers, each task
    verifies its rows' order against its files and reads its halo from the
    files before them. None when it does not apply."""
    import slidewise as sw

    if specs[0].time or not _native_keys(sw) or not all(_groupable(df.schema[k].dataType) for k in keys):
        return None
    layout = _parquet_layout(df, value, order_by, tb, keys)
    if layout is None:
        return None
    layout = _share(df.sparkSession, layout)
    udf = _udf_columns(df, specs, value, keys, None,
                       make=lambda: _parquet_udf_fn(specs, value, [order_by, *tb], keys, layout))
    return None if udf is None else RollingPlan("parquet-tails", True, udf)


def _udf_columns(df, specs, value, keys, halos, make=None) -> Optional[Callable[[], Any]]:
    """The keyed ordered path (count windows) as a scalar iterator Arrow
    UDF over (value, key...) (pyspark >= 4.1's ``arrow_udf``): only those
    columns go to Python and only the results come back, where
    ``mapInArrow`` sends every column both ways. The UDF is marked
    nondeterministic, so Spark neither moves a filter below it (the
    windows need every row) nor evaluates it twice. None without
    ``arrow_udf``, or when column names repeat."""
    from pyspark.sql import types as T

    F = _functions(df)
    if _arrow_udf(df, lambda it: it, T.LongType()) is None:
        return None

    out = "__slidewise_rolling"
    if len(set(df.columns)) != len(df.columns) or out in df.columns:
        return None

    def col(c):
        return F.col("`" + c.replace("`", "``") + "`")

    rtype = T.StructType([T.StructField(s.name, _arrow_to_spark_type(s.arrow_type), True) for s in specs])

    def build():
        fn = _arrow_udf(df, make() if make else _roll_udf_fn(specs, len(keys), halos), rtype).asNondeterministic()
        rows = df.select("*", fn(col(value), *[col(k) for k in keys]).alias(out))
        return rows.select(*[col(c) for c in df.columns], *[F.col(out).getField(s.name).alias(s.name) for s in specs])
    return build


def _plan_unkeyed(df, specs, value, order_by, tiebreak, num_partitions, assume_sorted=False) -> RollingPlan:
    """Unkeyed rolling over the global (order_by, tiebreak) order.

    Input already in that order (each partition sorted, partitions in
    sequence; Parquet written sorted, ``spark.range``, a sorted and
    checkpointed DataFrame): one Python pass over (value, order[,
    tiebreak]) checks it and collects each partition's tail, then one
    ``mapInArrow`` pass over the input as it is, with no shuffle and no
    sort. Otherwise: range partitioning, sort, ``localCheckpoint``, tails,
    ``mapInArrow``. The check pass is the only cost an unordered input pays
    for trying. Count windows skip the check pass when the caller vouches
    for the order (``assume_sorted``) or Spark's plan knows it
    (_plan_sorted); the pass verifies it either way."""
    F = _functions(df)

    spark = df.sparkSession
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    tb = [] if tiebreak is None else _listify(tiebreak)
    assumed = num_partitions is None and not specs[0].time and (assume_sorted or _plan_sorted(df, [order_by, *tb]))
    if assumed:
        name = "assumed" if assume_sorted else "planned"
        # The caller vouches for the order inside each partition, or Spark's
        # plan does (checked again, row by row, in the pass itself: a
        # violation is an error).
        # One JVM job collects each partition's first rows; each task then
        # also computes (and emits) the next partition's first rows, whose
        # windows reach back into its own tail.
        hmax = max(s.window for s in specs) - 1
        plan = _forward_heads(df, hmax, [order_by, *tb])
        if isinstance(plan, dict):
            forward = _share(spark, plan) if plan else None
            schema = _schema_with(df, specs, [])
            return RollingPlan(name, False, lambda: df.mapInArrow(
                _roll_fn(specs, value, order_by, [], [], check=[order_by, *tb], forward=forward), schema))
        if plan is None:
            # Too much to collect, or a short partition before others: two
            # JVM jobs give the tails and each partition's order range; the
            # partitions must follow one another, else the shuffle path runs.
            halos, stats = _count_halos(df, value, hmax, order_by)
            if _ranges_in_sequence(stats, strict=bool(tb)):
                halos = _share(spark, halos)
                schema = _schema_with(df, specs, [])
                return RollingPlan(name + "-tails", False, lambda: df.mapInArrow(
                    _roll_fn(specs, value, order_by, [], [], halos, check=[order_by, *tb]), schema))
    if num_partitions is None and not assumed:
        rows = _check_pass(df, value, order_by, specs, tb)
        if _in_order(rows, strict_ties=specs[0].time):
            halos = _share(spark, _halos([(r.pid, r.n, r.tail) for r in rows], specs, vtype))
            schema = _schema_with(df, specs, [])
            return RollingPlan("ordered", False,
                               lambda: df.mapInArrow(_roll_fn(specs, value, order_by, [], [], halos), schema))
    drop: List[str] = []
    if not tb and not specs[0].time:
        tb, drop = [_TB], [_TB]
        df = df.withColumn(_TB, F.monotonically_increasing_id())
    if specs[0].time:
        tb = []  # tied times are peers sharing one value: no tiebreak needed
    schema = _schema_with(df, specs, drop)
    n = num_partitions or _parallelism(spark)
    parts = df.repartitionByRange(n, order_by).sortWithinPartitions(order_by, *tb)
    parts = parts.localCheckpoint(eager=True)
    if specs[0].time:
        tail_fn = _tail_fn(value, order_by, specs, [])
        rows = parts.select(value, order_by).mapInArrow(tail_fn, _TAIL_SCHEMA).collect()
        halos = _halos([(r.pid, r.n, r.tail) for r in rows], specs, vtype)
    else:
        halos, _ = _count_halos(parts, value, max(s.window for s in specs) - 1)
    halos = _share(spark, halos)
    return RollingPlan("range", False,
                       lambda: parts.mapInArrow(_roll_fn(specs, value, order_by, [], drop, halos), schema))
