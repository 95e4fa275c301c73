"""slidewise on Spark: rolling columns and window aggregates of DataFrames.

* :func:`rolling` adds per-row rolling aggregates, equal to Spark's own
  ``F.<agg>(v).over(Window.partitionBy(k).orderBy(t, tiebreak)
  .rowsBetween(-(w-1), 0))`` (count windows) or ``.rangeBetween`` (time
  windows, ``(t - range, t]``, tied times are peers as in Spark's RANGE
  frame), but computed by slidewise inside ``mapInArrow``, with no shuffle
  when the input is already in order; :func:`plan_rolling` tells which
  execution path it takes (:mod:`slidewise.spark._rolling`).
* :func:`aggregate` gives one row per (key, window) with a column per
  query like ``df.groupBy(key, F.window(time, range, slide)).agg(...)``, or
  per (key, session) like ``df.groupBy(key, F.session_window(time,
  gap)).agg(...)`` for ``Query(agg, session=gap)``; :func:`aggregate_path`
  names the path it takes (:mod:`slidewise.spark._panes`).
* :func:`stream_aggregate` does the same over a streaming DataFrame, as
  Spark's own streaming aggregation in append mode, optionally with the
  rows the watermark refused as a second stream
  (:mod:`slidewise.spark._streaming`).
* :func:`ship` sends this slidewise to executors whose Python lacks it
  (every function above calls it; :mod:`slidewise.spark._ship`).

Order within duplicate order keys: rows are ordered by ``(order_by,
tiebreak)``; ``tiebreak`` defaults to the input order
(``F.monotonically_increasing_id()`` of the DataFrame as given), so results
are deterministic for a deterministic input. (The row order Spark gives
right after a shuffle depends on the order shuffle blocks arrive in; for
such an input pass a tiebreak column or ``localCheckpoint()`` it first.) Pass ``tiebreak="col"`` to
order ties by a column of your own. Time windows do not depend on it: all
rows with the same time are peers and get the same value (Spark's RANGE
frame).

Keys group as in Spark: null keys are one key, all NaN keys one key, -0.0
the same key as 0.0.

Nulls in the value column are skipped; NaN orders above every number
(max/min), as in Spark. ``min_periods=k`` gives null where fewer than ``k``
non-null values are in the window (pandas); by default a window without a
non-null value gives null (count gives 0), as Spark. Output types follow
Spark's functions: max/min keep the input type, sum gives bigint for
integers and double for floats, mean/std/var double, count bigint.

Modules: ``_ship`` (packaging, the executor-side import), ``_specs``
(argument specs, Spark <-> Arrow types), ``_kernels`` (executor functions),
``_order`` (order checks, halos), ``_parquet`` (Parquet files in time
order: their layout, halos read from the files), ``_rolling``, ``_panes``
(aggregate's pane partials), ``_aggregate``, ``_streaming``. They import
one another one way only, in that order.
"""

from __future__ import annotations

from ._aggregate import aggregate, aggregate_path
from ._rolling import RollingPlan, plan_rolling, rolling
from ._ship import ship
from ._streaming import foreach_batch_split, split_late, stream_aggregate

__all__ = ["rolling", "plan_rolling", "RollingPlan", "aggregate", "aggregate_path", "ship", "stream_aggregate",
           "split_late", "foreach_batch_split"]
