"""slidewise on Spark: rolling columns and window aggregates of DataFrames.

* :func:`rolling` adds per-row rolling aggregates, equal to Spark's own
  ``F.<agg>(v).over(Window.partitionBy(k).orderBy(t, tiebreak)
  .rowsBetween(-(w-1), 0))`` (count windows) or ``.rangeBetween`` (time
  windows, ``(t - range, t]``, tied times are peers as in Spark's RANGE
  frame), but computed by slidewise inside ``mapInArrow``:

  - keyed (``partition_by``): first the ordered path below, with per-key
    halos: for count windows the check pass collects each partition's last
    ``max(w)-1`` rows of every key and each partition gets, per key, the
    last such rows of its predecessors (a rare key's halo spans several
    partitions); for time windows the rows within the longest range, as
    unkeyed, with their keys. One ``mapInArrow`` pass over the input as it
    is then runs the extension's keyed rolling over the interleaved keys:
    no shuffle, no sort. Otherwise (input out of order, float keys,
    ``method="map"``/``"apply"``, ``num_partitions``): repartition by key,
    sort within partitions, one ``mapInArrow`` pass whose state (the halo:
    the last ``w-1`` rows or the last ``range`` of time of the current
    key) is carried across Arrow batches and reset at key boundaries;
  - unkeyed: Spark's own window moves every row to one partition. Here a
    first Python pass over (value, order) checks whether the input already
    is in order (each partition sorted, the partitions in sequence: Parquet
    written sorted, ``spark.range``, a sorted and checkpointed DataFrame)
    and collects each partition's tail; if so, every partition gets the
    tail of its predecessors (spanning several when they are short)
    broadcast as its halo and one ``mapInArrow`` pass runs over the input
    as it is: no shuffle, no sort, every core busy, exact at partition
    boundaries. Otherwise the rows are range-partitioned by the order
    column, sorted, materialised once (``localCheckpoint``) and the tails
    collected from that. Either way the unkeyed call runs its small jobs
    when it is called; the returned DataFrame is lazy as usual. An
    expensive input is computed twice on the ordered path: cache it.

* :func:`aggregate` gives one row per (key, window) like
  ``df.groupBy(key, F.window(time, range, slide)).agg(F.<agg>(value))``, or
  per (key, session) like ``df.groupBy(key, F.session_window(time,
  gap)).agg(...)`` for ``Query(agg, session=gap)``.

Order within duplicate order keys: rows are ordered by ``(order_by,
tiebreak)``; ``tiebreak`` defaults to the input order
(``F.monotonically_increasing_id()`` of the DataFrame as given), so results
are deterministic for a deterministic input. (The row order Spark gives
right after a shuffle depends on the order shuffle blocks arrive in; for
such an input pass a tiebreak column or ``localCheckpoint()`` it first.) Pass ``tiebreak="col"`` to
order ties by a column of your own. Time windows do not depend on it: all
rows with the same time are peers and get the same value (Spark's RANGE
frame).

Nulls in the value column are skipped; NaN orders above every number
(max/min), as in Spark. ``min_periods=k`` gives null where fewer than ``k``
non-null values are in the window (pandas); by default a window without a
non-null value gives null (count gives 0), as Spark. Output types follow
Spark's functions: max/min keep the input type, sum gives bigint for
integers and double for floats, mean/std/var double, count bigint.

Shipping: the functions run on executors with ``import slidewise``; when the
executors' Python lacks slidewise, :func:`ship` (called automatically by
these functions) has sent a zip of this installed package, compiled
extension included, with ``SparkContext.addArchive``; the executor side
puts it on ``sys.path`` only when ``import slidewise`` fails, so an
executor with its own (matching) install uses that one.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import io
import itertools
import os
import pickle
import sys
import tempfile
import zipfile
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

__all__ = ["rolling", "aggregate", "ship", "stream_aggregate"]

_TB = "__slidewise_tiebreak"
_ALIAS = {"avg": "mean", "stddev": "std", "stddev_samp": "std", "variance": "var", "var_samp": "var",
          "stddev_pop": "std_pop"}
# aggregations with a Spark counterpart; output type rule per agg
_SPARK_AGGS = ("max", "min", "sum", "mean", "count", "std", "var", "std_pop", "var_pop", "first", "last")
_DIST_ALIAS = "slidewise_dist"


# ---------------------------------------------------------------------------
# shipping


def _package_zip() -> str:
    """Zip the installed slidewise package (with its compiled extension) into
    a cache file named by a hash of its contents; reused while unchanged."""
    import slidewise

    pkg = os.path.dirname(os.path.abspath(slidewise.__file__))
    files = []
    h = hashlib.sha256()
    for root, dirs, names in os.walk(pkg):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in sorted(names):
            if n.endswith((".pyc", ".pyo")):
                continue
            p = os.path.join(root, n)
            st = os.stat(p)
            rel = os.path.relpath(p, os.path.dirname(pkg))
            files.append((p, rel))
            h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}".encode())
    cache = os.environ.get("SLIDEWISE_CACHE") or os.path.join(tempfile.gettempdir(), f"slidewise-{os.getuid()}")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"slidewise-{h.hexdigest()[:16]}.zip")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p, rel in sorted(files, key=lambda x: x[1]):
                z.write(p, rel)
        os.replace(tmp, path)
    return path


_SHIPPED: Dict[int, str] = {}


def ship(spark: Any) -> str:
    """Send this slidewise (package dir incl. the extension, as a .zip) to the
    executors of ``spark`` once per SparkContext; returns the zip's path."""
    sc = spark.sparkContext if hasattr(spark, "sparkContext") else spark
    key = id(sc._jsc) if getattr(sc, "_jsc", None) is not None else id(sc)
    path = _package_zip()
    if key in _SHIPPED:
        if _SHIPPED[key] != path:
            import warnings

            warnings.warn("slidewise changed on disk after it was shipped to this SparkContext; executors "
                          "without their own slidewise keep the first build (restart the session to ship "
                          "the new one)", RuntimeWarning, stacklevel=3)
    else:
        sc.addArchive(path + "#" + _DIST_ALIAS)
        _SHIPPED[key] = path
        # Executor functions are defined in this module; pickle them (and
        # _Spec, _Roller) by value so that unpickling does not need an
        # importable slidewise before _import_slidewise has run.
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return path


