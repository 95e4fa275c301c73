"""slidewise.spark.rolling's "parquet-tails" path (keyed count windows over
Parquet files written in time order, no check pass) against Spark's own
window functions on a real local[2] session, compared as Arrow (null and
NaN apart): several files of several row groups, files split into several
partitions (small ``spark.sql.files.maxPartitionBytes``) and packed out of
sequence, a rare key whose halo lies several files back, small Arrow
batches and chunks; the default tiebreak (input order); a file out of order
inside (an error, never a wrong answer); what falls back (files overlapping
in time, a filter, a key column Spark cannot see in the footer)."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")
from pyspark.sql import functions as F  # noqa: E402

import slidewise.spark as ss  # noqa: E402
from slidewise.spark import _kernels  # noqa: E402

from test_spark import _compare, _spark_rows  # noqa: E402

AGGS = ["sum", "max", "min", "mean", "std", "count"]


def _write(path, n=3000, files=5, rows_per_group=150, seed=3, ties=3, rare=True, shuffle_inside=False,
           float_keys=False, swap_boundary=False, shuffled=False):
    """``files`` Parquet files in (t, id) order, keys 0..3 interleaved (int
    or, with a few NaN / -0.0, double keys) and a rare key 9 only in the
    first and the last file; v with nulls and NaN; t with runs of ``ties``
    equal values. ``shuffle_inside``: two rows of the middle file swap
    places inside a row group (its statistics unchanged);
    ``swap_boundary``: the ids of the rows either side of the second
    file's start swap (equal times there: each file still sorted, the
    boundary not). ``shuffled``: the same rows in random order across the
    files (each row group then spans about all the times)."""
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    t = np.arange(n) // ties
    k = rng.integers(0, 4, n)
    if rare:
        k[[3, 40, n - 30, n - 2]] = 9
    v = rng.normal(size=n).round(3)
    v[rng.random(n) < 0.05] = np.nan
    null = rng.random(n) < 0.08
    ids = np.arange(n)
    if swap_boundary:
        b = n // files
        assert t[b - 1] == t[b]
        ids[[b - 1, b]] = ids[[b, b - 1]]
    if shuffle_inside:
        a = n // 2 + 10
        ids[[a, a + 5]] = ids[[a + 5, a]]
        t[[a, a + 5]] = t[[a + 5, a]]
        t[a + 5] = t[a] - 1  # now below the row before it, inside the same row group
    keys = pa.array(k, pa.int64())
    if float_keys:
        kf = k.astype(float)
        kf[ids % 97 == 0] = np.nan
        kf[ids % 89 == 0] = -0.0
        keys = pa.array(kf, mask=ids % 83 == 0)
    if shuffled:
        p = rng.permutation(n)
        t, ids, keys, v, null = t[p], ids[p], keys.take(pa.array(p)), v[p], null[p]
    for i in range(files):
        lo, hi = i * n // files, (i + 1) * n // files
        pq.write_table(pa.table({"t": pa.array(t[lo:hi], pa.int64()), "id": pa.array(ids[lo:hi], pa.int64()),
                                 "k": keys.slice(lo, hi - lo),
                                 "v": pa.array(v[lo:hi], mask=null[lo:hi])}),
                       f"{path}/part-{i:03d}.parquet", row_group_size=rows_per_group)
    return path


@pytest.fixture
def small_splits(spark):
    """Files cut into several splits, several splits per partition."""
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2500")
    spark.conf.set("spark.sql.files.openCostInBytes", "1")
    yield
    spark.conf.unset("spark.sql.files.maxPartitionBytes")
    spark.conf.unset("spark.sql.files.openCostInBytes")


def _check(spark, df, windows, tiebreak="id", order=("t", "id"), batch=None, aggs=AGGS):
    plan = ss.plan_rolling(df, "v", "t", windows, aggs, partition_by="k", tiebreak=tiebreak)
    if batch:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", batch)
    try:
        got = plan.run().toArrow()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    want = _spark_rows(df, windows, aggs, ["k"], list(order)).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in windows for a in aggs])
    assert got.column_names == df.columns + [f"{a}_{w}" for w in windows for a in aggs]
    return plan


def test_parquet_tails_equal_spark(spark, tmp_path, monkeypatch, small_splits):
    """Several files of several row groups, each file in several splits and
    the splits spread over partitions out of sequence: equal to Spark's
    frames, the rare key's halo (first file) reaching four files back."""
    monkeypatch.setattr(_kernels, "_CHUNK_ROWS", 64)
    df = spark.read.parquet(_write(str(tmp_path)))
    parts = df.rdd.getNumPartitions()
    assert parts > 5  # the files are split
    plan = _check(spark, df, [200, 7, 1], batch="37")
    assert (plan.path, plan.keyed) == ("parquet-tails", True)


