"""sw.Query / sw.Stream: count windows vs a naive oracle, batch-boundary
independence, flush, pickle, arg columns."""

import math
import pickle
import zlib

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from conftest import valid_algos
from oracle import count_windows, elements, same, split

DTYPES = ["float64", "float32", "int64", "int32"]


def rng_for(*names) -> np.random.Generator:
    """A generator seeded from the test's names (crc32, stable across
    processes), so each test's data is fixed whatever runs before it."""
    return np.random.default_rng(zlib.crc32("/".join(map(str, names)).encode()))


def run(stream, batches, flush=True):
    """Push every batch; concatenate each query's windows into lists."""
    out = {q.name: [] for q in stream.queries}
    results = [stream.push(b) for b in batches]
    if flush:
        results.append(stream.flush())
    for r in results:
        assert set(r) == set(out)
        for name, t in r.items():
            assert t.column_names == ["window_start", "window_end", "value"]
            assert t.schema.field("window_start").type == pa.int64()
            out[name].extend(zip(*(t.column(c).to_pylist() for c in t.column_names)))
    return out


def assert_windows(got, want, what, rel=1e-9):
    assert len(got) == len(want), f"{what}: {len(got)} windows, want {len(want)}: {got[:5]} vs {want[:5]}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g[:2] == w[:2] and same(g[2], w[2], rel, 1e-9), f"{what}: window {i}: got {g}, want {w}"


# (range, slide): slide divides range (one fragment per slide), does not
# (Pairs: two fragments), range < slide (rows between windows), slide 1.
SHAPES = [(10, 1), (12, 4), (10, 4), (7, 3), (3, 5), (1, 1), (5, 5), (100, 7)]


# Every (aggregation, dtype) pair is its own test with examples of its own
# (drawing them too left most of the 288 combinations untried on a run);
# the window shape, the data, the batch cuts and min_periods are drawn.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("agg", sw.MONOID_AGGS)
def test_windows_match_the_oracle_whatever_the_batches(agg, dtype):
    check_windows_whatever_the_batches(agg=agg, dtype=dtype)


@settings(max_examples=12, deadline=None)
@given(data=st.data(), shape=st.sampled_from(SHAPES))
def check_windows_whatever_the_batches(data, agg, dtype, shape):
    r, s = shape
    xs = data.draw(st.lists(elements(agg, dtype), max_size=60), label="xs")
    arr = pa.array(xs, type=pa.from_numpy_dtype(np.dtype(dtype)))
    cuts = data.draw(st.lists(st.integers(0, len(xs)), max_size=6), label="cuts")
    mp = data.draw(st.one_of(st.none(), st.integers(0, r)), label="min_periods")
    # The oracle sees exactly the values the column holds (float32 rounding).
    want = count_windows(arr.to_pylist(), r, s, agg, mp)
    q = sw.Query(agg, r, s, min_periods=mp)
    rel = 1e-6 if agg == "geomean" else 1e-9
    for algo in valid_algos(agg):
        got = run(sw.Stream([q], algorithm=algo), split(arr, cuts))[q.name]
        assert_windows(got, want, f"{agg}/{dtype} r={r} s={s} mp={mp} {algo} cuts={sorted(cuts)}", rel)


def test_float32_value_columns_are_accepted():
    # str(pa.float32()) is "float": the dtype name the Stream passes on.
    x = pa.array([1.5, None, 2.25, float("nan"), 4.0], pa.float32())
    s = sw.Stream([sw.Query("sum", 2, 1), sw.Query("max", 3, 2)])
    r = s.push({"v": x})
    assert r["sum_2_1"].column("value").to_pylist()[:3] == [1.5, 1.5, 2.25]
    m = r["max_3_2"].column("value").to_pylist()  # windows [0, 2) and [1, 4)
    assert m[0] == 1.5 and math.isnan(m[1]) and len(m) == 2


def test_many_queries_random_batches_identical_results():
    rng = rng_for("many_queries")
    x = pa.array(rng.normal(0, 1, 20_000), mask=rng.random(20_000) < 0.05)
    qs = [sw.Query("max", 1000, 10), sw.Query("sum", 64, 64), sw.Query("std", 30, 7, min_periods=5),
          sw.Query("argmin", 5, 11), sw.Query("collect", 3, 2), sw.Query("mean", 1, 1)]
    whole = run(sw.Stream(qs), [pa.record_batch({"v": x})])
    for seed in range(3):
        cuts = np.random.default_rng(seed).integers(0, len(x), 25).tolist()
        parts = run(sw.Stream(qs), split(x, cuts))
        for q in qs:
            assert_windows(parts[q.name], whole[q.name], f"{q.name} seed {seed}")
    vals = x.to_pylist()
    for q in qs:
        assert_windows(whole[q.name], count_windows(vals, q.range, q.slide, q.agg, q.min_periods), q.name)