def _import_slidewise():
    """Executor side: the local slidewise if importable, else the shipped one."""
    try:
        import slidewise  # noqa: F401
    except ImportError:
        from pyspark import SparkFiles

        d = SparkFiles.get(_DIST_ALIAS)
        if d not in sys.path:
            sys.path.insert(0, d)
        for m in [m for m in sys.modules if m == "slidewise" or m.startswith("slidewise.")]:
            del sys.modules[m]
        import slidewise  # noqa: F401
    return sys.modules["slidewise"]


# ---------------------------------------------------------------------------
# specs


class _Spec:
    """One output column: agg over a count window (rows) or a time range."""

    def __init__(self, name: str, agg: str, window: Any, min_periods: Optional[int], algorithm: str):
        self.name = name
        self.agg = agg
        self.time = _is_span(window)
        self.window = window
        self.min_periods = min_periods
        self.algorithm = algorithm
        self.units = None  # time range in timestamp units, set on executors
        self.arrow_type: Optional[pa.DataType] = None


def _is_span(w: Any) -> bool:
    return isinstance(w, (str, datetime.timedelta, np.timedelta64))


def _listify(x: Any) -> list:
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _result_type(agg: str, in_type: pa.DataType) -> pa.DataType:
    if agg in ("max", "min", "first", "last"):
        return in_type
    if agg == "count":
        return pa.int64()
    if agg == "sum":
        return pa.int64() if pa.types.is_integer(in_type) else pa.float64()
    return pa.float64()


def _spark_type_to_arrow(dt) -> pa.DataType:
    from pyspark.sql import types as T

    m = {T.ByteType: pa.int8(), T.ShortType: pa.int16(), T.IntegerType: pa.int32(), T.LongType: pa.int64(),
         T.FloatType: pa.float32(), T.DoubleType: pa.float64()}
    for k, v in m.items():
        if isinstance(dt, k):
            return v
    raise TypeError(f"slidewise.spark aggregates byte/short/int/bigint/float/double columns, got {dt.simpleString()}; "
                    "cast the column first (e.g. F.col(c).cast('double'))")


