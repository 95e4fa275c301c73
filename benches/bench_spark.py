"""asv: slidewise.spark against Spark's own window frames, in one run.

Each benchmark forces one job with a ``noop`` write on the same cached
DataFrame (2M rows, local[2], from ``spark.range``, so Spark's plan knows
the rows are in ``t`` order): slidewise (unkeyed: no check pass, halos from
each partition's first rows; ``slidewise_assume_sorted``: the same, vouched
for; ``slidewise_checked``: with ``tiebreak``, which the plan does not
know, so a check pass first; keyed: the no-shuffle ordered path or
applyInArrow), Spark's default frame, its segment-tree frame and an
identity mapInArrow pass (the floor of any Python pass).
``benches/compare_spark.py`` prints the same comparison as ratios.

Each setup first checks the job it is about to time: a slidewise job's
column against Spark's segment-tree frame, a Spark frame's against
slidewise's (``ss.rolling``), so a wrong result fails the benchmark instead
of being timed. The identity pass computes nothing to check.
"""

import os
import sys

from ._check import check, spark_column

N = 2_000_000
W = 1000
KEYS = 100


class SparkRolling:
    params = (["unkeyed", "keyed"],
              ["slidewise", "slidewise_assume_sorted", "slidewise_checked", "slidewise_apply", "spark_segment_tree",
               "spark_default", "identity_mapInArrow"])
    param_names = ["layout", "method"]
    timeout = 900
    number = 1
    repeat = 1

    def setup(self, layout, method):
        if (method == "slidewise_apply") == (layout == "unkeyed") and method.startswith("slidewise_"):
            # applyInArrow needs keys, assume_sorted and the tiebreak check
            # are unkeyed: asv skips the combination
            raise NotImplementedError
        self.spark = _local_spark()
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        import slidewise.spark as ss

        df = (self.spark.range(N, numPartitions=2)
              .select(F.col("id").alias("t"), F.rand(1).alias("v"), (F.col("id") % KEYS).alias("k"))).cache()
        df.count()
        keys = "k" if layout == "keyed" else None
        self.spark.conf.set("spark.sql.window.segmentTree.enabled", str(method == "spark_segment_tree").lower())
        win = (Window.partitionBy("k") if keys else Window).orderBy("t").rowsBetween(-(W - 1), 0)
        self.make = {
            "slidewise": lambda: ss.rolling(df, "v", "t", W, "max", partition_by=keys),
            "slidewise_assume_sorted": lambda: ss.rolling(df, "v", "t", W, "max", assume_sorted=True),
            "slidewise_checked": lambda: ss.rolling(df, "v", "t", W, "max", tiebreak="t"),
            "slidewise_apply": lambda: ss.rolling(df, "v", "t", W, "max", partition_by=keys, method="apply"),
            "spark_segment_tree": lambda: df.withColumn("m", F.max("v").over(win)),
            "spark_default": lambda: df.withColumn("m", F.max("v").over(win)),
            "identity_mapInArrow": lambda: df.mapInArrow(lambda it: it, df.schema),
        }[method]
        if method != "identity_mapInArrow":
            self._check(layout, method, df, win)

    def _check(self, layout, method, df, win):
        """The timed job's result against the other side's, each in t order
        (collected as Arrow: null and NaN stay apart). The frame
        ROWS BETWEEN W-1 PRECEDING AND CURRENT ROW gives a key's first W - 1
        rows their partial window's max, as slidewise does; a max picks one
        of the values: equal, bit for bit."""
        from pyspark.sql import functions as F

        import slidewise.spark as ss

        if method.startswith("slidewise"):
            got = spark_column(self.make(), f"max_{W}")
            self.spark.conf.set("spark.sql.window.segmentTree.enabled", "true")
            want, peer = spark_column(df.withColumn("m", F.max("v").over(win)), "m"), "Spark segment tree"
        else:
            keys = "k" if layout == "keyed" else None
            got = spark_column(ss.rolling(df, "v", "t", W, "max", partition_by=keys), f"max_{W}")
            want, peer = spark_column(self.make(), "m"), method
        self.spark.conf.set("spark.sql.window.segmentTree.enabled", str(method == "spark_segment_tree").lower())
        check(f"SparkRolling({layout}, {method})", got, want, peer, rtol=0.0)

    def time_rolling_max(self, layout, method):
        self.make().write.format("noop").mode("overwrite").save()


_SESSION = None


def _local_spark():
    """One local[2] session per asv process (asv runs each benchmark in a
    process of its own; the setups of its parameters share the session);
    without pyspark, NotImplementedError (asv skips the benchmark)."""
    global _SESSION
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise NotImplementedError("pyspark is not installed") from None

    if _SESSION is None:
        _SESSION = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                    .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "3g")
                    .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


