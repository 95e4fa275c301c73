"""slidewise.spark.stream_aggregate (Structured Streaming) and sw.Stream
against Spark's own streaming aggregation on a real local[2] session, micro-
batch by micro-batch: Spark's windows, values (null and NaN apart) and late
rows, a restart from the checkpoint, sessions; the state's checksum. Helpers
for comparing results come from test_spark."""

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import slidewise as sw

pyspark = pytest.importorskip("pyspark")
from pyspark.sql import functions as F  # noqa: E402

import slidewise.spark as ss  # noqa: E402
from test_spark import _compare, _same_values, _same_windows, _spark_windows  # noqa: E402

# ---------------------------------------------------------------------------
# Structured Streaming


def _stream_files(d, nfiles=4, per=150, seed=9):
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(nfiles):
        # ms; rows every ~100 ms, jitter < the watermark delay; not at the epoch: in the first
        # micro-batch the watermark is 0 and Spark drops rows with time <= 0 as late
        base = 10_000 + i * per * 100
        t = base + np.arange(per) * 100 + rng.integers(-500, 500, per)
        f = pd.DataFrame({"k": rng.integers(0, 3, per), "ts": pd.to_datetime(t, unit="ms"),
                          "v": rng.normal(size=per).round(3)})
        f.loc[rng.random(per) < 0.05, "v"] = np.nan
        frames.append(f)
    return frames


def _run_stream(spark, src, out, ck, files, start, stop):
    for i in range(start, stop):
        files[i].to_parquet(os.path.join(src, f"part-{i:03d}.parquet"))
    qs = [sw.Query("max", "4s", "2s", name="max"), sw.Query("sum", "3s", name="sum")]
    sdf = (spark.readStream.schema("k bigint, ts timestamp, v double").option("maxFilesPerTrigger", 1)
           .parquet(src))
    res = ss.stream_aggregate(sdf, qs, "v", "ts", key="k", watermark="2 seconds")
    q = (res.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .outputMode("append").trigger(availableNow=True).start())
    q.awaitTermination(600)
    assert q.exception() is None, q.exception()


def test_stream_aggregate_restart_from_checkpoint(spark, tmp_path):
    """Stop after two files, restart from the checkpoint with two more: the
    same windows as one uninterrupted run, and each equals groupBy(window)
    over all rows."""
    spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                   "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    try:
        files = _stream_files(tmp_path)
        dirs = {}
        for run in ("whole", "restart"):
            src, out, ck = (str(tmp_path / run / x) for x in ("src", "out", "ck"))
            os.makedirs(src)
            if run == "whole":
                _run_stream(spark, src, out, ck, files, 0, 4)
            else:
                _run_stream(spark, src, out, ck, files, 0, 2)
                _run_stream(spark, src, out, ck, files, 2, 4)
            dirs[run] = out
    finally:
        spark.conf.unset("spark.sql.streaming.stateStore.providerClass")
    srt = [(c, "ascending") for c in ["query", "k", "window_start"]]
    a = pq.read_table(dirs["whole"]).sort_by(srt)
    b = pq.read_table(dirs["restart"]).sort_by(srt)
    assert a.num_rows > 20
    assert not a.select(["query", "k", "window_start"]).to_pandas().duplicated().any()
    assert a.column_names == b.column_names == ["k", "query", "window_start", "window_end", "value"]
    for c in a.column_names:
        _same_values(b[c], a[c], f"restart.{c}")
    # every window written equals Spark's over all rows (the input has no NaN:
    # pandas' NaN are nulls in Parquet and in createDataFrame)
    allrows = spark.createDataFrame(pd.concat(files, ignore_index=True))
    for name, rng_, slide, fn in [("max", "4 seconds", "2 seconds", F.max), ("sum", "3 seconds", "3 seconds", F.sum)]:
        want = _spark_windows(allrows, ["k"], "ts", "v", fn, rng_, slide).toArrow()
        got = a.filter(pc.equal(a["query"], name))
        assert got.num_rows > 10, name
        at = {kw: i for i, kw in enumerate(zip(want["k"].to_pylist(), _us(want["window_start"])))}
        keys = list(zip(got["k"].to_pylist(), _us(got["window_start"])))
        assert all(kw in at for kw in keys), (name, [kw for kw in keys if kw not in at][:5])
        ref = want.take(pa.array([at[kw] for kw in keys], pa.int64()))
        _same_values(got["window_end"], ref["window_end"], f"{name}.window_end", same_type=False)
        _same_values(got["value"], ref["value"], f"{name}.value")


def _us(col):
    """A timestamp column as int64 microseconds since the epoch (any unit/zone)."""
    return np.asarray(col.to_numpy(zero_copy_only=False)).astype("datetime64[us]").astype(np.int64).tolist()


# ---------------------------------------------------------------------------
# out of order: micro-batch by micro-batch against Spark's own streaming
# aggregation (withWatermark("ts", "30 seconds"), append mode)

