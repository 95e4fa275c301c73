"""Order and halos, on the driver: whether the input is already in order
(Spark's physical plan, or a check pass over the data) and each partition's
halo (the rows before it that its first windows reach back into).

* :func:`_plan_sorted`: Spark's physical plan says the rows are in order
  (range partitioned, each partition sorted: ``spark.range``, a cached copy).
* :func:`_check_pass` runs :func:`~slidewise.spark._kernels._tail_fn` over
  the input as it is: per partition its row count, tail and order range;
  :func:`_in_order` reads them, :func:`_halos` turns the tails into each
  partition's halo (the tail of everything before it; per key when keyed,
  spanning several partitions for a rare key).
* :func:`_forward_heads` (``assume_sorted``): each partition's first rows,
  which its predecessor's task computes; :func:`_count_halos`: the tails
  found in the JVM (no Python pass), with :func:`_ranges_in_sequence` on the
  partitions' order ranges.
"""

from __future__ import annotations

import pickle
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ._kernels import _TAIL_SCHEMA, _from_ipc, _tail_fn, _to_ipc, _trim_keyed
from ._specs import _functions, _is_connect


def _plan_sorted(df, cols: List[str]) -> bool:
    """Whether Spark's physical plan says the rows are in ascending ``cols``
    order across all partitions: range partitioned by a prefix of ``cols``
    (or one partition), each partition sorted by ``cols``, e.g. anything
    selected or filtered from ``spark.range`` or a cached copy of it. Only
    for non-null integer or time columns (a null or NaN, which the pass's
    order check rejects, cannot then occur). Spark's own operators rely on
    these plan properties; the pass checks the order all the same."""
    from pyspark.sql import types as T

    kinds = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DateType, T.TimestampType, T.TimestampNTZType)
    for c in cols:
        f = df.schema[c]
        if f.nullable or not isinstance(f.dataType, kinds) or df.columns.count(c) != 1:
            return False

    def names(order) -> List[str]:
        out = []
        for i in range(order.length()):
            so = order.apply(i)
            if so.direction().sql() != "ASC" or so.child().getClass().getSimpleName() != "AttributeReference":
                break
            out.append(so.child().name())
        return out

    if _is_connect(df.sparkSession):
        return False  # the physical plan is out of a Connect client's reach
    try:
        plan = df._jdf.queryExecution().executedPlan()
        if names(plan.outputOrdering())[:len(cols)] != cols:
            return False
        part = plan.outputPartitioning()
        if part.numPartitions() == 1:
            return True
        if part.getClass().getSimpleName() != "RangePartitioning":
            return False
        by = names(part.ordering())
        return 0 < len(by) == part.ordering().length() and by == cols[:len(by)]
    except Exception:  # Spark Connect (no _jdf) or an unexpected plan: not known
        return False


def _ranges_in_sequence(stats: Dict[int, Tuple[Any, ...]], strict: bool) -> bool:
    """Whether the partitions' (min, max) order ranges follow one another
    (``strict``: not even touching; an empty partition has (None, None))."""
    prev = None
    for p in sorted(stats):
        lo, hi = stats[p]
        if lo is None:
            continue
        if prev is not None and (lo < prev or (strict and lo == prev)):
            return False
        prev = hi
    return True


def _check_pass(df, value, order_by, specs, tb, by: Sequence[str] = (), runs: bool = False):
    """Run _tail_fn over the input as it is: one row per partition (per
    sorted run of a partition with ``runs``: a new run starts where the
    order falls or the input file split changes, Spark's
    ``input_file_name`` and ``input_file_block_start``, which are empty
    and -1 for rows not read from files)."""
    F = _functions(df)

    spark = df.sparkSession
    cols = list(dict.fromkeys([value, order_by, *tb, *by]))
    tag = None
    if runs:
        from pyspark.sql import types as T

        # Timestamp order columns travel as their microseconds (the same
        # order; Arrow's timestamp conversion costs more than a long's).
        conv = {c for c in [order_by, *tb] if c not in (value, *by)
                and isinstance(df.schema[c].dataType, T.TimestampType)}
        cols = [F.unix_micros(F.col(c)).alias(c) if c in conv else c for c in cols]
        tag = _FILE
        cols = [*cols, F.hash(F.input_file_name(), F.input_file_block_start()).alias(_FILE)]
    # Unless the batch size was set explicitly, larger Arrow batches for
    # this pass only (it returns one row per partition): about half the
    # time of the default 10k rows.
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    explicit = spark.conf.get(key, None) is not None
    if not explicit:
        spark.conf.set(key, "200000")
    try:
        return df.select(*cols).mapInArrow(_tail_fn(value, order_by, specs, tb, by, runs, tag),
                                           _TAIL_SCHEMA).collect()
    finally:
        if not explicit:
            spark.conf.unset(key)


