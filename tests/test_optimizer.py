"""sw.count_edges / sw.plan / Stream(plan=...): the F1 paper's edge counters
against a naive edge enumeration and its worked examples; WeaveShare plans
partition the queries and run to exactly the results of the default plan."""

import math
import pickle
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw

METHODS = ["bitset", "f1", "f1_memo", "fast"]


def naive_edges(shapes, time=False):
    """Edges of one composite slide as plan.rs places them: slide edges
    (at phase mod slide) and window starts (edge - range)."""
    L = math.lcm(*(s for _, s in shapes))
    edges = set()
    for r, s in shapes:
        phase = r % s if time else 0
        for j in range(L // s):
            e = j * s + phase
            edges.add(e % L)
            edges.add((e - r) % L)
    return len(edges)


@settings(max_examples=150, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 60), st.integers(1, 16)), min_size=1, max_size=7),
       divisible=st.booleans())
def test_methods_equal_each_other_and_a_naive_count(shapes, divisible):
    if divisible:  # no Pairs fragments
        shapes = [(s * max(1, r // s), s) for r, s in shapes]
    want = naive_edges(shapes)
    for m in METHODS:
        assert sw.count_edges(shapes, method=m) == want, m
    queries = [sw.Query("sum", r, s, name=f"q{i}") for i, (r, s) in enumerate(shapes)]
    assert sw.count_edges(queries, method="fast") == want


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 10)), min_size=1, max_size=5))
def test_time_window_queries_count_their_phase(shapes):
    queries = [sw.Query("max", timedelta(seconds=r), timedelta(seconds=s), name=f"q{i}")
               for i, (r, s) in enumerate(shapes)]
    want = naive_edges([(r * 10**9, s * 10**9) for r, s in shapes], time=True)
    assert {sw.count_edges(queries, method=m) for m in ["f1", "f1_memo", "fast"]} == {want}


def test_paper_worked_examples():
    # F1 paper Examples 2-3: slides 2, 3, 4, 5, 6 without fragments: 44 edges
    # in a composite slide of 60.
    no_frag = [(s, s) for s in (2, 3, 4, 5, 6)]
    # Examples 4 and 6: slides 3, 4, 6, 9 where slide 4 has fragments (3, 1)
    # and slide 6 has (2, 4): Pairs f2 = range mod slide, so ranges 5, 10.
    frag = [(3, 3), (5, 4), (10, 6), (9, 9)]
    for m in METHODS:
        assert sw.count_edges(no_frag, method=m) == 44
        assert sw.count_edges(frag, method=m) == 27


def test_bitset_bound_and_bad_arguments():
    big = [(1_000_003, 1_000_003), (999_983, 999_983)]
    with pytest.raises(ValueError, match="bound"):
        sw.count_edges(big, method="bitset")
    assert sw.count_edges(big, method="f1") == 1_000_003 + 999_983 - 1
    with pytest.raises(ValueError, match="unknown method"):
        sw.count_edges([(2, 1)], method="bits")
    with pytest.raises(ValueError, match="positive"):
        sw.count_edges([(0, 1)])
    with pytest.raises(TypeError):
        sw.count_edges([object()])
    with pytest.raises(ValueError, match="at least one"):
        sw.count_edges([])
    with pytest.raises(ValueError, match="mix"):
        sw.count_edges([sw.Query("sum", 4, 2), (4, 2)])


QUERIES = [sw.Query("sum", r, s, name=f"sum_{r}_{s}") for r, s in
           [(6, 2), (8, 4), (12, 4), (7, 3), (9, 3), (30, 7), (40, 11), (5, 5), (50, 13), (60, 6)]] + \
          [sw.Query("max", r, s, name=f"max_{r}_{s}") for r, s in [(6, 2), (10, 5), (21, 7)]]


def test_plan_partitions_the_queries_and_keeps_aggs_apart():
    p = sw.plan(QUERIES)
    names = sorted(n for g in p.groups for n in g)
    assert names == sorted(q.name for q in QUERIES)
    by_name = {q.name: q for q in QUERIES}
    for g in p.groups:
        assert len({by_name[n].agg for n in g}) == 1
    assert 2 < len(p.groups) < len(QUERIES)  # this set shares, but not all
    assert p.cost <= p.no_share_cost
    assert len(p.details) == len(p.groups)
    for d, g in zip(p.details, p.groups):
        assert d["queries"] == g
        shapes = [(by_name[n].range, by_name[n].slide) for n in g]
        assert d["composite_slide"] == math.lcm(*(s for _, s in shapes))
        assert d["edges"] == naive_edges(shapes)
        assert d["edge_rate"] == pytest.approx(d["edges"] / d["composite_slide"])
        assert d["overlap_factor"] == pytest.approx(sum(r / s for r, s in shapes))
    # eq. 1 recomputed from the details (count windows: λ = 1 row per row).
    assert p.cost == pytest.approx(sum(1 + d["edge_rate"] * d["overlap_factor"] for d in p.details))
    # Every method gives the same plan.
    for m in ["bitset", "f1", "f1_memo"]:
        assert sw.plan(QUERIES, method=m).groups == p.groups