def test_window_positions_and_flush():
    s = sw.Stream([sw.Query("sum", 4, 2)])
    r = s.push({"v": [1, 2, 3]})
    assert r["sum_4_2"].to_pylist() == [{"window_start": 0, "window_end": 2, "value": 3}]
    r = s.push({"v": [4, 5]})
    assert r["sum_4_2"].to_pylist() == [{"window_start": 0, "window_end": 4, "value": 10}]
    assert s.rows_seen == 5
    # The rows after the last edge go out in the window the next slide would
    # close, cut at the rows seen.
    assert s.flush()["sum_4_2"].to_pylist() == [{"window_start": 2, "window_end": 5, "value": 12}]
    assert s.flush()["sum_4_2"].num_rows == 0
    with pytest.raises(ValueError, match="flushed"):
        s.push({"v": [1]})


def test_flush_on_an_edge_and_on_an_empty_stream():
    s = sw.Stream(sw.Query("max", 3, 3))
    assert s.push({"v": [1.0, 2.0, 3.0]})["max_3_3"].num_rows == 1
    assert s.flush()["max_3_3"].num_rows == 0
    t = sw.Stream(sw.Query("max", 3, 3)).flush()["max_3_3"]
    assert t.num_rows == 0 and t.column_names == ["window_start", "window_end", "value"]


class CStream:
    """Speaks only the Arrow PyCapsule stream protocol (like duckdb)."""

    def __init__(self, a):
        self._a = a

    def __arrow_c_stream__(self, requested_schema=None):
        return self._a.__arrow_c_stream__(requested_schema)


def test_empty_batches_and_polars_and_table_inputs():
    x = rng_for("mixed_inputs").integers(0, 100, 500)
    q = sw.Query("maxcount", 20, 5)
    want = run(sw.Stream(q), [pa.record_batch({"v": x})])[q.name]
    batches = [pl.DataFrame({"v": x[:100], "other": ["a"] * 100}), pa.table({"v": x[100:100]}),
               pa.table({"v": pa.chunked_array([x[100:200], x[200:300]])}), {"v": x[300:400]},
               {"v": list(x[400:])}]
    assert_windows(run(sw.Stream(q), batches)[q.name], want, "mixed inputs")
    # a table that speaks only the Arrow stream protocol
    s = sw.Stream(sw.Query("sum", 2, 1))
    assert s.push(CStream(pa.table({"v": [1, 2]})))["sum_2_1"].column("value").to_pylist() == [1, 3]


@pytest.mark.parametrize("cut", [0, 1, 17, 50, 99, 100])
def test_pickle_mid_stream_continues_identically(cut):
    rng = rng_for("pickle_mid_stream")
    x = pa.array(rng.normal(0, 1, 100), mask=rng.random(100) < 0.1)
    qs = [sw.Query("var", 10, 3, min_periods=2), sw.Query("argmax", 7, 7), sw.Query("collect", 4, 3),
          sw.Query("first", 5, 2)]
    want = run(sw.Stream(qs, algorithm="flatfit"), split(x, [cut]))
    s = sw.Stream(qs, algorithm="flatfit")
    first = s.push(pa.record_batch({"v": x[:cut]}))
    s2 = pickle.loads(pickle.dumps(s))
    rest = run(s2, [pa.record_batch({"v": x[cut:]})])
    for q in qs:
        got = list(zip(*(first[q.name].column(c).to_pylist() for c in first[q.name].column_names))) + rest[q.name]
        assert_windows(got, want[q.name], f"{q.name} cut at {cut}")
    # The original keeps working independently of its copy.
    assert run(s, [pa.record_batch({"v": x[cut:]})]).keys() == rest.keys()


def test_pickle_of_a_fresh_and_a_flushed_stream():
    s = pickle.loads(pickle.dumps(sw.Stream(sw.Query("sum", 2, 1))))
    assert s.push({"v": [1, 2, 3]})["sum_2_1"].column("value").to_pylist() == [1, 3, 5]
    s.flush()
    s = pickle.loads(pickle.dumps(s))
    with pytest.raises(ValueError, match="flushed"):
        s.push({"v": [1]})