# (key, event time in s, value; None: null), one list per micro-batch. W: the
# watermark a batch finds (max time of the earlier batches - 30 s; Spark: 0
# in its first batch). Late rows are each alone in their (key, window) of
# their batch: Spark counts dropped (key, window) partial aggregates.
_TIME_BATCHES = [
    # W none
    [("a", 1000, 1.5), ("a", 1003, 2.25), ("b", 1001, -1.0), ("b", 1012, 4.0), ("c", 1005, 0.5), ("a", 1025, 3.0)],
    # W 995: rows behind the max, in windows still open
    [("a", 1041, 7.0), ("b", 1030, 0.25), ("a", 998, -2.0), ("c", 996, 6.0), ("b", 992, 1.25), ("c", 1010.5, 2.0)],
    # W 1011: a@1009, b@1005, c@1000 late ([1000, 1010) ends at 1010 <= W);
    # b@1011 (t == W) and c@1010.5 (t < W) on time: [1010, 1020) is open;
    # key e has only a null
    [("a", 1009, 9.0), ("b", 1011, 3.5), ("c", 1012.5, -4.0), ("b", 1005, 8.0), ("c", 1000, 5.0),
     ("a", 1060, 1.0), ("a", 1020, -0.5), ("b", 1035, None), ("e", 1022, None)],
    # W 1030: a@1029.9 and c@1021 late (window end == W); b@1030 (t == W) on
    # time; a new key's d@1027 late (sliding windows of 5 s: late for [1020,
    # 1030), on time for [1025, 1035))
    [("a", 1029.9, 6.5), ("b", 1030, 2.0), ("c", 1021, -3.0), ("b", 1039, float("nan")), ("c", 1070, 0.75),
     ("d", 1027, 3.25)],
    # W 1040: b@1038 late
    [("b", 1038, 5.5), ("a", 1045, 1.75), ("c", 1050, -1.5), ("c", 1058, 2.5), ("a", 1090, 4.5)],
]

# the same for session windows of gap 10 s: a row's own window [t, t + 10]
_SESSION_BATCHES = [
    # W none: b@1000 and b@1010 exactly a gap apart: one session
    [("a", 1000, 1.5), ("a", 1005, 2.25), ("b", 1000, -1.0), ("b", 1010, 4.0), ("c", 1002, 0.5), ("a", 1030, 3.0)],
    # W 1000: c@991 on time ([991, 1001]); b@1020 touches b's [1000, 1020]
    [("a", 1016, 7.0), ("c", 991, 6.0), ("b", 1020, 0.25), ("a", 1055, -2.0)],
    # W 1025: a@1014, c@1012 late; b@1015 late ([1015, 1025] ends at W) though
    # b's session [1000, 1030] is open; a@1017 extends a's [1016, 1026]; key
    # e has only a null
    [("a", 1014, 9.0), ("a", 1017, 3.5), ("c", 1012, -4.0), ("b", 1015, 8.0), ("c", 1040, 5.0), ("b", 1070, 1.0),
     ("e", 1022, None)],
    # W 1040: a@1029 late; c@1031 merges into c's [1040, 1050], a@1047 into
    # a's [1055, 1065], a null b@1065 into b's [1070, 1080]
    [("a", 1029, 6.5), ("c", 1031, 2.0), ("a", 1047, -3.0), ("b", 1065, None), ("a", 1080, 0.75)],
    # W 1050: c@1039 late; b@1060 (NaN) merges into b's [1065, 1080]; then W 1085
    [("c", 1039, 5.5), ("b", 1060, float("nan")), ("a", 1115, 1.75)],
]


