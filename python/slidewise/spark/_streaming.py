"""Structured Streaming: slidewise state in Spark.

``stream_aggregate`` runs ``transformWithStateInPandas`` with its state
in bytes (a query restarted from its checkpoint continues exactly where it
stopped), grouped by a bucket of keys for the pane aggregations and by key
for the rest. Buckets, not keys: every call of a stateful Python processor
costs pyspark ~0.7 ms of round trips to the JVM (its key, the state's read
and write, the timer's move) and the pandas API builds a DataFrame per
call; per key, the issue's job took 14.7x Spark's time at 100,000 keys.
transformWithStateInPandas rather than the Row-based transformWithState:
with a call per key the Row API's empty processor was the faster (0.58x
against 1.9x Spark's time at 100,000 keys), but it hands over each cell as
a Python object and takes its output as dicts, where a bucket's call
handles thousands of rows and windows as arrays. It gives what Spark's own
streaming ``withWatermark(ts, delay).groupBy(key, F.window(ts, range,
slide))`` or ``groupBy(key, F.session_window(ts, gap))`` gives in append
mode, over the same micro-batches:

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
* Time windows of sum, count, mean, max, min, var and std (sample and
  population; :class:`_PaneProcessor`):
  the keys are hashed into one bucket per partition of the state
  (``spark.sql.shuffle.partitions``, which Spark pins for a checkpoint),
  and each bucket's state maps a pane (the gcd of the ranges and slides)
  to the partials of its keys, while a window not yet emitted holds it;
  each value sealed with a CRC-32 and the writer's version. A call folds
  its rows into partials per (key, pane), reads the panes it needs (each
  once), emits the windows the watermark closed for all its keys at once
  and writes the panes its rows changed: work that grows with the call's
  rows and windows, state calls with its panes. A (row, window) pair is
  kept exactly when the window ends at or after the smallest event time
  that came through (the rows' and their probes', below): every end of a
  new row's windows was sent, so those Spark dropped are the smaller ones.
  The output is all numeric (query index, bounds in us, value and its
  null/NaN state); the JVM names, types and masks it after the operator.
* Other time-window aggregations (:class:`_Processor`): each key's state
  holds the rows of its windows not yet final (a row stays until the
  watermark reaches the end of its last window); every call computes the
  windows the watermark closed afresh from the rows before it with a
  :class:`slidewise.Stream`.
* Sliding windows: a row whose earlier windows had ended at the previous
  batch's watermark while its last one had not joins only the later ones,
  as in Spark. Such a window holds only such rows (a row of an earlier
  batch would have had it emitted already), so it is dropped whole. The
  processor cannot read that watermark, so probe rows come with the rows
  (:func:`_probes_fn`, a ``mapInArrow`` before the shuffle): one per group
  (key or bucket) and end of the rows' earlier windows in each input batch (a null time;
  the window's end as the event-time column, so Spark drops the probes of
  ended windows): a window holding
  only rows new in this batch, none of them in its first slide, is emitted
  only if a probe of its end came through. (numRowsDroppedByWatermark
  counts the dropped probes too.)
* Session windows: each key's state holds the rows of its open sessions;
  every call computes the sessions afresh from them with a
  :class:`slidewise.Stream` (an on-time row joins, and merges, the open
  sessions it touches), and an emitted session's rows leave the state, so a
  later row never joins an emitted session (as in Spark).
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
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Literal, Optional, Sequence, Tuple, Union, overload

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
from ._specs import _functions, _listify

# Spark's metadata key for a column's watermark delay (EventTimeWatermark.delayKey)
_DELAY_KEY = "spark.watermarkDelayMs"
# The input's extra columns (no leading "__": transformWithStateInPandas
# renames such columns): the value's null flag (pandas has NaN for null and
# NaN) and the event-time column late rows are judged by.
_NULL_COL = "slidewise_null"
_LATE_COL = "slidewise_late_after"
# The output's column for a late row's time (late_rows=True; null in window rows).
_TIME_OUT = "slidewise_time"


_NAT = np.iinfo(np.int64).min  # NaT as int64


def _us(col: pd.Series) -> np.ndarray:
    """event times -> int64 microseconds since the epoch (NaT: _NAT)"""
    if not (isinstance(col.dtype, pd.DatetimeTZDtype) or np.issubdtype(col.dtype, np.datetime64)):
        col = pd.to_datetime(col, utc=True)  # e.g. an all-null chunk as objects
    us: np.ndarray = col.array.as_unit("us").asi8
    return us


def _columns(df: pd.DataFrame, names: Tuple[str, ...]) -> List[Any]:
    """The arrays of ``names`` in ``df``. pandas 3 looks a column up by name
    in ~50 us (its Arrow-backed column index), more than a key's whole work,
    so the block manager is read by position when pandas has one."""
    mgr = getattr(df, "_mgr", None)
    if mgr is not None and hasattr(mgr, "iget_values"):
        cols = list(df.columns)
        return [mgr.iget_values(cols.index(n)) for n in names]
    return [df[n].array for n in names]


def _frame_rows(df: pd.DataFrame, time: str, value: str):
    """(times in us, values, null mask) of the rows of one pandas frame from
    Spark, the window ends of its probe rows (a null time), and the event
    times of its other rows that have one (numpy throughout: pandas'
    indexing costs more than the work)."""
    tc, vc, mc, lc = _columns(df, (time, value, _NULL_COL, _LATE_COL))
    tcol = np.asarray(tc, dtype=np.float64)  # int64 us; null (NaN) for probes
    lcol = _us(pd.Series(lc)) if not hasattr(lc, "as_unit") else lc.as_unit("us").asi8  # NaT: _NAT
    v = np.asarray(vc, dtype=np.float64)
    m = np.asarray(mc, dtype=bool)
    probe = np.isnan(tcol)
    if probe.any():
        keep = ~probe
        ends, lcol, tcol, v, m = lcol[probe], lcol[keep], tcol[keep], v[keep], m[keep]
    else:
        ends = np.empty(0, np.int64)
    return tcol.astype(np.int64), np.where(m, 0.0, v), m, ends, lcol[lcol != _NAT]


# The processor's output columns besides the keys: all numeric, because
# pyspark's pandas-to-Arrow conversion of strings, zoned timestamps and
# masked floats costs a few ms per key and call; the JVM turns them into
# (query, window_start, window_end, value, time) after the operator.
_OUT_Q, _OUT_WS, _OUT_WE, _OUT_V, _OUT_NULL, _OUT_T = (f"slidewise_{c}" for c in ("q", "ws", "we", "value", "vstate",
                                                                                  "t"))


def _frame(keys, key, qi: Any, start, end, value: pa.Array, late_col: bool = False, time=None) -> pd.DataFrame:
    """Output rows (:func:`_out_frame`) of query ``qi`` for one key."""
    n = len(value)
    value = value.cast(pa.float64())
    val, null = value.fill_null(0.0).to_numpy(zero_copy_only=False), value.is_null().to_numpy(zero_copy_only=False)
    kcols = {k: pd.Series([kv] * n, dtype=object if isinstance(kv, str) else None) for k, kv in zip(keys, key)}
    return _out_frame(keys, kcols, qi, start, end, val, null, late_col, time)


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
        self._span_list = [(q.range // 1000, q.slide // 1000) if q.kind != "session" else (0, 0) for q in queries]
        self._aggs = [q.agg for q in queries]
        self._ver = _version()  # the writer's version in the state (the executors' may import no slidewise)

    def init(self, handle) -> None:
        self._register(handle)
        _import_slidewise()
        self.queries = pickle.loads(self._qbytes)
        self._qi = {q.name: i for i, q in enumerate(self.queries)}

    def _register(self, handle) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        global _VERSION
        _VERSION = self._ver
        self.handle = handle
        self.state = handle.getValueState("slidewise", StructType([StructField("b", BinaryType())]))

    def _empty(self):
        return {"t": np.empty(0, np.int64), "v": np.empty(0, np.float64), "m": np.empty(0, bool), "final": None}

    def _load(self):
        got = self.state.get()  # one read: None when the key has no state
        return self._empty() if got is None else self._load_pickle(got[0])

    def _load_pickle(self, b: bytes):
        # sealed since slidewise 0.2; an older state (a bare pickle) loads unchecked
        st = pickle.loads(_unseal(_ROWS_MAGIC, b)[1] if b[:3] == _ROWS_MAGIC else b)
        if "emitted" in st:
            # before late rows followed Spark's window-end rule, the stream took rows behind the watermark
            raise ValueError("this query's state was written by an older slidewise.spark.stream_aggregate; "
                             "start it from a new checkpoint location")
        return st

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        st = self._load()
        new = [_frame_rows(df, self.time, self.value)[:4] for df in rows]
        t, v, m, ends = (np.concatenate([x[i] for x in new]) for i in range(4)) if new else (
            np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, bool), np.empty(0, np.int64))
        if self.late and len(t):
            # on time: a probe of the row's last window end came through
            late = ~np.isin(self._late_after(t), ends)
            if late.any():
                yield _frame(self.keys, key, -1, None, None, pa.array(v[late], mask=m[late]), True, t[late])
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

    def _spans(self) -> List[Tuple[int, int]]:
        """(range, slide) in us per query."""
        return self._span_list

    def _last_ends(self, t: np.ndarray) -> np.ndarray:
        """Per query (rows), the end of the last window holding each time."""
        return np.array([t - np.mod(t, s) + r for r, s in self._spans()]).reshape(len(self._span_list), len(t))

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
                        frames.append(_frame(self.keys, key, self._qi[q.name], start[idx], end[idx], vals.take(pa.array(idx)),
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
            self.state.update((_seal(_ROWS_MAGIC, pickle.dumps({**{k: a[keep] for k, a in rows.items()}, **extra})),))
        else:
            self.state.clear()
        if next_end is not None:
            self.handle.registerTimer(_timer_ms(next_end))
        if frames:
            yield pd.concat(frames, ignore_index=True)


# -- incremental state: pane partials -------------------------------------

# Aggregations whose partial per pane is a few numbers (the others keep rows).
_PANE_AGGS = frozenset({"sum", "count", "mean", "max", "min", "var", "std", "var_pop", "std_pop"})
_STATE_MAGIC = b"SWB"  # a bucket's own value (_encode_meta)
_PANE_MAGIC = b"SWP"  # one pane's partials (_encode_pane)
_ROWS_MAGIC = b"SWR"  # a pickle of rows (other aggregations, sessions)
_STATE_FORMAT = 1


_VERSION: Optional[str] = None  # set by a processor: its driver's version


def _version() -> str:
    if _VERSION is not None:
        return _VERSION
    import slidewise

    return str(slidewise.__version__)


def _seal(magic: bytes, payload: bytes) -> bytes:
    """A key's state as stored: ``magic``, the format, a CRC-32 of the rest,
    then the writer's slidewise version and ``payload``."""
    import struct
    import zlib

    ver = _version().encode()
    body = struct.pack("<B", len(ver)) + ver + payload
    return magic + struct.pack("<BI", _STATE_FORMAT, zlib.crc32(body)) + body


