"""stream_aggregate's work on the executors (see
:mod:`slidewise.spark._streaming` for what it computes, and Spark's rules
it follows): the state codecs (sealed with a CRC-32), the pane partials
and their combination, the emission of windows and late rows.

Imported by name, after :func:`slidewise.spark._ship._import_slidewise`
made the driver's build importable, by the function Spark calls
(:class:`slidewise.spark._streaming._Shell`), not pickled with it: the
pickle stays small and imports nothing heavy to unpickle."""

from __future__ import annotations

import pickle
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa

from ._kernels import _canon_key

# The input's extra columns (no leading "__": Spark's stateful Python
# operators rename such columns): the value's null flag (pandas has NaN for null and
# NaN) and the event-time column late rows are judged by.
_NULL_COL = "slidewise_null"
_LATE_COL = "slidewise_late_after"

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


def _timeout_ms(end_us: int) -> int:
    """The event-time timeout that calls a key once the watermark (ms)
    reaches ``end_us``: Spark times a key out when the watermark passes its
    timeout, and a timeout is at or after the watermark (``end_us`` is
    after it)."""
    return -(-int(end_us) // 1000) - 1


class _Processor:
    """Time-window queries (see the module docstring of _streaming). State:
    the rows a window not yet final may hold (t, v, null; sorted by time)
    and the watermark of the key's last call (windows ending at or before
    it are final). Built on the executor by the shell (``proc``: its
    configuration and the state variables it registered)."""

    def __init__(self, proc: Any) -> None:
        global _VERSION
        _VERSION = proc.ver  # the writer's version in the state: the driver's
        self.queries = pickle.loads(proc.qbytes)
        self.value, self.time, self.keys, self.late = proc.value, proc.time, proc.keys, proc.late
        self.state: Any = None  # the GroupState of the call
        self._span_list = [(q.range // 1000, q.slide // 1000) if q.kind != "session" else (0, 0) for q in self.queries]
        self._aggs = [q.agg for q in self.queries]
        self._qi = {q.name: i for i, q in enumerate(self.queries)}

    def _empty(self):
        return {"t": np.empty(0, np.int64), "v": np.empty(0, np.float64), "m": np.empty(0, bool), "final": None}

    def _load(self):
        got = self.state.getOption  # None when the key has no state
        return self._empty() if got is None else self._load_pickle(got[0])

    def _load_pickle(self, b: bytes):
        # sealed since slidewise 0.2; an older state (a bare pickle) loads unchecked
        st = pickle.loads(_unseal(_ROWS_MAGIC, b)[1] if b[:3] == _ROWS_MAGIC else b)
        if "emitted" in st:
            # before late rows followed Spark's window-end rule, the stream took rows behind the watermark
            raise ValueError("this query's state was written by an older slidewise.spark.stream_aggregate; "
                             "start it from a new checkpoint location")
        return st

    def __call__(self, key, rows, state) -> Iterator[pd.DataFrame]:
        """One call of applyInPandasWithState: the key's rows of a
        micro-batch, or (``state.hasTimedOut``, no rows) its timeout."""
        self.state = state
        wm_ms = state.getCurrentWatermarkMs()
        if state.hasTimedOut:
            e = (np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, bool), np.empty(0, np.int64))
            return self._advance(key, self._load(), wm_ms, *e)
        return self._rows(key, rows, wm_ms)

    def _rows(self, key, rows, wm_ms: int) -> Iterator[pd.DataFrame]:
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
        yield from self._advance(key, st, wm_ms, t, v, m, ends)

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
            if next_end is not None:  # (a kept row's window is open: there is one)
                self.state.setTimeoutTimestamp(_timeout_ms(next_end))
        else:
            self.state.remove()
        if frames:
            yield pd.concat(frames, ignore_index=True)


# -- incremental state: pane partials -------------------------------------

# Aggregations whose partial per pane is a few numbers (the others keep rows).
# Their partials' fields beyond _FIELDS (see there).
_EXTRA = {"first": ("ft", "fv", "fn"), "last": ("lt", "lv", "ln"), "first_ignore_nulls": ("gt", "gv"),
          "last_ignore_nulls": ("ht", "hv"), "maxcount": ("mxc",), "mincount": ("mnc",), "geomean": ("lg",)}
_PANE_AGGS = frozenset({"sum", "count", "mean", "max", "min", "var", "std", "var_pop", "std_pop", "range", *_EXTRA})
_BUCKET_MAGIC = b"SWK"  # a bucket's panes (_encode_bucket)
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
# Beyond these, only what the queries need (_EXTRA): the first row's time,
# value and null flag (first; last the same), the first non-null row's
# time and value (first_ignore_nulls: time _NONE_T when there is none;
# last_ignore_nulls: -_NONE_T), how many values equal mx / mn (maxcount /
# mincount) and the sum of the values' logs (geomean: exp of their mean).
# A row of a later micro-batch is later in a tie of times, as the rows of
# one batch are in their order: partials combine in that order.
_FIELDS = ("n", "cnt", "s", "m2", "mx", "mn", "nan")
_NONE_T = np.iinfo(np.int64).max


# The fields of _FIELDS each aggregation reads beyond n and cnt (which all
# read: a window exists once a row joins it; null below min_periods). The
# state keeps only its queries' fields: for sum, max and mean 5 of 7.
_NEEDS = {"sum": ("s",), "mean": ("s",), "count": (), "max": ("mx", "nan"), "min": ("mn", "nan"),
          "range": ("mx", "mn", "nan"), "maxcount": ("mx", "nan"), "mincount": ("mn", "nan"), "geomean": (),
          **{a: ("s", "m2") for a in ("var", "std", "var_pop", "std_pop")}}


def _fields_for(aggs: Iterable[str]) -> Tuple[str, ...]:
    """The partials' fields for queries of ``aggs``."""
    need = {"n", "cnt", *(f for a in aggs for f in _NEEDS.get(a, ()))}
    return tuple(f for f in _FIELDS if f in need) + tuple(
        dict.fromkeys(f for a in sorted(set(aggs)) for f in _EXTRA.get(a, ())))
_NO_TIME = -(1 << 62)  # no watermark seen


def _group_ids(t: pa.Table, by: List[str]) -> Tuple[np.ndarray, int]:
    """(a dense id per row of ``t`` for its ``by`` tuple, the id count), as
    Spark groups (:func:`._kernels._canon_key`). The columns' dictionary
    codes combined in mixed radix, made dense through a table while their
    product is small (a bucket's keys by panes or window ends: no sort),
    else by numpy's unique (keys by row times, in sessions)."""
    import pyarrow.compute as pc

    n = t.num_rows
    if not n:
        return np.empty(0, np.int64), 0
    ids, size, dense = np.zeros(n, np.int64), 1, True
    for c in by:
        d = pc.dictionary_encode(_canon_key(t.column(c)), null_encoding="encode")
        i, m = d.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(d.dictionary)
        ids, size, dense = ids * m + i, size * m, size == 1  # (one column's codes are dense)
        if size > 4 * n + 65536:  # made dense: no overflow, and the table below stays small
            u, ids = np.unique(ids, return_inverse=True)
            size, dense = len(u), True
    if dense:
        return ids, size
    seen = np.zeros(size, np.int64)
    seen[ids] = 1
    dense = np.cumsum(seen) - 1
    return dense[ids], int(dense[-1]) + 1


def _combine(t: pa.Table, by: List[str], groups: Optional[Tuple[np.ndarray, int]] = None) -> pa.Table:
    """The partials of ``t`` with equal ``by`` combined: (by..., fields)
    (``groups``: the rows' dense group ids and their count, when known).
    Counts and sums add in row order; m2 as Chan et al.'s parallel
    variance: the parts' m2 plus their counts times their means' squared
    distance to the whole's mean."""
    if not t.num_rows:
        return t.select(by + [c for c in t.column_names if c not in by])
    ids, k = _group_ids(t, by) if groups is None else groups
    first = np.empty(k, np.int64)
    first[ids] = np.arange(t.num_rows)  # a row of each group (its keys)
    names = set(t.column_names)
    f = {c: t.column(c).to_numpy() for c in _FIELDS if c in names}  # (the queries' fields: _fields_for)
    out: Dict[str, np.ndarray] = {c: np.bincount(ids, f[c], k).astype(np.int64) for c in ("n", "cnt", "nan") if c in f}
    if "s" in f:
        out["s"] = np.bincount(ids, f["s"], k)
    if "m2" in f:
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = out["s"] / out["cnt"]
            dev = np.where(f["cnt"] > 0, f["s"] / np.maximum(f["cnt"], 1) - mean[ids], 0.0)
            out["m2"] = np.bincount(ids, f["m2"] + f["cnt"] * dev * dev, k)
    for c, at in (("mx", np.fmax.at), ("mn", np.fmin.at)):
        if c in f:
            out[c] = np.full(k, np.nan)
            at(out[c], ids, f[c])
    res = t.select(by).take(pa.array(first))
    for c in _FIELDS:
        if c in out:
            res = res.append_column(c, pa.array(out[c]))
    if "mxc" in names:  # the parts' counts of the whole's max / min (maxcount reads mx, mincount mn)
        res = res.append_column("mxc", pa.array(np.bincount(ids, np.where(f["mx"] == out["mx"][ids], _col(t, "mxc"),
                                                                          0), k).astype(np.int64)))
    if "mnc" in names:
        res = res.append_column("mnc", pa.array(np.bincount(ids, np.where(f["mn"] == out["mn"][ids], _col(t, "mnc"),
                                                                          0), k).astype(np.int64)))
    if "lg" in names:
        res = res.append_column("lg", pa.array(np.bincount(ids, _col(t, "lg"), k)))
    pos = np.arange(t.num_rows)
    for tc, cols, last in (("ft", ("fv", "fn"), False), ("lt", ("lv", "ln"), True), ("gt", ("gv",), False),
                           ("ht", ("hv",), True)):
        if tc in names:  # per group, the row of the least (greatest) time; of a tie, the first (last) row
            tt = _col(t, tc)
            order = np.lexsort((pos, tt, ids))
            at = np.cumsum(np.bincount(ids, minlength=k)) - (1 if last else np.bincount(ids, minlength=k))
            pick = pa.array(order[at])
            for c in (tc, *cols):
                res = res.append_column(c, t.column(c).take(pick))
    return res


def _col(t: pa.Table, c: str) -> np.ndarray:
    a: np.ndarray = t.column(c).to_numpy()
    return a


def _row_partials(keys: pa.Table, t: np.ndarray, v: np.ndarray, m: np.ndarray, g: int,
                  fields: Tuple[str, ...] = _FIELDS, combine: bool = True) -> pa.Table:
    """(keys..., p, fields): the partials per key and pane (``t // g``) of
    rows (``v``: 0 where null, ``m``: null) in arrival order (``combine``
    False: a row each)."""
    ok = ~m
    isnan = np.isnan(v) & ok
    real = np.where(ok & ~isnan, v, np.nan)
    one = np.ones(len(t), np.int64)
    cols = {"p": t // g, "n": one, "cnt": ok.astype(np.int64), "s": np.where(ok, v, 0.0),
            "m2": np.zeros(len(t)), "mx": real, "mn": real, "nan": isnan.astype(np.int64)}
    with np.errstate(invalid="ignore", divide="ignore"):
        extra = {"ft": t, "fv": v, "fn": m.astype(np.int64), "lt": t, "lv": v, "ln": m.astype(np.int64),
                 "gt": np.where(ok, t, _NONE_T), "gv": v, "ht": np.where(ok, t, -_NONE_T), "hv": v,
                 "mxc": (ok & ~isnan).astype(np.int64), "mnc": (ok & ~isnan).astype(np.int64),
                 "lg": np.where(ok, np.log(np.where(ok, v, 1.0)), 0.0)}
    cols = {c: a for c, a in cols.items() if c == "p" or c in fields}
    cols.update({f: extra[f] for f in fields if f in extra})
    rows = keys
    for c, a in cols.items():
        rows = rows.append_column(c, pa.array(a))
    return _combine(rows, keys.column_names + ["p"]) if combine else rows


def _encode_bucket(final: int, buckets: int, panes: pa.Table) -> bytes:
    """A bucket's state as stored: the watermark of its last call (us; the
    windows ending at or before it are emitted), the bucket count its keys
    were hashed with, and its live panes' partials (keys..., p, fields) as
    Arrow IPC; sealed."""
    import struct

    sink = pa.BufferOutputStream()
    # lz4: a third of the bytes Spark hands back and forth and RocksDB
    # writes each batch, for ~0.3 ms a bucket (zstd: a fifth, for ~1 ms);
    # the reader finds the codec
    opts = pa.ipc.IpcWriteOptions(compression="lz4" if pa.Codec.is_available("lz4") else None)
    with pa.ipc.new_stream(sink, panes.schema, options=opts) as w:
        w.write_table(panes)
    return _seal(_BUCKET_MAGIC, struct.pack("<qq", final, buckets) + sink.getvalue().to_pybytes())


def _decode_bucket(b: bytes) -> Tuple[int, int, pa.Table]:
    """The inverse of _encode_bucket (the checksum first: nothing corrupt is read)."""
    import struct

    ver, body = _unseal(_BUCKET_MAGIC, b)
    try:
        if len(body) < 16:
            raise ValueError(f"{len(body)} bytes")
        final, buckets = struct.unpack_from("<qq", body)
        return final, buckets, pa.ipc.open_stream(body[16:]).read_all()
    except (ValueError, pa.ArrowInvalid) as e:  # a checksum collision, or a writer's bug
        raise ValueError(f"cannot restore slidewise.spark.stream_aggregate state written by slidewise {ver}: {e}")


def _panes_in(panes: pa.Table, ps: np.ndarray) -> pa.Table:
    """The rows of ``panes`` (keys..., p, fields) of the panes ``ps``."""
    return panes.filter(pa.compute.is_in(panes.column("p"), pa.array(ps, pa.int64())))


def _window_values(agg: str, part: Dict[str, np.ndarray], min_periods: Optional[int] = None
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """(values, null mask) of windows from their merged partials, as Spark
    gives them (and slidewise.Stream the others): null without a non-null
    value (count: 0; first / last: when that row's value is null), or with
    fewer than ``min_periods``."""
    cnt = part["cnt"]
    null = cnt == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        if agg in ("first", "last"):
            val, null = (part["fv"], part["fn"] > 0) if agg == "first" else (part["lv"], part["ln"] > 0)
        elif agg == "first_ignore_nulls":
            val = part["gv"]
        elif agg == "last_ignore_nulls":
            val = part["hv"]
        elif agg == "range":
            val = np.where(part["nan"] > 0, np.nan, part["mx"] - part["mn"])
        elif agg == "maxcount":  # NaN is the greatest value
            val = np.where(part["nan"] > 0, part["nan"], part["mxc"]).astype(np.float64)
        elif agg == "mincount":  # and the least only when every value is NaN
            val = np.where(part["nan"] == cnt, part["nan"], part["mnc"]).astype(np.float64)
        elif agg == "geomean":
            val = np.exp(part["lg"] / np.where(null, 1, cnt))
        elif agg == "sum":
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
    if min_periods:
        null = null | (cnt < min_periods)
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


def _out_frame(keys: List[str], kcols: Dict[str, Any], qi, start, end, val: Any, null: Any,
               late_col: bool, time=None) -> pd.DataFrame:
    """Output rows of query ``qi`` (its index, or one per row), the keys
    per row (``kcols``: arrays), start and end in int64 us; with
    ``late_col`` the late rows' time column too (``time``: a late row's
    time; the rows are then late rows: ``qi`` -1, no window). pyspark turns
    a pandas NaN into null, so the value's state says which it is (0 a
    number, 1 null, 2 NaN). ``val`` and ``null`` as lists (one array per
    query): the wide form, a value and state column per query."""
    wide = isinstance(val, list)
    n = len(val[0]) if wide else len(val)
    zeros = np.zeros(n, np.int64)
    # strings as object dtype: pandas 3's Arrow-backed str columns, once
    # concatenated, hold chunked arrays, which trip pyspark's converter
    kser = {k: pd.Series(a, dtype=object) if getattr(a, "dtype", None) == object or not hasattr(a, "dtype") else a
            for k, a in kcols.items()}
    cols = {**{k: kser[k] for k in keys},
            _OUT_Q: np.broadcast_to(np.asarray(qi, np.int64), (n,)).copy(),
            _OUT_WS: zeros if start is None else np.asarray(start, np.int64),
            _OUT_WE: zeros if end is None else np.asarray(end, np.int64)}
    for i, (x, nx) in enumerate(zip(val, null) if wide else [(val, null)]):
        nan = np.isnan(x) & ~nx
        cols[f"{_OUT_V}{i}" if wide else _OUT_V] = np.where(nan | nx, 0.0, x)
        cols[f"{_OUT_NULL}{i}" if wide else _OUT_NULL] = np.where(nx, 1, np.where(nan, 2, 0)).astype(np.int32)
    if late_col:
        cols[_OUT_T] = zeros if time is None else np.asarray(time, np.int64)
    return pd.DataFrame(cols)  # (one constructor: a column set at a time costs pandas ~0.2 ms each)


def _widen(f: pd.DataFrame, keys: List[str], nq: int) -> pd.DataFrame:
    """``wide=True``: the output rows of :func:`_out_frame` (one per window
    and query) as one row per window, a value and state column per query
    (``_OUT_V``/``_OUT_NULL`` and the query's index; a query without a row
    for a window: null). A late row keeps its row, its value as query 0's.
    A third of the rows for three queries: fewer for pyspark to convert,
    the JVM to read and the sink to write."""
    q = f[_OUT_Q].to_numpy()
    win = q >= 0
    if win.any() and not win.all():  # (the processors yield late rows and windows as frames of their own)
        return pd.concat([_widen(f[~win], keys, nq), _widen(f[win], keys, nq)], ignore_index=True)
    v, st = f[_OUT_V].to_numpy(), f[_OUT_NULL].to_numpy()
    base = [c for c in f.columns if c not in (_OUT_V, _OUT_NULL)]
    n = len(q) // nq
    cols = [np.asarray(f[c]) for c in (*keys, _OUT_WS, _OUT_WE)]
    if win.all() and n * nq == len(q) and (q == np.repeat(np.arange(nq), n)).all() and all(
            (a.reshape(nq, n) == a[:n]).all() for a in cols):
        # the processors' order: a block per query, the same windows in each
        ids, rows = np.tile(np.arange(n), nq), f.iloc[:n][base].reset_index(drop=True)
        rows[_OUT_Q] = 0
    elif win.all():
        t = pa.table({c: pa.array(a, from_pandas=True) for c, a in zip((*keys, _OUT_WS, _OUT_WE), cols)})
        ids, n = _group_ids(t, [*keys, _OUT_WS, _OUT_WE])
        first = np.full(n, len(q), np.int64)
        np.minimum.at(first, ids, np.arange(len(q)))
        rows = f.iloc[first][base].reset_index(drop=True)
        rows[_OUT_Q] = 0
    else:  # late rows stay rows, their value as query 0's
        ids, n, rows, q = np.arange(len(q)), len(q), f[base].reset_index(drop=True), np.zeros(len(q), np.int64)
    vals, states = np.zeros((nq, n)), np.ones((nq, n), np.int32)  # no row: null
    vals[q, ids], states[q, ids] = v, st
    for i in range(nq):
        rows[f"{_OUT_V}{i}"], rows[f"{_OUT_NULL}{i}"] = vals[i], states[i]
    return rows


def _arrow_col(a: Any) -> Any:
    """A key column of an Arrow table for a pandas frame: strings as an
    object array (see _out_frame)."""
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    if pa.types.is_string(a.type) or pa.types.is_large_string(a.type):
        return a.to_numpy(zero_copy_only=False)
    return a.to_pandas()


class _PaneProcessor(_Processor):
    """Time-window queries of _PANE_AGGS with incremental state, per bucket
    of keys (the grouping key is the bucket, see stream_aggregate): the
    partials per key and pane (event time // g, g the gcd of the ranges and
    slides) of the panes a window not yet emitted holds, and the watermark
    of the bucket's last call (_encode_bucket). A call folds its rows into
    partials per (key, pane), emits the windows the watermark closed for
    every key at once (vectorised: no loop per key or window), merges its
    rows' partials into their panes and drops the panes no open window
    holds: its work grows with its rows and the open panes, its state with
    the rows of the open panes, not with the keys."""

    def __init__(self, proc: Any) -> None:
        import math

        super().__init__(proc)
        self.buckets, self.wide = proc.buckets, proc.wide  # wide: emits its rows wide itself (_emit)
        self.fields = _fields_for(self._aggs)
        self._mp = [q.min_periods for q in self.queries]
        self.g = 0
        self._groups: Dict[Tuple[int, int], List[Tuple[int, str]]] = {}
        for qi, (agg, span) in enumerate(zip(self._aggs, self._spans())):
            self.g = math.gcd(self.g, *span)
            self._groups.setdefault(span, []).append((qi, agg))

    def _emit(self, frames: List[Tuple[Any, ...]]) -> pd.DataFrame:
        """One output frame of the windows ``frames`` (keys table, start,
        end, and per query of their span (index, value, null); arrays):
        pandas' concat of a frame each costs more than the arrays'. With
        ``wide`` a row per window (the queries of a wide call share one
        span: one entry of ``frames`` holds them all), else per window and
        query."""
        if self.wide:
            kt = pa.concat_tables([f[0] for f in frames], promote_options="permissive")
            start, end = (np.concatenate([f[i] for f in frames]) for i in (1, 2))
            val = [np.concatenate([f[3][i][1] for f in frames]) for i in range(len(self.queries))]
            null = [np.concatenate([f[3][i][2] for f in frames]) for i in range(len(self.queries))]
            qi: Any = 0
        else:
            parts = [(f[0], np.full(len(f[1]), q), f[1], f[2], v, nl) for f in frames for q, v, nl in f[3]]
            kt = pa.concat_tables([f[0] for f in parts], promote_options="permissive")
            qi, start, end, val, null = (np.concatenate([f[i] for f in parts]) for i in range(1, 6))
        return _out_frame(self.keys, {k: _arrow_col(kt.column(k)) for k in self.keys}, qi, start, end, val, null,
                          self.late)

    def _late_frame(self, kcols: Dict[str, Any], t: np.ndarray, v: np.ndarray, m: np.ndarray) -> pd.DataFrame:
        """Output rows of late rows (query -1); wide: the value as query 0's,
        the other queries' null."""
        if self.wide:
            n, nq = len(t), len(self.queries)
            return _out_frame(self.keys, kcols, -1, None, None, [v] + [np.zeros(n)] * (nq - 1),
                              [m] + [np.ones(n, bool)] * (nq - 1), True, t)
        return _out_frame(self.keys, kcols, -1, None, None, v, m, True, t)

    def _load_bucket(self) -> Tuple[int, Optional[pa.Table]]:
        got = self.state.getOption  # None when the bucket has no state
        if got is None:
            return _NO_TIME, None
        final, buckets, panes = _decode_bucket(got[0])
        if buckets != self.buckets:
            raise ValueError(f"this stream_aggregate checkpoint hashed its keys into {buckets} buckets "
                             f"(spark.sql.shuffle.partitions when it started), this query into {self.buckets}: "
                             f"set spark.sql.shuffle.partitions to {buckets} to restart from it")
        lacks = [f for f in self.fields if f not in panes.column_names]
        if lacks:  # (a state keeps only its queries' partials)
            raise ValueError(f"this stream_aggregate checkpoint's state was written for other aggregations "
                             f"(it has no partials {lacks} for {sorted(set(self._aggs))}): restart these queries "
                             f"from a new checkpoint location")
        # a state of older versions (every field): only this query's
        return final, panes.select([c for c in panes.column_names if c not in _FIELDS or c in self.fields])

    def __call__(self, key, rows, state) -> Iterator[pd.DataFrame]:
        self.state = state
        wm_ms = state.getCurrentWatermarkMs()
        final, panes = self._load_bucket()
        if state.hasTimedOut:
            e = np.empty(0, np.int64)
            return self._advance(final, panes, wm_ms, None, e, e.astype(np.float64), e.astype(bool), -_NO_TIME)
        return self._pane_rows(rows, final, panes, wm_ms)

    def _pane_rows(self, rows, final: int, panes: Optional[pa.Table], wm_ms: int) -> Iterator[pd.DataFrame]:
        frames = list(rows)
        df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
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
        # the key columns as arrays, not through pandas' indexing (a few ms a call)
        kc = [a[keep] for a in _columns(df, tuple(self.keys))] if not keep.all() else _columns(df, tuple(self.keys))
        if self.late and len(t):
            late = self._late_after(t) < ok_from
            if late.any():
                kcols = {k: np.asarray(a[late]) for k, a in zip(self.keys, kc)}
                yield self._late_frame(kcols, t[late], v[late], m[late])
                t, v, m, kc = t[~late], v[~late], m[~late], [a[~late] for a in kc]
        keys = pa.table([pa.array(a, from_pandas=True) for a in kc], names=self.keys)
        yield from self._advance(final, panes, wm_ms, keys, t, v, m, ok_from)

    def _advance(self, final: int, panes: Optional[pa.Table], wm_ms: int, keys: Optional[pa.Table], nt, nv, nm,  # type: ignore[override]
                       ok_from: int) -> Iterator[pd.DataFrame]:
        g, wm = self.g, int(wm_ms) * 1000
        spans = list(self._groups)
        live = np.unique(panes.column("p").to_numpy()) if panes is not None else np.empty(0, np.int64)
        new = _row_partials(keys, nt, nv, nm, g, self.fields) if keys is not None and len(nt) else None
        newp = np.unique(new.column("p").to_numpy()) if new is not None else np.empty(0, np.int64)

        emit = np.zeros(len(live), bool)
        for r, s in spans:
            emit |= _pane_ends(live, g, r, s, final, wm)[1] > 0
        read = np.union1d(live[emit], np.intersect1d(live, newp))
        old = _panes_in(panes, read) if len(read) else None
        cols = self.keys + ["p"] + list(self.fields)
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
                part = {f: x.column(f).to_numpy() for f in self.fields}
                some = part["n"] > 0
                if not some.all():
                    x, part = x.filter(pa.array(some)), {f: a[some] for f, a in part.items()}
                e = x.column("e").to_numpy()
                frames.append((x.select(self.keys), e - r, e,
                               [(qi, *_window_values(agg, part, self._mp[qi])) for qi, agg in qs]))
        final = max(final, wm)
        # a pane stays while a window holding it ends after final
        alive = np.union1d(live, newp)
        last = np.max([((alive * g + r) // s) * s for r, s in spans], axis=0) if len(alive) else alive
        now = alive[last > final]
        put = np.intersect1d(newp, now)
        # the panes left: those no row changed as they were, the others merged
        kept = [_panes_in(panes, np.setdiff1d(now, put))] if panes is not None else []
        if len(put):
            kept.append(_combine(pa.concat_tables([_panes_in(x, put).select(cols) for x in (old, new) if x is not None],
                                                  promote_options="permissive"), self.keys + ["p"]))
        if len(now):
            table = pa.concat_tables(kept, promote_options="permissive") if len(kept) > 1 else kept[0]
            self.state.update((_encode_bucket(final, self.buckets, table.select(cols)),))
            # the earliest end after final of a window holding a pane left
            nxt = min(int(_pane_ends(now, g, r, s, final, final)[0].min()) * s for r, s in spans)
            self.state.setTimeoutTimestamp(_timeout_ms(nxt))
        else:
            self.state.remove()
        if frames:
            yield self._emit(frames)


def _session_late_after(queries: List[Any], t: np.ndarray) -> np.ndarray:
    """The end of each row's own session window, the smallest gap."""
    ends: np.ndarray = t + min(q.session for q in queries if q.session is not None) // 1000
    return ends


def _row_sessions(keys: pa.Table, t: np.ndarray, v: np.ndarray, m: np.ndarray, fields: Tuple[str, ...]) -> pa.Table:
    """Rows as sessions of their own (keys..., fields, st, la), in arrival
    order: _merge_sessions merges those of one key and time (their times
    are within any gap), so they are not combined here first."""
    new = _row_partials(keys, t, v, m, 1, fields, combine=False)
    p = _col(new, "p")
    return new.drop_columns(["p"]).append_column("st", pa.array(p)).append_column("la", pa.array(p))


def _merge_sessions(old: Optional[pa.Table], new: Optional[pa.Table], keys: List[str], gap: int) -> pa.Table:
    """Sessions (keys..., st, la, fields: first and last row time, the
    partials) of ``old`` (a bucket's open sessions) and ``new`` (later rows,
    each a session of its own) merged as Spark merges session windows: per
    key, by start, one session while the next starts at most ``gap`` after
    the latest last time so far. Partials combine in arrival order (``old``
    first): a tie of first / last times goes to the earlier row."""
    t = pa.concat_tables([x for x in (old, new) if x is not None], promote_options="permissive")
    kid, _ = _group_ids(t, keys)
    st, la = _col(t, "st"), _col(t, "la")
    order = np.lexsort((np.arange(t.num_rows), st, kid))
    t, kid, st, la = t.take(pa.array(order)), kid[order], st[order], la[order]
    # the latest last time of the key's sessions so far, before each
    reach = pd.Series(la).groupby(kid).cummax().to_numpy()
    first = np.r_[True, kid[1:] != kid[:-1]]
    brk = first | (st > np.r_[0, reach[:-1]] + gap)
    gid = np.cumsum(brk) - 1
    starts = np.flatnonzero(brk)
    out = _combine(t.drop_columns(["st", "la"]), keys, (gid, len(starts)))  # group g: the session gid
    return out.append_column("st", pa.array(st[starts])).append_column("la", pa.array(np.maximum.reduceat(la, starts)))


class _SessionPaneProcessor(_PaneProcessor):
    """Session queries of _PANE_AGGS with incremental state, per bucket of
    keys: the open sessions of every key of the bucket and query (first and
    last row time, the partials), merged with a call's rows
    (_merge_sessions) and emitted once the watermark reaches their end
    (last time + gap). An emitted session leaves the state, so a later row
    never joins it (as in Spark)."""

    def _late_after(self, t: np.ndarray) -> np.ndarray:
        return _session_late_after(self.queries, t)

    def _advance(self, final: int, panes: Optional[pa.Table], wm_ms: int, keys: Optional[pa.Table], nt, nv, nm,  # type: ignore[override]
                 ok_from: int) -> Iterator[pd.DataFrame]:
        wm = int(wm_ms) * 1000
        fields = list(self.fields)
        new = _row_sessions(keys, nt, nv, nm, self.fields) if keys is not None and len(nt) else None
        cols = self.keys + ["q", "st", "la"] + fields
        kept, frames = [], []
        gaps: Dict[int, List[int]] = {}  # queries of one gap share their sessions
        for qi, q in enumerate(self.queries):
            gaps.setdefault(q.session // 1000, []).append(qi)
        for gap, qis in gaps.items():
            g0 = qis[0]  # the sessions of this gap are kept under its first query
            old = panes.filter(pa.compute.equal(panes.column("q"), g0)).drop_columns(["q"]) if panes is not None else None
            if old is not None and not old.num_rows:
                old = None
            if old is None and new is None:
                continue
            sess = _merge_sessions(old, new, self.keys, gap)
            end = _col(sess, "la") + gap
            done = end <= wm
            if done.any():
                d = sess.filter(pa.array(done))
                part = {f: _col(d, f) for f in fields}
                frames.append((d.select(self.keys), _col(d, "st"), end[done],
                               [(qi, *_window_values(self.queries[qi].agg, part, self._mp[qi])) for qi in qis]))
            if not done.all():
                left = sess.filter(pa.array(~done))
                kept.append(left.append_column("q", pa.array(np.full(left.num_rows, g0, np.int64))).select(cols))
        if kept:
            table = pa.concat_tables(kept, promote_options="permissive") if len(kept) > 1 else kept[0]
            self.state.update((_encode_bucket(max(final, wm), self.buckets, table),))
            nxt = int(min(_col(x, "la").min() + self.queries[_col(x, "q")[0]].session // 1000 for x in kept))
            self.state.setTimeoutTimestamp(_timeout_ms(nxt))
        else:
            self.state.remove()
        if frames:
            yield self._emit(frames)


class _SessionProcessor(_Processor):
    """Session queries: per key, the rows (time, value, null, and per query
    whether one of its open sessions holds the row) of the sessions not yet
    emitted; Spark has dropped the late rows before they get here (with
    ``late``: _Processor.handleInputRows has split them off)."""

    def _empty(self):
        return {"t": np.empty(0, np.int64), "v": np.empty(0, np.float64), "m": np.empty(0, bool),
                "need": np.empty((0, len(self.queries)), bool)}

    def _late_after(self, t: np.ndarray) -> np.ndarray:
        return _session_late_after(self.queries, t)

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


def engine(proc: Any) -> Callable[[Any, Any, Any], Iterator[pd.DataFrame]]:
    """The work of the shell ``proc`` (its kind: "rows", "panes", "sessions",
    "session-panes"); with ``wide``, its frames through :func:`_widen`."""
    kinds = {"rows": _Processor, "panes": _PaneProcessor, "sessions": _SessionProcessor,
             "session-panes": _SessionPaneProcessor}
    work = kinds[proc.kind](proc)
    if not proc.wide or isinstance(work, _PaneProcessor):  # (which emits wide rows itself)
        return work
    nq = len(work.queries)

    def wide(key: Any, rows: Any, state: Any) -> Iterator[pd.DataFrame]:
        return (_widen(f, work.keys, nq) for f in work(key, rows, state))
    return wide
