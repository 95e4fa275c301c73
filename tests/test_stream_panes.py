"""stream_aggregate's pane partials against a naive recomputation, without
Spark: rows split into random micro-batches, each folded into partials per
(key, pane), the partials combined in random order, then a window's value
from the combined partials equals the value computed from its rows
directly, with Spark's rules (nulls skipped; max NaN once a NaN is in,
min only when every value is; var / std NaN with a NaN or an infinity,
sample ones null below two values). Integration with Spark itself is
tests/test_spark_streaming.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

S = pytest.importorskip("slidewise.spark._stream_state")

_AGGS = ("sum", "count", "mean", "max", "min", "var", "std", "var_pop", "std_pop")


def _naive(agg: str, vals: list):
    """Spark's value of ``agg`` over one window's values (None: null)."""
    x = [v for v in vals if v is not None]
    if agg == "count":
        return float(len(x))
    if not x:
        return None
    if agg == "sum":
        return math.fsum(x) if all(map(math.isfinite, x)) else float(np.sum(x))
    if agg == "mean":
        return (math.fsum(x) if all(map(math.isfinite, x)) else float(np.sum(x))) / len(x)
    if agg == "max":
        return math.nan if any(map(math.isnan, x)) else max(x)
    if agg == "min":
        return math.nan if all(map(math.isnan, x)) else min(v for v in x if not math.isnan(v))
    sample = agg in ("var", "std")
    if len(x) < (2 if sample else 1):
        return None
    if not all(map(math.isfinite, x)):
        return math.nan
    mean = math.fsum(x) / len(x)
    var = math.fsum((v - mean) ** 2 for v in x) / (len(x) - sample)
    return math.sqrt(var) if agg.startswith("std") else var


def _moment_tol(agg: str, vals: list, want: float) -> float:
    """The absolute error a merge of partials may make: 1e-9 of the value,
    and for var / std Chan's merge's, whose parts' means (sum / count) are
    rounded to an ulp of the mean: the cross term n (mean_part - mean)^2
    then errs by ~4 n eps |mean| max|x - mean| (values near 1e9 with a
    spread of 1: ~1e-7 of the variance; Spark's own merge does the same)."""
    tol = 1e-9 * max(1.0, abs(want))
    x = [v for v in vals if v is not None]
    if agg in ("var", "std", "var_pop", "std_pop") and len(x) > 1:
        mean = math.fsum(x) / len(x)
        bound = 8 * len(x) * 2.2e-16 * abs(mean) * max(abs(v - mean) for v in x) / (len(x) - 1)
        tol += bound if agg.startswith("var") else bound / max(want, 1e-300)
    return tol


values = st.one_of(st.none(), st.just(math.nan), st.just(math.inf), st.floats(-1e6, 1e6),
                   st.floats(1e9, 1e9 + 10))
rows = st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 5), values), max_size=40)


@settings(max_examples=200, deadline=None)
@given(rows=rows, cuts=st.lists(st.integers(0, 40), max_size=3), seed=st.integers(0, 2**32 - 1))
def test_pane_partials_equal_naive(rows, cuts, seed):
    rng = np.random.default_rng(seed)
    bounds = sorted({0, len(rows), *[min(c, len(rows)) for c in cuts]})
    parts = []
    for lo, hi in zip(bounds, bounds[1:]):
        b = rows[lo:hi]
        keys = pa.table({"k": pa.array([r[0] for r in b], pa.string())})
        t = np.array([r[1] for r in b], np.int64)
        m = np.array([r[2] is None for r in b], bool)
        v = np.array([0.0 if r[2] is None else r[2] for r in b], np.float64)
        parts.append(S._row_partials(keys, t, v, m, 1))
    if not parts:
        return
    order = rng.permutation(len(parts))
    got = S._combine(pa.concat_tables([parts[i] for i in order]), ["k", "p"])
    # every (key, pane) once
    pairs = list(zip(got["k"].to_pylist(), got["p"].to_pylist()))
    assert len(pairs) == len(set(pairs)) == len({(r[0], r[1]) for r in rows})
    part = {f: got.column(f).to_numpy() for f in S._FIELDS}
    for agg in _AGGS:
        val, null = S._window_values(agg, part)
        for i, (k, p) in enumerate(pairs):
            want = _naive(agg, [r[2] for r in rows if (r[0], r[1]) == (k, p)])
            if want is None:
                assert null[i], (agg, k, p)
                continue
            assert not null[i], (agg, k, p, want)
            if math.isnan(want):
                assert math.isnan(val[i]), (agg, k, p, val[i])
            else:
                assert val[i] == pytest.approx(want, rel=1e-9, abs=_moment_tol(agg, [r[2] for r in rows if (r[0], r[1]) == (k, p)],
                                                                            want)), (agg, k, p)


