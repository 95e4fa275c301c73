"""slidewise.spark over Spark Connect: a real SparkConnectServer (a JVM of
its own on a loopback port, ``connect_url`` in conftest.py) and a Connect
client session, as a laptop reaches a remote Spark 4 cluster.

Each public call runs keyed and unkeyed over Connect and is compared with
Spark's own window functions on the same Connect session, through
``toArrow()`` (null and NaN apart), and with the same call on the classic
session: count, time and session windows; the CLI with ``--remote``.
Structured Streaming over Connect is in the streaming tests.
"""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import slidewise as sw

pytest.importorskip("pyspark")
pytest.importorskip("grpc")

# Spark's own unkeyed window (the reference) warns, over Connect, that it
# moves every row to one partition: that is what slidewise avoids.
pytestmark = pytest.mark.filterwarnings("ignore:WARN WindowExpression:UserWarning")

from pyspark.sql.connect import functions as F  # noqa: E402
from pyspark.sql.connect.window import Window  # noqa: E402

import slidewise.spark as ss  # noqa: E402
from test_spark import _compare, _same_values, _same_windows, _spark_sessions, _spark_windows  # noqa: E402

# This process holds a classic session (conftest's ``spark``) beside the
# Connect client, so pyspark's own ``functions`` / ``Window`` build classic
# columns: Spark's reference answers over Connect are written with the
# Connect modules (F, Window above; test_spark's reference helpers pick
# the DataFrame's kind).


def _same_tables(a, b, keys):
    """Two window tables equal column by column in (keys, window_start)
    order (null and NaN apart, floats to 1e-9: a shuffle may add in
    another order)."""
    srt = [(c, "ascending") for c in keys + ["window_start"]]
    a, b = a.sort_by(srt), b.sort_by(srt)
    assert a.column_names == b.column_names and a.num_rows == b.num_rows
    for c in a.column_names:
        _same_values(a[c], b[c], c)


def _frame(session, n=3000, seed=3, parts=3):
    """id, k (5 keys), t, ts, v (double with nulls and NaN), in random order."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=n).round(3)
    pdf = pd.DataFrame({"id": np.arange(n, dtype=np.int64), "k": rng.integers(0, 5, n),
                        "t": rng.permutation(n).astype(np.int64), "v": v})
    pdf["ts"] = pd.to_datetime(pdf["t"] * 250, unit="ms")
    df = session.createDataFrame(pdf).repartition(parts)
    F = ss._specs._functions(session)
    v = F.when(F.col("id") % 29 == 3, F.lit(None)).when(F.col("id") % 31 == 4, F.lit(float("nan"))).otherwise(
        F.col("v"))
    return df.withColumn("v", v)


@pytest.fixture(scope="module")
def frames(spark, spark_connect):
    return {"classic": _frame(spark), "connect": _frame(spark_connect)}


def test_the_session_is_connect(spark_connect):
    """The fixture is a Connect client: no SparkContext to reach."""
    assert type(spark_connect).__module__.startswith("pyspark.sql.connect")
    with pytest.raises(Exception):
        spark_connect.sparkContext


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_rolling_count_windows(frames, keyed):
    """Count windows (rows ordered by t): equal to Spark's own
    rowsBetween frames over Connect, and to the classic session's."""
    df = frames["connect"]
    keys = ["k"] if keyed else []
    plan = ss.plan_rolling(df, "v", "t", [3, 50], ["max", "mean", "std"], partition_by=keys or None)
    got = plan.run().toArrow()
    cols = []
    for w in (3, 50):
        win = Window.partitionBy(*keys).orderBy("t").rowsBetween(-(w - 1), 0)
        cols += [fn("v").over(win).alias(f"ref_{a}_{w}") for a, fn in (("max", F.max), ("mean", F.avg),
                                                                         ("std", F.stddev))]
    want = df.select("id", *cols).toArrow()
    pairs = [(f"{a}_{w}", f"ref_{a}_{w}") for w in (3, 50) for a in ("max", "mean", "std")]
    _compare(got, want, pairs)
    classic = ss.rolling(frames["classic"], "v", "t", [3, 50], ["max", "mean", "std"],
                         partition_by=keys or None).toArrow()
    _compare(got, classic, [(a, a) for a, _ in pairs])


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_rolling_time_windows(frames, keyed):
    """Time windows (rangeBetween over the timestamp, ties are peers)."""
    df = frames["connect"]
    keys = ["k"] if keyed else []
    got = ss.rolling(df, "v", "ts", "2s", ["sum", "count"], partition_by=keys or None).toArrow()
    win = Window.partitionBy(*keys).orderBy(F.unix_micros("ts")).rangeBetween(-(2_000_000 - 1), 0)
    want = df.select("id", F.sum("v").over(win).alias("s"), F.count("v").over(win).alias("c")).toArrow()
    _compare(got, want, [("sum_2s", "s"), ("count_2s", "c")])


def test_rolling_ordered_input_over_connect(spark_connect):
    """Input already in order: the no-shuffle path runs over Connect too
    (its halos travel inside the function: no broadcast), and is exact at
    the partition boundaries."""
    df = spark_connect.range(0, 4000, 1, 4).selectExpr("id AS t", "CAST(id % 13 AS DOUBLE) AS v")
    plan = ss.plan_rolling(df, "v", "t", 100, "max")
    assert plan.path == "ordered"
    want = df.select("t", F.max("v").over(Window.orderBy("t").rowsBetween(-99, 0)).alias("m")).toArrow()
    g = plan.run().toArrow().sort_by("t")
    assert g["max_100"].to_pylist() == want.sort_by("t")["m"].to_pylist()
    a = ss.plan_rolling(df, "v", "t", 100, "max", assume_sorted=True)
    assert a.path == "assumed"
    assert a.run().toArrow().sort_by("t")["max_100"].to_pylist() == g["max_100"].to_pylist()


