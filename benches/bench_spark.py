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
"""

import os
import sys

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
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if (method == "slidewise_apply") == (layout == "unkeyed") and method.startswith("slidewise_"):
            # applyInArrow needs keys, assume_sorted and the tiebreak check
            # are unkeyed: asv skips the combination
            raise NotImplementedError
        from pyspark.sql import SparkSession, Window
        from pyspark.sql import functions as F

        import slidewise.spark as ss

        self.spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                      .config("spark.driver.memory", "3g").config("spark.sql.shuffle.partitions", "2")
                      .getOrCreate())
        self.spark.sparkContext.setLogLevel("ERROR")
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

    def time_rolling_max(self, layout, method):
        self.make().write.format("noop").mode("overwrite").save()
