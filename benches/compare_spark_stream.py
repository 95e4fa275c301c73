"""slidewise.spark.stream_aggregate vs Spark's own streaming window
aggregation, the same micro-batches through both (local[2], RocksDB state).

    python benches/compare_spark_stream.py [--keys 1000] [--batches 6] [--rows 20000]
    python benches/compare_spark_stream.py --quick     # tiny: the checks only
    python benches/compare_spark_stream.py --floor     # also empty functions (the stateful Python APIs)
    python benches/compare_spark_stream.py --connect   # both engines through a Spark Connect client
    python benches/compare_spark_stream.py --long      # stream_aggregate's long output
    python benches/compare_spark_stream.py --skew 1.2  # skewed keys (Zipf)

The job (issue 35): ``--keys`` keys; ``--batches`` micro-batches of
``--rows`` rows from a Parquet file source (``maxFilesPerTrigger=1``), each
batch 10 minutes of event time; 3% of rows up to 2 minutes late and 2% far
(30 minutes) behind the watermark; 1% null values and a few NaN; sum, max
and mean over 10-minute windows sliding 1 minute; a 30-second watermark;
append mode; RocksDB state on both sides; ``spark.sql.shuffle.partitions``
2 (the machine's cores).

Spark: ``withWatermark("ts", "30 seconds").groupBy("k", F.window("ts",
"10 minutes", "1 minute")).agg(sum, max, avg)``. slidewise:
``stream_aggregate(..., wide=True)`` with the same three queries, a row
per window as Spark's (``--long``: a row per window and query). Both write Parquet; the
windows are compared (every window of one in the other, values to 1e-9
relative, null and NaN apart) before any time is printed. Times: the
query's wall time (start to end, ``trigger(availableNow=True)``), the sum
of its micro-batches' ``triggerExecution`` and that sum without the first
batch (whose planning, for a Python stateful processor, starts a Python
process on the driver to run the processor's ``init`` and learn its state
schemas: a cost per query start, not per batch), best of ``--repeat`` (with
3 or more, the median wall times and every run are printed after the table), the
engines interleaved, after each ran once on the first file (the JVM's and
the Python workers' first queries are slower). State: the RocksDB SST bytes of the last batch
(``rocksdbSstFileSize``) and the bytes of the checkpoint's state directory.

``--floor``: the same stream through ``groupBy("k")`` and an empty
``applyInPandasWithState`` function (stream_aggregate's API; it keeps a
1 kB state and a timeout, emits nothing), per key and per bucket of keys
(two values in two partitions, as stream_aggregate groups its pane state): what
Spark's stateful Python API costs before any work. Then the same with an
empty ``transformWithStateInPandas`` processor (reads no state, emits
nothing) and the Row-based ``transformWithState``, per key and per bucket:
the APIs stream_aggregate did not choose.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pandas as pd

if __package__:  # imported from the benches package (asv discovers every module)
    from ._check import Mismatch, connect_server, machine
else:  # python benches/compare_spark_stream.py
    from _check import Mismatch, connect_server, machine

MINUTE_US = 60_000_000
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def make_batches(keys: int, batches: int, rows: int, seed: int = 7, skew: float = 0.0):
    """One pandas frame (k, ts, v) per micro-batch; ``skew`` > 0: key i
    drawn with weight 1 / (i + 1) ** skew (Zipf), else uniformly."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, keys + 1) ** skew if skew else None
    base = pd.Timestamp("2026-01-01", tz="UTC").value // 1000  # us
    out = []
    for b in range(batches):
        t = base + b * 10 * MINUTE_US + np.sort(rng.integers(0, 10 * MINUTE_US, rows))
        u = rng.random(rows)
        t = np.where(u < 0.03, t - rng.integers(0, 2 * MINUTE_US, rows), t)  # up to 2 minutes late
        t = np.where((u >= 0.03) & (u < 0.05), t - 30 * MINUTE_US, t)  # far behind the watermark
        v = rng.normal(size=rows).round(4)
        v[rng.random(rows) < 0.001] = np.nan
        k = rng.choice(keys, rows, p=weights / weights.sum()) if skew else rng.integers(0, keys, rows)
        f = pd.DataFrame({"k": k.astype(np.int64),
                          "ts": pd.to_datetime(t, unit="us", utc=True), "v": v})
        f.loc[rng.random(rows) < 0.01, "v"] = None
        out.append(f)
    return out


