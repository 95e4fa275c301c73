"""Structured Streaming: per-key slidewise state in Spark.

``stream_aggregate`` runs ``groupBy(key).transformWithStateInPandas`` with
one value state per key (bytes: a query restarted from its checkpoint
continues exactly where it stopped). It gives what Spark's own streaming
``withWatermark(ts, delay).groupBy(key, F.window(ts, range, slide))`` or
``groupBy(key, F.session_window(ts, gap))`` gives in append mode, over the
same micro-batches:

* Late rows. Spark judges a micro-batch's rows by the watermark of the
  previous batch: a (row, window) pair whose window ends at or before it is
  dropped (a session window: the row's own window ``[t, t + gap]``). Spark's
  transformWithState drops the input rows whose event-time column is at or
  before that watermark, so the processor's input carries, as its
  event-time column, the end of the last window a row could join: ``t -
  t mod slide + range`` (time windows), ``t + gap`` (sessions); the smallest
  over the queries, so a row late for one query is late for all (as in
  :class:`slidewise.Stream`). The watermark itself stays the one of ``ts``.
* Emission. A window is emitted, final, once the watermark (of the current
  batch) reaches its end; an event-time timer at the earliest end a key has
  open calls the key then even when it gets no rows.
* Time windows: each key's state holds the rows of its windows not yet
  final (a row stays until the watermark reaches the end of its last
  window); every call computes the windows the watermark closed afresh from
  the rows before it with a :class:`slidewise.Stream`.
* Sliding windows: a row whose earlier windows had ended at the previous
  batch's watermark while its last one had not joins only the later ones,
  as in Spark. Such a window holds only such rows (a row of an earlier
  batch would have had it emitted already), so it is dropped whole. The
  processor cannot read that watermark, so each row comes with one probe
  row per earlier window (a null time; the window's end as the event-time
  column, so Spark drops the probes of ended windows): a window holding
  only rows new in this batch, none of them in its first slide, is emitted
  only if a probe of its end came through. (numRowsDroppedByWatermark
  counts the dropped probes too.)
* Session windows: each key's state holds the rows of its open sessions;
  every call computes the sessions afresh from them with a
  :class:`slidewise.Stream` (an on-time row joins, and merges, the open
  sessions it touches), and an emitted session's rows leave the state, so a
  later row never joins an emitted session (as in Spark).
* The late rows' side output (``late_rows=True``): the rows the watermark refused (those
  Spark drops above), with their key, time and value, as a second streaming
  DataFrame. Spark's filter would drop them before the processor sees them,
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
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Literal, Optional, Sequence, Tuple, Union, overload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .._query import Query

import numpy as np
import pandas as pd
import pyarrow as pa

try:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
except ImportError:  # pragma: no cover - pyspark < 4
    StatefulProcessor = object  # type: ignore

from ._ship import _import_slidewise, ship
from ._specs import _listify

# Spark's metadata key for a column's watermark delay (EventTimeWatermark.delayKey)
_DELAY_KEY = "spark.watermarkDelayMs"
# The input's extra columns (no leading "__": transformWithStateInPandas
# renames such columns): the value's null flag (pandas has NaN for null and
# NaN) and the event-time column late rows are judged by.
_NULL_COL = "slidewise_null"
_LATE_COL = "slidewise_late_after"
# The output's column for a late row's time (late_rows=True; null in window rows).
_TIME_OUT = "slidewise_time"


def _us(col: pd.Series) -> np.ndarray:
    """event times -> int64 microseconds since the epoch"""
    t = pd.to_datetime(col, utc=True)
    us: np.ndarray = ((t - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(microseconds=1)).to_numpy(np.int64)
    return us


def _frame_rows(df: pd.DataFrame, time: str, value: str):
    """(times in us, values, null mask) of the rows of one pandas frame from
    Spark, and the window ends of its probe rows (a null time)."""
    probe = df[time].isna().to_numpy()
    if probe.any():
        ends = _us(df[_LATE_COL][probe])
        df = df[~probe]
    else:
        ends = np.empty(0, np.int64)
    t = _us(df[time])
    v = pd.to_numeric(df[value]).to_numpy(dtype=np.float64, na_value=np.nan)
    m = df[_NULL_COL].to_numpy(dtype=bool)
    return t, np.where(m, 0.0, v), m, ends


def _values(a: pa.Array) -> pd.Series:
    """A float64 output column keeping null and NaN apart: pandas' masked
    Float64 (pyspark converts it with its own mask, NaN stays NaN)."""
    a = a.cast(pa.float64())
    v = a.fill_null(0.0).to_numpy(zero_copy_only=False)
    return pd.Series(pd.arrays.FloatingArray(v, a.is_null().to_numpy(zero_copy_only=False)))


def _times(us, n: int) -> pd.Series:
    """int64 microseconds (None: n nulls) -> UTC timestamps"""
    if us is None:
        return pd.Series(pd.NaT, index=range(n), dtype="datetime64[us, UTC]")
    return pd.Series(pd.to_datetime(np.asarray(us, np.int64), unit="us", utc=True))


def _frame(keys, key, name, start, end, value: pa.Array, late_col: bool = False, time=None) -> pd.DataFrame:
    """Output rows of one query for one key (start, end: int64 us); with
    ``late_col`` the late rows' time column too (``time``: a late row's
    time; the rows are then late rows: no query, no window)."""
    n = len(value)
    # strings as object dtype: pandas 3's Arrow-backed str columns, once
    # concatenated, hold chunked arrays, which trip pyspark's converter
    f = pd.DataFrame({k: pd.Series([kv] * n, dtype=object if isinstance(kv, str) else None)
                      for k, kv in zip(keys, key)})
    f["query"] = pd.Series([name] * n, dtype=object)
    f["window_start"] = _times(start, n)
    f["window_end"] = _times(end, n)
    f["value"] = _values(value)
    if late_col:
        f[_TIME_OUT] = _times(time, n)
    return f


def _table(t: np.ndarray, v: np.ndarray, m: np.ndarray) -> pa.Table:
    return pa.table({"v": pa.array(v, mask=m), "ts": pa.array(t, pa.timestamp("us"))})


def _windows(res: pa.Table):
    """(start, end) as int64 us and the values of a result table."""
    start, end = (res.column(c).cast(pa.int64()).to_numpy() for c in ("window_start", "window_end"))
    return start, end, res.column("value").combine_chunks()


def _timer_ms(end_us: int) -> int:
    """The timer that fires once the watermark (ms) reaches ``end_us``."""
    return -(-int(end_us) // 1000)


class _Processor(StatefulProcessor):
    """Time-window queries (see the module docstring). State: the rows a
    window not yet final may hold (t, v, null; sorted by time) and the
    watermark of the key's last call (windows ending at or before it are
    final)."""

    def __init__(self, queries, value: str, time: str, keys: List[str], late: bool = False):
        # queries travel as bytes: unpickled after the shipped slidewise is importable
        self._qbytes, self.value, self.time, self.keys = pickle.dumps(queries), value, time, keys
        self.late = late  # judge lateness here (late_rows=True) and emit the late rows

    def init(self, handle) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        _import_slidewise()
        self.queries = pickle.loads(self._qbytes)
        self.handle = handle
        self.state = handle.getValueState("slidewise", StructType([StructField("b", BinaryType())]))

    def _empty(self):
        return {"t": np.empty(0, np.int64), "v": np.empty(0, np.float64), "m": np.empty(0, bool), "final": None}

    def _load(self):
        if not self.state.exists():
            return self._empty()
        st = pickle.loads(self.state.get()[0])
        if "emitted" in st:
            # before late rows followed Spark's window-end rule, the stream took rows behind the watermark
            raise ValueError("this query's state was written by an older slidewise.spark.stream_aggregate; "
                             "start it from a new checkpoint location")
        return st

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        st = self._load()
        new = [_frame_rows(df, self.time, self.value) for df in rows]
        t, v, m, ends = (np.concatenate([x[i] for x in new]) for i in range(4)) if new else (
            np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, bool), np.empty(0, np.int64))
        if self.late and len(t):
            # on time: a probe of the row's last window end came through
            late = ~np.isin(self._late_after(t), ends)
            if late.any():
                yield _frame(self.keys, key, None, None, None, pa.array(v[late], mask=m[late]), True, t[late])
                t, v, m = t[~late], v[~late], m[~late]
        yield from self._advance(key, st, timerValues.getCurrentWatermarkInMs(), t, v, m, ends)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        if not self.state.exists():
            return iter([])
        e = (np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, bool), np.empty(0, np.int64))
        return self._advance(key, self._load(), timerValues.getCurrentWatermarkInMs(), *e)

    def close(self) -> None:
        pass

    # -- time windows ---------------------------------------------------------

    def _spans(self):
        return [(q.range // 1000, q.slide // 1000) for q in self.queries]

    def _last_ends(self, t: np.ndarray) -> np.ndarray:
        """Per query (rows), the end of the last window holding each time."""
        return np.array([t - np.mod(t, s) + r for r, s in self._spans()]).reshape(len(self.queries), len(t))

    def _late_after(self, t: np.ndarray) -> np.ndarray:
        """The event time each row is judged late by (stream_aggregate's
        late_after): the end of its last window, the smallest over queries."""
        ends: np.ndarray = self._last_ends(t).min(axis=0)
        return ends

    def _advance(self, key, st, wm_ms: int, nt, nv, nm, probes) -> Iterator[pd.DataFrame]:
        import slidewise as sw

        wm = int(wm_ms) * 1000
        final = st["final"]
        old_t = st["t"]  # sorted
        probes = np.unique(probes)  # window ends after the previous batch's watermark
        t, v, m = np.concatenate([old_t, nt]), np.concatenate([st["v"], nv]), np.concatenate([st["m"], nm])
        order = np.argsort(t, kind="stable")  # time order, ties in arrival order
        t, v, m = t[order], v[order], m[order]
        nt = np.sort(nt)
        # the windows the watermark may have closed hold rows before it only
        n = int(np.searchsorted(t, wm, "left"))
        frames, next_end = [], None
        if n:
            stream = sw.Stream(self.queries, value="v", time="ts")
            results = [stream.push(_table(t[:n], v[:n], m[:n])), stream.flush()]
            for q, (_, slide) in zip(self.queries, self._spans()):
                for res in results:
                    start, end, vals = _windows(res[q.name])
                    later = end > wm
                    if later.any():
                        e = int(end[later].min())
                        next_end = e if next_end is None else min(next_end, e)
                    sel = ~later & ((end > final) if final is not None else True)
                    if not sel.any():
                        continue
                    # Spark drops a window all of whose rows came in this
                    # batch late for it: it is not their last window (none in
                    # its first slide) and no probe of its end came through
                    s, e = start[sel], end[sel]
                    has_old = np.searchsorted(old_t, e, "left") > np.searchsorted(old_t, s, "left")
                    has_last = np.searchsorted(nt, s + slide, "left") > np.searchsorted(nt, s, "left")
                    ok = has_old | has_last | np.isin(e, probes)
                    if ok.any():
                        idx = np.flatnonzero(sel)[ok]
                        frames.append(_frame(self.keys, key, q.name, start[idx], end[idx], vals.take(pa.array(idx)),
                                             self.late))
        if n < len(t):
            # the first windows of the rows at or after the watermark
            e = min(((t[n] - r) // s + 1) * s + r for r, s in self._spans())
            next_end = e if next_end is None else min(next_end, e)
        final = wm if final is None else max(final, wm)
        # a row stays while a window holding it may be open
        keep = self._last_ends(t).max(axis=0) > final
        # (no row kept: every window is final; a later row's windows end later)
        yield from self._finish(keep, {"t": t, "v": v, "m": m}, {"final": final}, next_end, frames)

    def _finish(self, keep, rows: Dict[str, Any], extra: Dict[str, Any], next_end, frames):
        """Keep the rows ``keep`` selects (with ``extra``) as the key's state,
        or clear it; fire again once the watermark reaches ``next_end``;
        yield the windows computed."""
        if keep.any():
            self.state.update((pickle.dumps({**{k: a[keep] for k, a in rows.items()}, **extra}),))
        else:
            self.state.clear()
        if next_end is not None:
            self.handle.registerTimer(_timer_ms(next_end))
        if frames:
            yield pd.concat(frames, ignore_index=True)


class _SessionProcessor(_Processor):
    """Session queries: per key, the rows (time, value, null, and per query
    whether one of its open sessions holds the row) of the sessions not yet
    emitted; Spark has dropped the late rows before they get here (with
    ``late``: _Processor.handleInputRows has split them off)."""

    def _empty(self):
        return {"t": np.empty(0, np.int64), "v": np.empty(0, np.float64), "m": np.empty(0, bool),
                "need": np.empty((0, len(self.queries)), bool)}

    def _late_after(self, t: np.ndarray) -> np.ndarray:
        """The end of each row's own session window, the smallest gap."""
        ends: np.ndarray = t + min(q.session for q in self.queries if q.session is not None) // 1000
        return ends

    def _advance(self, key, st, wm_ms: int, nt, nv, nm, probes) -> Iterator[pd.DataFrame]:
        import slidewise as sw

        wm = int(wm_ms) * 1000
        need = np.concatenate([st["need"], np.ones((len(nt), len(self.queries)), bool)])
        t, v, m = np.concatenate([st["t"], nt]), np.concatenate([st["v"], nv]), np.concatenate([st["m"], nm])
        # time order, ties in arrival order
        order = np.argsort(t, kind="stable")
        t, v, m, need = t[order], v[order], m[order], need[order]
        frames, next_end = [], None
        for qi, q in enumerate(self.queries):
            idx = np.flatnonzero(need[:, qi])
            if not len(idx):
                continue
            tq = t[idx]
            stream = sw.Stream(q, value="v", time="ts")
            res = pa.concat_tables([stream.push(_table(tq, v[idx], m[idx]))[q.name], stream.flush()[q.name]])
            start, end, vals = _windows(res)
            done = end <= wm
            if done.any():
                frames.append(_frame(self.keys, key, q.name, start[done], end[done], vals.filter(pa.array(done)),
                                     self.late))
                # an emitted session's rows: [start, end - gap]; a later row starts a new session
                gap = q.session // 1000
                lo = np.searchsorted(tq, start[done], "left")
                hi = np.searchsorted(tq, end[done] - gap, "right")
                for a, b in zip(lo, hi):
                    need[idx[a:b], qi] = False
            if (~done).any():
                e = int(end[~done].min())
                next_end = e if next_end is None else min(next_end, e)
        # next_end: the earliest open session's end
        yield from self._finish(need.any(axis=1), {"t": t, "v": v, "m": m, "need": need}, {}, next_end, frames)