def test_parquet_tails_one_file_per_partition(spark, tmp_path):
    """Spark's default splits (files packed into partitions largest first),
    float keys as Spark groups them (NaN one key, -0.0 the key 0.0, null one
    key), a window longer than every file."""
    f = spark.read.parquet(_write(str(tmp_path), n=2400, files=6, rows_per_group=100, float_keys=True))
    plan = _check(spark, f, [1000, 3])
    assert plan.path == "parquet-tails"


@pytest.mark.parametrize("ties", [5, 4])
def test_parquet_tails_default_tiebreak(spark, tmp_path, ties):
    """Without tiebreak= ties follow the input order: inside a file its
    order, across files the order Spark reads them in
    (monotonically_increasing_id). 450 rows per file: runs of 5 equal times
    end at each file's end (parquet-tails); runs of 4 span two files, which
    Spark may read in the other order: the driver then leaves the path to
    the others. Equal to Spark's frames either way."""
    df = spark.read.parquet(_write(str(tmp_path), n=1800, files=4, ties=ties, rows_per_group=90))
    plan = ss.plan_rolling(df, "v", "t", [5, 60], ["sum", "max"], partition_by="k")
    if ties == 5:
        assert plan.path == "parquet-tails"
    got = plan.run().toArrow()
    mid = df.withColumn("mid", F.monotonically_increasing_id())
    want = _spark_rows(mid, [5, 60], ["sum", "max"], ["k"], ["t", "mid"]).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in [5, 60] for a in ["sum", "max"]])


@pytest.mark.parametrize("case", ["inside", "boundary"])
def test_parquet_tails_out_of_order_is_an_error(spark, tmp_path, case):
    """Row-group statistics in sequence but two rows swapped inside a file,
    or across two files' boundary (tied times, the tiebreak backwards): the
    task that reads the later rows raises a clear error; nothing is
    returned."""
    if case == "inside":
        df = spark.read.parquet(_write(str(tmp_path), shuffle_inside=True))
    else:
        df = spark.read.parquet(_write(str(tmp_path), n=1800, files=4, ties=4, swap_boundary=True))
    plan = ss.plan_rolling(df, "v", "t", 20, "sum", partition_by="k", tiebreak="id")
    assert plan.path == "parquet-tails"
    with pytest.raises(Exception, match="not in order of"):
        plan.run().toArrow()


def test_parquet_tails_falls_back(spark, tmp_path):
    """Files overlapping in time, a filter, a computed column: the other
    paths, still equal to Spark."""
    path = _write(str(tmp_path / "a"), n=600, files=4, rows_per_group=50)
    df = spark.read.parquet(path)
    plan = _check(spark, df.filter(F.col("id") % 5 != 1), [30], aggs=["sum", "max"])
    assert plan.path != "parquet-tails"
    plan = _check(spark, df.withColumn("v", F.col("v") * 2), [30], aggs=["sum", "max"])
    assert plan.path != "parquet-tails"
    # the last file's times overlap the first's
    t = pq.read_table(f"{path}/part-003.parquet")
    pq.write_table(t.set_column(0, "t", pa.array(np.arange(t.num_rows, dtype=np.int64))),
                   f"{path}/part-003.parquet")
    plan = _check(spark, spark.read.parquet(path), [30], aggs=["sum", "max"])
    assert plan.path != "parquet-tails"


def test_parquet_files_in_random_order_take_the_shuffle_without_a_check_pass(spark, tmp_path):
    """Rows in random order across the files (every row group spans about
    all the times): the footers show it, so planning runs no Spark job
    (the check pass would read the input to find the same), and the
    shuffle path gives Spark's frames. The same rows behind a filter (no
    footers to read) cost a check pass: a job."""
    df = spark.read.parquet(_write(str(tmp_path), n=2400, files=4, rows_per_group=200, shuffled=True))
    windows, aggs = [40, 3], ["sum", "max", "std"]
    sc = spark.sparkContext

    def planned(frame, group):
        sc.setJobGroup(group, "planning only")
        try:
            plan = ss.plan_rolling(frame, "v", "t", windows, aggs, partition_by="k", tiebreak="id")
            return plan, sc.statusTracker().getJobIdsForGroup(group)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)  # no group for the tests after

    planned(df, "slidewise-ship")  # the first call ships slidewise
    plan, jobs = planned(df, "slidewise-footers")
    assert (plan.path, jobs) == ("shuffle", [])
    got = plan.run().toArrow()
    _compare(got, _spark_rows(df, windows, aggs, ["k"], ["t", "id"]).toArrow(),
             [(f"{a}_{w}", f"ref_{a}_{w}") for w in windows for a in aggs])
    plan, jobs = planned(df.filter(F.col("id") >= 0), "slidewise-check-pass")
    assert plan.path == "shuffle" and len(jobs) >= 1
