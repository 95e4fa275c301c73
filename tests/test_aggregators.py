"""slidewise.aggregators: the raw FIFO data structures vs a Python deque."""

import math
import zlib
from collections import deque

import numpy as np
import pyarrow as pa
import pytest

import slidewise as sw
from slidewise import aggregators as agg_mod
from conftest import INVERTIBLE
from oracle import agg_window, same

CLASSES = [agg_mod.Recalc, agg_mod.SoE, agg_mod.TwoStacks, agg_mod.DABA, agg_mod.FlatFAT, agg_mod.BInt,
           agg_mod.FlatFIT, agg_mod.SlideSide]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("agg", ["max", "sum", "argmin", "collect", "std", "first", "maxcount"])
def test_random_insert_evict_query_matches_a_deque(cls, agg):
    if cls is agg_mod.SoE and agg not in INVERTIBLE:
        with pytest.raises(ValueError, match=f"soe.*{agg}"):
            cls(agg)
        return
    # crc32, not hash(): str hashes change from one process to the next
    seed = zlib.crc32(f"{cls.__name__}/{agg}".encode())
    rng = np.random.default_rng(seed)
    a = cls(agg, "float64")
    window = deque()  # (value, pos)
    pos = 0
    for step in range(1500):
        r = rng.random()
        if r < 0.55 or not window:
            x = None if rng.random() < 0.1 else float(rng.integers(-20, 20))
            a.insert(x)
            window.append((x, pos))
            pos += 1
        else:
            a.evict()
            window.popleft()
        what = f"seed {seed} step {step}"
        assert len(a) == len(window), what
        want = agg_window(agg, [x for x, _ in window], [p for _, p in window])
        assert same(a.query(), want, 1e-9, 1e-9), f"{what}: query() = {a.query()!r}, want {want!r}"
        k = int(rng.integers(0, len(window) + 2))
        tail = list(window)[max(0, len(window) - k):]
        want = agg_window(agg, [x for x, _ in tail], [p for _, p in tail])
        assert same(a.query_last(k), want, 1e-9, 1e-9), f"{what}: query_last({k}) = {a.query_last(k)!r}, want {want!r}"


def test_flatfit_max_example_and_batch_insert():
    a = sw.aggregators.FlatFIT("max", "float64")
    for x in [3.0, 1.0, 2.0]:
        a.insert(x)
    assert (a.query(), a.query_last(2), len(a)) == (3.0, 2.0, 3)
    a.evict()
    assert a.query() == 2.0
    a.insert_many(pa.array([0.5, None, math.nan]))
    assert len(a) == 5 and math.isnan(a.query()) and a.query_last(2) != a.query_last(2)
    a.evict(10)
    assert len(a) == 0 and a.query() is None


def test_dtypes_and_positions():
    a = sw.aggregators.TwoStacks("argmax", np.int32)
    assert a.dtype == "int32" and a.agg == "argmax"
    a.insert(5, pos=1000)
    a.insert(7)
    a.insert_many(np.array([7, 1], dtype=np.int32))
    assert a.query() == 1001 and a.query_last(1) == 1003
    b = sw.aggregators.DABA("sum", pa.int64())
    b.insert_many([1, 2, 3])
    assert b.query() == 6 and isinstance(b.query(), int)
    assert "DABA" in repr(b)


def test_aggregator_errors():
    with pytest.raises(ValueError, match="soe.*max"):
        sw.aggregators.SoE("max", "float64")
    with pytest.raises(TypeError, match="unsupported dtype 'string'"):
        sw.aggregators.FlatFAT("max", "string")
    with pytest.raises(ValueError, match="agg='median' is an order statistic.*no .*FIFO aggregators"):
        sw.aggregators.BInt("median")
    a = sw.aggregators.Recalc("sum", "int32")
    with pytest.raises(TypeError, match="expected a number"):
        a.insert("3")
    with pytest.raises(ValueError, match="does not fit in i32"):
        a.insert(2**40)
    with pytest.raises(TypeError, match="cannot cast"):
        a.insert_many([1.5])
    with pytest.raises(ValueError, match="n must be >= 0"):
        a.evict(-1)
