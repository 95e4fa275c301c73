"""slidewise.spark against Spark's own window functions on a real local[2]
session: rowsBetween (count windows) and rangeBetween (time windows), keyed
and unkeyed, with nulls, NaN, ties and duplicate order keys, on data forced
into several partitions so that halos cross partition and batch boundaries;
aggregate() against groupBy(F.window(...)). (Shipping to executors whose
Python has no slidewise: test_spark_cluster.py, on executor JVMs of their
own.) Results are compared as Arrow (toArrow keeps null
and NaN apart, which toPandas merges): null and NaN positions exactly,
integers exactly, floats within 1e-9 relative. Every test that checks
which code path ran also checks the values it gave. Seeds are fixed."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import slidewise as sw

pyspark = pytest.importorskip("pyspark")
from pyspark.sql import Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import slidewise.spark as ss  # noqa: E402
from slidewise.spark import _kernels, _order, _ship  # noqa: E402

SPARK_FN = {"max": F.max, "min": F.min, "sum": F.sum, "mean": F.avg, "count": F.count, "std": F.stddev,
            "var": F.var_samp}
AGGS = ["max", "min", "sum", "mean", "count", "std"]


def _data(n, nkeys, tmax, seed, null_frac=0.1, nan_frac=0.05, dtype="float64"):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=n).round(3)
    if dtype != "float64":
        v = rng.integers(-50, 50, n)
    pdf = pd.DataFrame({"id": np.arange(n, dtype=np.int64), "k": rng.integers(0, nkeys, n),
                        "t": rng.integers(0, tmax, n), "v": v})
    pdf = pdf.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # input order != id order
    nulls = rng.random(n) < null_frac
    nans = rng.random(n) < nan_frac
    return pdf, nulls, nans


def _sdf(spark, pdf, nulls, nans, parts=5):
    ddl = {"i": "bigint", "f": "double", "M": "timestamp"}
    schema = ", ".join(f"{c} {'int' if pdf[c].dtype == np.int32 else ddl[pdf[c].dtype.kind]}" for c in pdf.columns)
    sdf = spark.createDataFrame(pdf, schema=schema).repartition(parts)
    ids_null = set(pdf["id"][nulls].tolist())
    ids_nan = set(pdf["id"][nans].tolist())
    v = F.col("v")
    if ids_nan and pdf["v"].dtype.kind == "f":
        v = F.when(F.col("id").isin(list(ids_nan)), F.lit(float("nan"))).otherwise(v)
    if ids_null:
        v = F.when(F.col("id").isin(list(ids_null)), F.lit(None)).otherwise(v)
    return sdf.withColumn("v", v.cast(sdf.schema["v"].dataType))



def _collect(spark, batch, job):
    """`job()`'s result as a pyarrow Table, run with Arrow batches of `batch`
    rows (a string; falsy: Spark's default), so halos must cross batch
    boundaries."""
    if batch:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", batch)
    try:
        return job().toArrow()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def _planned(spark, batch, make):
    """``make()`` (a slidewise.spark.plan_rolling call) made and run inside
    _collect, so its check pass sees the same batch size: (the plan, its
    result as a pyarrow Table)."""
    plans = []

    def job():
        plans.append(make())
        return plans[0].run()

    got = _collect(spark, batch, job)
    return plans[0], got


def _table(x):
    """A pyarrow Table: as given, or a Spark DataFrame's toArrow() (null and
    NaN stay apart; toPandas() would make both NaN)."""
    return x if isinstance(x, pa.Table) else x.toArrow()


def _flags(a):
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    null = a.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_floating(a.type):
        nan = pc.is_nan(a).fill_null(False).to_numpy(zero_copy_only=False)
    else:
        nan = np.zeros(len(a), dtype=bool)
    return a, null, nan


def _same_values(x, y, what, same_type=True, rtol=1e-9, atol=1e-9):
    """Arrow columns x (got) and y (want) row by row: nulls at the same rows,
    NaN at the same rows, the rest equal (integers, timestamps, strings
    exactly; floats within rtol/atol). same_type: the Arrow types too."""
    x, nx, ax = _flags(x)
    y, ny, ay = _flags(y)
    assert len(x) == len(y), (what, len(x), len(y))
    if same_type:
        assert x.type == y.type, (what, x.type, y.type)
    for label, fx, fy in (("null", nx, ny), ("NaN", ax, ay)):
        bad = np.flatnonzero(fx != fy)[:5]
        assert not bad.size, (f"{what}: {label} differs at rows {bad.tolist()}: got {x.take(bad).to_pylist()}, "
                              f"want {y.take(bad).to_pylist()}")
    ok = pa.array(~(nx | ax))
    xv = x.filter(ok).to_numpy(zero_copy_only=False)
    yv = y.filter(ok).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(x.type) or pa.types.is_floating(y.type):
        np.testing.assert_allclose(xv.astype(float), yv.astype(float), rtol=rtol, atol=atol, err_msg=what)
    else:
        bad = np.flatnonzero(xv != yv)[:5]
        assert not bad.size, f"{what}: values differ: got {xv[bad].tolist()}, want {yv[bad].tolist()}"


def _compare(got, want, cols, same_type=True):
    """got and want (Spark DataFrames or Arrow tables) row by row by "id":
    the same ids, and for each (a, b) in cols got[a] equal to want[b]."""
    g = _table(got).sort_by("id")
    w = _table(want).sort_by("id")
    assert g.num_rows == w.num_rows, (g.num_rows, w.num_rows)
    _same_values(g["id"], w["id"], "id", same_type=False)
    for a, b in cols:
        _same_values(g[a], w[b], a, same_type=same_type)


def _spark_rows(sdf, windows, aggs, keys, order):
    cols = []
    for w in windows:
        win = Window.orderBy(*order).rowsBetween(-(w - 1), 0)
        if keys:
            win = Window.partitionBy(*keys).orderBy(*order).rowsBetween(-(w - 1), 0)
        cols += [SPARK_FN[a]("v").over(win).alias(f"ref_{a}_{w}") for a in aggs]
    return sdf.select("id", *cols)


@pytest.mark.parametrize("keys", [["k"], None], ids=["keyed", "unkeyed"])
def test_rolling_rows_equal_spark(spark, keys):
    """Count windows, several windows and aggs in one pass, ties on t
    broken by id; 5 range partitions and 100-row Arrow batches, so halos
    span batches and (unkeyed) several short partitions."""
    pdf, nulls, nans = _data(1500, 4, 300, seed=1)
    sdf = _sdf(spark, pdf, nulls, nans)
    windows = [1, 7, 120]
    out = ss.rolling(sdf, "v", "t", windows, AGGS, partition_by=keys, tiebreak="id", num_partitions=5)
    got = _collect(spark, "100", lambda: out)
    want = _spark_rows(sdf, windows, AGGS, keys, ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in windows for a in AGGS])
    # output types as Spark's own functions
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert types["max_7"] == "double" and types["count_7"] == "bigint" and types["mean_7"] == "double"
    assert "__slidewise_tiebreak" not in types


def test_rolling_default_tiebreak_is_input_order(spark):
    """Without tiebreak=, ties on the order column follow the input order
    (monotonically_increasing_id of the DataFrame as given)."""
    pdf, nulls, nans = _data(800, 1, 40, seed=2)  # ~20 rows per order value
    # the row order after a shuffle depends on block fetch order: fix it
    sdf = _sdf(spark, pdf, nulls, nans, parts=3).localCheckpoint()
    sdf = sdf.withColumn("mid", F.monotonically_increasing_id())
    got = ss.rolling(sdf, "v", "t", 5, ["sum", "max", "count"], num_partitions=3).toArrow()
    want = _spark_rows(sdf, [5], ["sum", "max", "count"], None, ["t", "mid"]).toArrow()
    _compare(got, want, [(f"{a}_5", f"ref_{a}_5") for a in ["sum", "max", "count"]])


def test_rolling_int_column_types(spark):
    pdf, nulls, nans = _data(600, 3, 100, seed=3, dtype="int32")
    pdf["v"] = pdf["v"].astype(np.int32)
    sdf = _sdf(spark, pdf, nulls, nans, parts=3)
    assert sdf.schema["v"].dataType.simpleString() == "int"
    out = ss.rolling(sdf, "v", "t", 4, ["max", "sum", "mean", "count"], partition_by="k", tiebreak="id")
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert types["max_4"] == "int" and types["sum_4"] == "bigint" and types["mean_4"] == "double"
    want = _spark_rows(sdf, [4], ["max", "sum", "mean", "count"], ["k"], ["t", "id"]).toArrow()
    _compare(out.toArrow(), want, [(f"{a}_4", f"ref_{a}_4") for a in ["max", "sum", "mean", "count"]])


@pytest.mark.parametrize("keys", [["k"], None], ids=["keyed", "unkeyed"])
def test_rolling_time_equal_spark_range(spark, keys):
    """Time windows (t - range, t] equal Spark's rangeBetween(-(r-1), 0) on
    the microsecond time: tied times are peers and share one value."""
    pdf, nulls, nans = _data(1500, 3, 400, seed=4)
    pdf["ts"] = pd.to_datetime(pdf["t"] * 250, unit="ms")  # many ties, gaps of 0.25 s
    sdf = _sdf(spark, pdf, nulls, nans)
    got = _collect(spark, "64",
                   lambda: ss.rolling(sdf, "v", "ts", ["2s", "10s"], AGGS, partition_by=keys, num_partitions=5))
    us = F.col("ts").cast("double") * 1e6
    cols = []
    for name, r in [("2s", 2_000_000), ("10s", 10_000_000)]:
        win = (Window.partitionBy(*keys) if keys else Window).orderBy(us.cast("long")).rangeBetween(-(r - 1), 0)
        cols += [SPARK_FN[a]("v").over(win).alias(f"ref_{a}_{name}") for a in AGGS]
    want = sdf.select("id", *cols).toArrow()
    _compare(got, want, [(f"{a}_{n}", f"ref_{a}_{n}") for n in ["2s", "10s"] for a in AGGS])


def test_rolling_min_periods_and_apply_method(spark):
    """min_periods as pandas; groupBy().applyInArrow gives the same rows as
    the default sorted mapInArrow."""
    pdf, nulls, nans = _data(500, 3, 1000, seed=5, nan_frac=0.0)
    pdf = pdf.sort_values(["t", "id"])
    sdf = _sdf(spark, pdf, nulls, nans, parts=3)
    a = ss.rolling(sdf, "v", "t", 6, ["sum", "max"], partition_by="k", tiebreak="id", min_periods=4).toArrow()
    b = ss.rolling(sdf, "v", "t", 6, ["sum", "max"], partition_by="k", tiebreak="id", min_periods=4,
                   method="apply").toArrow()
    _compare(a, b, [("sum_6", "sum_6"), ("max_6", "max_6")])
    p = pdf.copy()
    p.loc[nulls, "v"] = np.nan
    p = p.sort_values(["k", "t", "id"])
    g = p.groupby("k")["v"]
    # the input has no NaN: pandas' NaN are the windows with fewer than 4 values, nulls in Spark
    ref = pa.table({"id": p["id"].to_numpy(),
                    "sum": pa.array(g.transform(lambda s: s.rolling(6, min_periods=4).sum()).to_numpy(),
                                    from_pandas=True),
                    "max": pa.array(g.transform(lambda s: s.rolling(6, min_periods=4).max()).to_numpy(),
                                    from_pandas=True)})
    assert 0 < ref["sum"].null_count < len(p)
    _compare(a, ref, [("sum_6", "sum"), ("max_6", "max")])


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(0, 300), w=st.integers(1, 60), parts=st.integers(1, 6), seed=st.integers(0, 1000))
def test_rolling_random_unkeyed_halos(spark, n, w, parts, seed):
    """Random sizes: partitions shorter than the halo, empty partitions."""
    pdf, nulls, nans = _data(n, 1, max(1, n // 3), seed=seed)
    sdf = _sdf(spark, pdf, nulls, nans, parts=2)
    got = ss.rolling(sdf, "v", "t", w, ["max", "sum"], tiebreak="id", num_partitions=parts).toArrow()
    want = _spark_rows(sdf, [w], ["max", "sum"], None, ["t", "id"]).toArrow()
    _compare(got, want, [(f"max_{w}", f"ref_max_{w}"), (f"sum_{w}", f"ref_sum_{w}")])


def _ordered_sdf(spark, n, parts, ties):
    """Rows already in (t, id) order: id = 0..n-1 over `parts` contiguous
    partitions, t = id // ties, v with nulls and NaN."""
    df = spark.range(n, numPartitions=parts).withColumn("t", (F.col("id") / ties).cast("long"))
    v = F.sin(F.col("id") * 1.7) * 100
    v = F.when(F.col("id") % 11 == 3, F.lit(None)).when(F.col("id") % 13 == 5, F.lit(float("nan"))).otherwise(v)
    return df.withColumn("v", v.cast("double"))


