"""Executor kernels: the functions Spark runs on executors and what they use.

* :func:`_roll_fn` (``mapInArrow``): :class:`_Roller` carries the halo of
  the current key (or, keys interleaved, of every key) across Arrow batches
  and computes each spec with :func:`_compute`; :func:`_forwarded` feeds a
  partition the next one's first rows (``assume_sorted``).
* :func:`_apply_fn` (``groupBy().applyInArrow``): one key group at a time.
* :func:`_tail_fn` (``mapInArrow``, the check pass): per partition its row
  count, its tail and whether it is in order.
* :func:`_agg_fn` (``mapInArrow``): one :class:`slidewise.Stream` per key run
  for :func:`slidewise.spark.aggregate`.

Keys. Key columns are compared (run starts, key ids, the halo's key, the
current key) only through :func:`_canon_key`: float and double keys become
int64 bit patterns after -0.0 is replaced by 0.0 and every NaN by one NaN,
nulls stay null. So all NaN keys are one key, -0.0 is the key 0.0 and the
null keys are one key (not NaN's), as Spark groups them (its hash
partitioning and sort put such rows together, and its groupBy outputs the
normalised key: :func:`_agg_fn` emits it too).

These functions are pickled by value (see :mod:`slidewise.spark._ship`):
they import slidewise only through :func:`_import_slidewise`, never as a
module global.
"""

from __future__ import annotations

import inspect
import io
import itertools
import pickle
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ._ship import _import_slidewise
from ._specs import _copy_spec, _Spec


def _partition_id() -> int:
    """The running task's partition (executor side)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    assert ctx is not None, "not in a Spark task"
    return ctx.partitionId()


def _native_keys(sw) -> bool:
    try:
        return "keys" in inspect.signature(sw.rolling).parameters
    except (TypeError, ValueError):
        return False


def _many_keys(sw) -> bool:
    try:
        return "keys" in inspect.signature(sw.rolling_many).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def _normalised(a: pa.Array):
    """A float column's values as float64 with -0.0 -> 0.0 and every NaN the
    one NaN (nulls as 0.0), and its null mask (None: no nulls)."""
    v = a.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False) + 0.0  # -0.0 + 0.0 == 0.0
    v[np.isnan(v)] = np.nan
    return v, (a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None)


def _norm_float(a: pa.Array) -> pa.Array:
    """A key column as Spark's groupBy outputs it: floats normalised
    (-0.0 -> 0.0, every NaN the one NaN, nulls kept); other types unchanged."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if not pa.types.is_floating(a.type):
        return a
    v, mask = _normalised(a)
    return pa.array(v, mask=mask).cast(a.type)