def test_plan_rate_rules():
    with pytest.raises(ValueError, match="row per row"):
        sw.plan(QUERIES, 100.0)
    tq = [sw.Query("sum", "10s", "2s", name="a"), sw.Query("sum", "10s", "5s", name="b")]
    with pytest.raises(ValueError, match="rate"):
        sw.plan(tq)
    with pytest.raises(TypeError):
        sw.plan(tq, "fast")
    with pytest.raises(ValueError):
        sw.plan(tq, -1.0)
    # Sharing pays when rows are many (λ large), not when they are few.
    assert len(sw.plan(tq, 1e6).groups) == 1
    assert len(sw.plan(tq, 1e-6).groups) == 2
    # Abstract (range, slide) tuples: the paper's units.
    p = sw.plan([(4, 2), (4, 2), (9, 3)], rate=0.5)
    assert p.groups[0] == ["q0", "q1"]
    with pytest.raises(ValueError, match="omega"):
        sw.plan([(4, 2)], omega=[1.0, 2.0])


def run(stream, xs, cuts):
    got = {q.name: [] for q in stream.queries}
    prev = 0
    for c in list(cuts) + [len(xs)]:
        for name, t in stream.push({"v": pa.array(xs[prev:c], pa.float64())}).items():
            got[name] += t.to_pylist()
        prev = c
    for name, t in stream.flush().items():
        got[name] += t.to_pylist()
    return got


def test_stream_under_weaveshare_equals_default_and_each_query_alone():
    rng = np.random.default_rng(3)
    xs = [None if v < -1.5 else float(v) for v in rng.normal(size=1500).round(2)]
    cuts = [1, 97, 400, 401, 1100]
    ws = sw.Stream(QUERIES, plan="weaveshare")
    planned = len(sw.plan(QUERIES).groups)
    assert ws._inner is None or ws._inner.plans() == planned
    got = run(ws, xs, cuts)
    assert ws._inner.plans() == planned
    default = run(sw.Stream(QUERIES), xs, cuts)
    none = run(sw.Stream(QUERIES, plan="none"), xs, cuts)
    assert got == default == none
    for q in QUERIES:
        assert got[q.name] == run(sw.Stream([q]), xs, cuts)[q.name]
    # A Plan object works too, and a plan for other queries is refused.
    p = sw.plan(QUERIES)
    assert run(sw.Stream(QUERIES, plan=p), xs, cuts) == got
    with pytest.raises(ValueError, match="other queries"):
        sw.Stream(QUERIES[:3], plan=p)
    with pytest.raises(ValueError, match="plan must be"):
        sw.Stream(QUERIES, plan="greedy")
    with pytest.raises(ValueError, match="row per row"):
        sw.Stream(QUERIES, plan="weaveshare", rate=10.0)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_plans_run_exactly(data):
    shapes = data.draw(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 8)), min_size=2, max_size=6,
                                unique=True))
    aggs = data.draw(st.lists(st.sampled_from(["sum", "min"]), min_size=len(shapes), max_size=len(shapes)))
    queries = [sw.Query(a, r, s, name=f"q{i}") for i, ((r, s), a) in enumerate(zip(shapes, aggs))]
    n = data.draw(st.integers(0, 200))
    xs = data.draw(st.lists(st.integers(-9, 9).map(float), min_size=n, max_size=n))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    assert run(sw.Stream(queries, plan="weaveshare"), xs, cuts) == run(sw.Stream(queries), xs, cuts)


def test_pickled_stream_keeps_its_plan():
    xs = [float(i % 17) for i in range(500)]
    s = sw.Stream(QUERIES, plan="weaveshare")
    a = s.push({"v": pa.array(xs[:123])})
    t = pickle.loads(pickle.dumps(s))
    assert t._plan_groups == s._plan_groups and t._plan_groups is not None
    assert t.push({"v": pa.array(xs[123:])}) == s.push({"v": pa.array(xs[123:])})
    assert t._inner.plans() == s._inner.plans() == len(sw.plan(QUERIES).groups)
    assert a  # windows were emitted before the checkpoint


def test_time_stream_under_weaveshare_equals_default():
    base = datetime(2024, 1, 1)
    ts = pa.array([base + timedelta(seconds=int(t)) for t in np.cumsum(np.random.default_rng(1).integers(0, 4, 400))],
                  pa.timestamp("us"))
    vals = pa.array(np.random.default_rng(2).normal(size=400))
    qs = [sw.Query("sum", r, s, name=f"t{i}") for i, (r, s) in
          enumerate([("10s", "2s"), ("20s", "4s"), ("9s", "3s"), ("30s", "7s"), ("60s", "60s")])]
    batch = pa.record_batch({"v": vals, "ts": ts})
    outs = []
    for kw in [{}, {"plan": "weaveshare", "rate": 2.0}, {"plan": "weaveshare", "rate": 1e6}, {"plan": "none"}]:
        s = sw.Stream(qs, time="ts", **kw)
        r = s.push(batch)
        f = s.flush()
        outs.append({k: r[k].to_pylist() + f[k].to_pylist() for k in r})
    assert outs[0] == outs[1] == outs[2] == outs[3]
    with pytest.raises(ValueError, match="rate"):
        sw.Stream(qs, time="ts", plan="weaveshare")