@pytest.mark.parametrize("n,w,parts,batch", [(900, 120, 4, "50"), (300, 200, 7, None), (5, 3, 8, None)])
def test_rolling_unkeyed_ordered_input_skips_the_shuffle(spark, n, w, parts, batch):
    """Input already in order: one pass, no shuffle (the path taken is
    checked), exact against Spark with ties in input order, halos across
    Arrow batches, across several short partitions and empty ones."""
    sdf = _ordered_sdf(spark, n, parts, ties=3)
    plan, got = _planned(spark, batch, lambda: ss.plan_rolling(sdf, "v", "t", [w, 1, 7], AGGS))
    assert (plan.path, plan.keyed) == ("ordered", False)
    want = _spark_rows(sdf, [w, 1, 7], AGGS, None, ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{x}", f"ref_{a}_{x}") for x in [w, 1, 7] for a in AGGS])


def test_rolling_unkeyed_out_of_order_input_takes_the_range_path(spark):
    """One partition out of order, or partitions out of sequence: the check
    sees it and the shuffle path gives the exact result."""
    sdf = _ordered_sdf(spark, 400, 4, ties=2)
    swapped = sdf.withColumn("t", F.when(F.col("id") == 150, F.lit(10_000)).otherwise(F.col("t")))
    reversed_parts = sdf.withColumn("t", 1000 - F.spark_partition_id() * 100 + F.col("id") % 100)
    for df in [swapped, reversed_parts]:
        df = df.localCheckpoint()
        plan = ss.plan_rolling(df, "v", "t", 9, ["sum", "max"], tiebreak="id")
        assert plan.path == "range"
        got = plan.run().toArrow()
        want = _spark_rows(df, [9], ["sum", "max"], None, ["t", "id"]).toArrow()
        _compare(got, want, [("sum_9", "ref_sum_9"), ("max_9", "ref_max_9")])


def test_rolling_unkeyed_assume_sorted(spark):
    """assume_sorted: no check pass (path "assumed": one JVM job collects
    each partition's first rows), same rows as Spark; a partition out of
    order is an error when the job runs, not a wrong answer; partitions
    whose first rows are out of sequence take the shuffle path."""
    sdf = _ordered_sdf(spark, 700, 4, ties=3)
    plan, got = _planned(spark, "64", lambda: ss.plan_rolling(sdf, "v", "t", [150, 4], ["sum", "max"],
                                                              assume_sorted=True))
    assert plan.path == "assumed"
    want = _spark_rows(sdf, [150, 4], ["sum", "max"], None, ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in [150, 4] for a in ["sum", "max"]])

    swapped = sdf.withColumn("t", F.when(F.col("id") == 100, F.lit(5)).otherwise(F.col("t"))).localCheckpoint()
    plan = ss.plan_rolling(swapped, "v", "t", 9, "sum", assume_sorted=True)
    assert plan.path == "assumed"  # the partition ranges still follow one another
    with pytest.raises(Exception, match="assume_sorted=True, but the rows"):
        plan.run().toPandas()

    reversed_parts = sdf.withColumn("t", 1000 - F.spark_partition_id() * 300 + F.col("id") % 200).localCheckpoint()
    plan = ss.plan_rolling(reversed_parts, "v", "t", 9, "sum", tiebreak="id", assume_sorted=True)
    assert plan.path == "range"
    got = plan.run().toArrow()
    want = _spark_rows(reversed_parts, [9], ["sum"], None, ["t", "id"]).toArrow()
    _compare(got, want, [("sum_9", "ref_sum_9")])


