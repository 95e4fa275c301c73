"""The keyed ordered path without a check pass: Parquet files in time order
(``"parquet-tails"``).

When the DataFrame is a plain Parquet scan (no filter, no partition
columns, local ``file:`` paths), the driver reads, without a Spark job,
which file splits each Spark partition reads (the scan's FilePartitions,
via py4j) and each file's footer (row-group row counts, min / max of the
order column): :func:`_parquet_layout`. From these it knows whether the
files follow one another in order and how many rows each split gives.

Each task (:func:`_parquet_udf_fn`, a scalar iterator ``arrow_udf`` over
(value, keys)) then, for each split it reads:

* reads the split's own order, tiebreak and key columns with pyarrow and
  checks them: sorted, no nulls, the first row not below the last row
  before the split in the global order, and the keys equal, row for row, to
  the keys Spark hands over (so the rows are the ones the layout says);
  a violation raises ValueError, never a wrong answer;
* reads its halo directly from the Parquet files: the row groups before the
  split, backwards, (value, keys) of the keys the split holds, until each
  has ``max(w) - 1`` rows or the first file is reached;
* runs the keyed rolling over its rows with that halo (``_Roller``,
  interleaved keys), as the ``"ordered"`` path.

Anything else (a filter, a projection that computes, not Parquet, files
overlapping in time, missing statistics, nulls in the order columns, types
other than the ones below) returns None: the caller falls back to the check
pass (``"ordered"``) or the shuffle. Row groups whose ranges of the order
column overlap (rows in random order) raise :class:`_Overlapping`: the
caller goes to the shuffle without a check pass (2M rows in random order,
AMD EPYC, local[2]: the check pass cost 0.9-2 s of the job's 5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa

from . import _kernels
from ._kernels import _canon_key, _key_ids, _Roller, _sorted_lex
from ._ship import _import_slidewise
from ._specs import _copy_spec, _is_connect, _Spec

if TYPE_CHECKING:
    from pyspark import Broadcast
    from pyspark.sql import DataFrame

# Plan nodes between the DataFrame and its Parquet scan that keep every
# row in place (a ProjectExec only when it merely selects columns).
_PASS_THROUGH = ("WholeStageCodegenExec", "ColumnarToRowExec", "InputAdapter")


class _Overlapping(Exception):
    """Raised by :func:`_parquet_layout` where two row groups' ranges of the
    order column overlap (beyond a shared end): the rows are not a few
    sorted runs one after another (files in random order), so the caller
    takes the shuffle path without a check pass, which would find the same
    after a Spark job. Were each row group several runs that interleave,
    the check pass could have found an order; then only speed is lost."""


# The driver's plan (:func:`_parquet_layout`): the files in the global order,
# each (path, [rows per row group]), and per Spark partition its splits, each
# (rows, file index, first row group, end row group, tied).
_Files = List[Tuple[str, List[int]]]
_Split = Tuple[int, int, int, int, bool]
_Layout = Tuple[_Files, Dict[int, List[_Split]]]


def _scan_splits(df: DataFrame) -> Optional[List[List[Tuple[str, int, int]]]]:
    """Per Spark partition, the (local path, start, length) file splits it
    reads, in order; None unless the physical plan is a plain Parquet scan
    (and over Spark Connect, whose client cannot read the physical plan)."""
    if _is_connect(df.sparkSession):
        return None
    try:
        p = df._jdf.queryExecution().executedPlan()
        while p.getClass().getSimpleName() != "FileSourceScanExec":
            name = p.getClass().getSimpleName()
            if name == "ProjectExec":
                plist = p.projectList()
                if any(plist.apply(i).getClass().getSimpleName() != "AttributeReference"
                       for i in range(plist.size())):
                    return None
            elif name not in _PASS_THROUGH:
                return None
            p = p.children().apply(0)
        rel = p.relation()
        if (rel.fileFormat().getClass().getSimpleName() != "ParquetFileFormat" or p.dataFilters().size()
                or p.partitionFilters().size() or rel.partitionSchema().size() or rel.bucketSpec().isDefined()):
            return None
        out: List[List[Tuple[str, int, int]]] = []
        for fp in p.inputRDD().partitions():
            files: List[Tuple[str, int, int]] = []
            for f in fp.files():
                u = urlparse(f.filePath().toString())
                if u.scheme != "file":
                    return None  # executors read the files with pyarrow: local paths only
                files.append((unquote(u.path), int(f.start()), int(f.length())))
            out.append(files)
        return out
    except Exception:  # Spark Connect (no _jdf), another Spark, an unexpected plan
        return None


def _int_like(t: pa.DataType) -> bool:
    ok: bool = pa.types.is_signed_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date32(t)
    return ok


def _key_like(t: pa.DataType) -> bool:
    ok: bool = (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
                or pa.types.is_large_string(t) or pa.types.is_boolean(t))
    return ok


def _parquet_layout(df: DataFrame, value: str, order_by: str, tb: List[str], keys: List[str]) -> Optional[_Layout]:
    """The driver's plan: ``(files, parts)`` with ``files`` [(path, [rows per
    row group])] in the global order and ``parts`` {partition: [(rows, file
    index, first row group, end row group, tied)]} in the order the
    partition reads its splits (splits of no rows left out; ``tied``: its
    first order value equals the last one before it, so the task compares
    the two rows' tiebreak columns); None when the path does not apply
    (see the module docstring). Raises :class:`_Overlapping` where the
    footers show the rows out of order."""
    import pyarrow.parquet as pq

    splits = _scan_splits(df)
    if splits is None:
        return None
    order = [order_by, *tb]
    cols = list(dict.fromkeys([value, *order, *keys]))
    meta: Dict[str, Any] = {}  # path -> pyarrow's FileMetaData
    schema: Optional[pa.Schema] = None
    try:
        for path in dict.fromkeys(f for part in splits for f, _, _ in part):
            pf = pq.ParquetFile(path)
            s = pf.schema_arrow
            if any(s.get_field_index(c) < 0 for c in cols):
                return None  # another name (Spark matches columns case-insensitively), a nested column
            s = pa.schema([s.field(c) for c in cols])
            if schema is None:
                schema = s
            elif not s.equals(schema):
                return None  # files of different types
            meta[path] = pf.metadata
    except Exception:  # unreadable here, not Parquet after all
        return None
    if not meta:
        return None
    assert schema is not None  # set by the first file
    if not all(_int_like(schema.field(c).type) for c in order) \
            or not all(_key_like(schema.field(k).type) for k in keys) \
            or not (pa.types.is_integer(schema.field(value).type) or pa.types.is_floating(schema.field(value).type)):
        return None
    # Per file and row group: rows, midpoint (Parquet's split rule: a split
    # reads the row groups whose midpoint lies in [start, start + length)),
    # min and max of the order column (exact first / last when the file is
    # sorted, which each task verifies).
    groups: Dict[str, List[Tuple[int, int, Any, Any, Tuple[Any, ...]]]] = {}
    for path, md in meta.items():
        names = [md.schema.column(i).path for i in range(md.num_columns)]
        oi = names.index(order_by)
        ti = [names.index(c) for c in order]
        if any(md.schema.column(i).physical_type not in ("INT32", "INT64") for i in ti):
            return None  # INT96 timestamps: no usable statistics
        rgs = []
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            st = rg.column(oi).statistics
            if any(rg.column(i).statistics is None or rg.column(i).statistics.null_count != 0 for i in ti) \
                    or st is None or not st.has_min_max:
                return None
            c0 = rg.column(0)
            start = c0.data_page_offset
            if c0.has_dictionary_page and c0.dictionary_page_offset is not None:
                start = min(start, c0.dictionary_page_offset)
            size = sum(rg.column(i).total_compressed_size for i in range(rg.num_columns))
            tbs = [rg.column(names.index(c)).statistics for c in tb]
            if not all(x.has_min_max for x in tbs):
                return None
            rgs.append((rg.num_rows, start + size // 2, st.min_raw, st.max_raw, tuple(x.min_raw for x in tbs)))
        groups[path] = rgs
    spans = sorted((g[2], g[3]) for rgs in groups.values() for g in rgs)
    top = None  # the largest end of the spans before
    for lo, hi in spans:
        if top is not None and lo < top:
            raise _Overlapping(f"order column {order_by!r}: row groups of the Parquet files overlap")
        top = hi if top is None else max(top, hi)
    if any(a[3] > b[2] for rgs in groups.values() for a, b in zip(rgs, rgs[1:])):
        return None  # a file's row groups out of order
    # each split's row groups; every row group read exactly once
    where: Dict[Tuple[str, int], Tuple[int, int, int, int]] = {}
    seen = {p: 0 for p in groups}
    for pid, part in enumerate(splits):
        for i, (path, start, length) in enumerate(part):
            gs = [g for g, r in enumerate(groups[path]) if start <= r[1] < start + length]
            if gs and gs != list(range(gs[0], gs[-1] + 1)):
                return None
            seen[path] += len(gs)
            if gs:
                where[(path, gs[0])] = (pid, i, gs[0], gs[-1] + 1)
    if any(seen[p] != len(groups[p]) for p in groups):
        return None
    # the files in order: by first and last order value, then by the first
    # tiebreak value (a file of one time) or, default tiebreak (the input
    # order), by the position Spark reads them at
    nonempty = [p for p in groups if groups[p]]
    first_read = {p: min(v[:2] for (q, _), v in where.items() if q == p) for p in nonempty}
    files = sorted(nonempty, key=lambda p: (groups[p][0][2], groups[p][-1][3],
                                            groups[p][0][4] if tb else first_read[p], p))
    by_file: Dict[str, List[Tuple[int, int, int, int]]] = {}
    for k in sorted(where):
        by_file.setdefault(k[0], []).append(where[k])
    seq = [(p, w) for p in files for w in by_file[p]]
    tied: Set[Tuple[str, int]] = set()  # splits whose first order value ties with the last before them
    for (pa_, a), (pb, b) in zip(seq, seq[1:]):
        last, first = groups[pa_][a[3] - 1][3], groups[pb][b[2]][2]
        if last > first:
            return None  # files overlapping in time
        if last == first and not tb and (b[0], b[1]) < (a[0], a[1]):
            return None  # tied across splits that Spark reads in the other order
        if last == first:
            tied.add((pb, b[2]))
    index = {p: j for j, p in enumerate(files)}
    parts: Dict[int, List[_Split]] = {}
    for p, (pid, i, lo, hi) in sorted(seq, key=lambda s: (s[1][0], s[1][1])):
        parts.setdefault(pid, []).append((sum(r[0] for r in groups[p][lo:hi]), index[p], lo, hi,
                                          bool(tb) and (p, lo) in tied))
    return [(p, [r[0] for r in groups[p]]) for p in files], parts


def _parquet_udf_fn(specs: List[_Spec], value: str, order: List[str], keys: List[str],
                    layout: Broadcast[_Layout]) -> Callable[[Iterator[Any]], Iterator[pa.Array]]:
    """The executor function (scalar iterator ``arrow_udf`` over (value,
    key...)): each split's rows checked against its Parquet file and
    computed with the halo read from the files before it (module
    docstring). ``layout``: a broadcast of :func:`_parquet_layout`."""
    names = ["__slidewise_v"] + [f"__slidewise_k{i}" for i in range(len(keys))]
    fields = [pa.field(s.name, s.arrow_type) for s in specs]
    hmax = max(s.window for s in specs) - 1
    chunk = _kernels._CHUNK_ROWS  # read now: tests set it small

    def fn(it: Iterator[Any]) -> Iterator[pa.Array]:
        from pyspark import TaskContext

        sw = _import_slidewise()
        files, parts = layout.value
        ctx = TaskContext.get()
        assert ctx is not None  # on an executor, in a task
        runs = parts.get(ctx.partitionId(), [])
        reader = _Reader(files, value, order, keys)
        batches = (pa.RecordBatch.from_arrays(list(c) if isinstance(c, (tuple, list)) else [c], names=names)
                   for c in it)
        j, left = -1, 0
        r: Optional[_Roller] = None
        own: List[pa.Array] = []  # set with r, at the first row
        for b in batches:
            off, m = 0, b.num_rows
            while off < m:
                if not left:
                    if r is not None:
                        yield from _structs(r.finish(), fields)
                    j += 1
                    if j >= len(runs):
                        raise ValueError(_CHANGED_FILES)
                    left, f, lo, hi, tied = runs[j]
                    own = reader.own(f, lo, hi, b.schema, tied)
                    halo = reader.halo(f, lo, own, hmax, b.schema)
                    r = _Roller(sw, [_copy_spec(s) for s in specs], names[0], names[0], names[1:], [], halo,
                                chunk, interleaved=True)
                    done = 0
                c = min(left, m - off)
                piece = b if c == m else b.slice(off, c)
                # the rows Spark hands over are the split's rows: the same keys, row for row
                for i in range(len(keys)):
                    mine = own[i].slice(done, c)
                    if not _canon_key(piece.column(i + 1)).equals(mine):
                        raise ValueError(_CHANGED_FILES)
                assert r is not None  # made at the first row (left was 0)
                yield from _structs(r.feed(piece), fields)
                off, left, done = off + c, left - c, done + c
        if left or j != len(runs) - 1:
            raise ValueError(_CHANGED_FILES)
        if r is not None:
            yield from _structs(r.finish(), fields)
    # the type hints tell arrow_udf the kind: iterator of array tuples to iterator of arrays
    fn.__annotations__ = {"it": Iterator[Tuple[pa.Array, ...]], "return": Iterator[pa.Array]}
    return fn


def _structs(batches: Iterable[pa.RecordBatch], fields: List[pa.Field]) -> Iterator[pa.StructArray]:
    for o in batches:
        if o.num_rows:
            yield pa.StructArray.from_arrays([o.column(f.name) for f in fields], fields=fields)


_CHANGED_FILES = ("slidewise.spark.rolling: the rows Spark read differ from the Parquet files the plan was made "
                  "from (files changed since?); make the plan again")
_UNSORTED = ("slidewise.spark.rolling: the Parquet files are not in order of {cols} inside (or hold nulls "
             "there), though their statistics say they follow one another; sort them, or pass a tiebreak "
             "column that orders tied rows as the files do")


class _Reader:
    """A task's reads of the Parquet files (``files`` in the global order)."""

    def __init__(self, files: _Files, value: str, order: List[str], keys: List[str]) -> None:
        import pyarrow.parquet as pq

        self.pq, self.files, self.value, self.order, self.keys = pq, files, value, order, keys
        self.open: Dict[str, Any] = {}  # path -> pyarrow's ParquetFile

    def _read(self, f: int, lo: int, hi: int, cols: List[str]) -> pa.Table:
        path = self.files[f][0]
        if path not in self.open:
            self.open[path] = self.pq.ParquetFile(path)
        return self.open[path].read_row_groups(range(lo, hi), columns=cols, use_threads=False)

    def _order(self, t: pa.Table) -> List[np.ndarray]:
        cols = [t.column(c).combine_chunks() for c in self.order]
        if any(c.null_count for c in cols):
            raise ValueError(_UNSORTED.format(cols=self.order))
        return [c.cast(pa.int64()).to_numpy() for c in cols]

    def own(self, f: int, lo: int, hi: int, schema: pa.Schema, tied: bool) -> List[pa.Array]:
        """The split's canonical keys (typed as Spark's batches, ``schema``),
        after checking its rows are sorted and, when its first order value
        ties with the last before it (``tied``), start at or after the row
        before them in the global order. (Untied, the statistics already
        say so: each row group's min and max are its first and last values
        once its task has checked it sorted.)"""
        t = self._read(f, lo, hi, list(dict.fromkeys([*self.order, *self.keys])))
        o = self._order(t)
        if not _sorted_lex(o):
            raise ValueError(_UNSORTED.format(cols=self.order))
        prev = self._before(f, lo) if tied else None
        if prev is not None:
            p = self._order(self._read(*prev, prev[1] + 1, self.order))
            last = tuple(int(c[-1]) for c in p)
            if tuple(int(c[0]) for c in o) < last:
                raise ValueError(_UNSORTED.format(cols=self.order))
        return [_canon_key(t.column(k).cast(schema.field(i + 1).type)) for i, k in enumerate(self.keys)]

    def _before(self, f: int, g: int) -> Optional[Tuple[int, int]]:
        """The (file, row group) before (f, g) in the global order."""
        while True:
            if g > 0:
                return f, g - 1
            f -= 1
            if f < 0:
                return None
            g = len(self.files[f][1])

    def halo(self, f: int, g: int, own: List[pa.Array], hmax: int, schema: pa.Schema) -> Optional[pa.Table]:
        """(v, k0, ...) of the last ``hmax`` rows before (f, g) of each key
        in ``own``, read backwards a row group at a time; types as Spark's
        batches (``schema``: value, keys)."""
        if hmax == 0:
            return None
        nk = len(self.keys)
        kn = [f"k{i}" for i in range(nk)]
        want = pa.table(own, names=kn)
        ids = _key_ids(want.columns)
        first = np.empty(ids.max() + 1, dtype=np.int64)
        first[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)  # the last write wins: each key's first row
        want = want.take(pa.array(first))  # the split's distinct keys
        m = want.num_rows
        counts = np.zeros(m, dtype=np.int64)
        got: List[pa.Table] = []
        at = self._before(f, g)
        while at is not None and (counts < hmax).any():
            kt = self._read(*at, at[1] + 1, list(dict.fromkeys(self.keys)))
            kc = [_canon_key(kt.column(k).cast(schema.field(i + 1).type)) for i, k in enumerate(self.keys)]
            both = _key_ids([pa.concat_arrays([want.column(i).combine_chunks(), kc[i]]) for i in range(nk)])
            lookup = np.full(both.max() + 1, -1, dtype=np.int64)
            lookup[both[:m]] = np.arange(m)
            pos = lookup[both[m:]]
            keep, took = _last_of_key(pos, hmax - counts)
            if took.any():
                v = self._read(*at, at[1] + 1, [self.value]).column(0).combine_chunks()
                rows = pa.table([v.cast(schema.field(0).type)] + kc, names=["v"] + kn).filter(pa.array(keep))
                got.append(rows)
                counts += took
            at = self._before(*at)
        if not got:
            return None
        return pa.concat_tables(got[::-1]).combine_chunks()


def _last_of_key(pos: np.ndarray, quota: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Mask of the rows among the last ``quota[pos]`` rows of their key
    (``pos``: the key's index, -1 for rows of no wanted key), and how many
    rows each key got."""
    idx = np.flatnonzero(pos >= 0)
    p = pos[idx]
    counts = np.bincount(p, minlength=len(quota))
    # each key's rows in order (16-bit ids: numpy's radix sort)
    order = np.argsort(p.astype(np.uint16) if len(quota) <= 1 << 16 else p, kind="stable")
    ends = np.cumsum(counts)
    rank = np.empty(len(p), dtype=np.int64)
    rank[order] = ends[p[order]] - 1 - np.arange(len(p))  # 0 for a key's last row
    keep = np.zeros(len(pos), dtype=bool)
    keep[idx[rank < quota[p]]] = True
    return keep, np.minimum(counts, np.maximum(quota, 0))