def _dir_bytes(d: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def run(spark, src: str, build, out: str):
    """``build(df)`` over the files of ``src`` into Parquet at ``out``: (wall
    seconds, sum of triggerExecution seconds, the same without the first
    micro-batch, SST bytes, state dir bytes)."""
    shutil.rmtree(out, ignore_errors=True)
    sdf = spark.readStream.schema("k bigint, ts timestamp, v double").option("maxFilesPerTrigger", 1).parquet(src)
    ck = os.path.join(out, "ck")
    t0 = time.perf_counter()
    q = (build(sdf).writeStream.outputMode("append").format("parquet").option("path", os.path.join(out, "sink"))
         .option("checkpointLocation", ck).trigger(availableNow=True).start())
    q.awaitTermination()
    wall = time.perf_counter() - t0
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    prog = [_progress(p) for p in q.recentProgress]
    trig = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in prog]
    last = [p for p in prog if p["stateOperators"]][-1]
    sst = sum(int((o.get("customMetrics") or {}).get("rocksdbSstFileSize", 0)) for o in last["stateOperators"])
    return wall, sum(trig), sum(trig[1:]), sst, _dir_bytes(os.path.join(ck, "state"))


SESSION = None  # --session: the gap of session windows instead of 10-minute windows sliding 1 minute
WIDE = True  # stream_aggregate(wide=True): a row per window, as Spark's; --long: a row per window and query


def _progress(p) -> dict:
    """A query progress as a dict: Spark Connect's are dict subclasses
    whose items may be missing, their attributes holding the values."""
    if type(p) is dict:
        return p
    ops = [{"customMetrics": dict(getattr(o, "customMetrics", None) or {})} for o in (p.stateOperators or [])]
    return {"durationMs": dict(p.durationMs or {}), "stateOperators": ops}


def spark_job(sdf):
    from pyspark.sql import functions as F

    window = F.session_window("ts", SESSION) if SESSION else F.window("ts", "10 minutes", "1 minute")
    return (sdf.withWatermark("ts", "30 seconds").groupBy("k", window.alias("w"))
            .agg(F.sum("v").alias("sum"), F.max("v").alias("max"), F.avg("v").alias("mean"))
            .select("k", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                    "sum", "max", "mean"))


def slidewise_job(sdf):
    import slidewise as sw
    import slidewise.spark as ss

    qs = [sw.Query(a, session=SESSION, name=a) if SESSION else sw.Query(a, "10m", "1m", name=a)
          for a in ("sum", "max", "mean")]
    return ss.stream_aggregate(sdf, qs, "v", "ts", key="k", watermark="30 seconds", wide=WIDE)


def _buckets(F, n: int):
    """Key k's bucket as stream_aggregate's: one of ``n`` values that Spark's
    hash partitioning puts in ``n`` different partitions (so ``n`` cores
    share the work; ``pmod(hash(k), n)`` itself may put two in one)."""
    from slidewise.spark._streaming import _bucket_values

    vals = ", ".join(f"{v}L" for v in _bucket_values(n))
    return F.element_at(F.expr(f"array({vals})"), (F.pmod(F.hash("k"), F.lit(n)) + 1).cast("int"))


def _empty(row_api: bool, buckets: int = 0):
    from pyspark.sql.streaming import StatefulProcessor

    class Empty(StatefulProcessor):
        def init(self, handle):
            pass

        def handleInputRows(self, key, rows, timerValues):
            for _ in rows:
                pass
            return iter([])

        def close(self):
            pass

    def build(sdf):
        from pyspark.sql import functions as F

        sdf = sdf.withWatermark("ts", "30 seconds")
        if buckets:  # as stream_aggregate's pane state: a call per bucket of keys, not per key
            sdf = sdf.withColumn("k", _buckets(F, buckets))
        g = sdf.groupBy("k")
        f = g.transformWithState if row_api else g.transformWithStateInPandas
        return f(Empty(), "k bigint", "Append", "EventTime")
    return build