def _arrow_to_spark_type(t: pa.DataType):
    from pyspark.sql import types as T

    return {pa.int8(): T.ByteType(), pa.int16(): T.ShortType(), pa.int32(): T.IntegerType(),
            pa.int64(): T.LongType(), pa.float32(): T.FloatType(), pa.float64(): T.DoubleType()}[t]


def _make_specs(value_type: pa.DataType, window, agg, output, min_periods, algorithm) -> List[_Spec]:
    import slidewise as sw

    windows, aggs = _listify(window), _listify(agg)
    if not windows or not aggs:
        raise ValueError("rolling needs at least one window and one agg")
    specs = []
    names = _listify(output) if output is not None else None
    pairs = [(w, a) for w in windows for a in aggs]
    if names is not None and len(names) != len(pairs):
        raise ValueError(f"output has {len(names)} names for {len(pairs)} (window, agg) columns "
                         f"(windows x aggs = {pairs})")
    for i, (w, a) in enumerate(pairs):
        if not isinstance(a, str):
            raise ValueError(f"agg must be a string, got {a!r}")
        core = _ALIAS.get(a.lower(), a.lower())
        if core not in _SPARK_AGGS:
            raise ValueError(f"unsupported agg {a!r} on Spark; choose from {', '.join(_SPARK_AGGS)} "
                             f"(or the Spark names {', '.join(_ALIAS)})")
        if _is_span(w):
            sw._time.duration_ns("window", w)
        else:
            w = sw._arrow.positive_int("window", w)
        sw._arrow.check_algorithm(algorithm)
        if min_periods is not None:
            sw._arrow.min_periods_int(min_periods, 1 << 62, "2**62")
        name = names[i] if names is not None else f"{a}_{w if not isinstance(w, datetime.timedelta) else int(w.total_seconds())}"
        s = _Spec(name, core, w, min_periods, algorithm)
        s.arrow_type = _result_type(core, value_type)
        specs.append(s)
    kinds = {s.time for s in specs}
    if len(kinds) > 1:
        raise ValueError("mix of count windows (ints) and time windows (spans) in one call; make two calls")
    dup = sorted({s.name for s in specs if [t.name for t in specs].count(s.name) > 1})
    if dup:
        raise ValueError(f"output column names repeat: {dup}")
    return specs


# ---------------------------------------------------------------------------
# executor-side computation


def _native_keys(sw) -> bool:
    try:
        return "keys" in inspect.signature(sw.rolling).parameters
    except (TypeError, ValueError):
        return False


def _run_starts(cols: Sequence[pa.Array], n: int) -> np.ndarray:
    """Row positions where a new run of equal key tuples starts (always 0)."""
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
    """A dense int64 id per row for its key tuple; null is a key value of
    its own (as in Spark's partitionBy)."""
    import pyarrow.compute as pc

    ids = None
    for c in cols:
        if isinstance(c, pa.ChunkedArray):
            c = c.combine_chunks()
        d = pc.dictionary_encode(c, null_encoding="encode")
        i = d.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        ids = i if ids is None else np.unique(ids * len(d.dictionary) + i, return_inverse=True)[1]
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
    return np.arange(len(ids)) >= first[ids]


