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


INVERTIBLE = {a for a in sw.AGGS if _invertible(a)}


def valid_algos(agg):
    return [a for a in ALGOS if a != "soe" or agg in INVERTIBLE]


@pytest.fixture(params=NAMED_ALGOS)
def algo(request):
    return request.param
