"""The keyed feature job of the Spark issue, shared by ``compare_spark.py``
(``--job features``) and the asv benchmark ``bench_spark.SparkFeatures``.

The job: 3 count windows (20, 100, 500 rows) x max / mean / std of ``v``
per key ``k`` (100 keys), ordered by (``t``, ``id``), over 2M rows read from
Parquet files written in time order (sorted by ``t``, keys interleaved;
``t`` a timestamp with ties, ``id`` unique; ``v`` with 1% nulls and a few
NaN), every output column computed (a ``noop`` write).

* :func:`write_parquet`: the files (pyarrow, ``files`` files in time order).
* :func:`assert_segment_tree`: fails loudly unless this Spark has the
  segment-tree frame (``spark.sql.window.segmentTree.enabled``, Spark >=
  4.2.0) and it applies to the job's partitions.
* :func:`jobs`: the DataFrames timed: slidewise, Spark's frames (one window
  spec per frame, all 9 columns in one select), the identity ``mapInArrow``.
* :func:`check_features`: slidewise's 9 columns against Spark's, collected
  as Arrow (null and NaN apart), max exactly, mean / std to 1e-9 relative.
"""

from __future__ import annotations

import os

import numpy as np

if __package__:
    from ._check import Mismatch, check
else:
    from _check import Mismatch, check

WINDOWS = (20, 100, 500)
AGGS = ("max", "mean", "std")
KEYS = 100
ROWS = 2_000_000
FILES = 8
SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"
# The Spark release that introduced the segment-tree frame (SQLConf's
# WINDOW_SEGMENT_TREE_ENABLED.version() in pyspark 4.3.0 says "4.2.0").
SEGMENT_TREE_SINCE = (4, 2, 0)


def names():
    return [f"{a}_{w}" for w in WINDOWS for a in AGGS]


def data_path(rows: int = ROWS, keys: int = KEYS, missing: float = 0.01, shuffled: bool = False,
              base: "str | None" = None) -> str:
    """Where a data set's files go: ``base`` (default
    ``slidewise_features_<rows>_<keys>`` under the temp directory) with
    the parameters that differ from the default job's as a suffix."""
    import tempfile

    base = base or os.path.join(tempfile.gettempdir(), f"slidewise_features_{rows}_{keys}")
    return base + ("" if missing == 0.01 else f"_{missing:g}") + ("_shuffled" if shuffled else "")


