import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# the repository root: tests use benches/_check.py's Connect server
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import slidewise as sw  # noqa: E402

ALGOS = list(sw.ALGORITHMS)  # "auto" first
NAMED_ALGOS = [a for a in ALGOS if a != "auto"]


def _invertible(agg):
    try:
        sw.aggregators.SoE(agg)
        return True
    except ValueError:
        return False


INVERTIBLE = {a for a in sw.MONOID_AGGS if _invertible(a)}


def valid_algos(agg):
    return [a for a in ALGOS if a != "soe" or agg in INVERTIBLE]


@pytest.fixture(params=NAMED_ALGOS)
def algo(request):
    return request.param


# The settings of both test Spark servers (the `spark` session's JVM and the
# Connect server's), so that both answer alike.
SPARK_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    # Python workers connecting back (transformWithStateInPandas runners)
    # time out on a loaded 2-core machine at the default 15 s
    "spark.python.authenticate.socketTimeout": "120s",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The JVM's quick compiler only, and one GC thread: the tests' jobs are
    # many and small, and C2 compiling Spark's hot paths cost more CPU than
    # it saved (test_spark.py: 216 -> 137 CPU-seconds, 121 -> 102 s; Intel
    # Xeon, 2 vCPUs). Spark's answers do not change.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def spark():
    """A real Spark session, local[2], UTC (Spark's window() aligns to the
    epoch; naive timestamps are read in the session time zone)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    s = (SparkSession.builder.master("local[2]").appName("slidewise-tests")
         .config(map={**SPARK_CONF, "spark.ui.enabled": "false"})
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def connect_url(spark):
    """The URL (``sc://127.0.0.1:PORT``) of a real local Spark Connect
    server: a separate JVM (``SparkConnectServer``, master ``local[2]``), as
    a laptop reaches a remote Spark 4 cluster (benches/_check.py's
    ``connect_server``: pyspark's own ``remote("local[2]")`` cannot run beside
    the classic ``spark`` session in one process)."""
    from benches._check import connect_server

    with connect_server(SPARK_CONF) as url:
        yield url


@pytest.fixture(scope="session")
def spark_connect(connect_url):
    """A Spark Connect session to :func:`connect_url`'s server."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    s = ConnectSession.builder.remote(connect_url).getOrCreate()
    yield s
    s.stop()


# Tests that run Spark (a JVM) carry a marker, `spark_long` for the long
# ones (Structured Streaming queries and the local-cluster driver), `spark`
# for the others, so that `make test` runs them in two pytest processes
# beside a third for the rest (`-m "not spark and not spark_long"`): a
# Spark test leaves a core idle while it waits on the JVM. The markers only
# place a test; each test runs in exactly one of the three.
_CONNECT_FIXTURES = {"connect_url", "spark_connect"}
_SPARK_FIXTURES = {"spark"} | _CONNECT_FIXTURES
_SPARK_LONG = {"test_spark_streaming.py", "test_spark_cluster.py"}
# The README's examples take the session by name at run time.
_SPARK_MODULES = {"test_docs.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        # The Connect server is started once, in the `spark` process.
        if item.path.name in _SPARK_LONG and not uses & _CONNECT_FIXTURES:
            item.add_marker(pytest.mark.spark_long)
        elif uses & _SPARK_FIXTURES or item.path.name in _SPARK_MODULES:
            item.add_marker(pytest.mark.spark)