def _unseal(magic: bytes, b: bytes) -> Tuple[str, bytes]:
    """(writer's version, payload) of a _seal'ed state; a checksum or format
    mismatch is a ValueError, never a state read."""
    import struct
    import zlib

    what = f"cannot restore slidewise.spark.stream_aggregate state (this is slidewise {_version()})"
    if len(b) < 9 or b[:3] != magic:
        raise ValueError(f"{what}: not a state of this query's kind")
    fmt, crc = struct.unpack_from("<BI", b, 3)
    body = b[8:]
    if zlib.crc32(body) != crc:
        raise ValueError(f"{what}: checksum mismatch (the checkpoint's state is corrupt)")
    ver = body[1:1 + body[0]].decode(errors="replace")
    if fmt != _STATE_FORMAT:
        raise ValueError(f"{what}: format {fmt}, written by slidewise {ver}, reads format {_STATE_FORMAT}")
    return ver, body[1 + body[0]:]


# A pane's partials, one row per key: rows (a window exists once a row
# joins it, null or not), non-null values, their sum (NaN and inf propagate,
# as Spark's sum), the sum of squared deviations from their mean (var /
# std; NaN once the sum is not finite, as Spark's), the largest and
# smallest non-NaN value (NaN: none) and the NaN count (Spark's max is NaN
# once a NaN joins; its min only when every value is NaN).
_FIELDS = ("n", "cnt", "s", "m2", "mx", "mn", "nan")
_NO_TIME = -(1 << 62)  # no watermark seen / no timer registered