def _frames(batches):
    """One Arrow table (id, k, ts, v) per micro-batch; ids count from 0."""
    out, i = [], 0
    for b in batches:
        n = len(b)
        out.append(pa.table({
            "id": pa.array(range(i, i + n), pa.int64()),
            "k": pa.array([r[0] for r in b], pa.string()),
            "ts": pa.array([int(round(r[1] * 1e6)) for r in b], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "v": pa.array([r[2] for r in b], pa.float64(), from_pandas=False)}))
        i += n
    return out


_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _start_stream(spark, src, build, out=None, partitions=1, provider=_ROCKSDB):
    """Start ``build(df)`` over the Parquet files of ``src`` (one file per
    micro-batch: maxFilesPerTrigger=1) in append mode, into a memory sink
    or, with ``out``, Parquet in ``out/sink`` with its checkpoint in
    ``out/ck``, with ``partitions`` state partitions (stream_aggregate's
    pane state: as many buckets of keys) and the state store ``provider``
    (None: Spark's default, HDFS-backed). Returns the query and a function
    reading its sink."""
    import uuid

    os.makedirs(src, exist_ok=True)
    sdf = (spark.readStream.schema("id bigint, k string, ts timestamp, v double")
           .option("maxFilesPerTrigger", 1).parquet(src))
    name = f"slidewise_{uuid.uuid4().hex}"
    # one state partition unless asked: quicker batches
    parts = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    if provider:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    try:
        w = build(sdf).writeStream.outputMode("append")
        if out is None:
            w = w.format("memory").queryName(name)
        else:
            w = w.format("parquet").option("path", os.path.join(out, "sink")).option(
                "checkpointLocation", os.path.join(out, "ck"))
        q = w.start()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", parts)
        spark.conf.unset("spark.sql.streaming.stateStore.providerClass")
    if out is None:
        return q, lambda: spark.table(name).toArrow()
    return q, lambda: pq.read_table(os.path.join(out, "sink"))


def _start_reference(spark, src, build):
    """_start_stream for Spark's own query ``build``, on Spark's default
    state store: its answers do not depend on the store, and its
    micro-batches are quicker than on RocksDB (the file 191 -> 171 s),
    which slidewise's queries use."""
    return _start_stream(spark, src, build, provider=None)


def _feed(src, frames, queries, first=0, together=False):
    """Frame i (from ``first``) becomes Parquet file i in ``src``, then
    processAllAvailable() on each query runs its micro-batch and the
    no-data batch Spark adds when the watermark moved (it emits the windows
    the new watermark closed, and the next batch judges late rows against
    it: slidewise's rule per push). Returns, per query, its
    numRowsDroppedByWatermark per frame. ``together``: all files first
    (modification times in order), then one processAllAvailable(): data
    batches back to back, each judging late rows by the watermark of the
    one before; one count for them all."""
    import time

    drops = [[] for _ in queries]
    todo = list(enumerate(frames[first:], first))
    for group in ([todo] if together else [[x] for x in todo]):
        seen = [len(_progress(q)) for q in queries]
        for i, f in group:
            # whole files only (Spark skips names starting with "."), in order
            tmp, path = os.path.join(src, f".part-{i:03d}"), os.path.join(src, f"part-{i:03d}.parquet")
            pq.write_table(f, tmp)
            os.utime(tmp, (1_000_000 + i, 1_000_000 + i))
            os.replace(tmp, path)
        want = [f.num_rows for _, f in group]
        for q, n, d in zip(queries, seen, drops):
            deadline = time.time() + 120
            while True:
                # a trigger that listed the directory just before the files
                # came can end processAllAvailable() early
                q.processAllAvailable()
                new = _progress(q)[n:]
                rows = [p["numInputRows"] for p in new if p["numInputRows"]]
                if sum(rows) >= sum(want) or time.time() > deadline:
                    break
                time.sleep(0.2)
            assert rows == want, ("one file per micro-batch", rows, want, q.exception())
            d.append(sum(p["stateOperators"][0]["numRowsDroppedByWatermark"] for p in new if p["stateOperators"]))
    for q in queries:
        assert q.exception() is None, q.exception()
    return drops


def _progress(q):
    """A query's recentProgress as dicts (Spark Connect gives dict
    subclasses whose items are None: their attributes hold the values)."""
    return [p if type(p) is dict else
            {"numInputRows": p.numInputRows,
             "stateOperators": [{"numRowsDroppedByWatermark": o.numRowsDroppedByWatermark} for o in p.stateOperators]}
            for p in q.recentProgress]


def _spark_micro_batches(spark, src, frames, build, provider=_ROCKSDB):
    """``build(df)`` (append mode) over ``frames``, one micro-batch each
    (see _feed): the sink's rows and numRowsDroppedByWatermark per frame."""
    q, read = _start_stream(spark, src, build, provider=provider)
    try:
        (drops,) = _feed(src, frames, [q])
    finally:
        q.stop()
    return read(), drops


def _reference_query(window, aggs=None):
    """Spark's own append-mode streaming aggregate by (k, ``window``): the
    windows with ``aggs`` of their values ({column: function}; default the
    sum as "value") and the ids of their rows."""
    aggs = aggs or {"value": F.sum}

    def build(sdf):
        return (sdf.withWatermark("ts", "30 seconds").groupBy("k", window.alias("w"))
                .agg(*[fn("v").alias(c) for c, fn in aggs.items()], F.collect_list("id").alias("ids"))
                .select("k", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                        *aggs, "ids"))
    return build


def _same_queries(got, want, aggs, keys):
    """stream_aggregate's output (keys..., query, window_start, window_end,
    value) equals, query by query, Spark's (keys..., window_start,
    window_end, one column per query)."""
    cols = keys + ["window_start", "window_end", "value"]
    for a in aggs:
        g = got.filter(pc.equal(got["query"], a)).select(cols)
        _same_windows(g, want.select(cols[:-1] + [a]).rename_columns(cols), keys, a, same_type=False)


def _late_ids(frame, late):
    """The ids of a frame's rows that ``late`` (k, ts, v) holds."""
    at = {(k, t): i for i, k, t in zip(frame["id"].to_pylist(), frame["k"].to_pylist(), _us(frame["ts"]))}
    assert len(at) == frame.num_rows, "(k, ts) identifies a row of a frame"
    return [at[(k, t)] for k, t in zip(late["k"].to_pylist(), _us(late["ts"]))]


@pytest.mark.parametrize("kind", ["time", "session"])
def test_stream_keyed_out_of_order_equals_spark_streaming(spark, tmp_path, kind):
    """sw.Stream(key="k", lateness="30s") pushed the micro-batches Spark
    runs: the windows its pushes emit (no flush: Spark never emits an open
    window) are Spark's append-mode output of withWatermark("ts", "30
    seconds").groupBy("k", window or session_window(ts, "10 seconds")), with
    the same values; per push, as many late rows as Spark dropped in that
    batch, and no window of Spark's holds one of them. The data has rows
    behind the watermark in windows still open (on time in both), late rows
    at the boundary (window end == watermark), a late row next to an open
    session it would touch, sessions merged by a later row, a null and a NaN."""
    frames = _frames(_TIME_BATCHES if kind == "time" else _SESSION_BATCHES)
    if kind == "time":
        q, window = sw.Query("sum", "10 seconds", name="q"), F.window("ts", "10 seconds")
    else:
        q, window = sw.Query("sum", session="10 seconds", name="q"), F.session_window("ts", "10 seconds")
    # Spark's own query on its default store, as _start_reference
    want, drops = _spark_micro_batches(spark, str(tmp_path / "src"), frames, _reference_query(window), provider=None)
    stream = sw.Stream(q, value="v", time="ts", key="k", lateness="30s")
    got, late = [], []
    for f in frames:
        got.append(stream.push(f)["q"])
        late.append(_late_ids(f, stream.late_rows()))
    assert stream.row_counts == {"rows_in": sum(f.num_rows for f in frames),
                                 "on_time": sum(f.num_rows for f in frames) - sum(map(len, late)),
                                 "late": sum(map(len, late))}
    assert [len(x) for x in late] == drops, ("late rows per batch", [len(x) for x in late], drops)
    assert sum(drops) >= 5
    in_windows = [i for ids in want["ids"].to_pylist() for i in ids]
    assert len(in_windows) == len(set(in_windows))
    assert not set(in_windows) & {i for x in late for i in x}
    _same_windows(pa.concat_tables(got), want.select(["k", "window_start", "window_end", "value"]), ["k"], kind)
    assert want.num_rows >= 8 and pc.sum(pc.is_nan(want["value"])).as_py() == 1 and want["value"].null_count == 1


def _first_by_time(v, ignore_nulls=False, last=False):
    """Spark's value of the window's first (last) row by event time, a tie
    by arrival (the row ids count up across the batches): min_by / max_by
    (Spark's own ``first`` / ``last`` take the rows in the order a task
    reads them)."""
    at = F.struct("ts", "id")
    by = F.when(F.col(v).isNotNull(), at) if ignore_nulls else at
    return (F.max_by if last else F.min_by)(v, by)


@pytest.mark.parametrize("kind, wide", [("time", False), ("sliding", False), ("session", False),
                                        ("sliding-first-last", False), ("sliding", True), ("session", True)])
def test_stream_aggregate_equals_spark_streaming(spark, tmp_path, kind, wide):
    """stream_aggregate (transformWithStateInPandas) against Spark's own
    streaming withWatermark("ts", "30 seconds").groupBy("k", window) in
    append mode over the same micro-batches, both queries side by side over
    one source; stream_aggregate stopped after two batches and restarted
    from its checkpoint: the same windows (none extra, none missing) and
    values (sum, count, max, mean; sliding: sum), NaN and null apart, and
    (tumbling, sessions) the same rows dropped as late per batch: Spark
    drops them before the processor, whose input carries the end of a
    row's last window as its event-time column. Rows behind the watermark
    in windows still open count (time windows: [t - t mod slide, ... +
    range) ends after the watermark; sessions: t + gap does); a sliding
    window whose rows all came late for it is dropped. ``wide=True``: the
    same windows as one row each, a column per query, as Spark's own."""
    if kind == "session":
        frames, window = _frames(_SESSION_BATCHES), F.session_window("ts", "10 seconds")
        aggs = {"sum": F.sum, "count": F.count, "max": F.max, "mean": F.avg}
        qs = [sw.Query(a, session="10s", name=a) for a in aggs]
    elif kind == "time":
        frames, window = _frames(_TIME_BATCHES), F.window("ts", "10 seconds")
        aggs = {"sum": F.sum, "count": F.count, "max": F.max, "mean": F.avg, "var": F.var_samp,
                "std_pop": F.stddev_pop}
        qs = [sw.Query(a, "10s", name=a) for a in aggs]
    elif kind == "sliding":
        frames, window = _frames(_TIME_BATCHES), F.window("ts", "10 seconds", "5 seconds")
        aggs = {"sum": F.sum, "std": F.stddev_samp, "var_pop": F.var_pop, "min": F.min}
        qs = [sw.Query(a, "10s", "5s", name=a) for a in aggs]
    else:  # the pane state of the aggregations that are not Spark's own
        frames, window = _frames(_TIME_BATCHES), F.window("ts", "10 seconds", "5 seconds")
        aggs = {"first": _first_by_time, "last": lambda v: _first_by_time(v, last=True),
                "first_ignore_nulls": lambda v: _first_by_time(v, True),
                "last_ignore_nulls": lambda v: _first_by_time(v, True, True),
                "range": lambda v: F.max(v) - F.min(v)}
        qs = [sw.Query(a, "10s", "5s", name=a) for a in aggs]

    def build(sdf):
        return ss.stream_aggregate(sdf, qs, "v", "ts", key="k", watermark="30 seconds", wide=wide)

    src, out = str(tmp_path / "src"), str(tmp_path / "out")
    # time windows: the keys in 3 buckets (one partition each), some empty until a later batch
    parts = 1 if kind == "session" else 3
    ref, read_ref = _start_reference(spark, src, _reference_query(window, aggs))
    try:
        mine, _ = _start_stream(spark, src, build, out=out, partitions=parts)
        try:
            drops, d1 = _feed(src, frames[:2], [ref, mine])
        finally:
            mine.stop()
        mine, read = _start_stream(spark, src, build, out=out, partitions=parts)  # from its checkpoint
        try:
            # sliding: the last batches back to back (the watermark moves
            # between data batches: Spark keeps a row's windows that end
            # after the previous batch's watermark)
            d, d2 = _feed(src, frames, [ref, mine], first=2, together=kind.startswith("sliding"))
        finally:
            mine.stop()
    finally:
        ref.stop()
    drops += d
    want, got = read_ref(), read()
    if not kind.startswith("sliding"):  # sliding: Spark counts the (row, window) pairs it drops
        assert d1 + d2 == drops and sum(drops) >= 5
    col = "range" if kind == "sliding-first-last" else "sum"
    assert pc.sum(pc.is_nan(want[col])).as_py() >= 1 and want[col].null_count >= 1
    if wide:
        assert got.column_names == ["k", "window_start", "window_end", *aggs]
        cols = ["k", "window_start", "window_end", "value"]
        for a in aggs:  # every column, each window once
            _same_windows(got.select(cols[:-1] + [a]).rename_columns(cols),
                          want.select(cols[:-1] + [a]).rename_columns(cols), ["k"], a, same_type=False)
    else:
        assert got.column_names == ["k", "query", "window_start", "window_end", "value"]
        _same_queries(got, want, aggs, ["k"])


def test_bucket_values_are_sparks_hash_partitions(spark):
    """The bucket values are found on the driver with Spark's Murmur3 hash
    of a bigint written in numpy (no Spark job at the query's start): the
    hash equals Spark's ``hash`` on bigints across the range (negative,
    large, both 32-bit halves), and each of n buckets is the smallest
    bigint Spark's ``pmod(hash(v), n)`` puts in its own partition."""
    from slidewise.spark._streaming import _bucket_values, _spark_hash_long

    rng = np.random.default_rng(3)
    v = np.concatenate([np.arange(-50, 50), rng.integers(-2**63, 2**63 - 1, 400, dtype=np.int64),
                        np.array([2**31 - 1, 2**31, 2**32, -2**31, 2**63 - 1, -2**63], np.int64)])
    df = spark.createDataFrame(pd.DataFrame({"v": v}))
    want = np.array([r[0] for r in df.select(F.hash("v")).collect()], np.int64)
    assert (_spark_hash_long(v).astype(np.int64) == want).all()
    for n in (2, 3, 7, 200):
        got = _bucket_values(n)
        ids = spark.range(0, max(got) + 1).select("id", F.pmod(F.hash("id"), F.lit(n)).alias("p")).toPandas()
        first = ids.groupby("p")["id"].min()
        assert got == [int(first[i]) for i in range(n)]


def test_stream_aggregate_refuses_another_bucket_count(spark, tmp_path):
    """The pane state hashes keys into one bucket per state partition
    (spark.sql.shuffle.partitions when the query starts). Spark keeps a
    checkpoint's partitions; restarted under another setting, the buckets
    would split keys differently: the query fails naming the setting and
    the value to restore, instead of mixing states."""
    qs = [sw.Query("sum", "10s", name="sum")]

    def build(sdf):
        return ss.stream_aggregate(sdf, qs, "v", "ts", key="k", watermark="30 seconds")

    src, out = str(tmp_path / "src"), str(tmp_path / "out")
    frames = _frames(_TIME_BATCHES)
    q, _ = _start_stream(spark, src, build, out=out, partitions=3)
    try:
        _feed(src, frames[:2], [q])
    finally:
        q.stop()
    q, _ = _start_stream(spark, src, build, out=out, partitions=2)
    try:
        pq.write_table(frames[2], os.path.join(src, "part-002.parquet"))
        with pytest.raises(Exception, match="set spark.sql.shuffle.partitions to 3"):
            q.processAllAvailable()
    finally:
        q.stop()


@pytest.mark.parametrize("kind", ["time", "sliding", "session"])
def test_stream_aggregate_late_rows_equal_spark_drops(spark, tmp_path, kind):
    """stream_aggregate(..., late_rows=True) gives (windows, late); a query
    on each, side by side with Spark's own withWatermark("ts", "30
    seconds").groupBy("k", window) over the same micro-batches, both
    stopped after two batches and restarted from their checkpoints. The
    batches of test_stream_aggregate_equals_spark_streaming, then one that
    closes every window (z@2000) with two more late rows, a null and a NaN.
    windows: exactly Spark's windows and values. late: exactly the rows
    Spark dropped, with key, time and value (null and NaN apart): none of
    them in a window of Spark's, and every other row (but z's) in one; per
    batch (tumbling, sessions) as many as Spark's numRowsDroppedByWatermark,
    which on each of the two queries counts one dropped probe per late row."""
    last = [("a", 1001, None), ("b", 1002, float("nan")), ("z", 2000, 0.0)]
    if kind == "session":
        frames, window = _frames(_SESSION_BATCHES + [last]), F.session_window("ts", "10 seconds")
        qs = [sw.Query(a, session="10s", name=a) for a in ("sum", "count")]
    elif kind == "time":
        frames, window = _frames(_TIME_BATCHES + [last]), F.window("ts", "10 seconds")
        qs = [sw.Query(a, "10s", name=a) for a in ("sum", "count")]
    else:
        frames, window = _frames(_TIME_BATCHES + [last]), F.window("ts", "10 seconds", "5 seconds")
        qs = [sw.Query(a, "10s", "5s", name=a) for a in ("sum", "count")]
    aggs = {"sum": F.sum, "count": F.count}

    def build(i):
        return lambda sdf: ss.stream_aggregate(sdf, qs, "v", "ts", key="k", watermark="30 seconds", late_rows=True)[i]

    src = str(tmp_path / "src")
    outs = [str(tmp_path / "windows"), str(tmp_path / "late")]
    ref, read_ref = _start_reference(spark, src, _reference_query(window, aggs))
    try:
        mine = [_start_stream(spark, src, build(i), out=o)[0] for i, o in enumerate(outs)]
        try:
            drops, *d1 = _feed(src, frames[:2], [ref, *mine])
        finally:
            for q in mine:
                q.stop()
        started = [_start_stream(spark, src, build(i), out=o) for i, o in enumerate(outs)]  # from the checkpoints
        mine = [q for q, _ in started]
        try:
            d, *d2 = _feed(src, frames, [ref, *mine], first=2, together=kind == "sliding")
        finally:
            for q in mine:
                q.stop()
    finally:
        ref.stop()
    drops += d
    want = read_ref()
    got, late = (read() for _, read in started)
    # windows: as without late_rows
    assert got.column_names == ["k", "query", "window_start", "window_end", "value"]
    _same_queries(got, want, aggs, ["k"])
    # late: the rows in no window of Spark's (every window is closed by now)
    assert late.column_names == ["k", "ts", "v"] and late["v"].type == pa.float64()
    allrows = pa.concat_tables(frames)
    def rows(t):
        return zip(t["k"].to_pylist(), _us(t["ts"]), map(str, t["v"].to_pylist()))

    at = {r: i for i, r in zip(allrows["id"].to_pylist(), rows(allrows))}
    assert len(at) == allrows.num_rows, "(k, ts, v) identifies a row"
    late_ids = [at[r] for r in rows(late)]
    assert len(late_ids) == len(set(late_ids))
    in_windows = {i for ids in want["ids"].to_pylist() for i in ids}
    drain = allrows.num_rows - 1
    assert set(late_ids) == set(range(allrows.num_rows)) - in_windows - {drain}
    assert len(late_ids) >= (3 if kind == "sliding" else 7) and {drain - 1, drain - 2} <= set(late_ids)
    late = late.append_column("id", pa.array(late_ids, pa.int64()))
    _compare(late, allrows.filter(pc.is_in(allrows["id"], pa.array(late_ids, pa.int64()))),
             [("v", "v"), ("k", "k")])
    if not kind.startswith("sliding"):  # sliding: Spark counts the (row, window) pairs it drops
        ends = np.cumsum([f.num_rows for f in frames])
        per_batch = np.bincount(np.searchsorted(ends, late_ids, side="right"), minlength=len(frames)).tolist()
        assert per_batch == drops, ("late rows per batch", per_batch, drops)
        for x, y in zip(d1, d2):
            assert x + y == drops  # one dropped probe per late row
    assert sum(drops) >= 7


def test_stream_aggregate_errors(spark):
    sdf = spark.createDataFrame(pd.DataFrame({"k": [1], "ts": pd.to_datetime([1], unit="s"), "v": [1.0]}))
    with pytest.raises(ValueError, match="once per kind"):
        ss.stream_aggregate(sdf, [sw.Query("sum", "10s"), sw.Query("sum", session="5s")], "v", "ts", "k",
                            watermark="1 minute")
    with pytest.raises(ValueError, match="watermark on 'ts'"):
        ss.stream_aggregate(sdf, sw.Query("sum", session="5s"), "v", "ts", "k")
    with pytest.raises(ValueError, match="watermark on 'ts'"):
        ss.stream_aggregate(sdf.withColumn("t2", F.col("ts")).withWatermark("t2", "1 minute"),
                            sw.Query("sum", "10s"), "v", "ts", "k")
    with pytest.raises(ValueError, match="time windows .* or session windows"):
        ss.stream_aggregate(sdf, sw.Query("sum", 10), "v", "ts", "k", watermark="1 minute")
    with pytest.raises(ValueError, match="must be unique"):
        ss.stream_aggregate(sdf, [sw.Query("sum", "10s", name="a"), sw.Query("max", "10s", name="a")], "v", "ts",
                            "k", watermark="1 minute")
    with pytest.raises(ValueError, match="value column is a double; 'collect'"):
        ss.stream_aggregate(sdf, sw.Query("collect", "10s"), "v", "ts", "k", watermark="1 minute")
    with pytest.raises(ValueError, match="'argmax' with arg="):
        ss.stream_aggregate(sdf, sw.Query("argmax", "10s", arg="k"), "v", "ts", "k", watermark="1 minute")
    with pytest.raises(ValueError, match="wide=True: the queries of one call share one window"):
        ss.stream_aggregate(sdf, [sw.Query("sum", "10s", name="a"), sw.Query("sum", "20s", name="b")], "v", "ts",
                            "k", watermark="1 minute", wide=True)
    with pytest.raises(ValueError, match=r"repeat \['k'\]"):
        ss.stream_aggregate(sdf, sw.Query("sum", "10s", name="k"), "v", "ts", "k", watermark="1 minute", wide=True)
    with pytest.raises(ValueError, match=r"repeat \['v'\]"):
        ss.stream_aggregate(sdf, sw.Query("sum", "10s", name="v"), "v", "ts", "k", watermark="1 minute", wide=True,
                            late_rows="kind")


@pytest.mark.parametrize("kind, wide", [("sliding", False), ("session", False), ("sliding", True)])
def test_stream_aggregate_rows_per_key_equal_stream(spark, tmp_path, kind, wide):
    """argmax / argmin (a position in the window: no partial) keep each
    key's rows: on in-order micro-batches (nothing late) stream_aggregate's
    windows equal slidewise.Stream's over each key's rows, with a pane
    aggregation beside them (queries of both kinds in one call: rows per
    key for all); ``wide=True``: the same, a column per query."""
    batches = [[(k, 1000 + i + 0.25 * j, v) for i, (k, j, v) in enumerate(rows)] for rows in (
        [("a", 0, 1.5), ("b", 1, None), ("a", 2, 3.0), ("b", 0, -1.0), ("a", 1, 3.0)],
        [("a", 8, 0.5), ("b", 9, float("nan")), ("a", 9, 4.0), ("b", 8, 2.0)],
        [("a", 30, 1.0), ("b", 31, 0.5), ("a", 60, 2.0), ("b", 61, 1.0)])]
    for i, b in enumerate(batches):  # times increase across batches
        batches[i] = [(k, t + 20 * i, v) for k, t, v in b]
    aggs = ["argmax", "argmin", "sum"]
    if kind == "sliding":
        qs = [sw.Query(a, "10s", "5s", name=a) for a in aggs]
    else:
        qs = [sw.Query(a, session="4s", name=a) for a in aggs]
    got, _ = _spark_micro_batches(spark, str(tmp_path / "src"), _frames(batches), lambda sdf: ss.stream_aggregate(
        sdf, qs, "v", "ts", "k", watermark="1 second", wide=wide))
    rows = [r for b in batches for r in b]
    for key in ("a", "b"):
        mine = sorted([(t, v) for k, t, v in rows if k == key], key=lambda x: x[0])
        stream = sw.Stream(qs, value="v", time="ts")
        table = pa.table({"v": pa.array([v for _, v in mine], pa.float64()),
                          "ts": pa.array([int(round(t * 1e6)) for t, _ in mine], pa.timestamp("us"))})
        res = [stream.push(table), stream.flush()]
        for a in aggs:
            want = pa.concat_tables([r[a] for r in res])
            if wide:  # a column per query
                g = got.filter(pc.equal(got["k"], key)).select(["window_start", a]).rename_columns(
                    ["window_start", "value"]).sort_by("window_start")
            else:
                g = got.filter(pc.and_(pc.equal(got["k"], key), pc.equal(got["query"], a))).sort_by("window_start")
            # the windows the last watermark (the latest time - 1 s) closed
            last = int(round((max(t for _, t, _ in rows) - 1) * 1e6))
            w = want.filter(pc.less_equal(want["window_end"].cast(pa.int64()), last)).sort_by("window_start")
            assert g.num_rows == w.num_rows >= 2, (kind, key, a, g.num_rows, w.num_rows)
            assert g["window_start"].cast(pa.int64()).to_pylist() == w["window_start"].cast(pa.int64()).to_pylist()
            gv, wv = g["value"].to_pylist(), w["value"].cast(pa.float64()).to_pylist()
            assert [None if x is None else ("nan" if x != x else x) for x in gv] == \
                   [None if x is None else ("nan" if x != x else x) for x in wv], (kind, key, a, gv, wv)



@pytest.mark.parametrize("kind", ["time", "session"])
def test_stream_aggregate_on_the_default_state_store(spark, tmp_path, kind):
    """stream_aggregate's state (applyInPandasWithState) lives in any state
    store: on Spark's default, HDFS-backed, provider (the session's setting
    unset) it gives Spark's own windows there, with pane state (per bucket
    of keys) and with the rows of sessions (per key)."""
    conf = "spark.sql.streaming.stateStore.providerClass"
    before = spark.conf.get(conf, None)  # the docs' examples set it on the shared session
    spark.conf.unset(conf)
    if kind == "time":
        frames, window, q = _frames(_TIME_BATCHES[:3]), F.window("ts", "10 seconds", "5 seconds"), sw.Query("sum", "10s", "5s")
    else:
        frames, window, q = _frames(_SESSION_BATCHES[:3]), F.session_window("ts", "10 seconds"), sw.Query("sum", session="10s")
    try:
        want, _ = _spark_micro_batches(spark, str(tmp_path / "a"), frames, _reference_query(window), provider=None)
        got, _ = _spark_micro_batches(spark, str(tmp_path / "b"), frames, lambda sdf: ss.stream_aggregate(
            sdf, q, "v", "ts", "k", watermark="30 seconds"), provider=None)
    finally:
        if before is not None:
            spark.conf.set(conf, before)
    assert want.num_rows >= 4
    _same_windows(got.drop_columns(["query"]), want.select(["k", "window_start", "window_end", "value"]), ["k"],
                  "sliding" if kind == "time" else "session")


@pytest.mark.parametrize("wide", [False, True])
def test_stream_aggregate_one_query_for_windows_and_late_rows(spark, tmp_path, wide):
    """late_rows="kind": one streaming query gives the windows and the late
    rows; foreach_batch_split writes them to two Parquet sinks. Over the
    micro-batches of the tests above (sliding windows, sum and count): the
    windows are exactly Spark's (withWatermark("ts", "30 seconds") own
    aggregation, side by side), the late rows exactly the rows in no window
    of Spark's (every window is closed by the last batch), null and NaN
    apart, each written once. ``wide=True``: the windows one row each, a
    column per query; a late row's value in a column named as the input's."""
    last = [("a", 1001, None), ("b", 1002, float("nan")), ("z", 2000, 0.0)]
    frames, window = _frames(_TIME_BATCHES + [last]), F.window("ts", "10 seconds", "5 seconds")
    aggs = {"sum": F.sum, "count": F.count}
    qs = [sw.Query(a, "10s", "5s", name=a) for a in aggs]
    src, out = str(tmp_path / "src"), tmp_path / "out"
    sinks = {"windows": str(out / "windows"), "late": str(out / "late")}

    def writer(name):
        return lambda df, batch_id: df.write.mode("append").parquet(sinks[name])

    def start(sdf):
        res = ss.stream_aggregate(sdf, qs, "v", "ts", key="k", watermark="30 seconds", late_rows="kind", wide=wide)
        assert res.columns == (["k", "kind", "window_start", "window_end", "sum", "count", "ts", "v"] if wide else
                               ["k", "kind", "query", "window_start", "window_end", "value", "ts"])
        return res.writeStream.foreachBatch(ss.foreach_batch_split(writer("windows"), writer("late"))).option(
            "checkpointLocation", str(out / "ck")).start()

    ref, read_ref = _start_reference(spark, src, _reference_query(window, aggs))
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "1")
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", _ROCKSDB)
        try:
            sdf = (spark.readStream.schema("id bigint, k string, ts timestamp, v double")
                   .option("maxFilesPerTrigger", 1).parquet(src))
            mine = start(sdf)
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", "4")
            spark.conf.unset("spark.sql.streaming.stateStore.providerClass")
        try:
            _feed(src, frames, [ref, mine])
        finally:
            mine.stop()
    finally:
        ref.stop()
    want = read_ref()
    got, late = pq.read_table(sinks["windows"]), pq.read_table(sinks["late"])
    if wide:
        assert got.column_names == ["k", "window_start", "window_end", "sum", "count"]
        cols = ["k", "window_start", "window_end", "value"]
        for a in aggs:
            _same_windows(got.select(cols[:-1] + [a]).rename_columns(cols),
                          want.select(cols[:-1] + [a]).rename_columns(cols), ["k"], a, same_type=False)
        assert late.column_names == ["k", "ts", "v"]
        late = late.rename_columns(["k", "ts", "value"])
    else:
        assert got.column_names == ["k", "query", "window_start", "window_end", "value"]
        _same_queries(got, want, aggs, ["k"])
        assert late.column_names == ["k", "ts", "value"]
    allrows = pa.concat_tables(frames)

    def rows(t, v):
        return zip(t["k"].to_pylist(), _us(t["ts"]), map(str, t[v].to_pylist()))

    at = {r: i for i, r in zip(allrows["id"].to_pylist(), rows(allrows, "v"))}
    late_ids = [at[r] for r in rows(late, "value")]
    assert len(late_ids) == len(set(late_ids)) >= 3
    in_windows = {i for ids in want["ids"].to_pylist() for i in ids}
    assert set(late_ids) == set(range(allrows.num_rows)) - in_windows - {allrows.num_rows - 1}
    late = late.rename_columns(["k", "ts", "v"]).append_column("id", pa.array(late_ids, pa.int64()))
    _compare(late, allrows.filter(pc.is_in(allrows["id"], pa.array(late_ids, pa.int64()))), [("v", "v"), ("k", "k")])