def write_parquet(path: str, rows: int = ROWS, keys: int = KEYS, files: int = FILES, seed: int = 7,
                  missing: float = 0.01, shuffled: bool = False) -> str:
    """``files`` Parquet files under ``path`` in time order (file i holds the
    i-th slice of rows sorted by (t, id)), ``missing`` of the values null;
    ``shuffled``: the same rows in random order (as files landed by many
    writers are), so no file is in order; written once (a ``_DONE`` marker
    names the parameters)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tag = f"{rows} {keys} {files} {seed}" + (f" {missing}" if missing != 0.01 else "") + (" shuffled" if shuffled else "")
    done = os.path.join(path, "_DONE")
    if os.path.exists(done) and open(done).read() == tag:
        return path
    os.makedirs(path, exist_ok=True)
    for f in os.listdir(path):
        os.remove(os.path.join(path, f))
    rng = np.random.default_rng(seed)
    # times in microseconds from 2026-01-01, steps of 0-2 ms: a third of the rows tie with the one before
    t = np.datetime64("2026-01-01T00:00:00", "us").astype(np.int64) + 1000 * np.cumsum(rng.integers(0, 3, rows))
    k = rng.integers(0, keys, rows).astype(np.int32)
    v = rng.normal(50.0, 10.0, rows)
    v[rng.choice(rows, 5, replace=False)] = np.nan
    null = rng.random(rows) < missing
    ids = np.arange(rows, dtype=np.int64)
    if shuffled:  # the same rows (ids, values, nulls), in random order
        p = np.random.default_rng(seed + 1).permutation(rows)
        t, ids, k, v, null = t[p], ids[p], k[p], v[p], null[p]
    for i in range(files):
        a, b = i * rows // files, (i + 1) * rows // files
        pq.write_table(pa.table({
            "t": pa.array(t[a:b], pa.timestamp("us", tz="UTC")),
            "id": pa.array(ids[a:b]),
            "k": pa.array(k[a:b]),
            "v": pa.array(v[a:b], mask=null[a:b]),
        }), os.path.join(path, f"part-{i:05d}.parquet"))
    with open(done, "w") as f:
        f.write(tag)
    return path


def assert_segment_tree(spark) -> str:
    """Fail loudly unless this Spark runs the segment-tree frame: the conf
    is one Spark knows (``spark.conf.get`` without a default raises
    SQL_CONF_NOT_FOUND for an unknown key, while ``set`` would accept any
    key silently), Spark is >= 4.2.0 (the version the conf entry names, which
    must say the same), the frame class is on the JVM, and the partitions
    hold at least ``minPartitionRows`` rows (smaller ones fall back to the
    default frame). Returns a line saying so."""
    import re

    try:
        spark.conf.get(SEGMENT_TREE)
    except Exception as e:
        raise RuntimeError(f"this Spark ({spark.version}) has no {SEGMENT_TREE}: its window functions would run "
                           f"the default frame; the benchmark needs Spark >= 4.2.0 ({e})") from None
    version = tuple(int(x) for x in re.findall(r"\d+", spark.version)[:3])
    if version < SEGMENT_TREE_SINCE:
        raise RuntimeError(f"Spark {spark.version} < 4.2.0, which introduced {SEGMENT_TREE}")
    since = "?"
    try:  # the JVM side (not on Spark Connect)
        conf = spark._jvm.org.apache.spark.sql.internal.SQLConf
        since = conf.WINDOW_SEGMENT_TREE_ENABLED().version()
        spark._jvm.java.lang.Class.forName("org.apache.spark.sql.execution.window.SegmentTreeWindowFunctionFrame")
        min_rows = int(conf.WINDOW_SEGMENT_TREE_MIN_PARTITION_ROWS().defaultValueString())
    except Exception as e:
        raise RuntimeError(f"Spark {spark.version}: the segment-tree frame is not in the JVM ({e})") from None
    if tuple(int(x) for x in re.findall(r"\d+", since)[:3]) > version:
        raise RuntimeError(f"{SEGMENT_TREE} since Spark {since}, but this is {spark.version}")
    min_rows = int(spark.conf.get("spark.sql.window.segmentTree.minPartitionRows", str(min_rows)))
    return f"Spark {spark.version}: {SEGMENT_TREE} (since {since}), frames of partitions >= {min_rows} rows"


def jobs(spark, df):
    """{name: () -> DataFrame} of the jobs timed; the Spark ones set the
    segment-tree conf themselves when called."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    import slidewise.spark as ss

    fns = {"max": F.max, "mean": F.avg, "std": F.stddev}

    def frames(seg: bool):
        def make():
            spark.conf.set(SEGMENT_TREE, "true" if seg else "false")
            cols = []
            for w in WINDOWS:
                win = Window.partitionBy("k").orderBy("t", "id").rowsBetween(-(w - 1), 0)
                cols += [fns[a]("v").over(win).alias(f"{a}_{w}") for a in AGGS]
            return df.select("*", *cols)
        return make

    return {
        "slidewise": lambda: ss.rolling(df, "v", "t", list(WINDOWS), list(AGGS), partition_by="k", tiebreak="id"),
        "spark segment tree": frames(True),
        "spark default frame": frames(False),
        "identity mapInArrow": lambda: df.mapInArrow(lambda it: it, df.schema),
    }


def columns(job):
    """A job's 9 output columns in ``id`` order, collected as Arrow."""
    import pyarrow.compute as pc

    t = job.select("id", *names()).toArrow()
    return t.take(pc.sort_indices(t.column("id")))


def check_features(got, want, peer: str, rows: int, keys: int = KEYS) -> None:
    """Raise ``_check.Mismatch`` unless the 9 columns agree: the same null
    rows and NaN rows, max exactly, mean / std within 1e-9 relative."""
    if got.column("id") != want.column("id"):
        raise Mismatch(f"feature job: slidewise and {peer} give different rows")
    for name in names():
        check(f"feature job, {rows:,} rows, {keys} keys, {name}", got.column(name), want.column(name), peer,
              rtol=0.0 if name.startswith("max") else 1e-9)