def _canon_key(a: pa.Array) -> pa.Array:
    """A key column to compare and hash rows by, as Spark groups them:
    float/double as the int64 bit patterns of the normalised values, nulls
    kept; other types unchanged (idempotent)."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if not pa.types.is_floating(a.type):
        return a
    v, mask = _normalised(a)
    return pa.array(v.view(np.int64), mask=mask)


def _run_starts(cols: Sequence[pa.Array], n: int) -> np.ndarray:
    """Row positions where a new run of equal key tuples starts (always 0);
    ``cols`` canonical (:func:`_canon_key`): NaN equals NaN, null only null."""
    import pyarrow.compute as pc

    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for a in cols:
        if n < 2:
            break
        x, y = a.slice(1), a.slice(0, n - 1)
        ne = pc.fill_null(pc.not_equal(x, y), False)
        if a.null_count:
            ne = pc.or_(ne, pc.xor(x.is_null(), y.is_null()))
        change[1:] |= ne.to_numpy(zero_copy_only=False)
    return np.flatnonzero(change)


def _key_ids(cols: Sequence[pa.Array]) -> np.ndarray:
    """A dense int64 id per row for its key tuple; ``cols`` canonical
    (:func:`_canon_key`); null is a key value of its own (as in Spark's
    partitionBy)."""
    import pyarrow.compute as pc

    ids: Optional[np.ndarray] = None
    for c in cols:
        if isinstance(c, pa.ChunkedArray):
            c = c.combine_chunks()
        d = pc.dictionary_encode(c, null_encoding="encode")
        i = d.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        ids = i if ids is None else np.unique(ids * len(d.dictionary) + i, return_inverse=True)[1]
    assert ids is not None, "no key columns"
    return ids


def _last_rows(ids: np.ndarray, m: int) -> np.ndarray:
    """Mask of the rows that are among the last ``m`` rows of their key."""
    if m == 0:
        return np.zeros(len(ids), dtype=bool)
    counts = np.bincount(ids)
    # each key's rows, in order (16-bit ids: numpy's radix sort, 2-3x faster)
    rows = np.argsort(ids.astype(np.uint16) if len(counts) <= 1 << 16 else ids, kind="stable")
    ends = np.cumsum(counts)
    # per key, the row where its last m rows begin (0: all its rows)
    first = np.zeros(len(counts), dtype=np.int64)
    more = counts > m
    first[more] = rows[ends[more] - m]
    last: np.ndarray = np.arange(len(ids)) >= first[ids]
    return last


def _trim_keyed(t: pa.Table, m: int) -> pa.Table:
    """A (v, k0, k1, ...) table (canonical keys) cut to the last ``m`` rows
    of each key."""
    return t.filter(pa.array(_last_rows(_key_ids(t.columns[1:]), m)))


def _last_peer(t: np.ndarray, starts: np.ndarray) -> Optional[np.ndarray]:
    """Per row, the last row with its time in its run (None: no ties)."""
    n = len(t)
    newgrp = np.ones(n, dtype=bool)
    newgrp[1:] = t[1:] != t[:-1]
    newgrp[starts] = True
    if newgrp.all():
        return None
    firsts = np.flatnonzero(newgrp)
    peer: np.ndarray = (np.append(firsts[1:], n) - 1)[np.cumsum(newgrp) - 1]
    return peer


def _compute(sw, spec: _Spec, vals: pa.Array, ts: Optional[pa.Array], starts: np.ndarray,
             keys: Optional[pa.Array] = None) -> pa.Array:
    """spec over vals, resetting at each run start, or per key id when
    ``keys`` is given (interleaved keys, count windows); the Spark peer
    rule for time windows (tied times all take the last peer's value)."""
    n = len(vals)
    mp = spec.min_periods
    if spec.agg in ("std", "var") and mp is not None and mp < 2:
        mp = None  # a single value gives null in slidewise as in Spark

    def one(v, t):
        if spec.time:
            return sw.rolling(v, spec.units, spec.agg, timestamps=t, min_periods=mp, algorithm=spec.algorithm)
        return sw.rolling(v, spec.window, spec.agg, min_periods=mp, algorithm=spec.algorithm, **spec.order_kw)

    if keys is None and len(starts) > 1 and _native_keys(sw) and not spec.time:
        keys = pa.array(np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n))))
    if keys is not None:
        out = sw.rolling(vals, spec.units if spec.time else spec.window, spec.agg, keys=keys,
                         timestamps=ts if spec.time else None, min_periods=mp, algorithm=spec.algorithm,
                         **spec.order_kw)
    elif len(starts) <= 1:
        out = one(vals, ts)
    else:
        ends = np.append(starts[1:], n)
        out = pa.concat_arrays([one(vals.slice(a, b - a), None if ts is None else ts.slice(a, b - a))
                                for a, b in zip(starts, ends)])
    if spec.time and n:
        assert ts is not None, "a time window needs its times"
        t = ts.to_numpy()
        if keys is None:
            peer = _last_peer(t, starts)
        else:  # interleaved keys: the same within each key's rows, in order
            rows = np.argsort(keys.to_numpy(), kind="stable")
            k = keys.to_numpy()[rows]
            peer = _last_peer(t[rows], np.flatnonzero(np.append(True, k[1:] != k[:-1])))
            if peer is not None:
                back = np.empty(n, dtype=np.int64)
                back[rows] = rows[peer]
                peer = back
        if peer is not None:
            out = out.take(pa.array(peer))
    if out.type != spec.arrow_type:
        out = out.cast(spec.arrow_type)
    return out


def _compute_all(sw, specs: List[_Spec], vals: pa.Array, ts: Optional[pa.Array], starts: Optional[np.ndarray],
                 keys: Optional[pa.Array] = None) -> List[pa.Array]:
    """:func:`_compute` for every spec, in order. Count windows without
    ``min_periods`` share ``rolling_many`` calls, per algorithm: one call
    for all of them when they are every (aggregation, window) pair of some
    aggregations and windows (the rows grouped by key once for all), else
    one per aggregation (max / min share one pass over the windows); the
    same values as ``rolling`` spec by spec."""
    out: List[Optional[pa.Array]] = [None] * len(specs)
    if not specs[0].time and _many_keys(sw):
        groups: Dict[str, Dict[Tuple[str, Any], int]] = {}
        for i, s in enumerate(specs):
            if s.min_periods is None and s.agg not in sw.ORDER_AGGS:  # order stats: one rolling each
                groups.setdefault(s.algorithm, {})[(s.agg, s.window)] = i
        many_keys = keys
        n = len(vals)
        for algorithm, idx in groups.items():
            aggs = list(dict.fromkeys(a for a, _ in idx))
            ws = list(dict.fromkeys(w for _, w in idx))
            calls = [(aggs, ws)] if len(idx) == len(aggs) * len(ws) else \
                [([a], [w for b, w in idx if b == a]) for a in aggs]
            if max(len(a) * len(w) for a, w in calls) < 2:
                continue  # nothing shared: _compute below
            if many_keys is None and starts is not None and len(starts) > 1:
                many_keys = pa.array(np.repeat(np.arange(len(starts), dtype=np.int64),
                                               np.diff(np.append(starts, n))))
            for a, w in calls:
                t = sw.rolling_many(vals, w, a if len(a) > 1 else a[0], keys=many_keys, algorithm=algorithm)
                for (agg, win), col in zip([(x, y) for x in a for y in w], t.columns):
                    o = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
                    sp = specs[idx[(agg, win)]]
                    out[idx[(agg, win)]] = o if o.type == sp.arrow_type else o.cast(sp.arrow_type)
    # without starts (interleaved keys) _compute reads only the key ids
    runs = starts if starts is not None else np.zeros(1, np.int64)
    return [o if o is not None else _compute(sw, s, vals, ts, runs, keys) for s, o in zip(specs, out)]


