"""Structured Streaming: slidewise state in Spark.

``stream_aggregate`` runs ``applyInPandasWithState`` with its state in
bytes (a query restarted from its checkpoint continues exactly where it
stopped; any state store provider holds it), grouped by a bucket of keys
for the pane aggregations and by key for the rest. Buckets, not keys:
every call of a stateful Python function costs pyspark a DataFrame and its
round trips, and per key the issue's job took 14.7x Spark's time at
100,000 keys. applyInPandasWithState, not transformWithStateInPandas or
its Row-based form: measured on the issue's job with an empty function,
grouped by 2 buckets, 0.77x Spark's time against 0.90x (pandas) and 0.98x
(Row): transformWithState starts a Python process on the driver at every
query start to learn the state's schemas (~0.6 s), and reads, writes and
moves timers over a socket to the JVM (~1 ms a call), where
applyInPandasWithState hands the state over with the rows and takes it
back with the output. It gives what Spark's own streaming
``withWatermark(ts, delay).groupBy(key, F.window(ts, range, slide))`` or
``groupBy(key, F.session_window(ts, gap))`` gives in append mode, over the
same micro-batches:

* Late rows. Spark judges a micro-batch's rows by the watermark of the
  previous batch: a (row, window) pair whose window ends at or before it is
  dropped (a session window: the row's own window ``[t, t + gap]``). Spark's
  applyInPandasWithState (with an event-time timeout) drops the input rows
  whose event-time column is at or before that watermark, so the
  function's input carries, as its
  event-time column, the end of the last window a row could join: ``t -
  t mod slide + range`` (time windows), ``t + gap`` (sessions); the smallest
  over the queries, so a row late for one query is late for all (as in
  :class:`slidewise.Stream`). The watermark itself stays the one of ``ts``.
* Emission. A window is emitted, final, once the watermark (of the current
  batch) reaches its end; an event-time timeout at the earliest end a key
  has open calls the key then even when it gets no rows.
* Time windows of every aggregation but argmax, argmin and collect
  (:class:`._stream_state._PaneProcessor`): the keys are hashed into one
  bucket per partition of the state (``spark.sql.shuffle.partitions``,
  which Spark pins for a checkpoint), and each bucket's state holds, for
  each pane (the gcd of the ranges and slides) a window not yet emitted
  holds, the partials of its keys, sealed with a CRC-32 and the writer's
  version. A call folds its rows into partials per (key, pane), emits the
  windows the watermark closed for all its keys at once (no loop per key
  or window) and merges its rows' partials into their panes: work that
  grows with the call's rows and open panes. A (row, window) pair is
  kept exactly when the window ends at or after the smallest event time
  that came through (the rows' and their probes', below): every end of a
  new row's windows was sent, so those Spark dropped are the smaller ones.
  The output is all numeric (query index, bounds in us, value and its
  null/NaN state); the JVM names, types and masks it after the operator.
* Time windows of argmax, argmin, collect (:class:`._stream_state._Processor`): each key's state
  holds the rows of its windows not yet final (a row stays until the
  watermark reaches the end of its last window); every call computes the
  windows the watermark closed afresh from the rows before it with a
  :class:`slidewise.Stream`.
* Sliding windows: a row whose earlier windows had ended at the previous
  batch's watermark while its last one had not joins only the later ones,
  as in Spark. Such a window holds only such rows (a row of an earlier
  batch would have had it emitted already), so it is dropped whole. The
  function cannot read that watermark, so probe rows come with the rows
  (:func:`_probes_fn`, a ``mapInArrow`` before the shuffle): one per group
  (key or bucket) and end of the rows' earlier windows in each input batch (a null time;
  the window's end as the event-time column, so Spark drops the probes of
  ended windows): a window holding
  only rows new in this batch, none of them in its first slide, is emitted
  only if a probe of its end came through. (numRowsDroppedByWatermark
  counts the dropped probes too.)
* Session windows: per bucket of keys, the open sessions of each key and
  query (first and last row time, the partials;
  :class:`._stream_state._SessionPaneProcessor`): a call merges its rows
  into them (an on-time row joins, and merges, the open sessions it
  touches) and emits those the watermark reached the end of; an emitted
  session leaves the state, so a later row never joins it (as in Spark).
  argmax, argmin and collect keep each key's rows and compute its sessions
  afresh with a :class:`slidewise.Stream`.
* The late rows (``late_rows="kind"``: in the one output, with a kind
  column; ``True``: as a second streaming DataFrame): the rows the
  watermark refused (those Spark drops above), with their key, time and
  value. Spark's filter would drop them before the processor sees them,
  so each row comes without an event time (Spark never drops it) and with a
  probe row carrying the end of its last window as its event time instead:
  the row is late exactly when Spark dropped that probe, i.e. when no probe
  of its last window's end came through (probes of equal ends share their
  fate). The processor emits late rows as output rows with a null query;
  :func:`stream_aggregate` splits them off. numRowsDroppedByWatermark then
  counts one dropped probe per late row (plus the sliding windows' probes).

Nulls and NaN stay apart as in Spark: pandas (which the rows reach the
processor in) has NaN for both, so a null flag of the value column travels
with it; the output value column is pandas' masked Float64, so a window
whose value is NaN gives NaN and one without a value null.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, List, Literal, Optional, Sequence, Tuple, Union, overload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .._query import Query

import numpy as np
import pyarrow as pa

from ._ship import _import_slidewise, ship
from ._specs import _functions, _listify
from ._stream_state import _LATE_COL, _NULL_COL, _OUT_NULL, _OUT_Q, _OUT_T, _OUT_V, _OUT_WE, _OUT_WS, _PANE_AGGS

# Spark's metadata key for a column's watermark delay (EventTimeWatermark.delayKey)
_DELAY_KEY = "spark.watermarkDelayMs"
# The output's column for a late row's time (late_rows=True; null in window rows).
_TIME_OUT = "slidewise_time"



class _Shell:
    """The function ``applyInPandasWithState`` calls (per key, or per
    bucket of keys): its configuration; the work (``kind``: "rows", "panes"
    or "sessions") is in :mod:`._stream_state`, imported by name on the
    executor at the task's first call, after :func:`_import_slidewise`.
    Nothing here references numpy, pandas or pyarrow, so unpickling the
    function imports none of them."""

    def __init__(self, kind: str, queries: List[Query], value: str, time: str, keys: List[str], late: bool = False,
                 buckets: int = 1, wide: bool = False) -> None:
        import slidewise

        # queries travel as bytes: unpickled after the shipped slidewise is importable
        self.kind, self.qbytes, self.value, self.time, self.keys = kind, pickle.dumps(queries), value, time, keys
        self.late, self.buckets = late, buckets  # late: judge lateness here and emit the late rows
        self.wide = wide  # one row per window, a value column per query (_stream_state._widen)
        self.ver = str(slidewise.__version__)  # the writer's version in the state (the driver's)
        self.work: Any = None

    def __call__(self, key: Any, rows: Any, state: Any) -> Any:
        if self.work is None:
            _import_slidewise()
            from slidewise.spark._stream_state import engine

            self.work = engine(self)
        return self.work(key, rows, state)


def _probes_fn(by: List[str], carry: List[str], time: str, value: str, spans: List[Tuple[int, int]],
               late: bool) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function before the processor (time windows; see
    the module docstring): each row (``by`` and ``carry`` columns, value)
    with its event time in us and, as the column ``slidewise_end``, the end
    of the last window it could join (the smallest over the spans; with
    ``late``: null, so Spark never drops the row, and a probe row of its
    own carries it), then the probes: one row (time and value null, the
    other columns a row's of the group) per distinct ``by`` group (a key,
    or a bucket of keys) and end of the rows' earlier windows. Spark's filter
    gives every probe of one group and end the same fate, so one stands for
    all: before, the probes were 9 rows per row for 10-minute windows
    sliding 1 minute (the cost of the query's shuffle and of handing its
    rows to pandas)."""
    names = [*by, *carry]

    def probes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out = [*names, time, value, "slidewise_end"]
        keys = [f"k{i}" for i in range(len(by))]
        for b in batches:
            n = b.num_rows
            if not n:
                continue
            t = b.column(time).cast(pa.int64()).to_numpy()  # no nulls: filtered before
            lasts = [t - np.mod(t, s) + r for r, s in spans]
            last = lasts[0] if len(lasts) == 1 else np.minimum.reduce(lasts)
            cols = [b.column(c) for c in names]
            vt = b.column(value).type
            yield pa.RecordBatch.from_arrays(cols + [pa.array(t), b.column(value),
                                                     pa.nulls(n, pa.int64()) if late else pa.array(last)], names=out)
            if late:  # each row's own probe: numRowsDroppedByWatermark counts one per late row, as Spark's
                yield pa.RecordBatch.from_arrays(cols + [pa.nulls(n, pa.int64()), pa.nulls(n, vt), pa.array(last)],
                                                 names=out)
            # the earlier windows' ends of a row depend on its slide only
            # (t // s): one row per group and slide, then one per group and end
            rows_, ends_ = [], []
            for r, s in spans:
                j = -(-r // s)
                if j < 2:
                    continue
                d = pa.table([b.column(c) for c in by] + [pa.array(t // s), pa.array(np.arange(n))],
                             names=keys + ["q", "row"]).group_by(keys + ["q"], use_threads=False).aggregate(
                    [("row", "min")])
                q = d.column("q").to_numpy()
                rows_.append(np.repeat(d.column("row_min").to_numpy(), j - 1))
                ends_.append((q[:, None] * s + r - np.arange(1, j)[None, :] * s).ravel())
            if rows_:
                rows = np.concatenate(rows_)
                d = pa.table([b.column(c).take(rows) for c in by] + [pa.array(np.concatenate(ends_)), pa.array(rows)],
                             names=keys + ["e", "row"]).group_by(keys + ["e"], use_threads=False).aggregate(
                    [("row", "min")])
                first = d.column("row_min").combine_chunks()
                m = len(first)
                yield pa.RecordBatch.from_arrays([b.column(c).take(first) for c in names] + [
                    pa.nulls(m, pa.int64()), pa.nulls(m, vt), d.column("e").combine_chunks()], names=out)
    return probes


def _spark_hash_long(v: np.ndarray) -> Any:
    """Spark's ``hash(v)`` of bigints (Murmur3_x86_32.hashLong, seed 42) as
    int32, computed here: no Spark job to learn the bucket values."""
    def rotl(x: Any, r: int) -> Any:
        return (x << np.uint32(r)) | (x >> np.uint32(32 - r))

    def mix(h: Any, k: Any) -> Any:
        k = rotl(k * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)
        return rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)

    u = v.astype(np.uint64)
    h = mix(np.full(len(v), 42, np.uint32), (u & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    h = mix(h, (u >> np.uint64(32)).astype(np.uint32)) ^ np.uint32(8)
    h = (h ^ (h >> np.uint32(16))) * np.uint32(0x85EBCA6B)
    h = (h ^ (h >> np.uint32(13))) * np.uint32(0xC2B2AE35)
    return (h ^ (h >> np.uint32(16))).view(np.int32)


def _bucket_values(n: int) -> List[int]:
    """``n`` bigints whose Spark hash puts each in its own one of ``n``
    partitions (``pmod(hash(v), n)``, the hash partitioning of a stateful
    operator's grouping key): the buckets of keys, one per partition of
    the state, so every core gets one. The smallest such value each."""
    ids = np.arange(64 * n, dtype=np.int64)
    part = np.mod(_spark_hash_long(ids).astype(np.int64), n)  # pmod: numpy's mod has the divisor's sign
    vals = np.arange(n, dtype=np.int64)  # (a partition missed in 64 n draws shares one: never seen)
    found, first = np.unique(part, return_index=True)  # the first draw of each: the smallest
    vals[found] = ids[first]
    return [int(v) for v in vals]




# one output's own columns (late_rows="kind")
_KIND_COLS = ("kind", "query", "window_start", "window_end", "value")
# the grouping column of an unkeyed stream: one key
_ONE_KEY = "slidewise_key"
# the grouping column of time windows with pane state: a bucket of keys
_BUCKET = "slidewise_bucket"


Keys = Union[None, str, Sequence[str]]


@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Keys = None, watermark: Optional[str] = None,
                     late_rows: Literal[False, "kind"] = False, wide: bool = False) -> DataFrame: ...
@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Keys = None, watermark: Optional[str] = None, *,
                     late_rows: Literal[True], wide: bool = False) -> Tuple[DataFrame, DataFrame]: ...
@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Keys = None, watermark: Optional[str] = None,
                     late_rows: Union[bool, str] = False, wide: bool = False
                     ) -> Union[DataFrame, Tuple[DataFrame, DataFrame]]: ...
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str, key: Keys = None,
                     watermark: Optional[str] = None, late_rows: Union[bool, str] = False,
                     wide: bool = False) -> Union[DataFrame, Tuple[DataFrame, DataFrame]]:
    """Time-window or session-window queries over a streaming DataFrame,
    per key (``key=None``: one key for all rows), with state kept across
    micro-batches: rows (key..., query, window_start, window_end, value)
    appended as the watermark passes each window, as Spark's own streaming
    ``groupBy(key, F.window(...))`` / ``groupBy(key, F.session_window(...))``
    in append mode. Use it with ``outputMode("append")`` and a checkpoint
    location; the state lives in the session's state store (RocksDB or
    Spark's default). The watermark must be on ``time``: ``watermark`` (e.g. ``"10 seconds"``)
    calls ``withWatermark(time, watermark)``, or call it on ``df`` first.
    Rows with a null time belong to no window.

    ``wide=True``: one row per (key, window), a column per query named by
    the query (key..., window_start, window_end, name...), as
    :func:`aggregate` and Spark's ``groupBy(key, window).agg(...)`` give
    them; the queries share one window (range and slide, or session gap).
    A third of the rows for three queries to convert and write: the faster
    form. With ``late_rows="kind"`` the late rows carry their value in a
    column named ``value`` (the input's name) after ``time``.

    The rows the watermark refused (those Spark's own aggregation drops,
    counting them in numRowsDroppedByWatermark) come out too with
    ``late_rows``:

    * ``"kind"``: one streaming DataFrame (key..., kind, query,
      window_start, window_end, value, ``time``): ``kind`` is ``"window"``
      for a window (``time`` null) and ``"late"`` for a late row (its
      time and value; query and window null), appended in the micro-batch
      that refused it. One query computes both; :func:`split_late` splits
      a micro-batch into the two, and :func:`foreach_batch_split` writes
      them to two sinks from ``writeStream.foreachBatch``.
    * ``True``: ``(windows, late)``, two streaming DataFrames, ``late`` with
      columns (key..., ``time``, ``value``). A query started on either runs
      the whole aggregation (with its own checkpoint and state) and judges
      lateness by its own micro-batches, so two queries split the rows
      alike when their micro-batches are alike (e.g. a file source with
      ``maxFilesPerTrigger``).

    The late ``value`` has the input's type with ``True`` and is a double
    with ``"kind"``; integers pass through pandas' float64 on the way
    (exact up to 2**53).
    """
    import slidewise as sw
    from pyspark.sql import types as T

    F = _functions(df)
    queries = [queries] if isinstance(queries, sw.Query) else list(queries)
    if not queries or not all(isinstance(q, sw.Query) for q in queries):
        raise TypeError("stream_aggregate needs slidewise.Query objects")
    if late_rows not in (False, True, "kind"):
        raise ValueError(f"late_rows must be False, True or 'kind', got {late_rows!r}")
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise ValueError(f"query names must be unique, got {names}")
    for q in queries:
        if not q.time:
            raise ValueError(f"{q.name}: stream_aggregate runs time windows (range/slide as time spans) "
                             "or session windows (session=...)")
        if q.range % 1000 or q.slide % 1000 or (q.session or 0) % 1000:
            raise ValueError(f"{q.name}: range, slide and session gap must be whole microseconds")
        if q.agg == "collect" or q.arg is not None:
            raise ValueError(f"{q.name}: stream_aggregate's value column is a double; {q.agg!r} with "
                             f"{'a list per window' if q.agg == 'collect' else 'arg='} has no place in it")
    if wide and len({(q.range, q.slide, q.session) for q in queries}) > 1:
        raise ValueError("wide=True: the queries of one call share one window (range and slide, or session gap), "
                         "as the aggregations of one groupBy do; call once per window")
    kinds = {q.kind for q in queries}
    if len(kinds) > 1:
        raise ValueError("mix of session-window and time-window queries; call stream_aggregate once per kind")
    sessions = kinds == {"session"}
    keys = [] if key is None else _listify(key)
    for c in keys + [value, time]:
        if c not in df.columns:
            raise ValueError(f"column {c!r} is not in the DataFrame (columns: {df.columns})")
    ours = (_NULL_COL, _LATE_COL, _OUT_Q, _OUT_WS, _OUT_WE, _OUT_V, _OUT_NULL, _OUT_T, _TIME_OUT, _ONE_KEY, _BUCKET)
    for c in ours:
        if c in df.columns:
            raise ValueError(f"column name {c!r} is taken (stream_aggregate's own column)")
    if wide:
        kind = late_rows == "kind"
        cols = keys + ["kind"] * kind + ["window_start", "window_end"] + names + [time, value] * kind
        taken = sorted({c for c in cols if cols.count(c) > 1})
        if taken:
            raise ValueError(f"wide=True names a column by each query: the output's columns {cols} repeat "
                             f"{taken}: rename the queries or columns")
    elif late_rows == "kind":
        taken = [c for c in keys + [time] if c in _KIND_COLS]
        if taken:
            raise ValueError(f"with late_rows='kind' the output's columns {list(_KIND_COLS)} are taken: rename {taken}")
    if watermark is not None:
        df = df.withWatermark(time, watermark)
    delay = df.schema[time].metadata.get(_DELAY_KEY)
    if delay is None:
        raise ValueError(f"stream_aggregate needs the stream's watermark on {time!r}: pass watermark=... "
                         f"or call df.withWatermark({time!r}, ...) first")
    value_type = df.schema[value].dataType
    ship(df.sparkSession)  # also pickles this module's processors by value
    if not keys:
        df = df.withColumn(_ONE_KEY, F.lit(0))
    group = keys or [_ONE_KEY]
    for k in keys:  # float keys group as in Spark's groupBy: -0.0 is 0.0 (NaN is one key in both)
        if isinstance(df.schema[k].dataType, (T.FloatType, T.DoubleType)):
            df = df.withColumn(k, F.when(F.col(k) == 0, F.lit(0.0).cast(df.schema[k].dataType)).otherwise(F.col(k)))
    vcols = [(f"{_OUT_V}{i}", f"{_OUT_NULL}{i}") for i in range(len(queries))] if wide else [(_OUT_V, _OUT_NULL)]
    schema = T.StructType([T.StructField(k, df.schema[k].dataType) for k in group] +
                          [T.StructField(c, t) for c, t in ((_OUT_Q, T.IntegerType()), (_OUT_WS, T.LongType()),
                                                           (_OUT_WE, T.LongType()))] +
                          [f for v, st in vcols for f in (T.StructField(v, T.DoubleType()),
                                                          T.StructField(st, T.IntegerType()))] +
                          ([T.StructField(_OUT_T, T.LongType())] if late_rows else []))
    # the end of the last window a row could join: applyInPandasWithState
    # drops the rows where it is at or before the previous batch's watermark
    df = df.filter(F.col(time).isNotNull())
    t = F.col(time)
    pos, end = "slidewise_pos", "slidewise_end"
    late = bool(late_rows)
    by = group  # the processor's grouping key
    if all(q.agg in _PANE_AGGS for q in queries):
        # partials per bucket of keys, a bucket per partition of the state
        # (Spark pins the partitions of a checkpoint; the function refuses a
        # restart under another count)
        spark = df.sparkSession
        n = int(spark.conf.get("spark.sql.shuffle.partitions") or 200) if keys else 1
        vals = _bucket_values(n) if n > 1 else [0]
        bucket = F.element_at(F.expr(f"array({', '.join(f'{v}L' for v in vals)})"),  # one call, not n lits
                              (F.pmod(F.hash(*group), F.lit(n)) + 1).cast("int"))
        df = df.withColumn(_BUCKET, bucket)
        by = [_BUCKET]
        proc = _Shell("session-panes" if sessions else "panes", queries, value, time, group, late, n, wide)
    else:
        proc = _Shell("sessions" if sessions else "rows", queries, value, time, group, late, wide=wide)
    if sessions:
        gap = min(q.session for q in queries if q.session is not None) // 1000
        late_after = t + F.expr(f"INTERVAL {gap} MICROSECONDS")
        if late:
            # the row without an event time (never dropped), then its probe
            none = F.when(F.lit(False), late_after)
            df = df.select(*dict.fromkeys(by + group), time, value,
                           F.posexplode(F.array(none, late_after)).alias(pos, end))
            t = F.when(F.col(pos) == 0, F.col(time))
            late_after = F.col(end)
        t_us = F.unix_micros(t)
    else:
        # queries of one (range, slide) share their windows, so their ends and probes
        spans = sorted({(q.range // 1000, q.slide // 1000) for q in queries})
        carry = [c for c in group if c not in by]
        if late or any(r > s for r, s in spans):
            pschema = T.StructType([df.schema[k] for k in by + carry] +
                                   [T.StructField(time, T.LongType()), T.StructField(value, value_type),
                                    T.StructField(end, T.LongType())])
            df = df.select(*by, *carry, time, value).mapInArrow(_probes_fn(by, carry, time, value, spans, late),
                                                                pschema)
            t_us, late_after = F.col(time), F.timestamp_micros(F.col(end))
        else:  # tumbling windows: a row is late exactly when its window ended
            t_us = us = F.unix_micros(F.col(time))
            lasts = [us - F.pmod(us, F.lit(s)) + F.lit(r) for r, s in spans]
            late_after = F.timestamp_micros(lasts[0] if len(lasts) == 1 else F.least(*lasts))
    cols = [*dict.fromkeys(by + group),
            # int64 microseconds (null in probe rows): cheaper to hand to pandas than timestamps;
            # without the delay key: late rows are judged by late_after, not time
            t_us.alias(time),
            value, F.col(value).isNull().alias(_NULL_COL),
            late_after.alias(_LATE_COL, metadata={_DELAY_KEY: delay})]
    out = df.select(*cols).groupBy(*by).applyInPandasWithState(proc, schema, "b binary", "append",
                                                                "EventTimeTimeout")
    qi = F.col(_OUT_Q)
    is_late = qi < 0
    in_window = ~is_late
    # a value and its state (0 a number, 1 null, 2 NaN: pandas has NaN for both)
    values: List[Any] = [F.when(F.col(st) == 0, F.col(v)).when(F.col(st) == 2, F.lit(float("nan"))) for v, st in vcols]
    bounds = [F.when(in_window, F.timestamp_micros(_OUT_WS)).alias("window_start"),
              F.when(in_window, F.timestamp_micros(_OUT_WE)).alias("window_end")]
    late_time = [F.when(is_late, F.timestamp_micros(_OUT_T)).alias(_TIME_OUT)] if late_rows else []
    if wide:
        out = out.select(*keys, qi, *bounds, *[F.when(in_window, x).alias(n) for x, n in zip(values, names)],
                         *late_time, *([F.when(is_late, values[0]).alias(value)] if late_rows else []))
        if late_rows == "kind":
            return out.select(*keys, F.when(is_late, F.lit("late")).otherwise(F.lit("window")).alias("kind"),
                              "window_start", "window_end", *names, F.col(_TIME_OUT).alias(time), value)
        window_cols = [*keys, "window_start", "window_end", *names]
        late_value = F.col(value)
    else:
        out = out.select(*keys, qi,
                         F.when(in_window, F.element_at(F.array(*[F.lit(n) for n in names]), qi + 1)).alias("query"),
                         *bounds, values[0].alias("value"), *late_time)
        if late_rows == "kind":
            return out.select(*keys, F.when(is_late, F.lit("late")).otherwise(F.lit("window")).alias("kind"),
                              "query", "window_start", "window_end", "value", F.col(_TIME_OUT).alias(time))
        window_cols = [*keys, "query", "window_start", "window_end", "value"]
        late_value = F.col("value")
    if not late_rows:
        return out.select(*window_cols)
    return (out.filter(in_window).select(*window_cols),
            out.filter(is_late).select(*keys, F.col(_TIME_OUT).alias(time), late_value.cast(value_type).alias(value)))


def split_late(batch: DataFrame) -> Tuple[DataFrame, DataFrame]:
    """A micro-batch of ``stream_aggregate(..., late_rows="kind")`` (e.g. in
    ``foreachBatch``) as ``(windows, late)``: windows (key..., query,
    window_start, window_end, value; with ``wide=True`` key...,
    window_start, window_end, a column per query) and late rows (key...,
    time, value), as ``late_rows=True`` gives them as streams."""
    F = _functions(batch)
    cols = batch.columns
    at = cols.index("kind") if "kind" in cols else -1
    if tuple(cols[-6:-1]) == _KIND_COLS:  # key..., kind, query, window_start, window_end, value, time
        windows, late = [*cols[:at], *_KIND_COLS[1:]], [*cols[:at], cols[-1], "value"]
    elif at >= 0 and cols[at + 1:at + 3] == ["window_start", "window_end"] and len(cols) > at + 5:
        windows, late = [*cols[:at], *cols[at + 1:-2]], [*cols[:at], *cols[-2:]]  # wide: ..., names, time, value
    else:
        raise ValueError(f"not the output of stream_aggregate(..., late_rows='kind'): columns {cols}")
    kind = F.col("kind")
    return batch.filter(kind == "window").select(*windows), batch.filter(kind == "late").select(*late)


def foreach_batch_split(windows: Callable[[DataFrame, int], None],
                        late: Callable[[DataFrame, int], None]) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function for ``stream_aggregate(...,
    late_rows="kind")``: each micro-batch, persisted once (so the two writes
    do not compute it twice), split by :func:`split_late` and handed to
    ``windows(df, batch_id)`` and ``late(df, batch_id)`` (e.g. a Parquet
    append each). As with any ``foreachBatch``, a batch retried after a
    failure is written again: make the writes idempotent by ``batch_id``
    where a sink needs exactly-once."""
    def each(batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        try:
            w, lr = split_late(batch)
            windows(w, batch_id)
            late(lr, batch_id)
        finally:
            batch.unpersist()
    return each