def _combine(t: pa.Table, by: List[str]) -> pa.Table:
    """The partials of ``t`` with equal ``by`` combined: (by..., fields).
    Counts and sums add in row order; m2 as Chan et al.'s parallel
    variance: the parts' m2 plus their counts times their means' squared
    distance to the whole's mean."""
    from ._kernels import _canon_key, _key_ids

    if not t.num_rows:
        return t.select(by + list(_FIELDS))
    ids = _key_ids([_canon_key(t.column(c)) for c in by])
    groups, first = np.unique(ids, return_index=True)
    k = len(groups)  # ids are dense: 0 .. k - 1
    f = {c: t.column(c).to_numpy() for c in _FIELDS}
    out = {c: np.bincount(ids, f[c], k).astype(np.int64) for c in ("n", "cnt", "nan")}
    s_ = np.bincount(ids, f["s"], k)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s_ / out["cnt"]
        dev = np.where(f["cnt"] > 0, f["s"] / np.maximum(f["cnt"], 1) - mean[ids], 0.0)
        m2 = np.bincount(ids, f["m2"] + f["cnt"] * dev * dev, k)
    mx, mn = np.full(k, np.nan), np.full(k, np.nan)
    np.fmax.at(mx, ids, f["mx"])
    np.fmin.at(mn, ids, f["mn"])
    res = t.select(by).take(pa.array(first))
    for c, a in (("n", out["n"]), ("cnt", out["cnt"]), ("s", s_), ("m2", m2), ("mx", mx), ("mn", mn),
                 ("nan", out["nan"])):
        res = res.append_column(c, pa.array(a))
    return res


def _row_partials(keys: pa.Table, t: np.ndarray, v: np.ndarray, m: np.ndarray, g: int) -> pa.Table:
    """(keys..., p, fields): the partials per key and pane (``t // g``) of
    rows (``v``: 0 where null, ``m``: null)."""
    ok = ~m
    isnan = np.isnan(v) & ok
    real = np.where(ok & ~isnan, v, np.nan)
    cols = {"p": t // g, "n": np.ones(len(t), np.int64), "cnt": ok.astype(np.int64), "s": np.where(ok, v, 0.0),
            "m2": np.zeros(len(t)), "mx": real, "mn": real, "nan": isnan.astype(np.int64)}
    rows = keys
    for c, a in cols.items():
        rows = rows.append_column(c, pa.array(a))
    return _combine(rows, keys.column_names + ["p"])