@pytest.mark.parametrize("keyed", [True, False])
def test_stream_aggregate_over_spark_connect(spark_connect, tmp_path, keyed):
    """stream_aggregate over Spark Connect (a real SparkConnectServer):
    tumbling windows (sum, max, mean), keyed and unkeyed, equal to Spark's
    own streaming aggregation over the same micro-batches, side by side."""
    from pyspark.sql.connect import functions as CF

    spark = spark_connect
    window = CF.window("ts", "10 seconds")
    aggs = {"sum": CF.sum, "max": CF.max, "mean": CF.avg}
    qs = [sw.Query(a, "10s", name=a) for a in aggs]
    keys = ["k"] if keyed else []

    def reference(sdf):
        return (sdf.withWatermark("ts", "30 seconds").groupBy(*keys, window.alias("w"))
                .agg(*[fn("v").alias(c) for c, fn in aggs.items()])
                .select(*keys, CF.col("w.start").alias("window_start"), CF.col("w.end").alias("window_end"), *aggs))

    def build(sdf):
        return ss.stream_aggregate(sdf, qs, "v", "ts", key="k" if keyed else None, watermark="30 seconds")

    src = str(tmp_path / "src")
    ref, read_ref = _start_reference(spark, src, reference)
    try:
        mine, read = _start_stream(spark, src, build)
        try:
            _feed(src, _frames(_TIME_BATCHES), [ref, mine])
        finally:
            mine.stop()
    finally:
        ref.stop()
    want, got = read_ref(), read()
    assert got.column_names == keys + ["query", "window_start", "window_end", "value"]
    assert want.num_rows >= (8 if keyed else 4)
    _same_queries(got, want, aggs, keys)