# The check pass's column of input file splits (a hash), with runs=True.
_FILE = "__slidewise_file"


def _in_order(rows, strict_ties: bool) -> bool:
    """Whether the partitions, each sorted, follow one another in order.
    Time windows need a strict step at each boundary: tied times are peers
    and must share a partition."""
    prev = None
    for r in sorted(rows, key=lambda r: r.pid):
        if not r.n:
            continue
        ok, first, last = pickle.loads(r.order)
        if not ok:
            return False
        if prev is not None and (first < prev or (strict_ties and first[0] == prev[0])):
            return False
        prev = last
    return True


def _run_sequence(rows, input_ties: bool):
    """The sorted runs of :func:`_check_pass` (``runs=True``) in the global
    (order, tiebreak) order: [(pid, run, n, tail, first, last)] by first
    key, each run starting at or after the one before ends; None when a
    partition is out of order or two runs overlap. ``input_ties`` (the
    default tiebreak, the input order): runs whose boundary keys tie must
    also follow one another in the input, (partition, run) order."""
    runs = []
    for r in rows:
        if not r.n:
            continue
        ok, first, last = pickle.loads(r.order)
        if not ok:
            return None
        runs.append((r.pid, r.run, r.n, r.tail, first, last))
    runs.sort(key=lambda x: (x[4], x[0], x[1]))
    for a, b in zip(runs, runs[1:]):
        if b[4] < a[5] or (input_ties and b[4] == a[5] and (b[0], b[1]) < (a[0], a[1])):
            return None
    return runs


# Partition ids and row positions in _forward_heads (not the caller's names).
_PID, _POS = "__slidewise_pid", "__slidewise_pos"
# At most this many rows (partitions x (max(w) - 1)) go through the driver
# in _forward_heads; past it, _count_halos collects only value tails.
_FORWARD_ROWS = 1 << 21


def _forward_heads(df, hmax: int, keys: List[str]):
    """Unkeyed count windows over partitions each in order (assume_sorted),
    with one JVM job: each partition's first ``hmax`` rows, all columns
    (monotonically_increasing_id holds the row position in its low 33
    bits). Partition q's task computes its rows and then the next
    non-empty partition's first rows, which follow its own in the global
    order, and emits them; that partition skips them. Returns
    {partition: (rows to skip, its own heads' ``keys`` as IPC, the next
    partition's heads as IPC or None)}, {} when no partition needs any,
    False when the partitions' first rows are out of sequence (the shuffle
    path), None when it does not apply (too many rows to collect, a
    partition other than the last shorter than ``hmax``)."""
    F = _functions(df)

    if hmax == 0:
        return {}
    connect = _is_connect(df.sparkSession)
    if not connect and df.rdd.getNumPartitions() * hmax > _FORWARD_ROWS:
        return None
    cols = df.columns
    pos = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1))
    heads = df.select("*", F.spark_partition_id().alias(_PID), pos.alias(_POS)).filter(F.col(_POS) < hmax)
    if connect:
        # no RDD to count the partitions by: the collect stops one row past
        # the bound instead
        heads = heads.limit(_FORWARD_ROWS + 1).toArrow()
        if heads.num_rows > _FORWARD_ROWS:
            return None
    else:
        heads = heads.toArrow()
    heads = heads.sort_by([(_PID, "ascending"), (_POS, "ascending")])
    pids = heads.column(_PID).to_numpy()
    order = np.unique(pids).tolist()
    parts = {}
    for p in order:
        lo, hi = np.searchsorted(pids, p, "left"), np.searchsorted(pids, p, "right")
        parts[p] = heads.slice(lo, hi - lo).select(cols)
    if any(parts[p].num_rows < hmax for p in order[:-1]):
        return None
    for a, b in zip(order, order[1:]):
        ka, kb = parts[a].select(keys), parts[b].select(keys)
        if any(c.null_count for c in ka.columns + kb.columns):
            return False
        if tuple(c[-1].as_py() for c in ka.columns) > tuple(c[0].as_py() for c in kb.columns):
            return False
    plan = {}
    for i, p in enumerate(order):
        nxt = _to_ipc(parts[order[i + 1]]) if i + 1 < len(order) else None
        plan[p] = (parts[p].num_rows if i else 0, _to_ipc(parts[p].select(keys)), nxt)
    return plan


