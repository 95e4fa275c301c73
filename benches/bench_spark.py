"""asv: slidewise.spark against Spark's own window frames, in one run.

Each benchmark forces one job with a ``noop`` write on the same cached
DataFrame (2M rows, local[2]): slidewise (unkeyed: range partitions with
halos; keyed: sorted mapInArrow or applyInArrow), Spark's default frame, its
segment-tree frame and an identity mapInArrow pass (the floor of any Python
pass). ``benches/compare_spark.py`` prints the same comparison as ratios.
"""

import os
import sys

N = 2_000_000
W = 1000
KEYS = 100


class SparkRolling:
    params = (["unkeyed", "keyed"],
              ["slidewise", "slidewise_apply", "spark_segment_tree", "spark_default", "identity_mapInArrow"])
    param_names = ["layout", "method"]
    timeout = 900
    number = 1
    repeat = 1

    def setup(self, layout, method):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if method == "slidewise_apply" and layout == "unkeyed":
            raise NotImplementedError  # applyInArrow needs keys: asv skips the combination
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
            "slidewise_apply": lambda: ss.rolling(df, "v", "t", W, "max", partition_by=keys, method="apply"),
            "spark_segment_tree": lambda: df.withColumn("m", F.max("v").over(win)),
            "spark_default": lambda: df.withColumn("m", F.max("v").over(win)),
            "identity_mapInArrow": lambda: df.mapInArrow(lambda it: it, df.schema),
        }[method]

    def time_rolling_max(self, layout, method):
        self.make().write.format("noop").mode("overwrite").save()
