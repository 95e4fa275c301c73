import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

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


@pytest.fixture(scope="session")
def spark():
    """A real Spark session, local[2], UTC (Spark's window() aligns to the
    epoch; naive timestamps are read in the session time zone)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    s = (SparkSession.builder.master("local[2]").appName("slidewise-tests")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.ui.enabled", "false")
         # Python workers connecting back (transformWithStateInPandas runners)
         # time out on a loaded 2-core machine at the default 15 s
         .config("spark.python.authenticate.socketTimeout", "120s")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def connect_url(spark):
    """The URL (``sc://127.0.0.1:PORT``) of a real local Spark Connect server: a separate
    JVM (``SparkConnectServer``, master ``local[2]``, on a free loopback
    port), as a laptop reaches a remote Spark 4 cluster. A process holds one
    classic SparkContext (the ``spark`` fixture), and pyspark's own
    ``remote("local[2]")`` starts its server inside that process's JVM, so it
    cannot run beside it; its client (:func:`spark_connect`) is built with
    the Connect builder."""
    import socket
    import subprocess
    import tempfile
    import time

    import pyspark

    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.NamedTemporaryFile("w", prefix="slidewise-connect-", suffix=".log", delete=False)
    conf = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port),
            "spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false",
            "spark.python.authenticate.socketTimeout": "120s", "spark.sql.execution.arrow.pyspark.enabled": "true"}
    cmd = [os.path.join(home, "bin", "spark-submit"), "--class",
           "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    env = dict(os.environ, SPARK_HOME=home, PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_REMOTE", None)
    server = subprocess.Popen(cmd + ["spark-internal"], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 180
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited ({server.returncode}); see {log.name}")
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"the Spark Connect server did not listen within 180 s; see {log.name}")
            time.sleep(0.5)
    yield f"sc://127.0.0.1:{port}"
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()


@pytest.fixture(scope="session")
def spark_connect(connect_url):
    """A Spark Connect session to :func:`connect_url`'s server."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    s = ConnectSession.builder.remote(connect_url).getOrCreate()
    yield s
    s.stop()