def test_large_halos_travel_as_an_artifact(spark_connect, monkeypatch):
    """Halos past the inline bound go as a session artifact file, read by
    the executors from SparkFiles: the same answers."""
    from slidewise.spark import _specs

    monkeypatch.setattr(_specs, "_INLINE_MAX", 16)
    shared = _specs._share(spark_connect, {"x": list(range(100))})
    assert isinstance(shared, _specs._Artifact)
    df = spark_connect.range(0, 3000, 1, 3).selectExpr("id AS t", "CAST(id % 7 AS DOUBLE) AS v")
    got = ss.rolling(df, "v", "t", 500, "sum").toArrow().sort_by("t")
    want = df.select("t", F.sum("v").over(Window.orderBy("t").rowsBetween(-499, 0)).alias("s")).toArrow()
    assert got["sum_500"].to_pylist() == want.sort_by("t")["s"].to_pylist()


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_aggregate_time_windows(frames, keyed):
    """aggregate's panes path over Connect: a column per query, equal to
    groupBy(window).agg over Connect and to the classic session's."""
    df = frames["connect"]
    keys = ["k"] if keyed else []
    qs = [sw.Query("sum", "10s", "2s", name="sum"), sw.Query("max", "10s", "2s", name="max"),
          sw.Query("mean", "10s", "2s", name="mean")]
    got = ss.aggregate(df, qs, "v", "ts", key=keys or None).toArrow()
    cols = keys + ["window_start", "window_end"]
    for name, fn in (("sum", F.sum), ("max", F.max), ("mean", F.avg)):
        _same_windows(got.select(cols + [name]).rename_columns(cols + ["value"]),
                      _spark_windows(df, keys, "ts", "v", fn, "10 seconds", "2 seconds"), keys, name)
    _same_tables(got, ss.aggregate(frames["classic"], qs, "v", "ts", key=keys or None).toArrow(), keys)


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_aggregate_sessions_and_count_windows(frames, keyed):
    """The sorted path over Connect: session windows against
    groupBy(session_window), count windows against the classic session."""
    df = frames["connect"]
    keys = ["k"] if keyed else []
    got = ss.aggregate(df, sw.Query("max", session="1s"), "v", "ts", key=keys or None)
    _same_windows(got, _spark_sessions(df, keys, "ts", "v", F.max, "1 second"), keys, "session")
    q = sw.Query("sum", 100, 40)
    a = ss.aggregate(df, q, "v", "t", key=keys or None, tiebreak="id").toArrow()
    b = ss.aggregate(frames["classic"], q, "v", "t", key=keys or None, tiebreak="id").toArrow()
    assert a.num_rows > 10
    _same_tables(a, b, keys)


def _cli(*args, **kw):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.run([sys.executable, "-m", "slidewise", "run", *args], capture_output=True, text=True,
                          env=env, timeout=600, **kw)


def test_cli_remote(connect_url, spark, spark_connect, tmp_path):
    """`slidewise run --remote sc://...`: the windows Spark's groupBy gives,
    a column per query; errors are one line and a non-zero exit."""
    rng = np.random.default_rng(4)
    n = 500
    pdf = pd.DataFrame({"ts": pd.to_datetime(np.sort(rng.integers(0, 60_000, n)), unit="ms"),
                        "dev": rng.integers(0, 3, n), "x": rng.normal(size=n)})
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pandas(pdf, preserve_index=False), src)
    out = tmp_path / "out"
    r = _cli("--remote", connect_url, "--input", str(src), "--value", "x", "--time", "ts", "--key", "dev",
             "--query", "max range=10s slide=5s name=mx", "--query", "sum range=10s slide=5s name=s",
             "--output", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    got = pq.read_table(out)
    assert got.column_names == ["dev", "window_start", "window_end", "mx", "s"]
    from pyspark.sql import functions as CF

    sdf = spark.read.parquet(str(src))
    cols = ["dev", "window_start", "window_end"]
    _same_windows(got.select(cols + ["mx"]).rename_columns(cols + ["value"]),
                  _spark_windows(sdf, ["dev"], "ts", "x", CF.max, "10 seconds", "5 seconds"), ["dev"], "mx",
                  same_type=False)
    for args, says in [(("--input", str(tmp_path / "missing.parquet")), "no such file"),
                       (("--input", str(src), "--value", "nope"), "--value nope: no such column"),
                       (("--input", str(src), "--remote", "sc://127.0.0.1:1"), "cannot reach the Spark Connect"),
                       (("--input", str(src), "--master", "spark://127.0.0.1:1"), "cannot reach the Spark master")]:
        full = list(args)
        if "--value" not in full:
            full += ["--value", "x"]
        if "--remote" not in full and "--master" not in full:
            full += ["--remote", connect_url]
        r = _cli(*full, "--time", "ts", "--query", "max range=10s", "--output", str(tmp_path / "o2"))
        errors = [ln for ln in r.stderr.splitlines() if "error" in ln.lower()]
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
        assert len(errors) == 1 and errors[0].startswith("slidewise: error:") and says in errors[0], r.stderr