def _trim_keyed(t: pa.Table, m: int) -> pa.Table:
    """A (v, k0, k1, ...) table cut to the last ``m`` rows of each key."""
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
    return (np.append(firsts[1:], n) - 1)[np.cumsum(newgrp) - 1]


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
        return sw.rolling(v, spec.window, spec.agg, min_periods=mp, algorithm=spec.algorithm)

    if keys is None and len(starts) > 1 and _native_keys(sw) and not spec.time:
        keys = pa.array(np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n))))
    if keys is not None:
        out = sw.rolling(vals, spec.units if spec.time else spec.window, spec.agg, keys=keys,
                         timestamps=ts if spec.time else None, min_periods=mp, algorithm=spec.algorithm)
    elif len(starts) <= 1:
        out = one(vals, ts)
    else:
        ends = np.append(starts[1:], n)
        out = pa.concat_arrays([one(vals.slice(a, b - a), None if ts is None else ts.slice(a, b - a))
                                for a, b in zip(starts, ends)])
    if spec.time and n:
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
        self.halo_key: Optional[tuple] = () if halo is not None else None
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
        self.last_checked: Optional[tuple] = None

    def _ts(self, t: pa.Table) -> pa.Array:
        from slidewise import _time

        col = t.column(self.order)
        ts, unit_ns, typ = _time.time_column(col, f"order column {self.order!r}")
        if self.unit_ns is None:
            self.unit_ns, self.ts_type = unit_ns, typ
            for s in self.specs:
                s.units = _time.to_units("window", _time.duration_ns("window", s.window), unit_ns)
            self.rmax = max(s.units for s in self.specs)
        return ts

    def _check_order(self, table: pa.Table) -> None:
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
                # hold back the rows of the last time: its run may go on
                cut = int(np.searchsorted(ts.to_numpy(), ts[-1].as_py(), side="left"))
                self.pending = table.slice(cut)
                if cut == 0:
                    return
                table, ts = table.slice(0, cut), ts.slice(0, cut)
            yield from self._append(table, self._interleaved(table, ts))
            return
        keycols = [table.column(k).combine_chunks() for k in self.keys]
        starts = _run_starts(keycols, n)
        ts = self._ts(table) if self.time else None
        cut = n
        if self.time and not final:
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
            ts = ts.slice(0, cut)
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
        outs = [_compute(self.sw, s, vals, ts, starts).slice(h) for s in self.specs]
        # new halo: the tail of the last run
        lo = int(starts[-1])
        if self.time:
            t = ts.to_numpy()
            j = int(np.searchsorted(t[lo:], t[-1] - self.rmax, side="right")) + lo
            self.halo = pa.table([vals.slice(j), ts.slice(j)], names=["v", "t"])
        else:
            j = max(lo, len(vals) - self.hmax)
            self.halo = pa.table([vals.slice(j)], names=["v"])
        self.halo_key = tuple(k[-1].as_py() for k in keycols)
        yield from self._append(table, outs)
        if final and self.pending is not None:
            yield from self._process(final=True)

    def _interleaved(self, table: pa.Table, ts: Optional[pa.Array]) -> List[pa.Array]:
        nk = len(self.keys)
        cols = [table.column(self.value)] + [table.column(k) for k in self.keys] + ([ts] if self.time else [])
        cur = pa.table(cols, names=["v"] + [f"k{i}" for i in range(nk)] + (["t"] if self.time else []))
        h = 0 if self.halo is None else self.halo.num_rows
        both = cur if not h else pa.concat_tables([self.halo, cur])
        ids = _key_ids(both.columns[1:1 + nk])
        vals, kid = both.column(0).combine_chunks(), pa.array(ids)
        ts = both.column("t").combine_chunks() if self.time else None
        outs = [_compute(self.sw, s, vals, ts, None, keys=kid).slice(h) for s in self.specs]
        if self.time:
            # rows in order of time: the halo is the rows within the longest range of the last time
            t = ts.to_numpy()
            self.halo = both.slice(int(np.searchsorted(t, t[-1] - self.rmax, side="right")))
        else:
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
    table} prepended to the partition's rows. ``forward``: a broadcast
    _forward_heads plan (unkeyed, count windows, assume_sorted)."""
    target_rows = _CHUNK_ROWS if target_rows is None else target_rows

    def fn(it):
        sw = _import_slidewise()
        halo = None
        skip = 0
        if halos is not None or forward is not None:
            from pyspark import TaskContext

            pid = TaskContext.get().partitionId()
        if halos is not None:
            raw = halos.value.get(pid)
            if raw is not None:
                halo = _from_ipc(raw)
            elif not keys:
                halo = pa.table({"v": pa.array([], pa.float64())})
        if forward is not None:
            it, skip = _forwarded(it, forward.value.get(pid), check)
        # halos with keys: the keyed ordered path, keys interleaved in the rows
        r = _Roller(sw, [_copy_spec(s) for s in specs], value, order, keys, drop, halo, target_rows,
                    interleaved=bool(keys) and halos is not None)
        r.check = check
        out = (o for b in it for o in r.feed(b))
        for o in itertools.chain(out, r.finish()):
            if skip:  # the partition's first rows: its predecessor emitted them
                cut = min(skip, o.num_rows)
                o, skip = o.slice(cut), skip - cut
            if o.num_rows:
                yield o
    return fn


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


def _copy_spec(s: _Spec) -> _Spec:
    c = _Spec.__new__(_Spec)
    c.__dict__.update(s.__dict__)
    return c


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


def _order_step(table: pa.Table, keys: List[str], last: Optional[tuple]):
    """One batch of an order check over ``keys``: whether it is sorted,
    has no nulls there and does not start below ``last`` (the previous
    batch's last key); and its first and last key tuples."""
    kc = [table.column(k).combine_chunks() for k in keys]
    if any(c.null_count for c in kc):
        return False, None, None
    first = tuple(c[0].as_py() for c in kc)
    ok = _sorted_lex([c.to_numpy(zero_copy_only=False) for c in kc]) and (last is None or not first < last)
    return ok, first, tuple(c[-1].as_py() for c in kc)


def _tail_fn(value, order, specs, tb, by: Sequence[str] = ()):
    """Per partition: its row count, its tail (the last max(w)-1 values, or
    the rows within the longest range of its last time), and whether it is
    sorted by (order, tb...) with its first and last such key (pickled).
    With key columns ``by``, a (v, k0, k1, ...[, t]) table: for count
    windows the last max(w)-1 values of each key."""
    time = specs[0].time
    keys = [order, *tb]

    def fn(it):
        from pyspark import TaskContext

        _import_slidewise()
        from slidewise import _time

        pid = TaskContext.get().partitionId()
        tail = None
        n = 0
        kept = 0  # rows of the per-key tail at its last trim
        ok, first, last = True, None, None
        hmax = None if time else max(s.window for s in specs) - 1
        for b in it:
            if not b.num_rows:
                continue
            n += b.num_rows
            t = pa.Table.from_batches([b])
            if ok:
                ok, lo, last = _order_step(t, keys, last)
                first = lo if first is None else first
            cols = [t.column(value)] + [t.column(k) for k in by]
            names = ["v"] + [f"k{i}" for i in range(len(by))]
            if time:
                ts, unit_ns, _ = _time.time_column(t.column(order), f"order column {order!r}")
                cols.append(ts)
                names.append("t")
            cur = pa.table(cols, names=names)
            tail = cur if tail is None else pa.concat_tables([tail, cur])
            if time:
                rmax = max(_time.to_units("window", _time.duration_ns("window", s.window), unit_ns) for s in specs)
                tv = tail.column("t").to_numpy()
                j = int(np.searchsorted(tv, tv[-1] - rmax, side="right"))
                tail = tail.slice(j)
            elif by:
                # trimming costs a grouping of all rows held: do it when
                # they are well above the last trimmed size
                if tail.num_rows > 2 * kept + (1 << 20):
                    tail = _trim_keyed(tail, hmax)
                    kept = tail.num_rows
            elif tail.num_rows > hmax:
                tail = tail.slice(tail.num_rows - hmax)
        if tail is not None and by and not time:
            tail = _trim_keyed(tail, hmax)
        if tail is not None and time:
            tail = tail.replace_schema_metadata({"rmax": str(rmax)})
        payload = _to_ipc(tail.combine_chunks()) if tail is not None else b""
        yield pa.record_batch([pa.array([pid], pa.int32()), pa.array([n], pa.int64()),
                               pa.array([payload], pa.binary()),
                               pa.array([pickle.dumps((ok, first, last))], pa.binary())],
                              names=["pid", "n", "tail", "order"])
    return fn


def _halos(rows, specs, value_type: pa.DataType, keyed: bool = False) -> Dict[int, bytes]:
    """Driver: partition p's halo = the tail of everything before p (per
    key when ``keyed``: the tails are _tail_fn's per-key tables)."""
    time = specs[0].time
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
            running = _trim_keyed(running, hmax)
        elif running.num_rows > hmax:
            running = running.slice(running.num_rows - hmax)
    return out


# ---------------------------------------------------------------------------
# public API


def _schema_with(df, specs: List[_Spec], drop: List[str]):
    from pyspark.sql import types as T

    fields = [f for f in df.schema.fields if f.name not in drop]
    names = {f.name for f in fields}
    for s in specs:
        if s.name in names:
            raise ValueError(f"output column {s.name!r} already exists in the DataFrame; pass output=...")
        fields.append(T.StructField(s.name, _arrow_to_spark_type(s.arrow_type), True))
    return T.StructType(fields)


def rolling(
    df: Any,
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
) -> Any:
    """Add rolling aggregate column(s) of ``value`` to ``df``.

    ``window``: rows (int: the row and the ``w-1`` before it in
    ``(order_by, tiebreak)`` order, Spark ``rowsBetween(-(w-1), 0)``) or a
    time span (``"5s"``, ``timedelta``: rows with time in ``(t - range, t]``,
    ``order_by`` a timestamp column; ties are peers as in Spark's RANGE
    frame). ``window`` and ``agg`` may be lists: one column per (window,
    agg), named ``output`` or ``f"{agg}_{window}"``, all in one pass.
    ``partition_by``: key column(s); windows restart per key.
    ``tiebreak``: column(s) ordering rows with equal ``order_by``; default
    the input order. ``method`` (keyed only): ``"auto"`` (the default:
    input already in ``(order_by, tiebreak)`` order takes the no-shuffle
    ordered path, as unkeyed; a check pass finds out, and anything else
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
    """
    from pyspark.sql import functions as F

    if not isinstance(value, str) or value not in df.columns:
        raise ValueError(f"value column {value!r} is not in the DataFrame (columns: {df.columns})")
    if not isinstance(order_by, str) or order_by not in df.columns:
        raise ValueError(f"order_by column {order_by!r} is not in the DataFrame (columns: {df.columns})")
    keys = [] if partition_by is None else _listify(partition_by)
    for k in keys:
        if k not in df.columns:
            raise ValueError(f"partition_by column {k!r} is not in the DataFrame (columns: {df.columns})")
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    specs = _make_specs(vtype, window, agg, output, min_periods, algorithm)
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
        return _rolling_unkeyed(df, specs, value, order_by, tiebreak, num_partitions, assume_sorted)
    global _last_keyed_path
    tb = [] if tiebreak is None else _listify(tiebreak)
    for c in tb:
        if c not in df.columns:
            raise ValueError(f"tiebreak column {c!r} is not in the DataFrame")
    if method == "auto" and num_partitions is None:
        out = _rolling_keyed_ordered(df, specs, value, order_by, keys, tb)
        if out is not None:
            _last_keyed_path = "ordered"
            return out
    drop: List[str] = []
    if specs[0].time:
        tb = []  # tied times are peers sharing one value: no tiebreak needed
    elif not tb:
        tb = [_TB]
        drop = [_TB]
        df = df.withColumn(_TB, F.monotonically_increasing_id())
    schema = _schema_with(df, specs, drop)
    _last_keyed_path = method if method == "apply" else "shuffle"
    if method == "apply":
        return _rolling_apply(df, specs, value, order_by, keys, tb, drop, schema)
    parts = df.repartition(num_partitions, *keys) if num_partitions else df.repartition(*keys)
    parts = parts.sortWithinPartitions(*keys, order_by, *tb)
    return parts.mapInArrow(_roll_fn(specs, value, order_by, keys, drop), schema)


# Which keyed path the last call took ("ordered", "shuffle" or "apply"); tests read it.
_last_keyed_path: Optional[str] = None


def _groupable(dt) -> bool:
    """Key types whose Arrow equality is Spark's grouping equality (not
    float/double: Spark groups NaNs together and -0.0 with 0.0)."""
    from pyspark.sql import types as T

    return isinstance(dt, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.BooleanType,
                           T.DateType, T.TimestampType, T.TimestampNTZType))