key_values = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, math.nan, 1.5]))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(["a", "b", "é"])), st.integers(-2, 2),
                               st.one_of(st.none(), st.sampled_from([0.0, -0.0, math.nan, 1.5]))), max_size=30),
       wide=st.integers(0, 300))
def test_group_ids_are_spark_groups(rows, wide):
    """_group_ids: a dense id per row, equal exactly for rows Spark groups
    together (null a value of its own, NaN one key, -0.0 == 0.0), by its
    table of codes and (``wide`` distinct values in a third column: the
    codes' product past the table's size) by the sorting fallback."""
    # each row's twin: the float Spark groups with it (-0.0 for 0.0, another NaN payload)
    other_nan = np.frombuffer(np.array([0x7FF8000000000001], np.int64).tobytes())[0]
    rows = rows + [(r[0], r[1], None if r[2] is None else other_nan if math.isnan(r[2]) else -r[2] if r[2] == 0
                    else r[2]) for r in rows]
    third = [i % max(wide, 1) for i in range(len(rows))] if wide else [0] * len(rows)
    t = pa.table({"s": pa.array([r[0] for r in rows], pa.string()), "i": pa.array([r[1] for r in rows], pa.int64()),
                  "f": pa.array([r[2] for r in rows], pa.float64()), "w": pa.array(third, pa.int64())})

    def spark_key(r, w):
        f = r[2]
        f = "nan" if f is not None and math.isnan(f) else (0.0 if f == 0 else f)
        return (r[0], r[1], f, w)

    by = ["s", "i", "f", "w"]
    ids, k = S._group_ids(t, by)
    want = [spark_key(r, w) for r, w in zip(rows, third)]
    assert sorted(set(ids.tolist())) == list(range(k))
    for a in range(len(rows)):
        for b in range(len(rows)):
            assert (ids[a] == ids[b]) == (want[a] == want[b])
    # the fallback itself: many distinct values in every column
    big = pa.table({c: pa.array(np.arange(200) // (1 + j)) for j, c in enumerate("xyz")})
    ids, k = S._group_ids(big, ["x", "y", "z"])
    assert k == 200 and sorted(set(ids.tolist())) == list(range(200))


values2 = st.one_of(st.none(), st.just(math.nan), st.just(math.inf), st.just(-math.inf), st.just(0.0), st.just(-0.0),
                    st.just(2.0), st.floats(-100, 100))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 8), values2), max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=3),
       aggs=st.lists(st.sampled_from(sorted(S._PANE_AGGS)), min_size=1, max_size=5, unique=True),
       mp=st.one_of(st.none(), st.integers(0, 3)))