@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Union[str, Sequence[str]], watermark: Optional[str] = None,
                     late_rows: Literal[False] = False) -> DataFrame: ...
@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Union[str, Sequence[str]], watermark: Optional[str] = None, *,
                     late_rows: Literal[True]) -> Tuple[DataFrame, DataFrame]: ...
@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Union[str, Sequence[str]], watermark: Optional[str] = None,
                     late_rows: bool = False) -> Union[DataFrame, Tuple[DataFrame, DataFrame]]: ...
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str, key: Union[str, Sequence[str]],
                     watermark: Optional[str] = None,
                     late_rows: bool = False) -> Union[DataFrame, Tuple[DataFrame, DataFrame]]:
    """Time-window or session-window queries over a streaming DataFrame,
    per key, with state kept across micro-batches: rows (key..., query,
    window_start, window_end, value) appended as the watermark passes each
    window, as Spark's own streaming ``groupBy(key, F.window(...))`` /
    ``groupBy(key, F.session_window(...))`` in append mode. Use it with
    ``outputMode("append")`` and a checkpoint location. The watermark must
    be on ``time``: ``watermark`` (e.g. ``"10 seconds"``) calls
    ``withWatermark(time, watermark)``, or call it on ``df`` first. Rows
    with a null time belong to no window.

    ``late_rows=True`` returns ``(windows, late)``: ``windows`` as above and
    ``late`` the rows the watermark refused (those Spark's own aggregation
    drops, counting them in numRowsDroppedByWatermark), with columns (key...,
    ``time``, ``value``), appended in the micro-batch that refused them. Both
    are streaming DataFrames from one ``transformWithStateInPandas``; a
    query started on either runs the whole aggregation (with its own
    checkpoint and state) and judges lateness by its own micro-batches, so
    two queries split the rows alike when their micro-batches are alike
    (e.g. a file source with ``maxFilesPerTrigger``). The late ``value`` has
    the input's type; integers pass through pandas' float64 on the way
    (exact up to 2**53).
    """
    import slidewise as sw
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    queries = [queries] if isinstance(queries, sw.Query) else list(queries)
    if not queries or not all(isinstance(q, sw.Query) for q in queries):
        raise TypeError("stream_aggregate needs slidewise.Query objects")
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise ValueError(f"query names must be unique, got {names}")
    for q in queries:
        if not q.time:
            raise ValueError(f"{q.name}: stream_aggregate runs time windows (range/slide as time spans) "
                             "or session windows (session=...)")
        if q.range % 1000 or q.slide % 1000 or (q.session or 0) % 1000:
            raise ValueError(f"{q.name}: range, slide and session gap must be whole microseconds")
    kinds = {q.kind for q in queries}
    if len(kinds) > 1:
        raise ValueError("mix of session-window and time-window queries; call stream_aggregate once per kind")
    sessions = kinds == {"session"}
    keys = _listify(key)
    for c in keys + [value, time]:
        if c not in df.columns:
            raise ValueError(f"column {c!r} is not in the DataFrame (columns: {df.columns})")
    for c in (_NULL_COL, _LATE_COL) + ((_TIME_OUT,) if late_rows else ()):
        if c in df.columns:
            raise ValueError(f"column name {c!r} is taken (stream_aggregate's own column)")
    if watermark is not None:
        df = df.withWatermark(time, watermark)
    delay = df.schema[time].metadata.get(_DELAY_KEY)
    if delay is None:
        raise ValueError(f"stream_aggregate needs the stream's watermark on {time!r}: pass watermark=... "
                         f"or call df.withWatermark({time!r}, ...) first")
    value_type = df.schema[value].dataType
    ship(df.sparkSession)  # also pickles this module's processors by value
    schema = T.StructType([T.StructField(k, df.schema[k].dataType) for k in keys] +
                          [T.StructField("query", T.StringType()),
                           T.StructField("window_start", T.TimestampType()),
                           T.StructField("window_end", T.TimestampType()),
                           T.StructField("value", T.DoubleType())] +
                          ([T.StructField(_TIME_OUT, T.TimestampType())] if late_rows else []))
    # the end of the last window a row could join: Spark's transformWithState
    # drops the rows where it is at or before the previous batch's watermark
    df = df.filter(F.col(time).isNotNull())
    t = F.col(time)
    pos, end = "slidewise_pos", "slidewise_end"
    if sessions:
        gap = min(q.session for q in queries if q.session is not None) // 1000
        late_after = t + F.expr(f"INTERVAL {gap} MICROSECONDS")
        if late_rows:
            # the row without an event time (never dropped), then its probe
            none = F.when(F.lit(False), late_after)
            df = df.select(*keys, time, value, F.posexplode(F.array(none, late_after)).alias(pos, end))
            t = F.when(F.col(pos) == 0, F.col(time))
            late_after = F.col(end)
        proc = _SessionProcessor(queries, value, time, keys, late_rows)
    else:
        us = F.unix_micros(t)
        lasts = [us - F.pmod(us, F.lit(q.slide // 1000)) + F.lit(q.range // 1000) for q in queries]
        last = lasts[0] if len(lasts) == 1 else F.least(*lasts)
        # sliding windows: a probe row per earlier window of the row (its end)
        probes = [last_q - F.lit(j * (q.slide // 1000)) for q, last_q in zip(queries, lasts)
                  for j in range(1, -(-q.range // q.slide))]
        if probes or late_rows:
            # late_rows: the row without an event time (never dropped), then
            # the probe of its last window's end
            first = [F.lit(None).cast("long"), last] if late_rows else [last]
            df = df.select(*keys, time, value, F.posexplode(F.array(*first, *probes)).alias(pos, end))
            t = F.when(F.col(pos) == 0, F.col(time))
            last = F.col(end)
        late_after = F.timestamp_micros(last)
        proc = _Processor(queries, value, time, keys, late_rows)
    cols = [*keys,
            # explicit metadata without the delay key: late rows are judged by late_after, not time
            t.alias(time, metadata={"slidewise.eventTime": True}),
            value, F.col(value).isNull().alias(_NULL_COL),
            late_after.alias(_LATE_COL, metadata={_DELAY_KEY: delay})]
    out = df.select(*cols).groupBy(*keys).transformWithStateInPandas(proc, schema, "Append", "EventTime")
    if not late_rows:
        return out
    windows = out.filter(F.col("query").isNotNull()).select(*keys, "query", "window_start", "window_end", "value")
    late = out.filter(F.col("query").isNull()).select(*keys, F.col(_TIME_OUT).alias(time),
                                                      F.col("value").cast(value_type).alias(value))
    return windows, late