def _rolling_keyed_ordered(df, specs, value, order_by, keys, tb):
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
    rows = _check_pass(df, value, order_by, specs, [] if time else tb, keys)
    if not _in_order(rows, strict_ties=time):
        return None
    vtype = _spark_type_to_arrow(df.schema[value].dataType)
    halos = _halos([(r.pid, r.n, r.tail) for r in rows], specs, vtype, keyed=True)
    halos = df.sparkSession.sparkContext.broadcast(halos)
    return df.mapInArrow(_roll_fn(specs, value, order_by, keys, [], halos), _schema_with(df, specs, []))


def _rolling_apply(df, specs, value, order_by, keys, tb, drop, schema):
    sort_keys = [order_by] + tb

    def fn(table: pa.Table) -> pa.Table:
        sw = _import_slidewise()
        table = table.sort_by([(c, "ascending") for c in sort_keys])
        r = _Roller(sw, [_copy_spec(s) for s in specs], value, order_by, [], drop, None, target_rows=1 << 62)
        r.buf = table.to_batches()
        r.nbuf = table.num_rows
        out = list(r.finish())
        return pa.Table.from_batches(out, schema=None) if out else table.slice(0, 0)

    return df.groupBy(*keys).applyInArrow(fn, schema)


# Which unkeyed path the last call took; tests read it. "assumed"
# (assume_sorted) or "planned" (Spark's plan knows the order): no check pass,
# halos from each partition's first rows ("-tails": from two JVM jobs);
# "ordered": a check pass found the input in order; "range": shuffled.
_last_unkeyed_path: Optional[str] = None