def test_window_partials_equal_stream(rows, cuts, aggs, mp):
    """Every aggregation with pane state (first / last, their ignore-nulls
    forms, range, maxcount, mincount, geomean too, and min_periods): rows
    folded into partials per micro-batch, the batches' partials combined in
    arrival order, windows of 3 panes sliding 1 combined from their panes:
    each window's value equals slidewise.Stream's over the same rows
    (time order, a tie in arrival order), NaN and null apart."""
    import slidewise as sw

    fields = S._fields_for(aggs)
    bounds = sorted({0, len(rows), *[min(c, len(rows)) for c in cuts]})
    parts = []
    for lo, hi in zip(bounds, bounds[1:]):
        b = rows[lo:hi]
        m = np.array([r[2] is None for r in b], bool)
        parts.append(S._row_partials(pa.table({"k": pa.array([r[0] for r in b], pa.string())}),
                                     np.array([r[1] for r in b], np.int64),
                                     np.array([0.0 if r[2] is None else r[2] for r in b], np.float64), m, 1, fields))
    if not rows:
        return
    panes = S._combine(pa.concat_tables(parts), ["k", "p"])
    qs = [sw.Query(a, "3s", "1s", name=a, min_periods=mp) for a in aggs]
    for key in ("a", "b"):
        mine = [(t, v) for k, t, v in rows if k == key]
        if not mine:
            continue
        order = sorted(range(len(mine)), key=lambda i: mine[i][0])  # stable: ties in arrival order
        stream = sw.Stream(qs, value="v", time="ts")
        table = pa.table({"v": pa.array([mine[i][1] for i in order], pa.float64()),
                          "ts": pa.array([mine[i][0] * 1_000_000 for i in order], pa.timestamp("us"))})
        res = [stream.push(table), stream.flush()]
        kp = panes.filter(pa.compute.equal(panes["k"], key))
        p = kp["p"].to_numpy()
        for qi, a in enumerate(aggs):
            got = pa.concat_tables([r[a] for r in res])
            for start, end, want in zip(got["window_start"].cast(pa.int64()).to_pylist(),
                                        got["window_end"].cast(pa.int64()).to_pylist(), got["value"].to_pylist()):
                sel = np.flatnonzero((p >= start // 1_000_000) & (p < end // 1_000_000))
                x = kp.take(pa.array(sel)).drop_columns(["p"]).append_column("e", pa.array(np.full(len(sel), end)))
                x = S._combine(x, ["k", "e"])
                val, null = S._window_values(a, {f: x.column(f).to_numpy() for f in fields}, mp)
                where = (a, key, start, end, want, val, null)
                if want is None:
                    assert null[0], where
                elif math.isnan(want):
                    assert not null[0] and math.isnan(val[0]), where
                else:
                    assert not null[0] and val[0] == pytest.approx(want, rel=1e-9, abs=1e-12), where


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 30), values2), min_size=1, max_size=30),
       cut=st.integers(0, 30), gap=st.integers(1, 6),
       aggs=st.lists(st.sampled_from(sorted(S._PANE_AGGS)), min_size=1, max_size=4, unique=True),
       mp=st.one_of(st.none(), st.integers(0, 3)))
def test_session_partials_equal_stream(rows, cut, gap, aggs, mp):
    """Session windows with partial state: the sessions of a first batch of
    rows (_merge_sessions of each row as a session of its own), merged with
    a later batch's rows, are the sessions slidewise.Stream finds over all
    the rows (rows at most a gap apart in one; a tie of times in arrival
    order), with the same values, NaN and null apart."""
    import slidewise as sw

    fields = S._fields_for(aggs)

    def part(b):
        m = np.array([r[2] is None for r in b], bool)
        return S._row_sessions(pa.table({"k": pa.array([r[0] for r in b], pa.string())}),
                               np.array([r[1] * 1_000_000 for r in b], np.int64),
                               np.array([0.0 if r[2] is None else r[2] for r in b], np.float64), m, fields)

    old, new = rows[:cut], rows[cut:]
    sess = S._merge_sessions(S._merge_sessions(None, part(old), ["k"], gap * 1_000_000) if old else None,
                             part(new) if new else None, ["k"], gap * 1_000_000)
    qs = [sw.Query(a, session=f"{gap}s", name=a, min_periods=mp) for a in aggs]
    for key in ("a", "b"):
        mine = [(t, v) for k, t, v in rows if k == key]
        ks = sess.filter(pa.compute.equal(sess["k"], key))
        if not mine:
            assert not ks.num_rows
            continue
        order = sorted(range(len(mine)), key=lambda i: mine[i][0])
        stream = sw.Stream(qs, value="v", time="ts")
        table = pa.table({"v": pa.array([mine[i][1] for i in order], pa.float64()),
                          "ts": pa.array([mine[i][0] * 1_000_000 for i in order], pa.timestamp("us"))})
        res = [stream.push(table), stream.flush()]
        st_, end = S._col(ks, "st"), S._col(ks, "la") + gap * 1_000_000
        for a in aggs:
            got = pa.concat_tables([r[a] for r in res])
            starts = got["window_start"].cast(pa.int64()).to_pylist()
            assert sorted(starts) == sorted(st_.tolist()), (a, key, starts, st_)
            val, null = S._window_values(a, {f: S._col(ks, f) for f in fields}, mp)
            for s0, e0, want in zip(starts, got["window_end"].cast(pa.int64()).to_pylist(), got["value"].to_pylist()):
                i = int(np.flatnonzero(st_ == s0)[0])
                where = (a, key, s0, want, val[i], null[i])
                assert end[i] == e0, where
                if want is None:
                    assert null[i], where
                elif math.isnan(want):
                    assert not null[i] and math.isnan(val[i]), where
                else:
                    assert not null[i] and val[i] == pytest.approx(want, rel=1e-9, abs=1e-12), where


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 4), st.integers(0, 2),
                          st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=False, width=32))),
                min_size=0, max_size=40, unique_by=lambda r: r[:3]),
       st.randoms(use_true_random=False), st.booleans(), st.integers(0, 3))
