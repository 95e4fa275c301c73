"""Count-window median / quantile / rank queries of a ``Stream``
(docs/DESIGN.md §5.10). They are not monoids, so they cannot share the
core stream's partials: each push runs the rolling order-statistic kernel
over the kept tail of every key plus the new rows, and reads the rows
where a window ends. The state is that tail (the last ``max(range)`` rows
of each key) and each key's row count, so memory follows the windows, and
a push costs O((rows + tail) log range), not a re-sort per window.

Windows are the core stream's count windows (``stream/count.rs``): after
the ``e``-th row of a key with ``e % slide == 0``, the statistic over rows
``[max(0, e - range), e)``; ``flush`` emits the window the next slide would
close, cut to the rows that arrived."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _slidewise
from ._query import Query


# One query's windows: (keys or None unkeyed, window_start, window_end, value).
Windows = Tuple[Optional[pa.Array], pa.Array, pa.Array, pa.Array]


class OrderQueries:
    """The order-statistic queries of one stream and their state."""

    def __init__(self, queries: List[Query]) -> None:
        self.queries = queries
        self.keep = max(q.range for q in queries)
        self.tail_v: Optional[pa.Array] = None  # kept rows, in arrival order
        self.tail_k: Optional[pa.Array] = None  # their keys (keyed streams)
        # rows seen per key, in order of each key's first row in the stream
        # (unkeyed: the one key None)
        self.seen: Dict[object, int] = {}
        self.flushed = False

    @property
    def rows(self) -> int:
        return sum(self.seen.values())

    def push(self, values: pa.Array, keys: Optional[pa.Array]) -> List[Windows]:
        """Per query, (keys, window_start, window_end, value) of the windows
        these rows closed, keys in order of their first row in the batch,
        each key's windows in order."""
        if self.flushed:
            raise ValueError("this stream was flushed (end of stream); pushing after a flush is an error")
        n_tail = 0 if self.tail_v is None else len(self.tail_v)
        v = values if self.tail_v is None else pa.concat_arrays([self.tail_v, values.cast(self.tail_v.type)])
        k = keys if self.tail_k is None or keys is None else pa.concat_arrays([self.tail_k, keys.cast(self.tail_k.type)])
        uniq, codes = _codes(k, len(v))
        ulist = uniq.to_pylist() if uniq is not None else [None]
        # each row's number within its key (1-based, over the whole stream)
        order = np.argsort(codes, kind="stable")
        sc = codes[order]
        starts = np.flatnonzero(np.append(True, sc[1:] != sc[:-1]))
        sizes = np.diff(np.append(starts, len(sc)))
        pos = np.arange(len(sc)) - np.repeat(starts, sizes)
        in_tail = np.bincount(codes[:n_tail], minlength=len(ulist))
        base = np.array([self.seen.get(u, 0) for u in ulist], dtype=np.int64) - in_tail
        count = np.empty(len(v), dtype=np.int64)
        count[order] = base[sc] + pos + 1
        # batch rows in output order: by their key's first row in the batch
        brow = np.arange(n_tail, len(v))
        bcodes = codes[n_tail:]
        first = np.full(len(ulist), len(v), dtype=np.int64)
        np.minimum.at(first, bcodes, brow)
        out_order = brow[np.lexsort((brow, first[bcodes]))]
        key_arg = None if keys is None else pa.array(codes)
        results: List[Windows] = []
        for q in self.queries:
            sel = out_order[count[out_order] % q.slide == 0]
            val = _slidewise.rolling_order(v, [q.range], q.agg, q.q, q.interpolation, q.min_periods, "auto",
                                           key_arg)[0]
            end = count[sel]
            results.append((None if k is None else k.take(pa.array(sel)),  # k is None iff keys is
                            pa.array(np.maximum(end - q.range, 0)), pa.array(end), val.take(pa.array(sel))))
        # the state: counts (new keys in order of their first row) and tails
        per = np.bincount(bcodes, minlength=len(ulist))
        for c in np.argsort(first, kind="stable"):
            if per[c]:
                self.seen[ulist[c]] = int(base[c] + in_tail[c] + per[c])
        # the new tail: each key's last `keep` rows, in arrival order
        keep_sorted = (np.repeat(sizes, sizes) - pos) <= self.keep
        rows = np.sort(order[keep_sorted])
        self.tail_v = v.take(pa.array(rows))
        self.tail_k = None if k is None else k.take(pa.array(rows))
        return results

    def flush(self) -> List[Windows]:
        """The last, partial window of each key (window_end = its rows);
        nothing at a second flush."""
        results: List[Windows] = []
        seen = {} if self.flushed else self.seen
        self.flushed = True
        uniq, codes = _codes(self.tail_k, 0 if self.tail_v is None else len(self.tail_v))
        ulist = uniq.to_pylist() if uniq is not None else [None]
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(ulist) + 1))
        where = {u: order[bounds[i]:bounds[i + 1]] for i, u in enumerate(ulist)}
        for q in self.queries:
            ks, ss, es, vs = [], [], [], []
            for u, n in seen.items():
                nxt = -(-n // q.slide) * q.slide
                start = max(0, nxt - q.range)
                if n % q.slide == 0 or start >= n:
                    continue
                rows = where[u][-(n - start):]
                assert self.tail_v is not None  # a key with rows seen has a tail
                val = _slidewise.rolling_order(self.tail_v.take(pa.array(rows)), [q.range], q.agg, q.q,
                                               q.interpolation, q.min_periods, "auto", None)[0]
                ks.append(u)
                ss.append(start)
                es.append(n)
                vs.append(val[len(rows) - 1].as_py())
            keys = None if self.tail_k is None else pa.array(ks, self.tail_k.type)
            results.append((keys, pa.array(ss, pa.int64()), pa.array(es, pa.int64()), pa.array(vs, pa.float64())))
        return results


def _codes(k: Optional[pa.Array], n: int) -> Tuple[Optional[pa.Array], np.ndarray]:
    """(distinct keys, each row's index into them); unkeyed: (None, zeros)."""
    if k is None:
        return None, np.zeros(n, dtype=np.int64)
    uniq = pc.unique(k)
    return uniq, pc.index_in(k, value_set=uniq).to_numpy(zero_copy_only=False).astype(np.int64)