@pytest.mark.parametrize("ws,path", [([150, 3], "assumed"), ([1], "assumed"), ([200, 3], "assumed-tails")])
def test_rolling_unkeyed_assume_sorted_partition_shapes(spark, ws, path):
    """assume_sorted over an empty partition and a short last one (each task
    computes the next non-empty partition's first rows); windows longer
    than a partition take the two-job tails path; window 1 needs no halo."""
    sdf = _ordered_sdf(spark, 700, 4, ties=3)  # 175 rows per partition
    sdf = sdf.filter((F.col("id") < 175) | ((F.col("id") >= 350) & (F.col("id") < 540))).localCheckpoint()
    plan, got = _planned(spark, "64", lambda: ss.plan_rolling(sdf, "v", "t", ws, ["sum", "max", "count"],
                                                              assume_sorted=True))
    assert plan.path == path
    want = _spark_rows(sdf, ws, ["sum", "max", "count"], None, ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{x}", f"ref_{a}_{x}") for x in ws for a in ["sum", "max", "count"]])


def test_rolling_unkeyed_assume_sorted_errors(spark):
    """A partition whose last row runs past the next one's first (its first
    rows, all the driver sees, look fine) is an error when the job runs; so
    is an input whose rows change between the two jobs."""
    sdf = _ordered_sdf(spark, 700, 4, ties=3)
    late_end = sdf.withColumn("t", F.when(F.col("id") == 174, F.lit(10_000)).otherwise(F.col("t"))).localCheckpoint()
    plan = ss.plan_rolling(late_end, "v", "t", 150, "sum", assume_sorted=True)
    assert plan.path == "assumed"
    with pytest.raises(Exception, match="assume_sorted=True, but the rows"):
        plan.run().toPandas()

    def coin(i):
        # a fixed draw per (stage, row): each job's stages draw anew, so the
        # rows kept differ between the two jobs, reproducibly
        import random

        from pyspark import TaskContext

        return random.Random(TaskContext.get().stageId() * 1_000_003 + i).random()

    coin = F.udf(coin, "double").asNondeterministic()
    flaky = _ordered_sdf(spark, 2000, 4, ties=3).filter(coin(F.col("id")) < 0.8)
    plan = ss.plan_rolling(flaky, "v", "t", 150, "sum", assume_sorted=True)
    assert plan.path == "assumed"
    with pytest.raises(Exception, match="rows differ between the two jobs"):
        plan.run().toPandas()


def test_rolling_unkeyed_order_known_to_spark(spark, tmp_path):
    """Order Spark's plan knows (spark.range's id, through filters and a
    cache): no check pass (path "planned"), exact against Spark; order
    it does not know, or that a null could break, still takes the check
    pass."""
    sdf = _ordered_sdf(spark, 900, 4, ties=3).filter(F.col("id") % 7 != 2)
    assert _order._plan_sorted(sdf, ["id"]) and _order._plan_sorted(sdf.cache(), ["id"])
    plan, got = _planned(spark, "64", lambda: ss.plan_rolling(sdf, "v", "id", [100, 5], ["sum", "max"]))
    assert plan.path == "planned"
    want = _spark_rows(sdf, [100, 5], ["sum", "max"], None, ["id"]).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in [100, 5] for a in ["sum", "max"]])
    sdf.write.parquet(str(tmp_path / "p"))
    not_known = [sdf.withColumn("id", F.col("id") * -1), sdf.withColumn("id", F.when(F.col("id") > 0, F.col("id"))),
                 spark.read.parquet(str(tmp_path / "p")), sdf.orderBy("id")]
    assert not any(_order._plan_sorted(d, ["id"]) for d in not_known)
    assert not _order._plan_sorted(sdf, ["t"]) and not _order._plan_sorted(sdf, ["id", "t"])
    plan = ss.plan_rolling(not_known[2], "v", "id", [5, 60], ["sum", "max"])
    assert plan.path in ("ordered", "range")  # Parquet splits come largest first
    got = plan.run().toArrow()
    _compare(got, _spark_rows(not_known[2], [5, 60], ["sum", "max"], None, ["id"]),
             [(f"{a}_{w}", f"ref_{a}_{w}") for w in [5, 60] for a in ["sum", "max"]])