def test_widen_is_a_pivot(rows, rnd, blocks, late):
    """``wide=True``'s _widen equals a pivot of the long rows (one per
    window and query) to a row per window: every window once, each query's
    value and null / NaN state in its columns, a query without a row for a
    window null; late rows kept as rows, their value as query 0's. The
    rows in any order (the pivot by grouping), or in the processors' order
    (a block per query, the same windows in each: the fast path)."""
    nq = 3
    if blocks:  # every window in every query, a block per query
        wins = sorted({(k, s) for k, s, _, _ in rows}, key=lambda w: (str(w[0]), w[1]))
        rows = [(k, s, qi, v) for qi in range(nq) for (k, s), (_, _, _, v) in zip(wins, rows)]
    else:
        rows = list(rows)
        rnd.shuffle(rows)
    n = len(rows)
    val = np.array([0.0 if v is None else v for *_, v in rows])
    null = np.array([v is None for *_, v in rows], bool)
    f = S._out_frame(["k"], {"k": np.array([k for k, *_ in rows], object)}, np.array([q for _, _, q, _ in rows]),
                     np.array([s for _, s, _, _ in rows]), np.array([s + 10 for _, s, _, _ in rows]), val, null, True)
    if late:  # late rows: no window, a time
        lf = S._out_frame(["k"], {"k": np.array(["a"] * late, object)}, -1, None, None, np.arange(late, dtype=float),
                          np.zeros(late, bool), True, np.arange(late))
        f = pd.concat([f, lf], ignore_index=True) if n else lf
    got = S._widen(f, ["k"], nq)
    cells = {}
    for (k, s, qi, v) in rows:
        cells.setdefault((k, s), {})[qi] = v
    win = got[got[S._OUT_Q] == 0]
    assert len(win) == len(cells) and (got[S._OUT_Q] == -1).sum() == late
    for k, s, we, *vs in zip(win["k"], win[S._OUT_WS], win[S._OUT_WE],
                               *[zip(win[f"{S._OUT_V}{i}"], win[f"{S._OUT_NULL}{i}"]) for i in range(nq)]):
        assert we == s + 10
        want = cells[(k, s)]
        for i, (v, state) in enumerate(vs):
            w = want.get(i)
            if w is None:
                assert state == 1
            elif math.isnan(w):
                assert state == 2
            else:
                assert state == 0 and v == w
    lr = got[got[S._OUT_Q] == -1]
    assert list(lr[f"{S._OUT_V}0"]) == list(np.arange(late, dtype=float)) and list(lr[S._OUT_T]) == list(range(late))