def _encode_pane(t: pa.Table) -> bytes:
    """One pane's partials (keys..., fields) as stored: Arrow IPC, sealed."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return _seal(_PANE_MAGIC, sink.getvalue().to_pybytes())


def _decode_pane(b: bytes) -> pa.Table:
    """The inverse of _encode_pane (the checksum first: nothing corrupt is read)."""
    ver, body = _unseal(_PANE_MAGIC, b)
    try:
        return pa.ipc.open_stream(body).read_all()
    except pa.ArrowInvalid as e:  # a checksum collision, or a writer's bug
        raise ValueError(f"cannot restore slidewise.spark.stream_aggregate state written by slidewise {ver}: {e}")


def _encode_meta(final: int, timer: int, buckets: int, live: np.ndarray) -> bytes:
    """A bucket's own state: the watermark of its last call (us; the
    windows ending at or before it are emitted), its timer (ms), the bucket
    count it was hashed with and the live panes' indices, sealed."""
    import struct

    return _seal(_STATE_MAGIC, struct.pack("<qqq", final, timer, buckets) + live.astype("<i8").tobytes())


def _decode_meta(b: bytes) -> Tuple[int, int, int, np.ndarray]:
    """The inverse of _encode_meta."""
    import struct

    ver, body = _unseal(_STATE_MAGIC, b)
    if len(body) < 24 or len(body) % 8:
        raise ValueError(f"cannot restore slidewise.spark.stream_aggregate state written by slidewise {ver}: "
                         f"{len(body)} bytes")
    final, timer, buckets = struct.unpack_from("<qqq", body)
    return final, timer, buckets, np.frombuffer(body, "<i8", offset=24).astype(np.int64)