def _rolling_unkeyed(df, specs, value, order_by, tiebreak, num_partitions, assume_sorted=False):
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
    global _last_unkeyed_path
    from pyspark.sql import functions as F

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
            _last_unkeyed_path = name
            return df.mapInArrow(_roll_fn(specs, value, order_by, [], [], check=[order_by, *tb],
                                          forward=spark.sparkContext.broadcast(plan) if plan else None),
                                 _schema_with(df, specs, []))
        if plan is None:
            # Too much to collect, or a short partition before others: two
            # JVM jobs give the tails and each partition's order range; the
            # partitions must follow one another, else the shuffle path runs.
            halos, stats = _count_halos(df, value, hmax, order_by)
            if _ranges_in_sequence(stats, strict=bool(tb)):
                _last_unkeyed_path = name + "-tails"
                halos = spark.sparkContext.broadcast(halos)
                return df.mapInArrow(_roll_fn(specs, value, order_by, [], [], halos, check=[order_by, *tb]),
                                     _schema_with(df, specs, []))
    if num_partitions is None and not assumed:
        rows = _check_pass(df, value, order_by, specs, tb)
        if _in_order(rows, strict_ties=specs[0].time):
            _last_unkeyed_path = "ordered"
            halos = spark.sparkContext.broadcast(_halos([(r.pid, r.n, r.tail) for r in rows], specs, vtype))
            return df.mapInArrow(_roll_fn(specs, value, order_by, [], [], halos), _schema_with(df, specs, []))
    _last_unkeyed_path = "range"
    drop: List[str] = []
    if not tb and not specs[0].time:
        tb, drop = [_TB], [_TB]
        df = df.withColumn(_TB, F.monotonically_increasing_id())
    if specs[0].time:
        tb = []  # tied times are peers sharing one value: no tiebreak needed
    schema = _schema_with(df, specs, drop)
    n = num_partitions or spark.sparkContext.defaultParallelism
    parts = df.repartitionByRange(n, order_by).sortWithinPartitions(order_by, *tb)
    parts = parts.localCheckpoint(eager=True)
    if specs[0].time:
        tschema = _TAIL_SCHEMA
        rows = parts.select(value, order_by).mapInArrow(_tail_fn(value, order_by, specs, []), tschema).collect()
        halos = _halos([(r.pid, r.n, r.tail) for r in rows], specs, vtype)
    else:
        halos, _ = _count_halos(parts, value, max(s.window for s in specs) - 1)
    halos = spark.sparkContext.broadcast(halos)
    return parts.mapInArrow(_roll_fn(specs, value, order_by, [], drop, halos), schema)


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