def _count_halos(parts, value: str, hmax: int, order: Optional[str] = None):
    """Count windows: each partition's tail found in the JVM (no Python
    pass). On sorted partitions monotonically_increasing_id is (partition <<
    33) + row position, so two small jobs give each partition's last
    position and then its last hmax rows. Returns the halos and, per
    partition, (min, max) of ``order`` when it is given."""
    F = _functions(parts)

    tagged = parts.select(F.col(value).alias("v"), F.spark_partition_id().alias("p"),
                          F.monotonically_increasing_id().alias("m"),
                          *([F.col(order).alias("o")] if order else []))
    aggs = [F.max("m")] + ([F.min("o"), F.max("o")] if order else [])
    rows = tagged.groupBy("p").agg(*aggs).collect()
    last = {r[0]: r[1] for r in rows}
    stats = {r[0]: (r[2], r[3]) for r in rows} if order else {}
    if not last or hmax == 0:
        return {}, stats
    thr = F.create_map(*[x for p, m in last.items() for x in (F.lit(p), F.lit(m - hmax))])
    tails = tagged.filter(F.col("m") > F.element_at(thr, F.col("p"))).toArrow()
    tails = tails.sort_by([("m", "ascending")])
    pids = tails.column("p").to_numpy()
    out: Dict[int, bytes] = {}
    running: Optional[pa.Table] = None
    for p in sorted(last):
        if running is not None and running.num_rows:
            out[p] = _to_ipc(running)
        lo, hi = np.searchsorted(pids, p, "left"), np.searchsorted(pids, p, "right")
        tail = pa.table([tails.column("v").slice(lo, hi - lo)], names=["v"])
        running = tail if running is None else pa.concat_tables([running, tail]).combine_chunks()
        if running.num_rows > hmax:
            running = running.slice(running.num_rows - hmax)
    return out, stats  # an empty partition needs no halo: it has no rows to compute


def _halos(rows, specs, value_type: pa.DataType, keyed: bool = False, ordered: bool = False) -> Dict[Any, bytes]:
    """Driver: partition p's halo = the tail of everything before p (per
    key when ``keyed``: the tails are _tail_fn's per-key tables). ``rows``:
    (partition, rows, tail), in partition order; ``ordered``: (id, rows,
    tail) already in the global order (sorted runs), halos by id."""
    time = specs[0].time
    if not ordered:
        rows = sorted(rows, key=lambda r: r[0])
    out: Dict[int, bytes] = {}
    running: Optional[pa.Table] = None
    hmax = None if time else max(s.window for s in specs) - 1
    for pid, n, payload in rows:
        if running is not None and running.num_rows:
            out[pid] = _to_ipc(running)
        if not n:
            continue
        tail = _from_ipc(payload)
        running = tail if running is None else pa.concat_tables([running, tail]).combine_chunks()
        if time:
            rmax = int(tail.schema.metadata[b"rmax"])
            tv = running.column("t").to_numpy()
            running = running.slice(int(np.searchsorted(tv, tv[-1] - rmax, side="right")))
        elif keyed:
            assert hmax is not None
            running = _trim_keyed(running, hmax)
        elif running.num_rows > hmax:
            running = running.slice(running.num_rows - hmax)
    return out