class SparkFeatures:
    """The keyed feature job of the Spark issue (``benches/_features.py``):
    3 count windows (20, 100, 500 rows) x max / mean / std per key, 100
    keys, 2M rows read from 8 Parquet files written in time order (keys
    interleaved), every column computed (a ``noop`` write). slidewise
    (``ss.rolling``: the check pass, the halos and the pass computing, all
    timed), Spark's segment-tree frame (one window spec per frame, all 9
    columns in one select), its default frame, and an identity
    ``mapInArrow`` over the same Parquet. The setup fails unless this
    Spark has the segment-tree frame (>= 4.2.0) and, for every job but the
    identity pass, unless slidewise's 9 columns equal Spark's (null and
    NaN apart; max exactly, mean / std to 1e-9 relative). Skipped without
    pyspark. ``files``: the files in time order, or the same rows in
    random order (slidewise's shuffle path; Spark's default frame is not
    run there). ``benches/compare_spark.py --job features`` prints the same
    jobs side by side with the ratios."""

    params = [["slidewise", "spark_segment_tree", "spark_default", "identity_mapInArrow"], ["time", "random"]]
    param_names = ["method", "files"]
    timeout = 1800
    number = 1
    repeat = 3
    warmup_time = 0

    def setup(self, method, files):
        if method == "spark_default" and files == "random":
            raise NotImplementedError  # (asv: skipped) minutes a run, and no path of slidewise's
        spark = _local_spark()
        from . import _features as fe

        fe.assert_segment_tree(spark)
        shuffled = files == "random"
        path = fe.write_parquet(fe.data_path(shuffled=shuffled), shuffled=shuffled)
        df = spark.read.parquet(path)
        jobs = fe.jobs(spark, df)
        name = {"slidewise": "slidewise", "spark_segment_tree": "spark segment tree",
                "spark_default": "spark default frame", "identity_mapInArrow": "identity mapInArrow"}[method]
        self.make = jobs[name]
        if name == "slidewise":  # against Spark's segment tree
            fe.check_features(fe.columns(self.make()), fe.columns(jobs["spark segment tree"]()),
                              "spark segment tree", fe.ROWS)
        elif name.startswith("spark"):  # against slidewise
            fe.check_features(fe.columns(jobs["slidewise"]()), fe.columns(self.make()), name, fe.ROWS)

    def time_feature_job(self, method, files):
        self.make().write.format("noop").mode("overwrite").save()


class SparkStream:
    """Issue 35's streaming job, small: ``stream_aggregate(..., wide=True)``
    against Spark's own ``withWatermark.groupBy(k, F.window(10 min, 1
    min)).agg(sum, max, avg)`` over the same micro-batches (a Parquet file
    source, ``maxFilesPerTrigger=1``, late and far-late rows, nulls and
    NaN; ``benches/compare_spark_stream.py``), 200 keys, 3 batches of 5,000
    rows, the session's state store, the query run to its end
    (``availableNow``) into Parquet. The setup runs both once and fails
    unless their windows are equal. ``compare_spark_stream.py`` prints the
    full job with the ratios and the state's bytes."""

    params = ["slidewise", "spark"]
    param_names = ["engine"]
    timeout = 600
    number = 1
    repeat = 3
    warmup_time = 0

    def setup(self, engine):
        spark = _local_spark()
        import tempfile

        from . import compare_spark_stream as cs

        spark.conf.set("spark.sql.session.timeZone", "UTC")
        self.work = tempfile.mkdtemp(prefix="slidewise_asv_stream_")
        self.src = os.path.join(self.work, "src")
        os.makedirs(self.src)
        for i, f in enumerate(cs.make_batches(200, 3, 5000)):
            path = os.path.join(self.src, f"part-{i:03d}.parquet")
            f.to_parquet(path)
            os.utime(path, (1_000_000 + i, 1_000_000 + i))  # the file source's order
        for name, build in (("spark", cs.spark_job), ("slidewise", cs.slidewise_job)):
            cs.run(spark, self.src, build, os.path.join(self.work, name))
        cs.compare(os.path.join(self.work, "spark"), os.path.join(self.work, "slidewise"))
        self.spark, self.run, self.build = spark, cs.run, {"spark": cs.spark_job, "slidewise": cs.slidewise_job}[engine]

    def teardown(self, engine):
        import shutil

        shutil.rmtree(self.work, ignore_errors=True)

    def time_stream_job(self, engine):
        self.run(self.spark, self.src, self.build, os.path.join(self.work, "timed"))