def _ranges_in_sequence(stats: Dict[int, tuple], strict: bool) -> bool:
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


def _check_pass(df, value, order_by, specs, tb, by: Sequence[str] = ()):
    """Run _tail_fn over the input as it is: one row per partition."""
    spark = df.sparkSession
    cols = list(dict.fromkeys([value, order_by, *tb, *by]))
    # Unless the batch size was set explicitly, larger Arrow batches for
    # this pass only (it returns one row per partition): about half the
    # time of the default 10k rows.
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    explicit = spark.conf.get(key, None) is not None
    if not explicit:
        spark.conf.set(key, "200000")
    try:
        return df.select(*cols).mapInArrow(_tail_fn(value, order_by, specs, tb, by), _TAIL_SCHEMA).collect()
    finally:
        if not explicit:
            spark.conf.unset(key)


# What _tail_fn returns per partition (DDL, so no pyspark import here).
_TAIL_SCHEMA = "pid int, n bigint, tail binary, `order` binary"


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
    from pyspark.sql import functions as F

    if hmax == 0:
        return {}
    if df.rdd.getNumPartitions() * hmax > _FORWARD_ROWS:
        return None
    cols = df.columns
    pos = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1))
    heads = (df.select("*", F.spark_partition_id().alias(_PID), pos.alias(_POS))
             .filter(F.col(_POS) < hmax).toArrow())
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
    from pyspark.sql import functions as F

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


