"""Structured Streaming: per-key slidewise Streams in Spark state.

``stream_aggregate`` runs ``groupBy(key).transformWithStateInPandas`` with
one value state per key holding a pickled :class:`slidewise.Stream` plus the
rows not yet behind the watermark. Rows are pushed in event-time order once
the watermark has passed them (so rows arriving out of order within the
watermark delay are placed correctly; rows behind the watermark are late and
dropped, as in Spark's own windowed aggregation); a window is emitted once
the watermark passes its end (append mode). An event-time timer at the end
of the last window a key's rows touch emits that key's windows even when the
key gets no more rows. The state is bytes, so a query restarted from its
checkpoint continues exactly where it stopped.

Spark passes the rows to pandas with null doubles as NaN, so NaN values are
read as nulls (skipped) here, unlike the batch functions.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any, Iterator, List, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyarrow as pa

try:
    from pyspark.sql.streaming import StatefulProcessor
except ImportError:  # pragma: no cover - pyspark < 4
    StatefulProcessor = object  # type: ignore


def _ms(col: pd.Series) -> np.ndarray:
    """event times -> int64 microseconds since the epoch"""
    t = pd.to_datetime(col, utc=True)
    return ((t - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(microseconds=1)).to_numpy(np.int64)


class _Processor(StatefulProcessor):
    def __init__(self, queries, value: str, time: str, keys: List[str]):
        # queries travel as bytes: unpickled after the shipped slidewise is importable
        self._qbytes, self.value, self.time, self.keys = pickle.dumps(queries), value, time, keys

    def init(self, handle) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        from slidewise.spark import _import_slidewise

        _import_slidewise()
        self.queries = pickle.loads(self._qbytes)

        self.handle = handle
        self.state = handle.getValueState("slidewise", StructType([StructField("b", BinaryType())]))

    # state: stream, pending rows (t_us, v), final_us (all rows <= it pushed), emitted end per query
    def _load(self):
        if self.state.exists():
            return pickle.loads(self.state.get()[0])
        import slidewise as sw

        return {"stream": sw.Stream(self.queries, value="v", time="ts"), "t": np.empty(0, np.int64),
                "v": np.empty(0, np.float64), "m": np.empty(0, bool), "final": None, "emitted": {q.name: None for q in self.queries},
                "seen": False}

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        st = self._load()
        ts, vs, ms = [st["t"]], [st["v"]], [st["m"]]
        for df in rows:
            t = _ms(df[self.time])
            # Spark hands doubles to pandas with nulls as NaN: NaN is read as null here
            v = pd.to_numeric(df[self.value]).to_numpy(dtype=np.float64, na_value=np.nan)
            m = np.isnan(v)
            v = np.where(m, 0.0, v)
            if st["final"] is not None:
                keep = t > st["final"]  # behind the watermark already pushed: late, dropped
                t, v, m = t[keep], v[keep], m[keep]
            ts.append(t)
            vs.append(v)
            ms.append(m)
        st["t"], st["v"], st["m"] = np.concatenate(ts), np.concatenate(vs), np.concatenate(ms)
        yield from self._advance(key, st, timerValues.getCurrentWatermarkInMs())

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        if not self.state.exists():
            return iter([])
        st = self._load()
        return self._advance(key, st, timerValues.getCurrentWatermarkInMs())

    def _advance(self, key, st, wm_ms: int) -> Iterator[pd.DataFrame]:
        wm = int(wm_ms) * 1000
        out = []
        order = np.argsort(st["t"], kind="stable")
        t, v, m = st["t"][order], st["v"][order], st["m"][order]
        n_ready = int(np.searchsorted(t, wm, side="right"))
        stream = st["stream"]
        if n_ready:
            vv = pa.array(v[:n_ready], mask=m[:n_ready])
            res = stream.push(pa.table({"v": vv, "ts": pa.array(t[:n_ready], pa.timestamp("us"))}))
            out.append(res)
            st["seen"] = True
        st["t"], st["v"], st["m"] = t[n_ready:], v[n_ready:], m[n_ready:]
        if st["seen"]:
            st["final"] = wm if st["final"] is None else max(st["final"], wm)
            # windows the watermark has passed but no later row has closed yet
            out.append(pickle.loads(pickle.dumps(stream)).flush())
        frames = []
        for res in out:
            for q in self.queries:
                tab = res[q.name]
                if not tab.num_rows:
                    continue
                end = tab.column("window_end").cast(pa.int64()).to_numpy()
                last = st["emitted"][q.name]
                sel = (end <= wm) & ((end > last) if last is not None else True)
                if not sel.any():
                    continue
                idx = np.flatnonzero(sel)
                sub = tab.take(pa.array(idx))
                st["emitted"][q.name] = int(end[idx].max())
                f = pd.DataFrame({k: [kv] * len(idx) for k, kv in zip(self.keys, key)})
                # object dtype: pandas 3's Arrow-backed str column trips pyspark's converter
                f["query"] = pd.Series([q.name] * len(idx), dtype=object)
                f["window_start"] = sub.column("window_start").to_pandas().dt.tz_localize("UTC")
                f["window_end"] = sub.column("window_end").to_pandas().dt.tz_localize("UTC")
                f["value"] = sub.column("value").cast(pa.float64()).to_pandas()
                frames.append(f)
        self.state.update((pickle.dumps(st),))
        # fire when the watermark passes every window the known rows touch
        known = [x for x in (st["t"].max() if len(st["t"]) else None, st["final"]) if x is not None]
        if known:
            horizon = max(known) + max(q.range + q.slide for q in self.queries) // 1000
            self.handle.registerTimer(int(horizon // 1000) + 1)
        if frames:
            yield pd.concat(frames, ignore_index=True)

    def close(self) -> None:
        pass


def stream_aggregate(df: Any, queries: Any, value: str, time: str, key: Union[str, Sequence[str]],
                     watermark: Optional[str] = None) -> Any:
    """Time-window queries over a streaming DataFrame, per key, with state
    kept across micro-batches: rows (key..., query, window_start,
    window_end, value) appended as the watermark passes each window. Use it
    with ``outputMode("append")`` and a checkpoint location; ``watermark``
    (e.g. ``"10 seconds"``) calls ``withWatermark(time, watermark)``.
    """
    import slidewise as sw
    from pyspark.sql import types as T

    from slidewise.spark import _listify, ship

    queries = [queries] if isinstance(queries, sw.Query) else list(queries)
    if not queries or not all(isinstance(q, sw.Query) for q in queries):
        raise TypeError("stream_aggregate needs slidewise.Query objects")
    for q in queries:
        if not q.time:
            raise ValueError(f"{q.name}: stream_aggregate runs time windows (range/slide as time spans)")
        if q.range % 1000 or q.slide % 1000:
            raise ValueError(f"{q.name}: range and slide must be whole microseconds")
    keys = _listify(key)
    for c in keys + [value, time]:
        if c not in df.columns:
            raise ValueError(f"column {c!r} is not in the DataFrame (columns: {df.columns})")
    ship(df.sparkSession)
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if watermark is not None:
        df = df.withWatermark(time, watermark)
    schema = T.StructType([T.StructField(k, df.schema[k].dataType) for k in keys] +
                          [T.StructField("query", T.StringType()),
                           T.StructField("window_start", T.TimestampType()),
                           T.StructField("window_end", T.TimestampType()),
                           T.StructField("value", T.DoubleType())])
    return (df.select(*keys, time, value).groupBy(*keys)
            .transformWithStateInPandas(_Processor(queries, value, time, keys), schema, "Append", "EventTime"))