def test_arg_column_reports_its_value():
    v = [3.0, 9.0, 1.0, 9.0, None, 0.5]
    ids = [100, 101, 102, 103, 104, 105]
    s = sw.Stream([sw.Query("argmax", 3, 1, arg="id"), sw.Query("argmin", 3, 1, name="pos")])
    r = s.push({"v": v, "id": ids})
    vals = [3.0, 9.0, 1.0, 9.0, None, 0.5]
    assert r["argmax_3_1"].column("value").to_pylist() == [100, 101, 101, 101, 103, 103]
    assert r["pos"].column("value").to_pylist() == [w[2] for w in count_windows(vals, 3, 1, "argmin")]
    assert r["pos"].column("value").to_pylist() == [0, 0, 2, 2, 2, 5]
    # Null ids only matter where the value is not null.
    s.push({"v": [None], "id": pa.array([None], pa.int64())})
    with pytest.raises(ValueError, match="null"):
        s.push({"v": [1.0], "id": pa.array([None], pa.int64())})
    with pytest.raises(TypeError, match="integers"):
        s.push({"v": [1.0], "id": ["x"]})


def test_query_defaults_and_equality():
    q = sw.Query("max", 1000, 10)
    assert q.name == "max_1000_10" and q.slide == 10 and q.min_periods is None
    assert sw.Query("sum", 5).name == "sum_5_1"
    assert pickle.loads(pickle.dumps(q)) == q
    assert "max_1000_10" in repr(q)


def test_dtype_is_fixed_by_the_first_batch():
    s = sw.Stream(sw.Query("sum", 2, 1))
    s.push({"v": pa.array([1, 2], pa.int64())})
    assert s.push({"v": pa.array([3], pa.int32())})["sum_2_1"].column("value").to_pylist() == [5]
    with pytest.raises(TypeError, match="int64.*double|double.*int64"):
        s.push({"v": [1.5]})


def test_flush_never_emits_an_inverted_window():
    s = sw.Stream(sw.Query("sum", 3, 10))
    assert s.push({"v": list(range(12))})["sum_3_10"].to_pylist() == [
        {"window_start": 7, "window_end": 10, "value": 24}]
    # Rows 10 and 11 fall between windows [7, 10) and [17, 20): no window
    # holds them, so there is nothing to flush.
    t = s.flush()["sum_3_10"]
    assert t.num_rows == 0


SHARED_ALGOS = ["auto", "two_stacks", "flatfit", "flatfat", "bint", "slideside", "daba", "recalc"]


@pytest.mark.parametrize("agg", ["max", "sum", "argmin", "collect", "std", "count"])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_shared_plan_queries_equal_each_query_alone(data, agg):
    """Several queries of one aggregation run as one shared plan (FlatFIT
    §2.3); each must give exactly what it gives alone, and the oracle, with
    every algorithm on the same data."""
    shapes = data.draw(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 9)), min_size=2, max_size=5,
                                unique=True), label="shapes")
    n = data.draw(st.integers(0, 300), label="n")
    elems = st.one_of(st.none(), st.integers(-20, 20).map(float), st.sampled_from([math.nan, math.inf, -0.0]))
    xs = data.draw(st.lists(elems, min_size=n, max_size=n), label="xs")
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4), label="cuts"))
    queries = [sw.Query(agg, r, s) for r, s in shapes]
    for algorithm in SHARED_ALGOS:
        shared = sw.Stream(queries, algorithm=algorithm)
        got = {q.name: [] for q in queries}
        prev = 0
        for c in cuts + [n]:
            for name, t in shared.push({"v": pa.array(xs[prev:c], pa.float64())}).items():
                got[name] += t.to_pylist()
            prev = c
        for name, t in shared.flush().items():
            got[name] += t.to_pylist()
        assert shared._inner.plans() == 1  # one shared plan, and (below) the right values
        for q in queries:
            want = count_windows(xs, q.range, q.slide, agg)
            rows = got[q.name]
            assert [(r["window_start"], r["window_end"]) for r in rows] == [(a, b) for a, b, _ in want], algorithm
            for r, (_, _, v) in zip(rows, want):
                assert same(r["value"], v), (algorithm, q, r, v)