class _Roller:
    """Carries the halo of the current key across Arrow batches.

    Input: batches sorted by (keys, order, tiebreak). Output: the same rows
    plus one column per spec. Count windows keep the last ``max(w)-1``
    values of the current key; time windows keep the rows within the
    longest range of the last time, and hold back the last run of tied
    times until a later time (or key, or the end) shows the run complete.

    ``interleaved``: batches in (order, tiebreak) order with the keys
    mixed; the halo is then a (v, k0, ...[, t]) table prepended to each
    chunk: the last ``max(w)-1`` rows of every key seen, or the rows
    within the longest range of the last time (all keys).
    """

    def __init__(self, sw, specs: List[_Spec], value: str, order: str, keys: List[str], drop: List[str],
                 halo: Optional[pa.Table] = None, target_rows: int = 1 << 16, interleaved: bool = False):
        self.sw, self.specs, self.value, self.order, self.keys, self.drop = sw, specs, value, order, keys, drop
        self.interleaved = interleaved
        self.time = specs[0].time
        self.halo_key: Optional[Tuple[Any, ...]] = () if halo is not None else None
        self.halo = halo  # columns: value[, ts]
        self.pending: Optional[pa.Table] = None
        self.unit_ns: Optional[int] = None
        self.ts_type = None
        self.hmax = max(s.window for s in specs) - 1 if not self.time else None
        self.target = max(target_rows, 4 * (self.hmax or 0))
        self.buf: List[pa.RecordBatch] = []
        self.nbuf = 0
        # Columns whose order the caller vouched for (assume_sorted): checked
        # row by row here, since no sort put the rows in order.
        self.check: Optional[List[str]] = None
        self.last_checked: Optional[Tuple[Any, ...]] = None

    def _ts(self, t: pa.Table) -> pa.Array:
        from slidewise import _time

        col = t.column(self.order)
        ts, unit_ns, typ = _time.time_column(col, f"order column {self.order!r}")
        if self.unit_ns is None:
            self.unit_ns, self.ts_type = unit_ns, typ
            units = [_time.to_units("window", _time.duration_ns("window", s.window), unit_ns) for s in self.specs]
            for s, u in zip(self.specs, units):
                s.units = u
            self.rmax = max(units)
        return ts

    def _check_order(self, table: pa.Table) -> None:
        assert self.check is not None
        ok, _, self.last_checked = _order_step(table, self.check, self.last_checked)
        if not ok:
            raise ValueError(f"assume_sorted=True, but the rows of a partition (or of a partition and the first rows "
                             f"of the next) are not in order of {self.check} "
                             "(or hold nulls there); sort the DataFrame or drop assume_sorted")

    def feed(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        self.buf.append(batch)
        self.nbuf += batch.num_rows
        if self.nbuf >= self.target:
            yield from self._process(final=False)

    def finish(self) -> Iterator[pa.RecordBatch]:
        yield from self._process(final=True)

    def _process(self, final: bool) -> Iterator[pa.RecordBatch]:
        parts = ([self.pending] if self.pending is not None else []) + \
            ([pa.Table.from_batches(self.buf)] if self.buf else [])
        self.buf, self.nbuf, self.pending = [], 0, None
        if not parts:
            return
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        n = table.num_rows
        if n == 0:
            return
        if self.check:
            self._check_order(table)
        if self.interleaved:
            ts = self._ts(table) if self.time else None
            if self.time and not final:
                assert ts is not None
                # hold back the rows of the last time: its run may go on
                cut = int(np.searchsorted(ts.to_numpy(), ts[-1].as_py(), side="left"))
                self.pending = table.slice(cut)
                if cut == 0:
                    return
                table, ts = table.slice(0, cut), ts.slice(0, cut)
            yield from self._append(table, self._interleaved(table, ts))
            return
        keycols = [_canon_key(table.column(k)) for k in self.keys]
        starts = _run_starts(keycols, n)
        ts = self._ts(table) if self.time else None
        cut = n
        if self.time and not final:
            assert ts is not None
            # hold back the last run of tied times of the last key
            t = ts.to_numpy()
            last = t[-1]
            i = n - 1
            lo = starts[-1]
            # rows [j, n) have t == last within the last key run
            j = int(np.searchsorted(t[lo:], last, side="left")) + lo
            cut = j
            i = cut
            if cut == 0:
                self.pending = table
                return
        if cut < n:
            self.pending = table.slice(cut)
            table = table.slice(0, cut)
            keycols = [k.slice(0, cut) for k in keycols]
            starts = starts[starts < cut]
            ts = None if ts is None else ts.slice(0, cut)
            n = cut
        vals = table.column(self.value).combine_chunks()
        # prepend the halo when the first run continues the halo's key
        first_key = tuple(k[0].as_py() for k in keycols)
        h = 0
        if self.halo is not None and self.halo_key == first_key and self.halo.num_rows:
            h = self.halo.num_rows
            hv = self.halo.column(0).combine_chunks()
            if hv.type != vals.type:
                hv = hv.cast(vals.type)
            vals = pa.concat_arrays([hv, vals])
            if self.time:
                hts = self.halo.column(1).combine_chunks()
                ts = pa.concat_arrays([hts, ts])
            starts = starts + h
            starts[0] = 0
        outs = [o.slice(h) for o in _compute_all(self.sw, self.specs, vals, ts, starts)]
        # new halo: the tail of the last run
        lo = int(starts[-1])
        if self.time:
            assert ts is not None
            t = ts.to_numpy()
            j = int(np.searchsorted(t[lo:], t[-1] - self.rmax, side="right")) + lo
            self.halo = pa.table([vals.slice(j), ts.slice(j)], names=["v", "t"])
        else:
            assert self.hmax is not None
            j = max(lo, len(vals) - self.hmax)
            self.halo = pa.table([vals.slice(j)], names=["v"])
        self.halo_key = tuple(k[-1].as_py() for k in keycols)
        yield from self._append(table, outs)
        if final and self.pending is not None:
            yield from self._process(final=True)

    def _interleaved(self, table: pa.Table, ts: Optional[pa.Array]) -> List[pa.Array]:
        nk = len(self.keys)
        cols = [table.column(self.value)] + [_canon_key(table.column(k)) for k in self.keys] + \
            ([ts] if self.time else [])
        cur = pa.table(cols, names=["v"] + [f"k{i}" for i in range(nk)] + (["t"] if self.time else []))
        h = 0 if self.halo is None else self.halo.num_rows
        both = cur if not h else pa.concat_tables([self.halo, cur])
        ids = _key_ids(both.columns[1:1 + nk])
        vals, kid = both.column(0).combine_chunks(), pa.array(ids)
        ts = both.column("t").combine_chunks() if self.time else None
        outs = [o.slice(h) for o in _compute_all(self.sw, self.specs, vals, ts, None, keys=kid)]
        if self.time:
            # rows in order of time: the halo is the rows within the longest range of the last time
            assert ts is not None
            t = ts.to_numpy()
            self.halo = both.slice(int(np.searchsorted(t, t[-1] - self.rmax, side="right")))
        else:
            assert self.hmax is not None
            self.halo = both.filter(pa.array(_last_rows(ids, self.hmax)))
        # the halo is recomputed with every chunk: keep chunks well above it
        self.target = max(self.target, 4 * self.halo.num_rows)
        return outs

    def _append(self, table: pa.Table, outs: List[pa.Array]) -> Iterator[pa.RecordBatch]:
        if self.drop:
            table = table.drop_columns(self.drop)
        for s, o in zip(self.specs, outs):
            table = table.append_column(pa.field(s.name, s.arrow_type), o)
        yield from table.to_batches()


# Rows per slidewise call in the mapInArrow passes (at least); tests set it
# small to carry halos across chunks.
_CHUNK_ROWS = 1 << 16


def _roll_fn(specs, value, order, keys, drop, halos=None, target_rows=None, check=None, forward=None):
    """The mapInArrow function. ``halos``: a broadcast {partition: IPC
    table} prepended to the partition's rows, or {partition: [(rows, first
    key, IPC table or None), ...]} for a partition of several sorted runs
    (keyed count windows): each run gets its own halo. ``forward``: a
    broadcast _forward_heads plan (unkeyed, count windows,
    assume_sorted)."""
    target_rows = _CHUNK_ROWS if target_rows is None else target_rows

    def roller(sw, halo):
        return _Roller(sw, [_copy_spec(s) for s in specs], value, order, keys, drop, halo, target_rows,
                       interleaved=bool(keys) and halos is not None)

    def fn(it):
        sw = _import_slidewise()
        halo = None
        skip = 0
        if halos is not None or forward is not None:

            pid = _partition_id()
        if halos is not None:
            raw = halos.value.get(pid)
            if isinstance(raw, list):  # several sorted runs, each with its own halo
                yield from _by_runs(it, raw, lambda h: roller(sw, h))
                return
            if raw is not None:
                halo = _from_ipc(raw)
            elif not keys:
                halo = pa.table({"v": pa.array([], pa.float64())})
        if forward is not None:
            it, skip = _forwarded(it, forward.value.get(pid), check)
        # halos with keys: the keyed ordered path, keys interleaved in the rows
        r = roller(sw, halo)
        r.check = check
        out = (o for b in it for o in r.feed(b))
        for o in itertools.chain(out, r.finish()):
            if skip:  # the partition's first rows: its predecessor emitted them
                cut = min(skip, o.num_rows)
                o, skip = o.slice(cut), skip - cut
            if o.num_rows:
                yield o
    return fn


def _by_runs(it, runs, make):
    """A partition of several sorted runs (``runs``: [(rows, first key,
    halo IPC or None)] in the partition's order, as the check pass found
    them): its batches cut where each run ends, each run through its own
    _Roller (``make(halo table or None)``); the rows must add up (else the
    input changed between the two jobs). Yields the output batches."""
    j, left, r = -1, 0, None
    for b in it:
        off, m = 0, b.num_rows
        while off < m:
            if not left:
                if r is not None:
                    yield from (o for o in r.finish() if o.num_rows)
                j += 1
                if j >= len(runs):
                    raise ValueError(_CHANGED)
                left, h = runs[j][0], runs[j][2]
                r = make(_from_ipc(h) if h is not None else None)
            c = min(left, m - off)
            assert r is not None
            yield from (o for o in r.feed(b if c == m else b.slice(off, c)) if o.num_rows)
            off += c
            left -= c
    if left or j != len(runs) - 1:
        raise ValueError(_CHANGED)
    if r is not None:
        yield from (o for o in r.finish() if o.num_rows)


# Column names inside _roll_udf_fn (not the caller's).
_UV, _UK = "__slidewise_v", "__slidewise_k"


def _roll_udf_fn(specs, nkeys: int, halos):
    """The keyed ordered path's function (count windows) as a scalar
    iterator Arrow UDF (``arrow_udf``, SCALAR_ITER) over (value, key...):
    a partition's batches in order in, a struct of the spec columns out,
    row for row; Spark zips it with the rows it kept, so only the value
    and key columns travel to Python and only the results back (a
    ``mapInArrow`` pass sends every column both ways). ``halos`` as in
    :func:`_roll_fn`."""
    names = [_UV] + [f"{_UK}{i}" for i in range(nkeys)]
    fields = [pa.field(s.name, s.arrow_type) for s in specs]

    def fn(it):

        sw = _import_slidewise()
        pid = _partition_id()
        raw = halos.value.get(pid)

        def make(h):
            return _Roller(sw, [_copy_spec(s) for s in specs], _UV, _UV, names[1:], [], h, _CHUNK_ROWS,
                           interleaved=True)

        batches = (pa.RecordBatch.from_arrays(list(c) if isinstance(c, (tuple, list)) else [c], names=names)
                   for c in it)
        if isinstance(raw, list):
            out = _by_runs(batches, raw, make)
        else:
            r = make(_from_ipc(raw) if raw is not None else None)
            out = itertools.chain((o for b in batches for o in r.feed(b)), r.finish())
        for o in out:
            if o.num_rows:
                yield pa.StructArray.from_arrays([o.column(f.name) for f in fields], fields=fields)
    # the type hints tell arrow_udf the kind: iterator of array tuples to iterator of arrays
    fn.__annotations__ = {"it": Iterator[Tuple[pa.Array, ...]], "return": Iterator[pa.Array]}
    return fn


_CHANGED = ("slidewise.spark.rolling: a partition's rows differ between the check pass and the pass that computes "
            "(a nondeterministic input?); cache or checkpoint the DataFrame")


def _forwarded(it, plan, keys: List[str]):
    """A partition's input under a _forward_heads plan: its own batches, the
    first of which must match the heads the plan was made from (else the
    input changed between the two jobs), then the next partition's heads;
    and how many of its own first rows not to emit."""
    if plan is None:  # empty when the plan was made
        for b in it:
            if b.num_rows:
                raise ValueError(_NONDET)
        return iter(()), 0
    skip, own, nxt = plan
    own = _from_ipc(own)

    def gen():
        seen = []
        nseen = 0
        schema = None
        for b in it:
            schema = b.schema
            if nseen < own.num_rows:
                seen.append(b)
                nseen += b.num_rows
                if nseen >= own.num_rows:
                    _same_heads(pa.Table.from_batches(seen), own, keys)
            yield b
        if nseen < own.num_rows:
            raise ValueError(_NONDET)
        if nxt is not None:
            t = _from_ipc(nxt)
            if schema is not None and not t.schema.equals(schema):
                t = t.cast(schema)
            yield from t.to_batches()
    return gen(), skip


def _same_heads(t: pa.Table, own: pa.Table, keys: List[str]) -> None:
    t = t.slice(0, own.num_rows)
    if not all(t.column(k).equals(own.column(k)) for k in keys):
        raise ValueError(_NONDET)


_NONDET = ("slidewise.spark.rolling(assume_sorted=True): a partition's rows differ between the two jobs "
           "that read the input (a nondeterministic input?); cache or checkpoint the DataFrame")


def _to_ipc(t: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue()


def _from_ipc(b: bytes) -> pa.Table:
    return pa.ipc.open_stream(b).read_all()


def _sorted_lex(cols: List[np.ndarray]) -> bool:
    """Whether rows are in non-decreasing lexicographic order of cols (NaN
    anywhere: not)."""
    n = len(cols[0])
    if n < 2:
        return True
    gt = np.zeros(n - 1, dtype=bool)
    eq = np.ones(n - 1, dtype=bool)
    for c in cols:
        a, b = c[1:], c[:-1]
        gt |= eq & (a > b)
        eq &= a == b
    return bool((gt | eq).all())


def _order_step(table: pa.Table, keys: List[str], last: Optional[Tuple[Any, ...]]):
    """One batch of an order check over ``keys``: whether it is sorted,
    has no nulls there and does not start below ``last`` (the previous
    batch's last key); and its first and last key tuples."""
    kc = [table.column(k).combine_chunks() for k in keys]
    if any(c.null_count for c in kc):
        return False, None, None
    first = tuple(c[0].as_py() for c in kc)
    ok = _sorted_lex([c.to_numpy(zero_copy_only=False) for c in kc]) and (last is None or not first < last)
    return ok, first, tuple(c[-1].as_py() for c in kc)


def _breaks(table: pa.Table, keys: List[str], last: Optional[Tuple[Any, ...]], tag: Optional[str] = None,
            last_tag=None, limit: Optional[int] = None):
    """One batch of the check pass, split into runs: a run starts where
    the (``keys``) order falls, or where the ``tag`` column (the input
    file split a row comes from) changes, also at the batch's first row
    against ``last`` / ``last_tag`` (the previous batch's last row).
    Returns (whether the first row starts a run, [(start, end, first key,
    last key)] of the pieces); None for nulls or NaN in ``keys``, or where
    ``limit`` or more runs start in the batch (rows in random order: a
    run every other row, whose pieces would cost a Python tuple each)."""
    kc = [table.column(k).combine_chunks() for k in keys]
    if any(c.null_count for c in kc):
        return None
    cols = [c.to_numpy(zero_copy_only=False) for c in kc]
    if any(c.dtype.kind == "f" and np.isnan(c).any() for c in cols):
        return None
    m = len(cols[0])
    lt = np.zeros(max(m - 1, 0), dtype=bool)
    eq = np.ones(max(m - 1, 0), dtype=bool)
    for c in cols:
        a, b = c[1:], c[:-1]
        lt |= eq & (a < b)
        eq &= a == b
    first = tuple(c[0].as_py() for c in kc)
    fresh = last is not None and first < last
    if tag is not None:
        tc = table.column(tag).combine_chunks().to_numpy(zero_copy_only=False)
        lt |= tc[1:] != tc[:-1]
        fresh = fresh or (last_tag is not None and tc[0] != last_tag)
    cuts = (np.flatnonzero(lt) + 1).tolist()
    if limit is not None and len(cuts) + fresh >= limit:
        return None
    bounds = [0] + cuts + [m]
    pieces = [(a, b, tuple(c[a].as_py() for c in kc), tuple(c[b - 1].as_py() for c in kc))
              for a, b in zip(bounds, bounds[1:])]
    return fresh, pieces


# At most this many sorted runs per partition in the keyed ordered path
# (more: the shuffle path).
_MAX_RUNS = 256


def _tail_fn(value, order, specs, tb, by: Sequence[str] = (), runs: bool = False, tag: Optional[str] = None):
    """Per partition: its row count, its tail (the last max(w)-1 values, or
    the rows within the longest range of its last time), and whether it is
    sorted by (order, tb...) with its first and last such key (pickled).
    With key columns ``by``, a (v, k0, k1, ...[, t]) table: for count
    windows the last max(w)-1 values of each key.

    ``runs`` (count windows): a partition may be several sorted runs one
    after the other (Parquet files, each in order, that Spark packed into
    one partition largest first): one row per run (``run`` 0, 1, ...),
    with that run's count, tail and first and last key; a new run starts
    wherever the order falls or the ``tag`` column changes (a hash of the
    input file split: consecutive files in order that are not neighbours
    in the global order). Without ``runs`` a fall makes the partition out
    of order. Not in order (one row): nulls or NaN in the order
    columns, more than ``_MAX_RUNS`` runs."""
    time = specs[0].time
    keys = [order, *tb]
    split = runs and not time

    def fn(it):

        _import_slidewise()
        from slidewise import _time

        pid = _partition_id()
        hmax = None if time else max(s.window for s in specs) - 1
        done = []  # finished runs: (n, payload, first, last)
        st: Dict[str, Any] = {"tail": None, "n": 0, "kept": 0, "first": None, "last": None, "rmax": None, "tag": None}
        ok, total = True, 0

        def add(t: pa.Table) -> None:
            """Rows of the current run into its tail."""
            st["n"] += t.num_rows
            cols = [t.column(value)] + [_canon_key(t.column(k)) for k in by]
            names = ["v"] + [f"k{i}" for i in range(len(by))]
            if time:
                ts, unit_ns, _ = _time.time_column(t.column(order), f"order column {order!r}")
                cols.append(ts)
                names.append("t")
            cur = pa.table(cols, names=names)
            tail = cur if st["tail"] is None else pa.concat_tables([st["tail"], cur])
            if time:
                rmax = max(_time.to_units("window", _time.duration_ns("window", s.window), unit_ns) for s in specs)
                st["rmax"] = rmax
                tv = tail.column("t").to_numpy()
                tail = tail.slice(int(np.searchsorted(tv, tv[-1] - rmax, side="right")))
            elif by:
                # trimming costs a grouping of all rows held: do it when
                # they are well above the last trimmed size
                if tail.num_rows > 2 * st["kept"] + (1 << 20):
                    assert hmax is not None
                    tail = _trim_keyed(tail, hmax)
                    st["kept"] = tail.num_rows
            elif tail.num_rows > hmax:
                tail = tail.slice(tail.num_rows - hmax)
            st["tail"] = tail

        def close() -> None:
            """The current run is complete."""
            tail = st["tail"]
            if tail is not None and by and not time:
                assert hmax is not None
                tail = _trim_keyed(tail, hmax)
            if tail is not None and time:
                tail = tail.replace_schema_metadata({"rmax": str(st["rmax"])})
            payload = _to_ipc(tail.combine_chunks()) if tail is not None else b""
            done.append((st["n"], payload, st["first"], st["last"]))
            st.update(tail=None, n=0, kept=0, first=None)

        def row(j, n, payload, order_info):
            return pa.record_batch([pa.array([pid], pa.int32()), pa.array([j], pa.int32()),
                                    pa.array([n], pa.int64()), pa.array([payload], pa.binary()),
                                    pa.array([pickle.dumps(order_info)], pa.binary())],
                                   names=["pid", "run", "n", "tail", "order"])

        for b in it:
            if not b.num_rows:
                continue
            total += b.num_rows
            t = pa.Table.from_batches([b])
            if not split:  # one run: its tail whatever the order (the unkeyed range path reads it)
                if ok:
                    ok, lo, st["last"] = _order_step(t, keys, st["last"])
                    st["first"] = lo if st["first"] is None else st["first"]
                if not ok and by:
                    break  # keyed: out of order, the shuffle path runs; no tail needed
                add(t)
                continue
            got = _breaks(t, keys, st["last"], tag, st["tag"], _MAX_RUNS - len(done))
            if got is None:
                # Out of order: the shuffle path runs. The rest of the
                # partition is not read (Spark stops the task's input when
                # the function returns): rows in random order cost the
                # first batch, not a pass.
                ok = False
                break
            fresh, pieces = got
            if tag is not None:
                st["tag"] = t.column(tag)[-1].as_py()
            for i, (a, e, lo, hi) in enumerate(pieces):
                if (i or fresh) and st["n"]:
                    close()
                if st["first"] is None:
                    st["first"] = lo
                add(t.slice(a, e - a))
                st["last"] = hi
            if len(done) >= _MAX_RUNS:
                ok = False
        if not split:
            close()
            _, payload, first, _ = done[0]
            # every row read counts (the break above leaves rows out of the
            # tail): a partition of rows reads as empty, hence in order, only
            # when it has none
            yield row(0, total, payload, (ok, first, st["last"]))
            return
        if ok and (st["n"] or not done):
            close()

        if not ok:
            yield row(0, total, b"", (False, None, None))
            return
        for j, (n, payload, first, last) in enumerate(done):
            yield row(j, n, payload, (True, first, last))
    return fn


# What _tail_fn returns per partition (DDL, so no pyspark import here).
_TAIL_SCHEMA = "pid int, run int, n bigint, tail binary, `order` binary"


def _apply_fn(specs, value, order_by, tb, drop):
    """The groupBy().applyInArrow function: one whole key group, sorted by
    (order_by, tiebreak) here, through one _Roller."""
    sort_keys = [order_by] + tb

    def fn(table: pa.Table) -> pa.Table:
        sw = _import_slidewise()
        table = table.sort_by([(c, "ascending") for c in sort_keys])
        r = _Roller(sw, [_copy_spec(s) for s in specs], value, order_by, [], drop, None, target_rows=1 << 62)
        r.buf = table.to_batches()
        r.nbuf = table.num_rows
        out = list(r.finish())
        return pa.Table.from_batches(out, schema=None) if out else table.slice(0, 0)

    return fn


def _agg_fn(qs: List[Tuple[str, Any]], keys: List[str], value: str, time: str, is_time: bool, algorithm: str,
            outs: List[Tuple[str, pa.DataType]]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Per sorted partition: one slidewise.Stream per key run, flushed at
    the key's end; rows (key..., window_start, window_end, a value column
    per query: ``outs``' names and types). The queries share one window, so
    every query gives the same windows; the rows of an input batch go out
    as one batch."""
    names = ["window_start", "window_end"] + [n for n, _ in outs]

    def fn(it):
        sw = _import_slidewise()
        tcol = time if is_time else None
        stream, cur_key, cur_out = None, None, None
        ktypes: List[Any] = []  # the key columns' types, from the first batch
        ttype = None
        done: List[Tuple[Any, Dict[str, pa.Table]]] = []

        def assemble():
            """The windows of ``done`` (a key and its Stream's results each) as one batch."""
            first = [r[qs[0][1].name] for _, r in done]
            lens = np.array([t.num_rows for t in first], dtype=np.int64)
            if not lens.sum():
                done.clear()
                return
            rep = pa.array(np.repeat(np.arange(len(done)), lens))
            arrs = [pa.array([k[i] for k, _ in done], type=kt).take(rep) for i, kt in enumerate(ktypes)]
            starts = pa.concat_arrays([t.column("window_start").combine_chunks() for t in first])
            for _, q in qs[1:]:  # one window shape: the same windows
                other = pa.concat_arrays([r[q.name].column("window_start").combine_chunks() for _, r in done])
                if not other.equals(starts):
                    raise RuntimeError(f"slidewise.spark.aggregate: query {q.name!r} gave other windows than "
                                       f"{qs[0][1].name!r}")
            ends = pa.concat_arrays([t.column("window_end").combine_chunks() for t in first])
            if is_time:
                starts, ends = starts.cast(ttype), ends.cast(ttype)
            arrs += [starts, ends]
            for (_, q), (_, typ) in zip(qs, outs):
                arrs.append(pa.concat_arrays([r[q.name].column("value").combine_chunks() for _, r in done]).cast(typ))
            done.clear()
            yield pa.RecordBatch.from_arrays(arrs, names=keys + names)

        for b in it:
            t = pa.Table.from_batches([b])
            ktypes = [t.schema.field(k).type for k in keys]
            ttype = t.schema.field(time).type
            n = t.num_rows
            kc = [_canon_key(t.column(k)) for k in keys]
            starts = _run_starts(kc, n)
            ends = np.append(starts[1:], n)
            for a, e in zip(starts, ends):
                seg = t.slice(int(a), int(e - a))
                key = tuple(c[int(a)].as_py() for c in kc)
                if stream is None or key != cur_key:
                    if stream is not None:
                        done.append((cur_out, stream.flush()))
                    stream = sw.Stream([q for _, q in qs], value=value, time=tcol, algorithm=algorithm)
                    # the key as Spark's groupBy outputs it: floats normalised
                    cur_key, cur_out = key, tuple(_norm_float(seg.column(k).slice(0, 1))[0].as_py() for k in keys)
                done.append((cur_out, stream.push(seg)))
            yield from assemble()
        if stream is not None:
            done.append((cur_out, stream.flush()))
            yield from assemble()
    return fn