def _keyed_ordered_sdf(spark, n, parts, ties, key_type="bigint"):
    """_ordered_sdf with a key column: keys 0..2 interleaved everywhere; key
    3 only after the first third (absent from the first partitions); key 5
    rare and only in the first and last quarter (absent from the middle
    partitions: its halo comes from several partitions back); key 9 rare
    everywhere (a halo spanning several partitions); some null keys."""
    k = (F.when(F.col("id") % 53 == 7, F.lit(None))
         .when(F.col("id") % 37 == 0, F.lit(9))
         .when((F.col("id") % 41 == 1) & ((F.col("id") < n // 4) | (F.col("id") > 3 * n // 4)), F.lit(5))
         .when(F.col("id") < n // 3, F.col("id") % 3)
         .otherwise(F.col("id") % 4))
    return _ordered_sdf(spark, n, parts, ties).withColumn("k", k.cast(key_type))


@pytest.mark.parametrize("n,w,parts,key_type,tiebreak,two_keys", [(3000, 120, 5, "bigint", None, False),
                                                                  (3000, 120, 3, "string", "id", True),
                                                                  (40, 30, 6, "int", None, False)])
def test_rolling_keyed_ordered_input_skips_the_shuffle(spark, monkeypatch, n, w, parts, key_type, tiebreak,
                                                       two_keys):
    """Keyed, input already in (t, id) order: no shuffle (the path taken is
    checked), exact against Spark's keyed window with ties in input order
    across partition boundaries (partitions of n/parts rows, t = id // 3),
    per-key halos across chunks (small chunks, 50-row Arrow batches),
    across partitions, from several partitions back, empty partitions."""
    monkeypatch.setattr(_kernels, "_CHUNK_ROWS", 1)  # chunks of 4*(w-1) rows, then 4x the halo
    sdf = _keyed_ordered_sdf(spark, n, parts, ties=3, key_type=key_type)
    keys = ["k"]
    if two_keys:
        sdf = sdf.withColumn("k2", (F.col("id") / 7).cast("int") % 2)
        keys = ["k", "k2"]
    plan, got = _planned(spark, "50",
                         lambda: ss.plan_rolling(sdf, "v", "t", [w, 1, 7], AGGS, partition_by=keys, tiebreak=tiebreak))
    assert (plan.path, plan.keyed) == ("ordered", True)
    want = _spark_rows(sdf, [w, 1, 7], AGGS, keys, ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{x}", f"ref_{a}_{x}") for x in [w, 1, 7] for a in AGGS])


def test_rolling_keyed_out_of_order_input_takes_the_shuffle(spark):
    """One partition out of order, a tiebreak the partitions do not follow:
    the check sees it and the shuffle path gives the exact result.
    Partitions each in order but in reverse sequence take the ordered path
    (count windows follow the order of the rows, not of the partitions), a
    tie across such a boundary under the default tiebreak (the input order)
    the shuffle. method="map" takes the shuffle path without a check; float
    keys (grouped as Spark groups them) the ordered path when the input is
    in order."""
    sdf = _keyed_ordered_sdf(spark, 1200, 4, ties=2)
    swapped = sdf.withColumn("t", F.when(F.col("id") == 450, F.lit(10_000)).otherwise(F.col("t")))
    reversed_parts = sdf.withColumn("t", 5000 - F.spark_partition_id() * 1000 + F.col("id") % 300)
    # t tied across each boundary (rows 299 and 300 both 149); a tiebreak in
    # order inside each partition but falling at each boundary
    tie_back = (sdf.withColumn("t", F.when(F.col("id") % 300 == 0, F.col("t") - 1).otherwise(F.col("t")))
                .withColumn("tb", F.col("id") - F.spark_partition_id() * 10_000))
    # partitions in reverse sequence whose boundaries tie on t: the input
    # order puts partition 0's rows first, the order of t last (and id
    # interleaves the tied rows)
    reversed_tied = sdf.withColumn("t", 5000 - F.spark_partition_id() * 299 + F.col("id") % 300)
    mid = F.monotonically_increasing_id().alias("mid")
    cases = [(swapped, "id", ["t", "id"], "shuffle"), (reversed_parts, "id", ["t", "id"], "ordered"),
             (tie_back, "tb", ["t", "tb"], "shuffle"), (reversed_parts, None, ["t", "mid"], "ordered"),
             (reversed_tied, None, ["t", "mid"], "shuffle"), (reversed_tied, "id", ["t", "id"], "shuffle")]
    for df, tb, order, path in cases:
        df = df.select("*", mid).localCheckpoint()
        plan = ss.plan_rolling(df, "v", "t", 9, ["sum", "max"], partition_by="k", tiebreak=tb)
        assert (plan.path, plan.keyed) == (path, True)
        got = plan.run().toArrow()
        want = _spark_rows(df, [9], ["sum", "max"], ["k"], order).toArrow()
        _compare(got, want, [("sum_9", "ref_sum_9"), ("max_9", "ref_max_9")])
    # the default tiebreak is the input order: (t, id) here
    fk = sdf.withColumn("k", F.col("k").cast("double"))
    plan = ss.plan_rolling(fk, "v", "t", [9, 1], ["sum", "max", "count"], partition_by="k")
    assert plan.path == "ordered"
    got = plan.run().toArrow()
    _compare(got, _spark_rows(fk, [9, 1], ["sum", "max", "count"], ["k"], ["t", "id"]),
             [(f"{a}_{w}", f"ref_{a}_{w}") for w in [9, 1] for a in ["sum", "max", "count"]])
    plan = ss.plan_rolling(sdf, "v", "t", 9, ["sum", "min"], partition_by="k", method="map")
    assert plan.path == "shuffle"
    got = plan.run().toArrow()
    _compare(got, _spark_rows(sdf, [9], ["sum", "min"], ["k"], ["t", "id"]),
             [("sum_9", "ref_sum_9"), ("min_9", "ref_min_9")])


def test_check_pass_stops_at_the_first_batch_out_of_order():
    """_breaks with a limit: a batch of fewer new runs is cut into them; one
    of the limit or more (rows in random order) gives None, the check
    pass's "out of order", before a piece is built."""
    t = pa.table({"t": pa.array([1, 2, 3, 1, 2, 0, 5, 6], pa.int64())})
    fresh, pieces = _kernels._breaks(t, ["t"], None, limit=3)
    assert not fresh and [(a, b) for a, b, _, _ in pieces] == [(0, 3), (3, 5), (5, 8)]
    assert [(lo, hi) for _, _, lo, hi in pieces] == [((1,), (3,)), ((1,), (2,)), ((0,), (6,))]
    assert _kernels._breaks(t, ["t"], None, limit=2) is None
    assert _kernels._breaks(t, ["t"], (4,), limit=3) is None  # the first row starts a run too
    assert _kernels._breaks(t, ["t"], (4,), limit=4)[0]


@pytest.mark.parametrize("disorder", ["late", "random"])
def test_rolling_keyed_out_of_order_in_a_later_batch(spark, disorder):
    """The check pass reads 50-row batches: a partition whose first batches
    are in order and whose order falls later ("late"), or whose rows are in
    random order from the first (more than _MAX_RUNS runs): it stops there,
    the shuffle path runs, equal to Spark's frames."""
    sdf = _keyed_ordered_sdf(spark, 2400, 2, ties=2)
    if disorder == "late":
        sdf = sdf.withColumn("t", F.when(F.col("id") == 900, F.lit(-5)).otherwise(F.col("t")))
    else:
        sdf = sdf.withColumn("t", (F.col("id") * 7919) % 2400)
    sdf = sdf.localCheckpoint()
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
    try:
        plan = ss.plan_rolling(sdf, "v", "t", [30, 2], ["sum", "max"], partition_by="k", tiebreak="id")
        got = plan.run().toArrow()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert plan.path == "shuffle"
    want = _spark_rows(sdf, [30, 2], ["sum", "max"], ["k"], ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in [30, 2] for a in ["sum", "max"]])


@pytest.mark.parametrize("batch", ["50", None])
def test_rolling_keyed_parquet_files_in_order(spark, monkeypatch, tmp_path, batch):
    """Parquet files each in (t, id) order and following one another, which
    Spark packs into partitions largest first (several files per
    partition, out of sequence): the check pass finds the sorted runs (a
    new one where the order falls or the file changes) and the ordered
    path gives each run its halo: exact against Spark, keys absent from
    several runs included (halos from several runs back), small chunks and
    batches. A file out of order inside takes the shuffle path. (The
    "parquet-tails" path, tried first, is switched off here:
    test_spark_parquet.py tests it.)"""
    from slidewise.spark import _rolling

    monkeypatch.setattr(_kernels, "_CHUNK_ROWS", 1)
    monkeypatch.setattr(_rolling, "_parquet_layout", lambda *a: None)
    sdf = _keyed_ordered_sdf(spark, 3000, 1, ties=3)
    path = str(tmp_path / "p")
    sdf.repartitionByRange(7, "id").sortWithinPartitions("id").write.parquet(path)
    df = spark.read.parquet(path)
    rows = _order._check_pass(df, "v", "t", _specs_for(df, [150, 7], ["sum"]), ["id"], ["k"], runs=True)
    assert len([r for r in rows if r.n]) == 7 > df.rdd.getNumPartitions()  # runs: the files
    aggs = ["sum", "max", "mean", "std", "count"]
    plan, got = _planned(spark, batch, lambda: ss.plan_rolling(df, "v", "t", [150, 7, 1], aggs, partition_by="k",
                                                               tiebreak="id"))
    assert (plan.path, plan.keyed) == ("ordered", True)
    want = _spark_rows(df, [150, 7, 1], aggs, ["k"], ["t", "id"]).toArrow()
    _compare(got, want, [(f"{a}_{x}", f"ref_{a}_{x}") for x in [150, 7, 1] for a in aggs])
    assert got.column_names == df.columns + [f"{a}_{x}" for x in [150, 7, 1] for a in aggs]

    bad = str(tmp_path / "bad")
    swapped = sdf.withColumn("t", F.when(F.col("id") == 1000, F.lit(2)).otherwise(F.col("t")))
    swapped.repartitionByRange(7, "id").sortWithinPartitions("id").write.parquet(bad)
    df = spark.read.parquet(bad)
    plan = ss.plan_rolling(df, "v", "t", 20, ["sum", "max"], partition_by="k", tiebreak="id")
    assert plan.path == "shuffle"
    _compare(plan.run(), _spark_rows(df, [20], ["sum", "max"], ["k"], ["t", "id"]),
             [("sum_20", "ref_sum_20"), ("max_20", "ref_max_20")])


def _specs_for(df, windows, aggs):
    from slidewise.spark import _specs

    return _specs._make_specs(pa.float64(), windows, aggs, None, None, "auto")


@pytest.mark.parametrize("boundary_tie", [False, True])
def test_rolling_keyed_time_ordered_input(spark, monkeypatch, boundary_tie):
    """Keyed time windows on ordered input: per-key halos of the last range
    of time, across chunks (held back at a run of tied times) and
    partitions; ties inside a key are peers; a tie across a partition
    boundary takes the shuffle path. The reference orders by unix_micros
    (a double cast rounds 3.6 s to 3599999 us)."""
    monkeypatch.setattr(_kernels, "_CHUNK_ROWS", 1)
    sdf = _keyed_ordered_sdf(spark, 2400, 4, ties=4)  # partitions of 600 rows, t 0..149, 150..299, ...
    if boundary_tie:
        sdf = sdf.withColumn("t", F.when(F.col("id") == 600, F.lit(149)).otherwise(F.col("t")))
    sdf = sdf.withColumn("k", F.when(F.col("id") % 3 == 0, F.lit(1)).otherwise(F.col("k")))  # ties within key 1
    sdf = sdf.withColumn("ts", F.timestamp_millis(F.col("t") * 300))
    plan, got = _planned(spark, "50", lambda: ss.plan_rolling(sdf, "v", "ts", ["2s", "30s"], ["sum", "max", "count"],
                                                              partition_by="k"))
    assert plan.path == ("shuffle" if boundary_tie else "ordered")
    cols = []
    for name, r in [("2s", 2_000_000), ("30s", 30_000_000)]:
        win = Window.partitionBy("k").orderBy(F.unix_micros("ts")).rangeBetween(-(r - 1), 0)
        cols += [SPARK_FN[a]("v").over(win).alias(f"ref_{a}_{name}") for a in ["sum", "max", "count"]]
    want = sdf.select("id", *cols).toArrow()
    _compare(got, want, [(f"{a}_{x}", f"ref_{a}_{x}") for x in ["2s", "30s"] for a in ["sum", "max", "count"]])


@pytest.mark.parametrize("boundary_tie", [False, True])
def test_rolling_time_ordered_input(spark, boundary_tie):
    """Time windows on ordered input: ties inside partitions are peers; a
    tie across a partition boundary cannot be split, so the range path runs."""
    sdf = _ordered_sdf(spark, 800, 4, ties=4)  # partitions of 200 rows: t 0..49, 50..99, ...
    if boundary_tie:
        sdf = sdf.withColumn("t", F.when(F.col("id") == 200, F.lit(49)).otherwise(F.col("t")))
    sdf = sdf.withColumn("ts", F.timestamp_millis(F.col("t") * 300))
    plan = ss.plan_rolling(sdf, "v", "ts", ["2s", "10s"], ["sum", "max", "count"])
    assert plan.path == ("range" if boundary_tie else "ordered")
    got = plan.run().toArrow()
    us = (F.col("ts").cast("double") * 1e6).cast("long")
    cols = []
    for name, r in [("2s", 2_000_000), ("10s", 10_000_000)]:
        win = Window.orderBy(us).rangeBetween(-(r - 1), 0)
        cols += [SPARK_FN[a]("v").over(win).alias(f"ref_{a}_{name}") for a in ["sum", "max", "count"]]
    want = sdf.select("id", *cols).toArrow()
    _compare(got, want, [(f"{a}_{x}", f"ref_{a}_{x}") for x in ["2s", "10s"] for a in ["sum", "max", "count"]])


def test_rolling_errors(spark):
    sdf = spark.createDataFrame(pd.DataFrame({"t": [1, 2], "v": ["a", "b"], "x": [1.0, 2.0]}))
    with pytest.raises(TypeError, match="cast the column"):
        ss.rolling(sdf, "v", "t", 2, "max")
    with pytest.raises(ValueError, match="not in the DataFrame"):
        ss.rolling(sdf, "nope", "t", 2, "max")
    with pytest.raises(ValueError, match="unsupported agg"):
        ss.rolling(sdf, "x", "t", 2, "argmax")
    with pytest.raises(ValueError, match="window"):
        ss.rolling(sdf, "x", "t", 0, "max")
    with pytest.raises(TypeError, match="timestamp order_by"):
        ss.rolling(sdf, "x", "t", "5s", "max")
    with pytest.raises(ValueError, match="already exists"):
        ss.rolling(sdf, "x", "t", 2, "max", output="x")


WIDE_AGGS = [("sum", F.sum), ("max", F.max), ("min", F.min), ("mean", F.avg), ("count", F.count),
             ("std", F.stddev), ("var", F.var_samp), ("std_pop", F.stddev_pop), ("var_pop", F.var_pop)]


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_aggregate_equals_groupby_window(spark, keyed, dtype):
    """Queries sharing a window: one DataFrame, a column per query, equal to
    groupBy(k, window(ts, 10s, 3s)).agg(sum, max, ...) (the panes path);
    with nulls and NaN in a double column, nulls in an int column (sum stays
    bigint, max / min int); a value-less window still a window (count 0);
    then one query alone (``value``), first / last (the sorted path) and a
    tumbling window."""
    pdf, nulls, nans = _data(2000, 3, 2000, seed=6, dtype=dtype)
    if dtype == "int32":
        pdf["v"] = pdf["v"].astype(np.int32)
    pdf["ts"] = pd.to_datetime(pdf["t"] * 37, unit="ms")
    sdf = _sdf(spark, pdf, nulls, nans, parts=4)
    key = "k" if keyed else None
    keys = ["k"] if keyed else []
    qs = [sw.Query(a, "10s", "3s", name=a) for a, _ in WIDE_AGGS]
    assert ss.aggregate_path(qs) == "panes"
    res = ss.aggregate(sdf, qs, "v", "ts", key=key)
    want = (sdf.groupBy(*keys, F.window("ts", "10 seconds", "3 seconds"))
            .agg(*[fn("v").alias(a) for a, fn in WIDE_AGGS])
            .select(*keys, F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    *[a for a, _ in WIDE_AGGS]))
    assert res.columns == keys + ["window_start", "window_end"] + [a for a, _ in WIDE_AGGS]
    assert [f.dataType for f in res.schema.fields] == [f.dataType for f in want.schema.fields]
    got, ref = res.toArrow(), want.toArrow()
    cols = keys + ["window_start", "window_end"]
    for a, _ in WIDE_AGGS:
        _same_windows(got.select(cols + [a]).rename_columns(cols + ["value"]),
                      ref.select(cols + [a]).rename_columns(cols + ["value"]), keys, a)
    # one query: the column is "value"
    _same_windows(ss.aggregate(sdf, sw.Query("mean", "7s", "2s"), "v", "ts", key=key),
                  _spark_windows(sdf, keys, "ts", "v", F.avg, "7 seconds", "2 seconds"), keys, "single")
    # first / last run the sorted path: the value of the window's first /
    # last row in time (one row per time here: Spark's min_by / max_by of ts)
    one = sdf.dropDuplicates([*keys, "ts"])
    fl = [sw.Query("first", "5s", name="first"), sw.Query("last", "5s", name="last"), sw.Query("sum", "5s", name="s")]
    assert ss.aggregate_path(fl) == "sorted"
    res = ss.aggregate(one, fl, "v", "ts", key=key).toArrow()
    for name, fn in [("first", lambda v: F.min_by(v, "ts")), ("last", lambda v: F.max_by(v, "ts")), ("s", F.sum)]:
        _same_windows(res.select(cols + [name]).rename_columns(cols + ["value"]),
                      _spark_windows(one, keys, "ts", "v", fn, "5 seconds", "5 seconds"), keys, name)


def test_aggregate_panes_dense_keys(spark):
    """Many rows per (key, pane), in random order over 5 partitions, panes
    of only nulls inside windows with values: equal to groupBy(k, window)
    (the panes' variances merged by Chan's formula). Values near 1e6 with
    unit noise: a variance merged naively from sums of squares would be far
    off."""
    rng = np.random.default_rng(12)
    n = 4000
    pdf = pd.DataFrame({"id": np.arange(n), "k": rng.integers(0, 3, n), "t": rng.integers(0, 400, n),
                        "v": 1e6 + rng.normal(size=n)})
    pdf["ts"] = pd.to_datetime(pdf["t"], unit="s")
    # panes of only nulls (t in [100, 120)) inside windows with values
    sdf = _sdf(spark, pdf, (rng.random(n) < 0.05) | pdf["t"].between(100, 119).to_numpy(), rng.random(n) < 0.002,
               parts=5)
    aggs = [("sum", F.sum), ("max", F.max), ("min", F.min), ("mean", F.avg), ("var", F.var_samp),
            ("std_pop", F.stddev_pop), ("count", F.count)]
    got = ss.aggregate(sdf, [sw.Query(a, "60s", "20s", name=a) for a, _ in aggs], "v", "ts", key="k").toArrow()
    want = (sdf.groupBy("k", F.window("ts", "60 seconds", "20 seconds")).agg(*[fn("v").alias(a) for a, fn in aggs])
            .select("k", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    *[a for a, _ in aggs])).toArrow()
    assert want["count"].to_numpy().max() > 100
    cols = ["k", "window_start", "window_end"]
    for a, _ in aggs:
        _same_windows(got.select(cols + [a]).rename_columns(cols + ["value"]),
                      want.select(cols + [a]).rename_columns(cols + ["value"]), ["k"], a)


@pytest.mark.parametrize("spread", [10, 2 ** 61], ids=["packed", "per-key"])
def test_panes_window_rows(spread):
    """_panes._window_rows: each window's partial rows [lo, hi), by a
    search over (key, pane) packed in an int64, or per key when the panes
    spread too far for that, against a scan."""
    from slidewise.spark import _panes

    rng = np.random.default_rng(5)
    kid = np.sort(rng.integers(0, 4, 300))
    pane = np.concatenate([np.sort(rng.integers(-spread, spread, int((kid == k).sum()))) for k in range(4)])
    wkey = np.repeat(np.arange(4), 25)
    wfirst = np.concatenate([np.sort(rng.integers(-spread, spread, 25)) for _ in range(4)])
    R = 7
    lo, hi = _panes._window_rows(kid, pane, wkey, wfirst, R)
    for j in range(len(wkey)):
        rows = np.flatnonzero((kid == wkey[j]) & (pane >= wfirst[j]) & (pane < wfirst[j] + R))
        want = (rows[0], rows[-1] + 1) if len(rows) else None
        if want:
            assert (lo[j], hi[j]) == want
        else:
            assert lo[j] == hi[j]


def test_aggregate_integer_sum_overflow_is_an_error(spark):
    """An int64 sum past bigint is an error naming it, as under Spark's
    ANSI mode, whether it overflows within a pane or only across a window's
    panes; a sum near the limit that fits is exact."""
    big = 2 ** 62
    for vals, secs, fails in [([big, big], [0, 1], True), ([big, big], [0, 30], True),
                              ([big, 2 ** 61, 2 ** 60, 5], [0, 1, 2, 30], False)]:
        sdf = spark.createDataFrame(pd.DataFrame({"v": np.array(vals, dtype=np.int64),
                                                  "ts": pd.to_datetime(secs, unit="s")}))
        q = sw.Query("sum", "1m", "20s")
        if fails:
            with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
                ss.aggregate(sdf, q, "v", "ts").toArrow()
        else:
            got = ss.aggregate(sdf, q, "v", "ts").toArrow()
            assert max(got["value"].to_pylist()) == big + 2 ** 61 + 2 ** 60 + 5


def test_aggregate_queries_share_a_window(spark):
    """A list of queries is one groupBy(window): queries of another window
    are refused with a message saying to call again; names may not clash
    with the output's columns."""
    sdf = spark.createDataFrame(pd.DataFrame({"k": [1, 2], "v": [1.0, 2.0],
                                              "ts": pd.to_datetime([0, 1], unit="s")}))
    with pytest.raises(ValueError, match="call aggregate once per window"):
        ss.aggregate(sdf, [sw.Query("max", "10s", name="a"), sw.Query("max", "1m", name="b")], "v", "ts")
    with pytest.raises(ValueError, match="call aggregate once per window"):
        ss.aggregate(sdf, [sw.Query("max", session="30s", name="a"), sw.Query("max", "30s", name="b")], "v", "ts")
    with pytest.raises(ValueError, match="clash"):
        ss.aggregate(sdf, [sw.Query("max", "10s", name="k")], "v", "ts", key="k")


def _spark_windows(sdf, keys, time, value, fn, rng_, slide):
    """Spark's groupBy(keys, window(time, rng_, slide)).agg(fn(value)),
    in the functions of sdf's kind (classic or Connect)."""
    F = ss._specs._functions(sdf)
    return (sdf.groupBy(*keys, F.window(time, rng_, slide)).agg(fn(value).alias("value"))
            .select(*keys, F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "value"))


def _same_windows(got, want, keys, what, same_type=True):
    """Window tables (keys..., window_start, window_end, value), got exactly
    these columns, equal row by row in (keys, window_start) order."""
    g, w = _table(got), _table(want)
    cols = keys + ["window_start", "window_end", "value"]
    assert g.column_names == cols, (what, g.column_names)
    srt = [(c, "ascending") for c in keys + ["window_start"]]
    g, w = g.sort_by(srt), w.select(cols).sort_by(srt)
    assert g.num_rows == w.num_rows, (what, g.num_rows, w.num_rows)
    for c in cols:
        _same_values(g[c], w[c], f"{what}.{c}", same_type=same_type)


def _spark_sessions(sdf, keys, time, value, fn, gap):
    """Spark's groupBy(keys, session_window(time, gap)).agg(fn(value)),
    in the functions of sdf's kind (classic or Connect)."""
    F = ss._specs._functions(sdf)
    return (sdf.groupBy(*keys, F.session_window(time, gap)).agg(fn(value).alias("value"))
            .select(*keys, F.col("session_window.start").alias("window_start"),
                    F.col("session_window.end").alias("window_end"), "value"))


SESSION_AGGS = [("sum", F.sum), ("count", F.count), ("min", F.min), ("max", F.max), ("mean", F.avg),
                ("std", F.stddev)]


@pytest.mark.parametrize("case", ["int_keys", "string_keys", "unkeyed"])
def test_aggregate_sessions_equal_session_window(spark, case):
    """Session windows: the same sessions (start = first row, end = last
    row + gap; rows exactly a gap apart share one) and values as
    groupBy(key, session_window(ts, gap)). Times on a 5 s grid: tied times,
    gaps of exactly 30 s; nulls and NaN in a double column (string keys,
    with null keys: a group of their own), nulls in an int column (int
    keys: min/max stay int, sum bigint); rows with a null time belong to no
    session, as in Spark."""
    n = 150 if case == "unkeyed" else 900  # over an hour: rows 16 s apart per key on average, 24 s unkeyed
    pdf, nulls, nans = _data(n, 4, 720, seed=21, dtype="float64" if case != "int_keys" else "int32")
    pdf["ts"] = pd.to_datetime(pdf["t"] * 5, unit="s") + pd.Timedelta("1h")
    if case == "int_keys":
        pdf["v"] = pdf["v"].astype(np.int32)
        pdf["k"] = pdf["k"].astype(np.int32)
    sdf = _sdf(spark, pdf, nulls, nans, parts=3)
    keys = ["k"]
    if case == "string_keys":
        k = F.concat(F.lit("key-"), F.col("k").cast("string"))
        sdf = sdf.withColumn("k", F.when(F.col("id") % 41 == 3, F.lit(None)).otherwise(k))
    elif case == "unkeyed":
        keys = []
    sdf = sdf.withColumn("ts", F.when(F.col("id") % 97 == 5, F.lit(None)).otherwise(F.col("ts")))
    qs = [sw.Query(a, session="30s", name=a) for a, _ in SESSION_AGGS]
    res = ss.aggregate(sdf, qs, "v", "ts", key=keys or None).toArrow()
    assert ss.aggregate_path(qs) == "sorted"
    want = (sdf.groupBy(*keys, F.session_window("ts", "30 seconds"))
            .agg(*[fn("v").alias(a) for a, fn in SESSION_AGGS])
            .select(*keys, F.col("session_window.start").alias("window_start"),
                    F.col("session_window.end").alias("window_end"), *[a for a, _ in SESSION_AGGS]).toArrow())
    cols = keys + ["window_start", "window_end"]
    for name, _ in SESSION_AGGS:
        ref = want.select(cols + [name]).rename_columns(cols + ["value"])
        _same_windows(res.select(cols + [name]).rename_columns(cols + ["value"]), ref, keys, name)
    # non-trivial sessions: several per key, some of one row, some of many
    assert want.num_rows > 10 * max(1, len(keys))
    counts = want["count"].to_numpy()
    assert counts.min() <= 1 and counts.max() >= 5
    _same_windows(ss.aggregate(sdf, sw.Query("sum", session="2m"), "v", "ts", key=keys or None),
                  _spark_sessions(sdf, keys, "ts", "v", F.sum, "2 minutes"), keys, "long")


# ---------------------------------------------------------------------------
# the main job's command line


def test_cli_run(spark, tmp_path, capsys):
    """Every dataset `slidewise run` writes, value by value: time windows per
    key against Spark's groupBy(key, window(...)) over the same file, count
    windows against a naive computation over the input order; the input has
    nulls and NaN."""
    from slidewise import cli

    rng = np.random.default_rng(8)
    n = 1000
    x = rng.normal(size=n)
    nulls = rng.random(n) < 0.03
    nans = np.array([137, 520, 521, 866])  # a few NaN: most windows stay numbers
    nulls[nans] = False
    x[nans] = np.nan
    pdf = pd.DataFrame({"ts": pd.to_datetime(np.sort(rng.integers(0, 60_000, n)), unit="ms"),
                        "dev": rng.integers(0, 3, n)})
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pandas(pdf, preserve_index=False).append_column("x", pa.array(x, mask=nulls)), src)
    sdf = spark.read.parquet(str(src))
    out = tmp_path / "out"
    assert cli.main(["run", "--input", str(src), "--value", "x", "--time", "ts", "--key", "dev",
                     "--query", "max range=10s slide=5s", "--query", "mean range=20s slide=20s name=m",
                     "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    cols = ["dev", "window_start", "window_end"]
    for name, label, fn, rng_, slide in [("max_10s_5s", "range=10s_slide=5s", F.max, "10 seconds", "5 seconds"),
                                         ("m", "range=20s_slide=20s", F.avg, "20 seconds", "20 seconds")]:
        got = pq.read_table(out / label)  # one dataset per window, a column per query
        assert got.column_names == cols + [name]
        # Parquet gives back timestamps in its own unit and zone: same instants, not the same type
        _same_windows(got.rename_columns(cols + ["value"]), _spark_windows(sdf, ["dev"], "ts", "x", fn, rng_, slide),
                      ["dev"], name, same_type=False)
        assert got[name].type == pa.float64()
        assert f"{name}: {got.num_rows:,} windows -> {out / label}" in printed
    # count windows over the input order, one query writes --output itself;
    # 1000 rows, slide 120: the last window is the partial one at flush
    out2 = tmp_path / "out2.parquet"
    assert cli.main(["run", "--input", str(src), "--value", "x", "--query", "sum range=150 slide=120",
                     "--output", str(out2)]) == 0
    got = pq.read_table(out2).sort_by("window_start").rename_columns(["window_start", "window_end", "value"])
    ends = list(range(120, n + 1, 120))
    edges = ends + [ends[-1] + 120]
    ends.append(n)
    starts = [max(0, e - 150) for e in edges]
    sums = []
    for a, b in zip(starts, ends):
        seg = x[a:b][~nulls[a:b]]
        sums.append(float(seg.sum()) if len(seg) else None)
    want = pa.table({"window_start": pa.array(starts, pa.int64()), "window_end": pa.array(ends, pa.int64()),
                     "value": pa.array(sums, pa.float64())})
    assert pc.sum(pc.is_nan(want["value"])).as_py()  # a NaN inside a window
    _same_windows(got, want, [], "count windows")
    with pytest.raises(SystemExit):
        cli.main(["run", "--input", str(src), "--value", "x", "--query", "max range=10s", "--output", str(out2)])
    with pytest.raises(ValueError, match="unknown key"):
        from slidewise import _run

        _run.parse_query("max range=10 bogus=1")


# ---------------------------------------------------------------------------
# float partition keys: grouped as Spark groups them (NaN keys one key, -0.0
# the key 0.0, null keys one key, null apart from NaN)


def test_canon_key_groups_floats_as_spark():
    """The executor kernels' key canonicalisation, without Spark: every NaN
    (any payload or sign) one key, -0.0 the key 0.0, nulls one key apart
    from NaN; float32 keys too; other types unchanged."""
    nan2 = np.array([0x7FF8000000000001, 0xFFF8000000000000], dtype=np.uint64).view(np.float64)
    for typ in (pa.float64(), pa.float32()):
        a = pa.array([1.5, float("nan"), nan2[0], nan2[1], -0.0, 0.0, None, None, 1.5], pa.float64()).cast(typ)
        c = _kernels._canon_key(a)
        assert c.type == pa.int64() and c.null_count == 2
        ids = _kernels._key_ids([c]).tolist()
        assert ids[1] == ids[2] == ids[3] and ids[4] == ids[5] and ids[6] == ids[7] and ids[0] == ids[8]
        assert len({ids[0], ids[1], ids[4], ids[6]}) == 4
        # runs: NaN NaN NaN is one run, -0.0 0.0 one run, null null one run
        assert _kernels._run_starts([c], len(a)).tolist() == [0, 1, 4, 6, 8]
        n = _kernels._norm_float(a)
        assert n.type == typ and np.signbit(n.to_numpy(zero_copy_only=False)[4]) == False  # noqa: E712
    s = pa.array(["a", None, "a"])
    assert _kernels._canon_key(s) is s


_FLOAT_KEYS = [float("nan"), -0.0, 0.0, None, 1.5, -2.0]


def _float_key_sdf(spark, n, parts, key_type):
    """_ordered_sdf (rows in (t, id) order, nulls and NaN in v, ties on t)
    with a float key k drawn from NaN, -0.0, 0.0, null, 1.5, -2.0 by a hash
    of id: -0.0 and 0.0 rows interleave, as do NaN and null rows."""
    code = F.pmod(F.hash(F.col("id")), F.lit(len(_FLOAT_KEYS)))
    k = F.lit(None)
    for i, kv in reversed(list(enumerate(_FLOAT_KEYS))):
        k = F.when(code == i, F.lit(kv)).otherwise(k)
    sdf = _ordered_sdf(spark, n, parts, ties=3).withColumn("k", k.cast(key_type))
    sdf = sdf.withColumn("ts", F.timestamp_millis(F.col("t") * 700))
    kk = sdf.select("k").toArrow()["k"].combine_chunks()
    x = kk.cast(pa.float64()).fill_null(1.0).to_numpy(zero_copy_only=False)
    assert kk.null_count and np.isnan(x).any() and ((x == 0) & np.signbit(x)).any() and ((x == 0) & ~np.signbit(x)).any()
    return sdf


def _same_signs(got, want, col):
    """The sign bits of a float column, row by row (-0.0 is not 0.0 here)."""
    g = np.signbit(_table(got)[col].combine_chunks().cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))
    w = np.signbit(_table(want)[col].combine_chunks().cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))
    bad = np.flatnonzero(g != w)[:5]
    assert not bad.size, (col, "sign differs at rows", bad.tolist())


@pytest.mark.parametrize("key_type,case,time", [("double", "ordered", False), ("float", "ordered", False),
                                                ("double", "shuffled", False), ("double", "map", False),
                                                ("float", "apply", False), ("two", "ordered", False),
                                                ("two", "shuffled", False), ("double", "ordered", True),
                                                ("float", "shuffled", True), ("two", "map", True)])
def test_rolling_float_keys_equal_spark(spark, monkeypatch, key_type, case, time):
    """partition_by a float or double key holding NaN, -0.0, 0.0 and null
    (and with a string key next to it): the same rows as Spark's own
    Window.partitionBy(k).orderBy(t, id).rowsBetween(-(w-1), 0) (or
    rangeBetween on the microsecond time), NaN keys one partition, -0.0
    with 0.0, null keys apart from NaN; on every path (input in order:
    per-key halos across partitions and chunks; shuffled input; map;
    apply). The key column itself comes back as given (-0.0 stays -0.0, as
    in Spark's window output)."""
    monkeypatch.setattr(_kernels, "_CHUNK_ROWS", 1)  # chunks of 4*(w-1) rows, then 4x the halo
    sdf = _float_key_sdf(spark, 1500, 4, "double" if key_type == "two" else key_type)
    keys = ["k"]
    if key_type == "two":
        k2 = F.when(F.col("id") % 7 == 3, F.lit(None)).otherwise((F.col("id") % 2).cast("string"))
        sdf = sdf.withColumn("k2", k2)
        keys = ["k", "k2"]
    if case == "shuffled":
        sdf = sdf.orderBy(F.rand(5)).localCheckpoint()
    method = case if case in ("map", "apply") else "auto"
    windows = ["2s", "9s"] if time else [3, 40]
    order = "ts" if time else "t"
    plan, got = _planned(spark, "50", lambda: ss.plan_rolling(sdf, "v", order, windows, AGGS, partition_by=keys,
                                                              tiebreak=None if time else "id", method=method))
    assert plan.path == {"ordered": "ordered", "shuffled": "shuffle", "map": "shuffle", "apply": "apply"}[case]
    cols = []
    for w in windows:
        if time:
            r = int(pd.Timedelta(w).total_seconds() * 1e6)
            win = Window.partitionBy(*keys).orderBy(F.unix_micros("ts")).rangeBetween(-(r - 1), 0)
        else:
            win = Window.partitionBy(*keys).orderBy("t", "id").rowsBetween(-(w - 1), 0)
        cols += [SPARK_FN[a]("v").over(win).alias(f"ref_{a}_{w}") for a in AGGS]
    want = sdf.select("id", *keys, *cols).toArrow()
    _compare(got, want, [(f"{a}_{w}", f"ref_{a}_{w}") for w in windows for a in AGGS] + [(k, k) for k in keys])
    _same_signs(got.sort_by("id"), want.sort_by("id"), "k")


def test_aggregate_float_keys_equal_groupby(spark):
    """aggregate keyed by a float key with NaN, -0.0, 0.0 and null: the
    same groups and windows as groupBy(k, window) / session_window, and the
    key as Spark's groupBy gives it (0.0 for the -0.0 and 0.0 rows, NaN,
    null)."""
    sdf = _float_key_sdf(spark, 1200, 3, "double")
    qs = [sw.Query("sum", "10s", name="sum"), sw.Query("max", "10s", "5s", name="max"),
          sw.Query("count", session="3s", name="sess")]
    for i, (name, fn, slide) in enumerate([("sum", F.sum, "10 seconds"), ("max", F.max, "5 seconds")]):
        want = _spark_windows(sdf, ["k"], "ts", "v", fn, "10 seconds", slide).toArrow()
        got = ss.aggregate(sdf, qs[i], "v", "ts", key="k").toArrow()
        _same_windows(got, want, ["k"], name)
        srt = [("k", "ascending"), ("window_start", "ascending")]
        _same_signs(got.sort_by(srt), want.sort_by(srt), "k")
        assert want["k"].null_count and pc.any(pc.is_nan(want["k"])).as_py()
    got = ss.aggregate(sdf, qs[2], "v", "ts", key="k").toArrow()
    want = _spark_sessions(sdf, ["k"], "ts", "v", F.count, "3 seconds").toArrow()
    _same_windows(got, want, ["k"], "sess")
    srt = [("k", "ascending"), ("window_start", "ascending")]
    _same_signs(got.sort_by(srt), want.sort_by(srt), "k")