def _empty_apws(buckets: int = 0):
    """An empty applyInPandasWithState function (stream_aggregate's API):
    reads the rows, keeps a 1 kB state per group and an event-time timeout,
    emits nothing."""
    def fn(key, pdfs, state):
        for _ in pdfs:
            pass
        if state.hasTimedOut:
            state.remove()
        else:
            state.update((b"x" * 1000,))
            state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 60_000)
        return iter([])

    def build(sdf):
        from pyspark.sql import functions as F

        sdf = sdf.withWatermark("ts", "30 seconds")
        if buckets:
            sdf = sdf.withColumn("k", _buckets(F, buckets))
        return sdf.groupBy("k").applyInPandasWithState(fn, "k bigint", "s binary", "append", "EventTimeTimeout")
    return build


def _frame(d: str):
    """A Parquet sink as pandas, floats masked (null and NaN apart)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.read_table(os.path.join(d, "sink")).to_pandas(types_mapper={pa.float64(): pd.Float64Dtype()}.get)


def compare(ref_dir: str, got_dir: str) -> int:
    """Every window of Spark's in slidewise's and back, values equal."""
    idx = ["k", "window_start", "window_end"]
    want, got = _frame(ref_dir).set_index(idx).sort_index(), _frame(got_dir)
    if len(want) < 100:
        raise Mismatch(f"Spark emitted only {len(want)} windows")
    for q in ("sum", "max", "mean"):
        g = got.set_index(idx)[q] if "query" not in got else got[got["query"] == q].set_index(idx)["value"]
        g, w = g.sort_index(), want[q]
        if not g.index.equals(w.index):
            extra, missing = g.index.difference(w.index), w.index.difference(g.index)
            raise Mismatch(f"{q}: windows differ: {len(extra)} extra ({list(extra[:3])}), "
                           f"{len(missing)} missing ({list(missing[:3])})")
        if (g.isna().to_numpy() != w.isna().to_numpy()).any():
            raise Mismatch(f"{q}: null windows differ")
        a, b = (x.to_numpy(dtype=np.float64, na_value=0.0) for x in (g, w))
        if (np.isnan(a) != np.isnan(b)).any():
            raise Mismatch(f"{q}: NaN windows differ")
        ok = np.isnan(a) | np.isclose(a, b, rtol=1e-9, atol=1e-9)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise Mismatch(f"{q}: value differs at {g.index[i]}: {a[i]} vs {b[i]}")
    return len(want)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--floor", action="store_true", help="also time empty processors (pandas and Row APIs)")
    ap.add_argument("--floor-only", action="store_true", help="with --floor: Spark and the empty processors only")
    ap.add_argument("--quick", action="store_true", help="50 keys, 3 batches of 2,000 rows")
    ap.add_argument("--connect", action="store_true", help="both engines through a Spark Connect client")
    ap.add_argument("--session", default=None, metavar="GAP",
                    help='session windows of this gap (e.g. "1 minute") instead of 10 minutes sliding 1 minute')
    ap.add_argument("--skew", type=float, default=0.0, metavar="S",
                    help="keys drawn by Zipf's law, key i with weight 1 / (i + 1) ** S (default: uniform)")
    ap.add_argument("--long", action="store_true",
                    help="stream_aggregate's long output (a row per window and query) instead of wide=True")
    ap.add_argument("--dir", default=None, help="work directory (default: a new temporary one)")
    args = ap.parse_args(argv)
    global SESSION, WIDE
    SESSION, WIDE = args.session, not args.long
    if args.quick:
        args.keys, args.batches, args.rows = 50, 3, 2000
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # pyspark 4 warns on every worker start that it does not support pandas 3 yet
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    from pyspark.sql import SparkSession

    conf = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
            "spark.python.authenticate.socketTimeout": "120s",
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB}
    server = None
    if args.connect:  # a Spark Connect server in its own JVM (local[2]), the jobs sent by a Connect client
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark.sql.functions builds Connect columns
        server = connect_server(conf)  # the server's own settings
        import atexit

        spark = ConnectSession.builder.remote(server.__enter__()).getOrCreate()
        atexit.register(server.__exit__, None, None, None)  # also when a check fails
    else:
        b = SparkSession.builder.master("local[2]").appName("compare_spark_stream")
        for k, v in conf.items():
            b = b.config(k, v)
        spark = b.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    work = args.dir or tempfile.mkdtemp(prefix="slidewise_stream_")
    src = os.path.join(work, "src")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    for i, f in enumerate(make_batches(args.keys, args.batches, args.rows, skew=args.skew)):
        path = os.path.join(src, f"part-{i:03d}.parquet")
        f.to_parquet(path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # the file source's order
    import slidewise.spark as ss

    ss.ship(spark)  # once per session: not part of any job's time
    jobs = {"spark": spark_job, "slidewise": slidewise_job}
    if args.floor:
        jobs["empty applyInPandasWithState (per key)"] = _empty_apws()
        jobs["empty applyInPandasWithState (2 buckets)"] = _empty_apws(2)
        jobs["empty (pandas)"] = _empty(False)
        jobs["empty (Row)"] = _empty(True)
        jobs["empty (pandas, 2 buckets)"] = _empty(False, 2)
        jobs["empty (Row, 2 buckets)"] = _empty(True, 2)
        if args.floor_only:
            del jobs["slidewise"]
    # the JVM's and the Python workers' first queries are slower: not part of any engine's time
    warm = os.path.join(work, "warm")
    os.makedirs(os.path.join(warm, "src"), exist_ok=True)
    shutil.copy(os.path.join(src, "part-000.parquet"), os.path.join(warm, "src"))
    for j, build in jobs.items():
        run(spark, os.path.join(warm, "src"), build, os.path.join(warm, j.replace(" ", "_")))
    results = {j: [] for j in jobs}
    for r in range(args.repeat):
        for j, build in jobs.items():
            results[j].append(run(spark, src, build, os.path.join(work, j.replace(" ", "_"))))
        if r == 0 and "slidewise" in jobs:
            n = compare(os.path.join(work, "spark"), os.path.join(work, "slidewise"))
            print(f"checked: {n:,} windows x 3 queries equal")
    print(machine("1 per Python worker"))
    print(f"{'Spark Connect client; ' if args.connect else ''}{args.keys:,} keys"
          f"{f' (Zipf, weight 1 / (i + 1) ** {args.skew:g})' if args.skew else ''}, {args.batches} micro-batches of "
          f"{args.rows:,} rows; "
          f"{'session windows, gap ' + SESSION if SESSION else '10-minute windows sliding 1 minute'}; "
          f"stream_aggregate's output {'wide (a row per window)' if WIDE else 'long (a row per window and query)'}; "
          f"best of {args.repeat}")
    best = {j: min(rs, key=lambda x: x[0]) for j, rs in results.items()}
    s = best["spark"]
    print()
    print("| engine | wall s | micro-batches s | time / Spark's | after the first batch s | time / Spark's "
          "| RocksDB SST bytes | state dir bytes |")
    print("|---|---|---|---|---|---|---|---|")
    for j, (wall, trig, rest, sst, sdir) in best.items():
        print(f"| {j} | {wall:.2f} | {trig:.2f} | {wall / s[0]:.2f}x | {rest:.2f} | {rest / s[2]:.2f}x "
              f"| {sst:,} | {sdir:,} |")
    print()
    if "slidewise" in best:
        print(f"slidewise / Spark: time {best['slidewise'][0] / s[0]:.2f}x (after the first batch "
              f"{best['slidewise'][2] / s[2]:.2f}x), SST bytes {best['slidewise'][3] / max(s[3], 1):.2f}x")
    if args.repeat >= 3:
        # best-of favours whichever engine had a quiet run (Spark's own time
        # moved 3.0-4.0 s between runs here): the medians and every run too
        med = {j: float(np.median([r[0] for r in rs])) for j, rs in results.items()}
        print("median wall s / Spark's: " + "; ".join(f"{j} {m:.2f} ({m / med['spark']:.2f}x)" for j, m in med.items()))
        print("every run, wall s: " + "; ".join(f"{j} {' '.join(f'{r[0]:.2f}' for r in rs)}" for j, rs in results.items()))
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