def _window_values(agg: str, part: Dict[str, np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """(values, null mask) of windows from their merged partials, as Spark
    gives them: null without a non-null value (count: 0)."""
    cnt = part["cnt"]
    null = cnt == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        if agg == "sum":
            val = part["s"]
        elif agg == "count":
            val, null = cnt.astype(np.float64), np.zeros(len(cnt), bool)
        elif agg == "mean":
            val = part["s"] / np.where(null, 1, cnt)
        elif agg == "max":
            val = np.where(part["nan"] > 0, np.nan, part["mx"])
        elif agg == "min":  # NaN only when every value is NaN
            val = np.where(part["nan"] == cnt, np.nan, part["mn"])
        else:  # var / std: sample (null below two values) or population
            sample = agg in ("var", "std")
            null = cnt < (2 if sample else 1)
            val = np.maximum(part["m2"], 0.0) / np.maximum(cnt - sample, 1)
            val = np.where(np.isnan(part["m2"]), np.nan, val)
            if agg.startswith("std"):
                val = np.sqrt(val)
    return np.where(null, 0.0, val), null


def _ramp(cnt: np.ndarray) -> np.ndarray:
    """0, 1, ..., c-1 for each c of ``cnt``, concatenated."""
    out: np.ndarray = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return out


def _pane_ends(p: np.ndarray, g: int, r: int, s: int, after: int, upto: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per pane index ``p`` (width ``g``), the first end (in slides ``s``)
    after ``after`` of a window of range ``r`` holding it, and how many such
    ends are at most ``upto``: a window [e - r, e) holds [p g, p g + g)."""
    lo = np.maximum((p * g + g + s - 1) // s, after // s + 1)
    return lo, np.maximum(np.minimum((p * g + r) // s, upto // s) - lo + 1, 0)


def _out_frame(keys: List[str], kcols: Dict[str, Any], qi, start, end, val: np.ndarray, null: np.ndarray,
               late_col: bool, time=None) -> pd.DataFrame:
    """Output rows of query ``qi`` (its index, or one per row), the keys
    per row (``kcols``: arrays), start and end in int64 us; with
    ``late_col`` the late rows' time column too (``time``: a late row's
    time; the rows are then late rows: ``qi`` -1, no window). pyspark turns
    a pandas NaN into null, so the value's state says which it is (0 a
    number, 1 null, 2 NaN)."""
    n = len(val)
    nan = np.isnan(val) & ~null
    zeros = np.zeros(n, np.int64)
    # strings as object dtype: pandas 3's Arrow-backed str columns, once
    # concatenated, hold chunked arrays, which trip pyspark's converter
    kser = {k: pd.Series(a, dtype=object) if getattr(a, "dtype", None) == object or not hasattr(a, "dtype") else a
            for k, a in kcols.items()}
    f = pd.DataFrame({**{k: kser[k] for k in keys},
                      _OUT_Q: np.broadcast_to(np.asarray(qi, np.int64), (n,)).copy(),
                      _OUT_WS: zeros if start is None else np.asarray(start, np.int64),
                      _OUT_WE: zeros if end is None else np.asarray(end, np.int64),
                      _OUT_V: np.where(nan | null, 0.0, val),
                      _OUT_NULL: np.where(null, 1, np.where(nan, 2, 0)).astype(np.int32)})
    if late_col:
        f[_OUT_T] = zeros if time is None else np.asarray(time, np.int64)
    return f


def _arrow_col(a: Any) -> Any:
    """A key column of an Arrow table for a pandas frame: strings as an
    object array (see _out_frame)."""
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    if pa.types.is_string(a.type) or pa.types.is_large_string(a.type):
        return a.to_numpy(zero_copy_only=False)
    return a.to_pandas()


class _PaneProcessor(_Processor):
    """Time-window queries of _PANE_AGGS with incremental state, per bucket
    of keys (the grouping key is the bucket, see stream_aggregate): a map
    from pane index (event time // g, g the gcd of the ranges and slides)
    to the pane's partials for every key of the bucket with rows in it,
    kept while a window holding the pane is not yet emitted; and the
    bucket's own value (_encode_meta). A call folds its rows into partials
    per (key, pane), reads the panes the windows the watermark closed hold
    and the panes its rows land in (each once), emits those windows for
    every key at once (vectorised: no loop per key or window), writes the
    panes its rows changed and removes the panes no open window holds: its
    work grows with its rows and windows, not with the state, and the state
    calls with the panes touched, not with the keys (a call per key costs
    pyspark ~0.7 ms in state and timer round trips: 164 s for the issue's
    job at 100,000 keys, 14.7x Spark's time)."""

    def __init__(self, queries, value: str, time: str, keys: List[str], late: bool = False, buckets: int = 1):
        super().__init__(queries, value, time, keys, late)
        self.buckets = buckets

    def init(self, handle) -> None:
        import math

        from pyspark.sql.types import BinaryType, LongType, StructField, StructType

        # no slidewise import (numpy and pyarrow do the work): Spark runs
        # init on the driver too, to learn the state's schemas, once per query start
        self._register(handle)
        self.panes = handle.getMapState("panes", StructType([StructField("p", LongType())]),
                                        StructType([StructField("b", BinaryType())]))
        self.g = 0
        self._groups: Dict[Tuple[int, int], List[Tuple[int, str]]] = {}
        for qi, (agg, span) in enumerate(zip(self._aggs, self._spans())):
            self.g = math.gcd(self.g, *span)
            self._groups.setdefault(span, []).append((qi, agg))

    def _meta(self) -> Tuple[int, int, np.ndarray]:
        got = self.state.get()  # one read: None when the bucket has no state
        if got is None:
            return _NO_TIME, _NO_TIME, np.empty(0, np.int64)
        final, timer, buckets, live = _decode_meta(got[0])
        if buckets != self.buckets:
            raise ValueError(f"this stream_aggregate checkpoint hashed its keys into {buckets} buckets "
                             f"(spark.sql.shuffle.partitions when it started), this query into {self.buckets}: "
                             f"set spark.sql.shuffle.partitions to {buckets} to restart from it")
        return final, timer, live

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        final, timer, live = self._meta()
        tc, vc, mc, lc = _columns(df, (self.time, self.value, _NULL_COL, _LATE_COL))
        tcol = np.asarray(tc, dtype=np.float64)  # int64 us; null (NaN) for probes
        own = _us(pd.Series(lc)) if not hasattr(lc, "as_unit") else lc.as_unit("us").asi8  # NaT: _NAT
        keep = ~np.isnan(tcol)
        # (row, window) pairs Spark keeps: the window ends after the previous
        # batch's watermark, exactly the ends at or above the smallest end
        # that came through (probes' and rows'; every end of a row's
        # windows was sent, as the row's event time or a probe's)
        ends = own[own != _NAT]
        ok_from = int(ends.min()) if len(ends) else -_NO_TIME
        t = tcol[keep].astype(np.int64)
        m = np.asarray(mc, dtype=bool)[keep]
        v = np.where(m, 0.0, np.asarray(vc, dtype=np.float64)[keep])
        kdf = df.loc[keep, self.keys] if not keep.all() else df[self.keys]
        if self.late and len(t):
            late = self._late_after(t) < ok_from
            if late.any():
                kcols = {k: kdf[k].to_numpy()[late] for k in self.keys}
                yield _out_frame(self.keys, kcols, -1, None, None, v[late], m[late], True, t[late])
                t, v, m, kdf = t[~late], v[~late], m[~late], kdf[~late]
        keys = pa.Table.from_pandas(kdf, preserve_index=False)
        wm = timerValues.getCurrentWatermarkInMs()
        yield from self._advance_panes(final, timer, live, wm, keys, t, v, m, ok_from)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        final, timer, live = self._meta()
        if timer != expiredTimerInfo.getExpiryTimeInMs():
            return  # one since replaced (its call then did the work)
        e = np.empty(0, np.int64)
        # Spark deletes the timer that fired
        yield from self._advance_panes(final, _NO_TIME, live, timerValues.getCurrentWatermarkInMs(), None, e,
                                 e.astype(np.float64), e.astype(bool), -_NO_TIME)

    def _advance_panes(self, final: int, timer: int, live: np.ndarray, wm_ms: int, keys: Optional[pa.Table], nt, nv, nm,
                 ok_from: int) -> Iterator[pd.DataFrame]:
        g, wm = self.g, int(wm_ms) * 1000
        spans = list(self._groups)
        new = _row_partials(keys, nt, nv, nm, g) if keys is not None and len(nt) else None
        newp = np.unique(new.column("p").to_numpy()) if new is not None else np.empty(0, np.int64)

        emit = np.zeros(len(live), bool)
        for r, s in spans:
            emit |= _pane_ends(live, g, r, s, final, wm)[1] > 0
        read = np.union1d(live[emit], np.intersect1d(live, newp))
        old = None
        if len(read):
            parts = []
            for p in read:
                got = self.panes.getValue((int(p),))
                if got is None:  # listed live but absent: the map and the meta disagree
                    raise ValueError(f"slidewise.spark.stream_aggregate state is inconsistent: pane {p} missing")
                t = _decode_pane(got[0])
                parts.append(t.append_column("p", pa.array(np.full(t.num_rows, p, np.int64))))
            old = pa.concat_tables(parts)
        cols = self.keys + ["p"] + list(_FIELDS)
        both = [x.select(cols) for x in (old, new) if x is not None]
        frames = []
        if both:
            w = pa.concat_tables(both, promote_options="permissive") if len(both) > 1 else both[0]
            is_new = np.repeat([False, True], [0 if old is None else old.num_rows, 0 if new is None else new.num_rows])
            p = w.column("p").to_numpy()
            for (r, s), qs in self._groups.items():  # queries of one span share their windows
                lo, cnt = _pane_ends(p, g, r, s, final, wm)
                if not cnt.any():
                    continue
                idx = np.repeat(np.arange(len(p)), cnt)
                e = (np.repeat(lo, cnt) + _ramp(cnt)) * s
                ok = ~is_new[idx] | (e >= ok_from)  # new rows join only the windows Spark keeps
                x = w.take(pa.array(idx[ok])).append_column("e", pa.array(e[ok]))
                x = _combine(x.drop_columns(["p"]), self.keys + ["e"])
                part = {f: x.column(f).to_numpy() for f in _FIELDS}
                some = part["n"] > 0
                if not some.all():
                    x, part = x.filter(pa.array(some)), {f: a[some] for f, a in part.items()}
                e = x.column("e").to_numpy()
                kcols = {k: _arrow_col(x.column(k)) for k in self.keys}
                for qi, agg in qs:
                    val, null = _window_values(agg, part)
                    frames.append(_out_frame(self.keys, kcols, qi, e - r, e, val, null, self.late))
        final = max(final, wm)
        # a pane stays while a window holding it ends after final
        alive = np.union1d(live, newp)
        last = np.max([((alive * g + r) // s) * s for r, s in spans], axis=0) if len(alive) else alive
        now = alive[last > final]
        put = np.intersect1d(newp, now)
        if len(put):
            merged = _combine(pa.concat_tables([x.filter(pa.compute.is_in(x.column("p"), pa.array(put))).select(cols)
                                                for x in (old, new) if x is not None], promote_options="permissive"),
                              self.keys + ["p"])
            pcol = merged.column("p").to_numpy()
            order = np.argsort(pcol, kind="stable")
            bounds = np.searchsorted(pcol[order], put)
            bounds = np.append(bounds, len(order))
            body = merged.drop_columns(["p"])
            for i, pp in enumerate(put):
                self.panes.updateValue((int(pp),), (_encode_pane(body.take(pa.array(order[bounds[i]:bounds[i + 1]]))),))
        for pp in np.setdiff1d(live, now):
            self.panes.removeKey((int(pp),))
        if len(now):
            # the earliest end after final of a window holding a pane left
            nxt = min(int(_pane_ends(now, g, r, s, final, final)[0].min()) * s for r, s in spans)
            want = _timer_ms(nxt)
            if want != timer:
                if timer != _NO_TIME:
                    self.handle.deleteTimer(timer)  # else it would call the bucket for nothing
                self.handle.registerTimer(want)
                timer = want
            self.state.update((_encode_meta(final, timer, self.buckets, now),))
        else:
            if timer != _NO_TIME:
                self.handle.deleteTimer(timer)
            self.state.clear()
        if frames:
            yield pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


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
                frames.append(_frame(self.keys, key, self._qi[q.name], start[done], end[done], vals.filter(pa.array(done)),
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
        for b in batches:
            n = b.num_rows
            if not n:
                continue
            t = b.column(time).cast(pa.int64()).to_numpy()  # no nulls: filtered before
            lasts = [t - np.mod(t, s) + r for r, s in spans]
            last = lasts[0] if len(lasts) == 1 else np.minimum.reduce(lasts)
            ends = [lq - j * s for (r, s), lq in zip(spans, lasts) for j in range(1, -(-r // s))]
            cols = [b.column(c) for c in names] + [pa.array(t), b.column(value),
                                                   pa.nulls(n, pa.int64()) if late else pa.array(last)]
            if late:  # each row's own probe: numRowsDroppedByWatermark counts one per late row, as Spark's
                cols = [pa.concat_arrays([c, c]) for c in cols[:len(names)]] + [
                    pa.concat_arrays([c, pa.nulls(n, c.type)]) for c in cols[len(names):-1]] + [
                    pa.concat_arrays([cols[-1], pa.array(last)])]
            if ends:
                idx = np.tile(np.arange(n), len(ends))
                pairs = pa.table([b.column(c).take(idx) for c in by] + [np.concatenate(ends), idx],
                                 names=[f"k{i}" for i in range(len(by))] + ["e", "row"])
                d = pairs.group_by(pairs.column_names[:-1], use_threads=False).aggregate([("row", "min")])
                rows = d.column("row_min").combine_chunks()
                m = len(rows)
                cols = [pa.concat_arrays([c, c.take(rows)]) for c in cols[:len(names)]] + [
                    pa.concat_arrays([c, pa.nulls(m, c.type)]) for c in cols[len(names):-1]] + [
                    pa.concat_arrays([cols[-1], d.column("e").combine_chunks()])]
            yield pa.RecordBatch.from_arrays(cols, names=[*names, time, value, "slidewise_end"])
    return probes


def _bucket_values(spark: Any, n: int) -> List[int]:
    """``n`` bigints whose Spark hash puts each in its own one of ``n``
    partitions (``pmod(hash(v), n)``, the hash partitioning of a stateful
    operator's grouping key): the buckets of keys, one per partition of
    the state, so every core gets one."""
    F = _functions(spark)
    found = spark.range(0, 64 * n).select("id", F.pmod(F.hash("id"), F.lit(n)).alias("part")) \
        .groupBy("part").agg(F.min("id").alias("id")).collect()
    got = {int(r["part"]): int(r["id"]) for r in found}
    return [got.get(i, i) for i in range(n)]  # (a partition missed in 64 n draws shares one: never seen)


_PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# one output's own columns (late_rows="kind")
_KIND_COLS = ("kind", "query", "window_start", "window_end", "value")
# the grouping column of an unkeyed stream: one key
_ONE_KEY = "slidewise_key"
# the grouping column of time windows with pane state: a bucket of keys
_BUCKET = "slidewise_bucket"


def _check_state_store(spark: Any) -> None:
    """transformWithState keeps its state only in RocksDB: say so before
    the query starts, not with Spark's STORE_BACKEND_NOT_SUPPORTED_FOR_TWS
    once it runs."""
    provider = spark.conf.get(_PROVIDER_CONF, None)
    if not str(provider or "").endswith("RocksDBStateStoreProvider"):
        raise ValueError(f"stream_aggregate keeps its state with transformWithStateInPandas, which needs the RocksDB "
                         f"state store: set {_PROVIDER_CONF} to {_ROCKSDB} (it is "
                         f"{provider or 'unset: Spark default, HDFSBackedStateStoreProvider'})")


Keys = Union[None, str, Sequence[str]]


@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Keys = None, watermark: Optional[str] = None,
                     late_rows: Literal[False, "kind"] = False) -> DataFrame: ...
@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Keys = None, watermark: Optional[str] = None, *,
                     late_rows: Literal[True]) -> Tuple[DataFrame, DataFrame]: ...
@overload
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str,
                     key: Keys = None, watermark: Optional[str] = None,
                     late_rows: Union[bool, str] = False) -> Union[DataFrame, Tuple[DataFrame, DataFrame]]: ...
def stream_aggregate(df: DataFrame, queries: Union[Query, Iterable[Query]], value: str, time: str, key: Keys = None,
                     watermark: Optional[str] = None,
                     late_rows: Union[bool, str] = False) -> Union[DataFrame, Tuple[DataFrame, DataFrame]]:
    """Time-window or session-window queries over a streaming DataFrame,
    per key (``key=None``: one key for all rows), with state kept across
    micro-batches: rows (key..., query, window_start, window_end, value)
    appended as the watermark passes each window, as Spark's own streaming
    ``groupBy(key, F.window(...))`` / ``groupBy(key, F.session_window(...))``
    in append mode. Use it with ``outputMode("append")`` and a checkpoint
    location; the session must use the RocksDB state store
    (``spark.sql.streaming.stateStore.providerClass``; checked here). The
    watermark must be on ``time``: ``watermark`` (e.g. ``"10 seconds"``)
    calls ``withWatermark(time, watermark)``, or call it on ``df`` first.
    Rows with a null time belong to no window.

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
    if late_rows == "kind":
        taken = [c for c in keys + [time] if c in _KIND_COLS]
        if taken:
            raise ValueError(f"with late_rows='kind' the output's columns {list(_KIND_COLS)} are taken: rename {taken}")
    if watermark is not None:
        df = df.withWatermark(time, watermark)
    delay = df.schema[time].metadata.get(_DELAY_KEY)
    if delay is None:
        raise ValueError(f"stream_aggregate needs the stream's watermark on {time!r}: pass watermark=... "
                         f"or call df.withWatermark({time!r}, ...) first")
    _check_state_store(df.sparkSession)
    value_type = df.schema[value].dataType
    ship(df.sparkSession)  # also pickles this module's processors by value
    if not keys:
        df = df.withColumn(_ONE_KEY, F.lit(0))
    group = keys or [_ONE_KEY]
    for k in keys:  # float keys group as in Spark's groupBy: -0.0 is 0.0 (NaN is one key in both)
        if isinstance(df.schema[k].dataType, (T.FloatType, T.DoubleType)):
            df = df.withColumn(k, F.when(F.col(k) == 0, F.lit(0.0).cast(df.schema[k].dataType)).otherwise(F.col(k)))
    schema = T.StructType([T.StructField(k, df.schema[k].dataType) for k in group] +
                          [T.StructField(c, t) for c, t in ((_OUT_Q, T.IntegerType()), (_OUT_WS, T.LongType()),
                                                           (_OUT_WE, T.LongType()), (_OUT_V, T.DoubleType()),
                                                           (_OUT_NULL, T.IntegerType()))] +
                          ([T.StructField(_OUT_T, T.LongType())] if late_rows else []))
    # the end of the last window a row could join: Spark's transformWithState
    # drops the rows where it is at or before the previous batch's watermark
    df = df.filter(F.col(time).isNotNull())
    t = F.col(time)
    pos, end = "slidewise_pos", "slidewise_end"
    late = bool(late_rows)
    by = group  # the processor's grouping key
    if sessions:
        gap = min(q.session for q in queries if q.session is not None) // 1000
        late_after = t + F.expr(f"INTERVAL {gap} MICROSECONDS")
        if late:
            # the row without an event time (never dropped), then its probe
            none = F.when(F.lit(False), late_after)
            df = df.select(*group, time, value, F.posexplode(F.array(none, late_after)).alias(pos, end))
            t = F.when(F.col(pos) == 0, F.col(time))
            late_after = F.col(end)
        proc: _Processor = _SessionProcessor(queries, value, time, group, late)
        t_us = F.unix_micros(t)
    else:
        # queries of one (range, slide) share their windows, so their ends and probes
        spans = sorted({(q.range // 1000, q.slide // 1000) for q in queries})
        if all(q.agg in _PANE_AGGS for q in queries):
            # panes per bucket of keys, a bucket per partition of the state
            # (Spark pins the partitions of a checkpoint; the processor
            # refuses a restart under another count)
            spark = df.sparkSession
            n = int(spark.conf.get("spark.sql.shuffle.partitions") or 200) if keys else 1
            vals = _bucket_values(spark, n) if n > 1 else [0]
            bucket = F.element_at(F.array(*[F.lit(v).cast("long") for v in vals]),
                                  (F.pmod(F.hash(*group), F.lit(n)) + 1).cast("int"))
            df = df.withColumn(_BUCKET, bucket)
            by = [_BUCKET]
            proc = _PaneProcessor(queries, value, time, group, late, n)
        else:
            proc = _Processor(queries, value, time, group, late)
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
    out = df.select(*cols).groupBy(*by).transformWithStateInPandas(proc, schema, "Append", "EventTime")
    qi = F.col(_OUT_Q)
    is_late = qi < 0
    in_window = ~is_late
    out = out.select(*keys, qi,
                     F.when(in_window, F.element_at(F.array(*[F.lit(n) for n in names]), qi + 1)).alias("query"),
                     F.when(in_window, F.timestamp_micros(_OUT_WS)).alias("window_start"),
                     F.when(in_window, F.timestamp_micros(_OUT_WE)).alias("window_end"),
                     F.when(F.col(_OUT_NULL) == 0, F.col(_OUT_V))
                     .when(F.col(_OUT_NULL) == 2, F.lit(float("nan"))).alias("value"),
                     *([F.when(is_late, F.timestamp_micros(_OUT_T)).alias(_TIME_OUT)] if late_rows else []))
    if late_rows == "kind":
        return out.select(*keys, F.when(is_late, F.lit("late")).otherwise(F.lit("window")).alias("kind"),
                          "query", "window_start", "window_end", "value", F.col(_TIME_OUT).alias(time))
    window_cols = [*keys, "query", "window_start", "window_end", "value"]
    if not late_rows:
        return out.select(*window_cols)
    return (out.filter(in_window).select(*window_cols),
            out.filter(is_late).select(*keys, F.col(_TIME_OUT).alias(time), F.col("value").cast(value_type).alias(value)))


def split_late(batch: DataFrame) -> Tuple[DataFrame, DataFrame]:
    """A micro-batch of ``stream_aggregate(..., late_rows="kind")`` (e.g. in
    ``foreachBatch``) as ``(windows, late)``: windows (key..., query,
    window_start, window_end, value) and late rows (key..., time, value),
    as ``late_rows=True`` gives them as streams."""
    F = _functions(batch)
    cols = batch.columns
    if tuple(cols[-6:-1]) != _KIND_COLS:
        raise ValueError(f"not the output of stream_aggregate(..., late_rows='kind'): columns {cols}")
    at = cols.index("kind")
    keys, time = cols[:at], cols[-1]
    kind = F.col("kind")
    return (batch.filter(kind == "window").select(*keys, "query", "window_start", "window_end", "value"),
            batch.filter(kind == "late").select(*keys, time, "value"))


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
