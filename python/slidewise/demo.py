"""The main job's demo: a DEBS-style sensor stream and several ACQs.

Generates the DEBS 2012 Grand Challenge shape of data (three electrical
energy readings, mf01..mf03, sampled at 100 Hz, with drift, noise and
spikes), runs several aggregate continuous queries with the in-process
engine, and prints a result table and each query's throughput next to polars
and bottleneck measured in the same run on the same array; then runs ACQs on
Spark local mode through slidewise.spark next to Spark's own window
functions, and writes a PNG of the signal with its rolling bands.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Optional

import numpy as np
import pyarrow as pa

import slidewise as sw

HZ = 100


def sensor_stream(rows: int, seed: int = 2012) -> pa.Table:
    """Three energy readings at 100 Hz: daily-like cycle + noise + spikes."""
    rng = np.random.default_rng(seed)
    t = np.arange(rows, dtype=np.int64)
    cols: dict[str, np.ndarray[Any, Any]] = {"ts_ms": t * (1000 // HZ)}
    for i, name in enumerate(["mf01", "mf02", "mf03"]):
        base = 9000 + 1500 * np.sin(2 * np.pi * t / (HZ * 3600 * (i + 1)))
        noise = rng.normal(0, 40, rows)
        spikes = (rng.random(rows) < 1e-4) * rng.normal(4000, 800, rows)
        cols[name] = base + noise + spikes
    return pa.table(cols)


def _best(f: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _peers(x: np.ndarray[Any, Any], agg: str, w: int) -> dict[str, Callable[[], Any]]:
    peers: dict[str, Callable[[], Any]] = {}
    try:
        import polars as pl

        s = pl.Series(x)
        f = {"max": s.rolling_max, "min": s.rolling_min, "sum": s.rolling_sum,
             "mean": s.rolling_mean, "std": s.rolling_std}.get(agg)
        if f is not None:
            peers["polars"] = functools.partial(f, w, min_samples=1)
    except ImportError:
        pass
    try:
        import bottleneck as bn

        f = {"max": bn.move_max, "min": bn.move_min, "sum": bn.move_sum,
             "mean": bn.move_mean, "std": bn.move_std}.get(agg)
        if f is not None:
            kw = {"ddof": 1} if agg == "std" else {}
            peers["bottleneck"] = functools.partial(f, x, w, min_count=1, **kw)
    except ImportError:
        pass
    return peers


def run(rows: int = 10_000_000, repeat: int = 3, spark_rows: int = 2_000_000,
        plot: Optional[str] = "out/slidewise_demo.png") -> list[dict[str, Any]]:
    print(f"slidewise {sw.__version__} demo: DEBS-style sensor stream, {rows:,} rows at {HZ} Hz "
          f"({rows / HZ / 3600:.1f} h of readings)")
    t0 = time.perf_counter()
    table = sensor_stream(rows)
    print(f"generated in {time.perf_counter() - t0:.1f} s\n")

    # Per-row rolling ACQs (slide 1): one answer per reading.
    acqs = [("mf01", "max", 1_000), ("mf01", "min", 1_000), ("mf02", "mean", 6_000),
            ("mf02", "std", 6_000), ("mf03", "sum", 100), ("mf03", "max", 360_000)]
    rows_out = []
    print(f"{'query':<28}{'slidewise':>12}{'polars':>12}{'bottleneck':>12}{'vs polars':>11}"
          f"{'vs bn':>8}{'max |diff|':>12}")
    for col, agg, w in acqs:
        arr = table.column(col).combine_chunks()
        x = arr.to_numpy()
        t_sw, got = _best(lambda: sw.rolling(arr, w, agg), repeat)
        res: dict[str, Any] = {"query": f"{agg}({col}) rows={w:,}", "slidewise": rows / t_sw / 1e6}
        diff = 0.0
        for name, f in _peers(x, agg, w).items():
            t, ref = _best(f, repeat)
            res[name] = rows / t / 1e6
            ref = np.asarray(ref.to_numpy() if hasattr(ref, "to_numpy") else ref, dtype=float)
            g = got.to_numpy(zero_copy_only=False)
            scale = np.maximum(np.abs(ref), 1.0)
            diff = max(diff, float(np.nanmax(np.abs(g - ref) / scale)))
        res["diff"] = diff
        rows_out.append(res)
        pol, bn_ = res.get("polars", float("nan")), res.get("bottleneck", float("nan"))
        print(f"{res['query']:<28}{res['slidewise']:>9.0f} M/s{pol:>9.0f} M/s{bn_:>9.0f} M/s"
              f"{res['slidewise'] / pol:>10.1f}x{res['slidewise'] / bn_:>7.1f}x{diff:>12.1e}")

    # Hopping count-window ACQs over the stream, pushed in batches of 1 s.
    queries = [sw.Query("max", range=1_000, slide=100), sw.Query("mean", range=6_000, slide=1_000),
               sw.Query("std", range=6_000, slide=1_000), sw.Query("maxcount", range=500, slide=500)]
    stream = sw.Stream(queries, value="mf01")
    sub = table.select(["mf01"])
    t0 = time.perf_counter()
    out: dict[str, list[pa.Table]] = {q.name: [] for q in queries}
    for batch in sub.to_batches(max_chunksize=HZ * 60):
        for name, t in stream.push(batch).items():
            out[name].append(t)
    for name, t in stream.flush().items():
        out[name].append(t)
    dt = time.perf_counter() - t0
    print(f"\nStream of {len(queries)} hopping ACQs over mf01, pushed in 1-minute batches: "
          f"{rows / dt / 1e6:.0f} M rows/s")
    for q in queries:
        windows = pa.concat_tables(out[q.name])
        print(f"\n{q.name}: {windows.num_rows:,} windows; first rows:")
        print(windows.slice(0, 4).to_pandas().to_string(index=False))
    if plot:
        plot_bands(table, plot)
    if spark_rows:
        rows_out += run_spark(table.slice(0, spark_rows))
    return rows_out


def plot_bands(table: pa.Table, path: str, seconds: int = 600) -> None:
    """PNG of mf01 over the first ``seconds`` with its rolling 10 s max/min
    and mean +- 2 std bands (matplotlib, Agg backend)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib not installed: no plot)")
        return
    n = min(table.num_rows, seconds * HZ)
    x = table.column("mf01").slice(0, n).combine_chunks()
    t = np.arange(n) / HZ
    w = 10 * HZ
    hi, lo = sw.rolling(x, w, "max").to_numpy(), sw.rolling(x, w, "min").to_numpy()
    mu = sw.rolling(x, w, "mean").to_numpy()
    sd = sw.rolling(x, w, "std").to_numpy(zero_copy_only=False)
    fig, ax = plt.subplots(figsize=(11, 4.5), dpi=110)
    ax.plot(t, x.to_numpy(), lw=0.3, color="0.55", label="mf01 (100 Hz)")
    ax.fill_between(t, lo, hi, color="tab:blue", alpha=0.18, label="rolling 10 s min..max")
    ax.plot(t, mu, color="tab:red", lw=1.0, label="rolling 10 s mean")
    ax.fill_between(t, mu - 2 * sd, mu + 2 * sd, color="tab:red", alpha=0.15, label="mean +- 2 std")
    ax.set_xlabel("seconds")
    ax.set_ylabel("energy reading")
    ax.set_title("slidewise demo: DEBS-style sensor stream with rolling bands")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    print(f"\nplot of the signal and its rolling bands: {path}")