# ---------------------------------------------------------------------------
# window aggregates


def aggregate(df: Any, query_or_queries: Any, value: str, time: str, key: Union[None, str, Sequence[str]] = None,
              tiebreak: Union[None, str, Sequence[str]] = None, algorithm: str = "auto") -> Any:
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
    queries = [query_or_queries] if single else list(query_or_queries)
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


def _agg_fn(qspec, keys, value, time, is_time, algorithm, vcols):
    """Per sorted partition: one slidewise.Stream per key run, flushed at
    the key's end; rows (query index, key..., window_start, window_end,
    one value column per output type)."""

    def fn(it):
        sw = _import_slidewise()
        qs = [q for _, q, _ in qspec]
        tcol = time if is_time else None
        stream, cur_key, ktypes = None, None, None

        def emit(results, key):
            for i, q, vc in qspec:
                t = results[q.name]
                m = t.num_rows
                if not m:
                    continue
                arrs = [pa.array(np.full(m, i, dtype=np.int32))]
                arrs += [pa.array([kv] * m, type=kt) for kv, kt in zip(key, ktypes)]
                ws, we = t.column("window_start").combine_chunks(), t.column("window_end").combine_chunks()
                if is_time:
                    ws, we = ws.cast(ttype), we.cast(ttype)
                arrs += [ws, we]
                for name, typ in vcols:
                    arrs.append(t.column("value").combine_chunks().cast(typ) if name == vc else pa.nulls(m, typ))
                yield pa.RecordBatch.from_arrays(arrs, names=["__q"] + keys + ["window_start", "window_end"] +
                                                 [n for n, _ in vcols])

        for b in it:
            t = pa.Table.from_batches([b])
            ktypes = [t.schema.field(k).type for k in keys]
            ttype = t.schema.field(time).type
            n = t.num_rows
            starts = _run_starts([t.column(k).combine_chunks() for k in keys], n)
            ends = np.append(starts[1:], n)
            for a, e in zip(starts, ends):
                seg = t.slice(int(a), int(e - a))
                key = tuple(seg.column(k)[0].as_py() for k in keys)
                if stream is None or key != cur_key:
                    if stream is not None:
                        yield from emit(stream.flush(), cur_key)
                    stream = sw.Stream(qs, value=value, time=tcol, algorithm=algorithm)
                    cur_key = key
                yield from emit(stream.push(seg), key)
        if stream is not None:
            yield from emit(stream.flush(), cur_key)
    return fn


def stream_aggregate(df: Any, queries: Any, value: str, time: str, key: Union[str, Sequence[str]],
                     watermark: Optional[str] = None) -> Any:
    """Structured Streaming: time-window or session-window queries per key,
    as Spark's own streaming ``groupBy(key, F.window(...))`` /
    ``groupBy(key, F.session_window(...))`` in append mode, with each key's
    state in Spark (transformWithStateInPandas); see
    :mod:`slidewise._spark_stream`."""
    from slidewise import _spark_stream

    return _spark_stream.stream_aggregate(df, queries, value, time, key, watermark)
