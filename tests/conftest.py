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