def run_spark(table: pa.Table) -> list[dict[str, Any]]:
    """The same kind of ACQs on Spark local mode via slidewise.spark, timed
    next to Spark's own window functions on the same DataFrame."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("\n(pyspark not installed: Spark part skipped)")
        return []
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    import slidewise.spark as ss

    rows = table.num_rows
    print(f"\nSpark local mode, {rows:,} rows (each job forced with a noop write; Spark's window frame "
          "is its segment tree)")
    spark = (SparkSession.builder.master("local[*]").appName("slidewise demo")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.window.segmentTree.enabled", "true")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tmp = None
    try:
        # As a pipeline would: Parquet on disk, read by Spark (its splits
        # keep the time order, so the unkeyed job needs no shuffle).
        import tempfile

        import pyarrow.parquet as pq

        tmp = tempfile.mkdtemp(prefix="slidewise-demo-")
        src = table.select(["ts_ms", "mf01", "mf02", "mf03"])
        src = src.append_column("dev", pa.array(np.arange(rows) % 4))
        pq.write_table(src, os.path.join(tmp, "sensors.parquet"), row_group_size=1 << 18)
        df = spark.read.parquet(tmp).withColumn("ts", F.timestamp_millis("ts_ms")).cache()
        df.count()

        # Warm up: ship the wheel and start the Python workers once, so the
        # first timed job does not carry that one-off cost.
        ss.rolling(df.limit(2000), "mf01", "ts_ms", 10, "max").write.format("noop").mode("overwrite").save()

        def timed(make: Callable[[], Any]) -> tuple[float, Any]:
            t0 = time.perf_counter()
            out = make()
            out.write.format("noop").mode("overwrite").save()
            return time.perf_counter() - t0, out

        w = 1000
        byt = Window.orderBy("ts_ms").rowsBetween(-(w - 1), 0)
        rng10 = Window.partitionBy("dev").orderBy(F.col("ts_ms")).rangeBetween(-9999, 0)
        jobs = [
            ("max(mf01) rows=1000",
             lambda: ss.rolling(df, "mf01", "ts_ms", w, "max", tiebreak="ts_ms"),
             lambda: df.withColumn("max_1000", F.max("mf01").over(byt)), "max_1000"),
            ("mean(mf02) 10s per dev",
             lambda: ss.rolling(df, "mf02", "ts", "10s", "mean", partition_by="dev", output="m"),
             lambda: df.withColumn("m", F.avg("mf02").over(rng10)), "m"),
            ("std(mf03) rows=6000 per dev",
             lambda: ss.rolling(df, "mf03", "ts_ms", 6000, "std", partition_by="dev", tiebreak="ts_ms", output="s"),
             lambda: df.withColumn("s", F.stddev("mf03").over(
                 Window.partitionBy("dev").orderBy("ts_ms").rowsBetween(-5999, 0))), "s"),
        ]
        out = []
        print(f"{'query':<30}{'slidewise':>11}{'Spark':>10}{'speedup':>9}{'max |diff|':>12}")
        for name, mine, theirs, col in jobs:
            t_sw, a = timed(mine)
            t_sp, b = timed(theirs)
            j = a.select("ts_ms", "dev", F.col(col).alias("a")).join(
                b.select("ts_ms", "dev", F.col(col).alias("b")), ["ts_ms", "dev"])
            diff = j.select(F.max(F.abs(F.col("a") - F.col("b")) / F.greatest(F.abs("b"), F.lit(1.0)))).first()[0]
            print(f"{name:<30}{t_sw:>9.2f} s{t_sp:>8.2f} s{t_sp / t_sw:>8.1f}x{diff or 0.0:>12.1e}")
            out.append({"query": name, "spark_slidewise_s": t_sw, "spark_window_s": t_sp, "diff": diff})
        qs = [sw.Query("max", "10s", "1s", name="max"), sw.Query("mean", "1m", "10s", name="mean")]
        t0 = time.perf_counter()
        for q in qs:  # two windows: two groupBy(window) in Spark, two aggregate calls here
            ss.aggregate(df, q, "mf01", "ts", key="dev").write.format("noop").mode("overwrite").save()
        t_sw = time.perf_counter() - t0
        t0 = time.perf_counter()
        for rg, sl, f in [("10 seconds", "1 second", F.max), ("1 minute", "10 seconds", F.avg)]:
            df.groupBy("dev", F.window("ts", rg, sl)).agg(f("mf01")).write.format("noop").mode("overwrite").save()
        t_sp = time.perf_counter() - t0
        print(f"{'2 hopping ACQs per dev':<30}{t_sw:>9.2f} s{t_sp:>8.2f} s{t_sp / t_sw:>8.1f}x"
              f"{'(groupBy(window))':>18}")
        out.append({"query": "aggregate", "spark_slidewise_s": t_sw, "spark_window_s": t_sp})
        return out
    finally:
        spark.stop()
        if tmp:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run()
