"""slidewise.spark vs Spark's own window frames, in one run (local[2]).

    python benches/compare_spark.py [--rows 2000000] [--window 1000] [--keys 100]
    python benches/compare_spark.py --quick     # tiny: the checks only, no timings worth reading
    python benches/compare_spark.py --job features [--repeat 3]   # the keyed feature job only

``--job rolling``: one rolling max (below). ``--job features``: the keyed
feature job of the Spark issue (``benches/_features.py``): 3 count windows
(20, 100, 500 rows) x max / mean / std per key, 100 keys, 2M rows read from
8 Parquet files written in time order (keys interleaved), all 9 columns
computed (a ``noop`` write): slidewise (``ss.rolling`` with the 3 windows
and 3 aggregations, ``tiebreak="id"``), Spark's segment-tree frame (one
window spec per frame, all 9 columns in one select; the script fails unless
this Spark has it), Spark's default frame (for information) and an identity
``mapInArrow`` over the same Parquet; slidewise's columns checked equal to
Spark's first (null and NaN apart, max exactly, mean / std to 1e-9
relative); then best of ``--repeat`` (3) per job, the jobs interleaved, and
the ratios to the targets (>= 6x the segment tree, <= 2x the identity
pass). ``--job aggregate``: ``aggregate`` against Spark's ``groupBy(k,
F.window(...)).agg(F.sum, F.max, F.avg)`` (below). ``--job all`` (the
default) runs all three.

First checks every slidewise job timed below against Spark's frames (the
segment tree, and the default frame unless ``--skip-default``) on the same
DataFrame, and stops naming the job if they differ. Then prints the CPU and
the threads slidewise may use, seconds per job (each forced with a ``noop``
write, best of ``--repeat``) and the ratios the Spark issue sets as targets:
unkeyed rolling max vs the default frame, the segment-tree frame
(``spark.sql.window.segmentTree.enabled``) and an identity ``mapInArrow``
pass; keyed (``--keys`` keys) vs both frames (the default ``method="auto"``, which
takes the ordered no-shuffle path here, and the shuffle paths ``"map"`` and ``"apply"``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

if __package__:  # imported from the benches package (asv discovers every module)
    from . import _features
    from ._check import Mismatch, check, connect_server, machine, spark_column
else:  # python benches/compare_spark.py
    import _features
    from _check import Mismatch, check, connect_server, machine, spark_column


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", choices=["all", "rolling", "features", "aggregate"], default="all")
    ap.add_argument("--rows", type=int, default=None, help="rows (default 2,000,000)")
    ap.add_argument("--window", type=int, default=1000, help="--job rolling: the window")
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--missing", default="0.01", help="--job features: the shares of null values, comma-separated, "
                    "a data set each (default 0.01; 0: a clean column)")
    ap.add_argument("--shuffled", action="store_true", help="--job features: each data set also with its rows "
                    "in random order across the files (the input a shuffle must sort)")
    ap.add_argument("--repeat", type=int, default=None, help="best of (default 2 for rolling, 3 for features)")
    ap.add_argument("--data", default=None, help="--job features: the Parquet directory "
                    "(default: slidewise_features_<rows> under the temp directory, written once; with "
                    "several data sets, each its own directory with this prefix)")
    ap.add_argument("--skip-default", action="store_true", help="skip the (slow) default frame")
    ap.add_argument("--warmup", type=int, default=2, help="untimed rounds of three jobs first")
    ap.add_argument("--connect", action="store_true",
                    help="--job aggregate: the same jobs over a Spark Connect server too")
    ap.add_argument("--quick", action="store_true", help="20,000 rows, window 100, 10 keys, one repeat, no warm-up")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.window, args.keys, args.repeat, args.warmup = 20_000, 100, 10, 1, 0
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("slidewise-compare")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "3g").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(machine("1 per Spark task (slidewise runs on the task's Python worker thread); local[2]: 2 tasks at once"))
    if args.job in ("all", "rolling"):
        rolling_max(spark, args)
    if args.job in ("all", "features"):
        features(spark, args)
    if args.job in ("all", "aggregate"):
        aggregate(spark, args)
    spark.stop()


def features(spark, args) -> None:
    """The keyed feature job (``_features``) on each of its data sets (each
    ``--missing`` share of null values, in time order and with
    ``--shuffled`` also in random order): checked, then timed, the jobs
    interleaved, best of ``--repeat``; then one table of them all, each data
    set's slidewise time also against its own on the clean column in the
    same order when that was run."""
    import slidewise.spark as ss

    fe = _features
    n = args.rows or fe.ROWS
    repeat = args.repeat or 3
    print("\n" + fe.assert_segment_tree(spark), flush=True)
    shares = [float(m) for m in str(args.missing).split(",")]
    sets = [(m, s) for s in ([False, True] if args.shuffled else [False]) for m in shares]
    table = {}
    for missing, shuffled in sets:
        path = fe.write_parquet(args.data if args.data and len(sets) == 1
                                else fe.data_path(n, args.keys, missing, shuffled, base=args.data),
                                n, args.keys, missing=missing, shuffled=shuffled)
        df = spark.read.parquet(path)
        jobs = fe.jobs(spark, df)
        if args.skip_default:
            del jobs["spark default frame"]
        path_taken = ss.plan_rolling(df, "v", "t", list(fe.WINDOWS), list(fe.AGGS), partition_by="k",
                                     tiebreak="id").path
        order = "random order" if shuffled else "time order"
        # Before timing: slidewise's 9 columns against each Spark frame's.
        got = fe.columns(jobs["slidewise"]())
        for peer in [j for j in jobs if j.startswith("spark")]:
            fe.check_features(got, fe.columns(jobs[peer]()), peer, n, args.keys)
        del got
        print(f"\n{missing:.0%} null, files in {order}: checked slidewise's {len(fe.names())} columns equal to "
              + " and ".join(j for j in jobs if j.startswith("spark")) + " (null and NaN apart; max exact, "
              "mean/std to 1e-9 relative)", flush=True)
        for _ in range(min(args.warmup, 1)):  # JIT, Python workers
            for name in ("identity mapInArrow", "slidewise"):
                jobs[name]().write.format("noop").mode("overwrite").save()
        best = {name: float("inf") for name in jobs}
        for r in range(repeat):
            for name, make in jobs.items():
                t0 = time.perf_counter()
                make().write.format("noop").mode("overwrite").save()
                dt = time.perf_counter() - t0
                best[name] = min(best[name], dt)
                if len(sets) == 1:  # (several: the table at the end says it)
                    print(f"  round {r + 1}: {name:<22}{dt:8.2f} s", flush=True)
        spark.conf.unset(fe.SEGMENT_TREE)
        print(f"keyed feature job: {n:,} rows from {fe.FILES} Parquet files in {order} "
              f"({df.rdd.getNumPartitions()} partitions), {args.keys} keys, {missing:.0%} of the values null, "
              f"windows {list(fe.WINDOWS)} rows x "
              f"{list(fe.AGGS)}; local[2]; every column computed (noop write); best of {repeat}, interleaved")
        print(f"slidewise path: {path_taken!r} (the job time includes its planning: for 'parquet-tails' reading the "
              "scan's splits and the files' footers, for 'ordered' the check pass)")
        for name, v in best.items():
            print(f"  {name:<40}{v:8.2f} s")
        sw = best["slidewise"]
        print("ratios (targets in brackets)")
        print(f"  Spark segment tree / slidewise        {best['spark segment tree'] / sw:6.2f}x  [>= 6]")
        print(f"  slidewise / identity mapInArrow       {sw / best['identity mapInArrow']:6.2f}x  [<= 2]")
        if "spark default frame" in best:
            print(f"  Spark default frame / slidewise       {best['spark default frame'] / sw:6.2f}x")
        table[(missing, shuffled)] = (path_taken, best)
    if len(table) > 1:
        print(f"\nkeyed feature job, {n:,} rows, {args.keys} keys; seconds, best of {repeat}; ratios of times")
        print("| nulls | files | slidewise path | slidewise s | Spark segment tree s | identity mapInArrow s "
              "| segment tree / slidewise | slidewise / identity | slidewise clean / slidewise |")
        print("|---|---|---|---|---|---|---|---|---|")
        for (missing, shuffled), (path_taken, best) in table.items():
            sw, seg, ident = best["slidewise"], best["spark segment tree"], best["identity mapInArrow"]
            clean = table.get((0.0, shuffled))
            vs_clean = f"{clean[1]['slidewise'] / sw:.2f}x" if clean is not None and missing != 0.0 else "-"
            print(f"| {missing:.0%} | {'random order' if shuffled else 'time order'} | `{path_taken}` | {sw:.2f} "
                  f"| {seg:.2f} | {ident:.2f} | {seg / sw:.1f}x | {sw / ident:.2f}x | {vs_clean} |")


AGG_KEYS = 1000
AGG_DAYS = 7


def _agg_parquet(n: int, path: str) -> str:
    """``n`` rows over 7 days of event time in random order (8 Parquet
    files): ``k`` (1,000 keys), ``ts`` (timestamp), ``v`` (double, 1% null);
    written once."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    if os.path.isdir(path) and len(os.listdir(path)) == 8:
        return path
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(7)
    us = rng.integers(0, AGG_DAYS * 86_400 * 10 ** 6, n) + 1_700_000_000 * 10 ** 6
    v = rng.normal(100, 10, n)
    t = pa.table({"k": rng.integers(0, AGG_KEYS, n), "ts": pa.array(us, pa.timestamp("us", tz="UTC")),
                  "v": pa.array(v, mask=rng.random(n) < 0.01)})
    for i in range(8):
        pq.write_table(t.slice(i * n // 8, (i + 1) * n // 8 - i * n // 8), os.path.join(path, f"part-{i}.parquet"))
    return path


def _agg_jobs(spark, path: str, label: str = ""):
    """The aggregate job's cases on ``spark`` (classic or Connect): {name:
    job}, and a function that checks each slidewise result against Spark's
    groupBy(window) on the same session."""
    import slidewise as sw
    import slidewise.spark as ss
    from slidewise.spark._specs import _functions

    F = _functions(spark)
    df = spark.read.parquet(path)
    aggs = [("sum", F.sum), ("max", F.max), ("mean", F.avg)]
    cases = {"keyed": (["k"], "10 minutes", "1 minute"), "unkeyed": ([], "1 hour", "5 minutes")}
    jobs = {}
    for case, (keys, rng, slide) in cases.items():
        qs = [sw.Query(a, rng, slide, name=a) for a, _ in aggs]
        jobs[f"slidewise {case}{label}"] = (lambda qs=qs, keys=keys: ss.aggregate(df, qs, "v", "ts", key=keys or None))
        jobs[f"spark groupBy(window) {case}{label}"] = (
            lambda keys=keys, rng=rng, slide=slide: df.groupBy(*keys, F.window("ts", rng, slide))
            .agg(*[fn("v").alias(a) for a, fn in aggs])
            .select(*keys, F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    *[a for a, _ in aggs]))
        print(f"aggregate {case}{label}: path {ss.aggregate_path(qs)!r}", flush=True)

    def check() -> None:
        # each slidewise result against Spark's, joined in Spark (the keyed
        # one has millions of windows): the same windows, max equal, sum and
        # mean to 1e-9 relative (Spark adds in another order)
        for case, (keys, _, _) in cases.items():
            a, b = jobs[f"slidewise {case}{label}"](), jobs[f"spark groupBy(window) {case}{label}"]()
            j = a.alias("a").join(b.alias("b"), keys + ["window_start"], "full_outer")
            bad = F.lit(False)
            for c, _ in aggs:
                x, y = F.col(f"a.{c}"), F.col(f"b.{c}")
                close = F.abs(x - y) <= 1e-9 * F.greatest(F.abs(y), F.lit(1.0))
                bad = bad | ~F.coalesce(close if c != "max" else (x == y), x.isNull() & y.isNull())
            bad = bad | F.col("a.window_end").isNull() | F.col("b.window_end").isNull()
            wrong, windows = j.select(F.sum(bad.cast("long")), F.count(F.lit(1))).first()
            if wrong:
                raise Mismatch(f"aggregate {case}{label}: {wrong} of {windows:,} windows differ from Spark's "
                               "groupBy(window)")
            print(f"checked: aggregate {case}{label}, {windows:,} windows equal to Spark's groupBy(window)",
                  flush=True)
    return jobs, check


def aggregate(spark, args) -> None:
    """``aggregate`` against Spark's ``groupBy(window)``: sum, max and mean
    over 10-minute windows sliding 1 minute per key (1,000 keys), and over
    1-hour windows sliding 5 minutes unkeyed, on ``--rows`` (2M) rows of 7
    days read from Parquet; every window of every query consumed (a
    ``noop`` write of the one DataFrame), results checked equal to Spark's
    first; an identity ``mapInArrow`` pass in the same run. ``--connect``:
    the same jobs through a Spark Connect server too (a JVM of its own,
    ``local[2]``, idle while the classic jobs run), interleaved with the
    classic ones."""
    import contextlib
    import tempfile

    n = args.rows or 2_000_000
    repeat = args.repeat or 3
    path = _agg_parquet(n, os.path.join(tempfile.gettempdir(), f"slidewise_agg_{n}"))
    jobs, check = _agg_jobs(spark, path)
    df = spark.read.parquet(path)
    jobs["identity mapInArrow"] = lambda: df.mapInArrow(lambda it: it, df.schema)
    checks = [check]
    with contextlib.ExitStack() as stack:
        if args.connect:
            from pyspark.sql.connect.session import SparkSession as ConnectSession

            url = stack.enter_context(connect_server({"spark.driver.memory": "3g",
                                                      "spark.sql.shuffle.partitions": "2"}))
            remote = ConnectSession.builder.remote(url).getOrCreate()
            stack.callback(remote.stop)
            cjobs, ccheck = _agg_jobs(remote, path, " (Connect)")
            jobs.update(cjobs)
            checks.append(ccheck)
        for c in checks:
            c()
        for make in jobs.values():  # JIT, Python workers
            make().write.format("noop").mode("overwrite").save()
        best = {name: float("inf") for name in jobs}
        for r in range(repeat):
            for name, make in jobs.items():
                t0 = time.perf_counter()
                make().write.format("noop").mode("overwrite").save()
                best[name] = min(best[name], time.perf_counter() - t0)
                print(f"  round {r + 1}: {name:<44}{time.perf_counter() - t0:8.2f} s", flush=True)
    print(f"\naggregate: {n:,} rows over {AGG_DAYS} days from 8 Parquet files (random order), sum / max / mean, "
          f"keyed ({AGG_KEYS} keys, 10 min / 1 min) and unkeyed (1 h / 5 min); local[2]; best of {repeat}, "
          "interleaved")
    for name, v in best.items():
        print(f"  {name:<52}{v:8.2f} s")
    print("ratios (targets in brackets)")
    for label in ("", " (Connect)") if args.connect else ("",):
        for case, target in (("keyed", 2), ("unkeyed", 1.5)):
            print(f"  {case}{label}: groupBy(window) / slidewise  "
                  f"{best[f'spark groupBy(window) {case}{label}'] / best[f'slidewise {case}{label}']:6.2f}x  "
                  f"[>= {target}]")
    print(f"  keyed: slidewise / identity pass     {best['slidewise keyed'] / best['identity mapInArrow']:6.2f}x")
    if args.connect:
        for case in ("keyed", "unkeyed"):
            print(f"  {case}: slidewise over Connect / classic  "
                  f"{best[f'slidewise {case} (Connect)'] / best[f'slidewise {case}']:6.2f}x (time)")


def rolling_max(spark, args) -> None:
    """One rolling max over a cached ``spark.range`` DataFrame, unkeyed and
    keyed: the paths of ``rolling`` against Spark's frames."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    import slidewise.spark as ss
    from slidewise.spark import _kernels, _order, _specs

    n, w = args.rows or 2_000_000, args.window
    repeat = args.repeat or 2
    df = (spark.range(n, numPartitions=2).select(F.col("id").alias("t"), F.rand(1).alias("v"),
                                                 (F.col("id") % args.keys).alias("k"))).cache()
    df.count()

    def run(make) -> float:
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            best = min(best, time.perf_counter() - t0)
        print(f"  {best:8.2f} s", flush=True)
        return best

    def frame(keyed: bool, seg: bool):
        spark.conf.set("spark.sql.window.segmentTree.enabled", "true" if seg else "false")
        win = (Window.partitionBy("k") if keyed else Window).orderBy("t").rowsBetween(-(w - 1), 0)
        return df.select("t", "v", "k", F.max("v").over(win).alias("max"))

    class Res(dict):
        def __setitem__(self, k, v):
            print(f"{k}", flush=True)
            super().__setitem__(k, v)

    import pyarrow as pa

    # The keyed ordered path's compute pass alone, its halos found beforehand
    # (not timed): a floor for any keyed design that passes every row
    # through Python once.
    specs = _specs._make_specs(pa.float64(), w, "max", None, None, "auto")
    tails = _order._check_pass(df, "v", "t", specs, [], ["k"])
    halos = spark.sparkContext.broadcast(
        _order._halos([(r.pid, r.n, r.tail) for r in tails], specs, pa.float64(), keyed=True))

    # The slidewise jobs timed below: (keyed, job).
    jobs = {
        "slidewise unkeyed": (False, lambda: ss.rolling(df, "v", "t", w, "max")),
        "slidewise unkeyed (tiebreak=t)": (False, lambda: ss.rolling(df, "v", "t", w, "max", tiebreak="t")),
        "slidewise unkeyed (assume_sorted=True)": (False, lambda: ss.rolling(df, "v", "t", w, "max", assume_sorted=True)),
        "slidewise keyed (auto)": (True, lambda: ss.rolling(df, "v", "t", w, "max", partition_by="k")),
        "slidewise keyed (mapInArrow)": (True, lambda: ss.rolling(df, "v", "t", w, "max", partition_by="k", method="map")),
        "slidewise keyed (applyInArrow)": (
            True, lambda: ss.rolling(df, "v", "t", w, "max", partition_by="k", method="apply")),
        "slidewise keyed, compute pass only (halos given)": (
            True, lambda: df.mapInArrow(_kernels._roll_fn(specs, "v", "t", ["k"], [], halos),
                                        _specs._schema_with(df, specs, []))),
    }

    # Before timing: each slidewise job's result against Spark's frames on
    # the same DataFrame. ROWS BETWEEN w-1 PRECEDING AND CURRENT ROW gives the
    # first w - 1 rows (of each key) the partial window's max, as slidewise
    # does; a max picks one of the values: equal, bit for bit.
    refs = {}
    for keyed in (False, True):
        refs[keyed] = {"Spark segment tree": spark_column(frame(keyed, True), "max")}
        if not args.skip_default:
            refs[keyed]["Spark default frame"] = spark_column(frame(keyed, False), "max")
    for name, (keyed, make) in jobs.items():
        got = spark_column(make(), specs[0].name)
        for peer, want in refs[keyed].items():
            check(f"{name}, {n:,} rows, max over {w:,} rows" + (f", {args.keys} keys" if keyed else ""),
                  got, want, peer, rtol=0.0)
    del refs, got
    print(f"checked: {len(jobs)} slidewise jobs equal to Spark's segment tree"
          + ("" if args.skip_default else " and default frame"), flush=True)

    # Warm the JVM (JIT) and the Python workers first: otherwise the first
    # jobs timed, the identity pass among them, pay for it.
    for _ in range(args.warmup):
        for make in (lambda: df.mapInArrow(lambda it: it, df.schema), jobs["slidewise unkeyed"][1],
                     lambda: frame(False, True)):
            make().write.format("noop").mode("overwrite").save()

    res = Res()
    res["identity mapInArrow"] = run(lambda: df.mapInArrow(lambda it: it, df.schema))
    res["identity mapInArrow after range partition + sort"] = run(
        lambda: df.repartitionByRange(2, "t").sortWithinPartitions("t").mapInArrow(lambda it: it, df.schema))
    for name in ("slidewise unkeyed", "slidewise unkeyed (tiebreak=t)", "slidewise unkeyed (assume_sorted=True)"):
        res[name] = run(jobs[name][1])
    # "assumed": one JVM job for the partitions' first rows (planned again, not timed)
    assumed_path = ss.plan_rolling(df, "v", "t", w, "max", assume_sorted=True).path
    res["spark segment tree unkeyed"] = run(lambda: frame(False, True))
    if not args.skip_default:
        res["spark default frame unkeyed"] = run(lambda: frame(False, False))
    res["slidewise keyed (auto)"] = run(jobs["slidewise keyed (auto)"][1])
    # "ordered": no shuffle (spark.range is in t order; planned again, not timed)
    keyed_path = ss.plan_rolling(df, "v", "t", w, "max", partition_by="k").path
    for name in ("slidewise keyed (mapInArrow)", "slidewise keyed (applyInArrow)",
                 "slidewise keyed, compute pass only (halos given)"):
        res[name] = run(jobs[name][1])
    res["spark segment tree keyed"] = run(lambda: frame(True, True))
    if not args.skip_default:
        res["spark default frame keyed"] = run(lambda: frame(True, False))
    spark.conf.unset("spark.sql.window.segmentTree.enabled")
    print(f"\n{n:,} rows, local[2], max over {w} rows, {args.keys} keys when keyed; best of {repeat}")
    for k, v in res.items():
        print(f"  {k:<52}{v:8.2f} s")
    u = res["slidewise unkeyed"]
    print("\nratios (targets in brackets)")
    print(f"  unkeyed: segment tree / slidewise      {res['spark segment tree unkeyed'] / u:6.1f}x  [>= 3]")
    if "spark default frame unkeyed" in res:
        print(f"  unkeyed: default frame / slidewise     {res['spark default frame unkeyed'] / u:6.1f}x  [>= 25]")
    print(f"  unkeyed: slidewise / identity pass     {u / res['identity mapInArrow']:6.2f}x  [<= 1.3]")
    a = res["slidewise unkeyed (assume_sorted=True)"]
    print(f"  unkeyed, assume_sorted ({assumed_path} path): segment tree / slidewise "
          f"{res['spark segment tree unkeyed'] / a:6.1f}x  [>= 3]")
    if "spark default frame unkeyed" in res:
        print(f"  unkeyed, assume_sorted: default frame / slidewise {res['spark default frame unkeyed'] / a:6.1f}x  [>= 25]")
    print(f"  unkeyed, assume_sorted: slidewise / identity pass {a / res['identity mapInArrow']:6.2f}x  [<= 1.3]")
    print(f"  unkeyed: slidewise / identity after range partition + sort "
          f"{u / res['identity mapInArrow after range partition + sort']:6.2f}x")
    kk = res["slidewise keyed (auto)"]
    print(f"  keyed: mapInArrow / applyInArrow       "
          f"{res['slidewise keyed (mapInArrow)'] / res['slidewise keyed (applyInArrow)']:6.2f}")
    print(f"  keyed ({keyed_path} path): segment tree / slidewise "
          f"{res['spark segment tree keyed'] / kk:6.1f}x  [>= 3]")
    print(f"  keyed: slidewise / identity pass       {kk / res['identity mapInArrow']:6.2f}x")
    c = res["slidewise keyed, compute pass only (halos given)"]
    print(f"  keyed compute pass alone: segment tree / it {res['spark segment tree keyed'] / c:6.1f}x, "
          f"it / identity pass {c / res['identity mapInArrow']:6.2f}x")
    print(f"  keyed: segment tree / identity pass   {res['spark segment tree keyed'] / res['identity mapInArrow']:6.1f}x "
          "(3x the segment tree needs a job at most this/3 identity passes)")
    if "spark default frame keyed" in res:
        print(f"  keyed: default frame / slidewise       {res['spark default frame keyed'] / kk:6.1f}x")


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        sys.exit(f"check failed, nothing timed: {e}")
