"""The unified stream (the core's stream spine): keyed Streams over count,
time and session windows, in order and out of order, against naive oracles
written here (every window recomputed from its rows; out of order, the
watermark model applied batch by batch); results independent of the batch
cuts (in order, or out of order with no row late); pickle round trips at any
push boundary; per-key accounting of late rows; session specifics (rows
exactly a gap apart, merging, min_periods); errors."""

import datetime
import math
import pickle

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from conftest import valid_algos
from oracle import agg_window, assert_same_list, count_windows, same

AGGS = ["sum", "count", "mean", "min", "max", "first", "last", "first_ignore_nulls", "last_ignore_nulls", "collect", "argmax", "var"]
ORDER_SENSITIVE = {"first", "last", "first_ignore_nulls", "last_ignore_nulls", "collect", "argmax", "argmin"}
LATE_ALGOS = ["auto", "cbix", "flatfat", "two_stacks", "recalc"]
TS = pa.timestamp("s")
FLOAT_EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.5]
INT_EDGES = {"int32": [2**31 - 1, -(2**31)], "int64": [2**40, -(2**40)]}
SCALE = {"s": 1, "ms": 1000}  # time units the generated streams use, per second
EPOCH = datetime.datetime(1970, 1, 1)

# -- specs, data, batches -----------------------------------------------------
#
# A query spec is (kind, agg, a, b, min_periods): count (range, slide) in
# rows, time (range, slide) in seconds, session (gap, -) in seconds. Times
# are whole seconds, pushed as timestamp[s] or timestamp[ms]; argmax over
# time and session windows reports the event time in the column's unit (as
# test_late.py reads it), over count windows the row's position within its
# key.


def _spec(draw, kind):
    agg = draw(st.sampled_from(AGGS))
    if kind == "count":
        r, s = draw(st.integers(1, 8)), draw(st.integers(1, 4))
        return ("count", agg, r, s, draw(st.one_of(st.none(), st.integers(0, r))))
    mp = draw(st.one_of(st.none(), st.integers(0, 3)))
    if kind == "time":
        return ("time", agg, draw(st.integers(1, 12)), draw(st.integers(1, 6)), mp)
    return ("session", agg, draw(st.integers(1, 8)), None, mp)


def _specs(draw, kinds):
    """1-3 queries; every kind of ``kinds`` at least once."""
    extra = draw(st.lists(st.sampled_from(kinds), max_size=3 - len(kinds)))
    return [_spec(draw, k) for k in list(kinds) + extra]


def _query(spec, i):
    kind, agg, a, b, mp = spec
    name = f"q{i}"
    if kind == "count":
        return sw.Query(agg, a, b, min_periods=mp, name=name)
    if kind == "time":
        return sw.Query(agg, f"{a}s", f"{b}s", min_periods=mp, name=name)
    return sw.Query(agg, session=datetime.timedelta(seconds=a), min_periods=mp, name=name)


def _keys_and_values(draw, n):
    """Key labels (a few ints or strings; one type per stream), each row's
    key, the value dtype and values with nulls (and NaN, +-inf, -0.0 for
    floats, the int32 limits for int32)."""
    strings = draw(st.booleans())
    m = draw(st.sampled_from([1, 2, 3, 3, 4]))
    labels = draw(st.lists(st.text("ab ", max_size=2) if strings else st.integers(-3, 2**40),
                           min_size=m, max_size=m, unique=True))
    keys = [labels[i] for i in draw(st.lists(st.integers(0, len(labels) - 1), min_size=n, max_size=n))]
    dtype = draw(st.sampled_from(["float64", "float64", "float32", "int64", "int32"]))
    if dtype.startswith("float"):
        x = st.one_of(st.none(), st.integers(-9, 9).map(float), st.sampled_from(FLOAT_EDGES))
    else:
        # small values and the types' edges (int64 sums of these stay in
        # range; wrapping sums are test_rolling.py's)
        x = st.one_of(st.none(), st.integers(-9, 9), st.sampled_from(INT_EDGES[dtype]))
    vals = draw(st.lists(x, min_size=n, max_size=n))
    return keys, pa.string() if strings else pa.int64(), vals, dtype


def _in_order_times(draw, keys):
    """Times non-decreasing within each key (keys interleave out of global
    order), before the epoch too, with ties."""
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 5, 9]), min_size=len(keys), max_size=len(keys)))
    start = draw(st.integers(-20, 20))
    clock, ts = {}, []
    for k, g in zip(keys, gaps):
        clock[k] = clock.get(k, start + 7 * len(clock)) + g
        ts.append(clock[k])
    return ts


def _disordered_times(draw, n):
    """Global time order broken within a random distance (test_late.py's),
    and a few stragglers far behind."""
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 7]), min_size=n, max_size=n))
    t, ts = draw(st.integers(-15, 5)), []
    for g in gaps:
        t += g
        ts.append(t)
    d = draw(st.integers(0, 10))
    moves = draw(st.lists(st.integers(0, d), min_size=n, max_size=n))
    for i in range(n):  # swap within distance d
        j = i + moves[i]
        if j < n:
            ts[i], ts[j] = ts[j], ts[i]
    if n:
        for i, back in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(5, 30)), max_size=3)):
            ts[i] -= back
    return ts


def _bounds(draw, n):
    """(lo, hi) of each push; empty pushes where cuts repeat an end."""
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=7))))
    edges = [0] + cuts + [n]
    return list(zip(edges, edges[1:]))


def _batch(keys, key_type, ts, vals, dtype, lo, hi, unit="s"):
    """Rows [lo, hi); times (whole seconds) in ``unit``."""
    cols = {"k": pa.array(keys[lo:hi], key_type), "v": pa.array(vals[lo:hi], dtype)}
    if ts is not None:
        cols["ts"] = pa.array([t * SCALE[unit] for t in ts[lo:hi]], pa.int64()).cast(pa.timestamp(unit))
    return pa.table(cols)


def _int(x):
    return int((x - EPOCH).total_seconds()) if isinstance(x, datetime.datetime) else x


def _rows(table, key_type):
    """(key, start, end, value) of a result table; times as seconds."""
    assert table.column_names == ["k", "window_start", "window_end", "value"]
    if table.num_rows:
        assert table.schema.field("k").type == key_type
    cols = [table.column(c).to_pylist() for c in table.column_names]
    return [(k, _int(s), _int(e), v) for k, s, e, v in zip(*cols)]


def _late_rows(table, key_type, dtype, unit="s"):
    assert table.column_names == ["k", "ts", "v"]
    assert table.schema.field("ts").type == pa.timestamp(unit)
    assert table.schema.field("v").type == pa.type_for_alias(dtype)
    if table.num_rows:
        assert table.schema.field("k").type == key_type
    return [(r["k"], _int(r["ts"]), r["v"]) for r in table.to_pylist()]


# -- oracles ------------------------------------------------------------------


def _value(agg, rows, mp):
    """``agg`` over ``rows`` [(position, value)] in order; nulls are rows but
    not values (min_periods counts the non-null ones)."""
    return agg_window(agg, [x for _, x in rows], [p for p, _ in rows], mp)


def _starts(t, r, s):
    """Starts of the Spark windows [start, start + r) holding t."""
    return [j * s for j in range((t - r) // s + 1, t // s + 1)]


def _last_end(spec, t):
    """The end of the last window of ``spec`` that could hold t; None when
    none does (t in the gap of a slide larger than the range)."""
    kind, _, a, b, _ = spec
    if kind == "session":
        return t + a
    end = (t // b) * b + a
    return end if end > t else None


def _in_order_oracle(keys, ts, vals, push_of, specs, flush_at, scale=1):
    """{query: {(key, start, end): (push index that emits it, value)}} of an
    in-order keyed stream, every window recomputed from its key's rows."""
    out = []
    for kind, agg, a, b, mp in specs:
        wins = {}
        for k in dict.fromkeys(keys):
            idx = [i for i, x in enumerate(keys) if x == k]
            if kind == "count":
                kv = [vals[i] for i in idx]
                for s, e, v in count_windows(kv, a, b, agg, mp):
                    # a full window is emitted with the key's e-th row; the
                    # tail (end not a slide edge) at flush
                    wins[(k, s, e)] = (push_of[idx[e - 1]] if e % b == 0 else flush_at, v)
            elif kind == "time":
                holding = {}
                for i in idx:
                    for s in _starts(ts[i], a, b):
                        holding.setdefault(s, []).append(i)
                for s, rows in holding.items():
                    e = s + a
                    closer = next((i for i in idx if ts[i] >= e), None)  # first row at/after the end
                    wins[(k, s, e)] = (flush_at if closer is None else push_of[closer],
                                       _value(agg, [(ts[i] * scale, vals[i]) for i in rows], mp))
            else:
                sessions = []
                for i in idx:  # rows at most the gap apart share a session
                    if sessions and ts[i] <= ts[sessions[-1][-1]] + a:
                        sessions[-1].append(i)
                    else:
                        sessions.append([i])
                for j, rows in enumerate(sessions):
                    nxt = sessions[j + 1][0] if j + 1 < len(sessions) else None  # the row after its end
                    wins[(k, ts[rows[0]], ts[rows[-1]] + a)] = (flush_at if nxt is None else push_of[nxt],
                                                               _value(agg, [(ts[i] * scale, vals[i]) for i in rows], mp))
        out.append(wins)
    return out


def _out_of_order_oracle(keys, ts, vals, bounds, specs, lateness, scale=1):
    """The watermark model, push by push: (windows as in _in_order_oracle,
    late rows [(key, t, v)] in arrival order, watermark after each push).

    The watermark a push finds is the largest time of the earlier pushes
    (every key) minus the lateness. A row is late when, for some query, the
    last window that could hold it ends at or before it; late rows join no
    query. An on-time row joins the windows of its key still open (ending
    after that watermark); a session row merges every open session of its
    key that its own [t, t + gap] touches. After the push, every window and
    session ending at or before the new watermark is emitted; flush emits
    the rest. Values see a window's rows by time, ties in arrival order."""
    res = [{} for _ in specs]
    open_time = {}  # (query, key, start) -> [(t, row)]
    open_sess = {}  # (query, key) -> [[(t, row), ...] per session]
    late, wms, mx = [], [], None

    def value(q, rows):
        return _value(specs[q][1], [(t * scale, vals[i]) for t, i in sorted(rows)], specs[q][4])

    def emit(p, limit):
        for (q, k, s), rows in list(open_time.items()):
            e = s + specs[q][2]
            if limit is None or e <= limit:
                assert (k, s, e) not in res[q]
                res[q][(k, s, e)] = (p, value(q, rows))
                del open_time[(q, k, s)]
        for (q, k), sessions in open_sess.items():
            keep = []
            for rows in sessions:
                s, e = min(rows)[0], max(rows)[0] + specs[q][2]
                if limit is None or e <= limit:
                    assert (k, s, e) not in res[q]
                    res[q][(k, s, e)] = (p, value(q, rows))
                else:
                    keep.append(rows)
            sessions[:] = keep

    for p, (lo, hi) in enumerate(bounds):
        wm = None if mx is None else mx - lateness
        for i in range(lo, hi):
            t, k = ts[i], keys[i]
            ends = [_last_end(sp, t) for sp in specs]
            if wm is not None and any(e is not None and e <= wm for e in ends):
                late.append((k, t, vals[i]))
                continue
            for q, (kind, _, a, b, _) in enumerate(specs):
                if kind == "time":
                    for s in _starts(t, a, b):
                        if wm is None or s + a > wm:
                            open_time.setdefault((q, k, s), []).append((t, i))
                    continue
                sessions = open_sess.setdefault((q, k), [])
                cur = [(t, i)]
                while True:  # merge until nothing open touches the session
                    s0, e0 = min(cur)[0], max(cur)[0] + a
                    touch = [S for S in sessions if min(S)[0] <= e0 and s0 <= max(S)[0] + a]
                    if not touch:
                        break
                    sessions[:] = [S for S in sessions if not any(S is T for T in touch)]
                    for S in touch:
                        cur += S
                sessions.append(cur)
        if hi > lo:
            mx = max(ts[lo:hi]) if mx is None else max(mx, *ts[lo:hi])
        w = None if mx is None else mx - lateness
        wms.append(w)
        if w is not None:
            emit(p, w)
    emit(len(bounds), None)
    return res, late, wms


# -- running a stream ---------------------------------------------------------


def _drive(stream, batches, key_type, dtype, pickle_at=None, late_at=(), unit="s", ooo=False):
    """Push every batch, then flush (pickling before push ``pickle_at``;
    ``len(batches)``: before the flush). Returns, per push and the flush,
    {query: [(key, start, end, value)]}; out of order (``ooo``), the
    watermarks after each push and the late rows taken after the pushes in
    ``late_at`` and at the end."""
    outs, wms, late = [], [], []
    for p, b in enumerate(batches):
        if p == pickle_at:
            stream = pickle.loads(pickle.dumps(stream))
        outs.append({name: _rows(t, key_type) for name, t in stream.push(b).items()})
        if ooo:
            w = stream.watermark
            wms.append(None if w is None else _int(w))
            if p in late_at:
                late += _late_rows(stream.late_rows(), key_type, dtype, unit)
    if pickle_at == len(batches):
        stream = pickle.loads(pickle.dumps(stream))
    outs.append({name: _rows(t, key_type) for name, t in stream.flush().items()})
    if ooo:
        late += _late_rows(stream.late_rows(), key_type, dtype, unit)
    return stream, outs, wms, late


def _first_seen(keys):
    return list(dict.fromkeys(keys))


def _check_emission_order(rows, key_order, what):
    """Within one push: each key's windows together, keys in ``key_order``,
    each key's windows in order."""
    seq = []
    for r in rows:
        if not seq or seq[-1] != r[0]:
            seq.append(r[0])
    assert len(seq) == len(set(seq)), f"{what}: a key's windows are split: {seq}"
    assert seq == [k for k in key_order if k in set(seq)], f"{what}: keys {seq}, want the order {key_order}"
    for k in seq:
        bounds = [r[1:3] for r in rows if r[0] == k]
        assert bounds == sorted(bounds), f"{what}: key {k!r}: windows {bounds} out of order"


def _check_against(outs, want, names, what):
    """Every window emitted once, by the push the oracle says, with its
    value."""
    for name, w in zip(names, want):
        got = {}
        for p, out in enumerate(outs):
            for k, s, e, v in out[name]:
                assert (k, s, e) not in got, f"{what} {name}: window {(k, s, e)} emitted twice"
                got[(k, s, e)] = (p, v)
        assert sorted(got, key=repr) == sorted(w, key=repr), f"{what} {name}"
        for win, (p, v) in got.items():
            assert p == w[win][0], f"{what} {name}: window {win} emitted by push {p}, want {w[win][0]}"
            assert same(v, w[win][1]), f"{what} {name}: window {win}: got {v!r}, want {w[win][1]!r}"


def _draw_algorithm(draw, specs, late):
    aggs = {sp[1] for sp in specs}
    if late:
        return draw(st.sampled_from([a for a in LATE_ALGOS if a != "cbix" or not aggs & ORDER_SENSITIVE]))
    return draw(st.sampled_from([a for a in sw.ALGORITHMS if all(a in valid_algos(g) for g in aggs)]))


# -- 1. keyed streams against the oracles -------------------------------------

IN_ORDER_KINDS = [("count",), ("time",), ("session",), ("time", "session")]
OUT_OF_ORDER_KINDS = [("time",), ("session",), ("time", "session")]


@pytest.mark.parametrize("kinds", IN_ORDER_KINDS, ids="+".join)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_keyed_in_order_stream_equals_the_oracle(kinds, data):
    draw = data.draw
    n = draw(st.integers(0, 40))
    keys, key_type, vals, dtype = _keys_and_values(draw, n)
    timed = kinds != ("count",)
    ts = _in_order_times(draw, keys) if timed else None
    specs = _specs(draw, kinds)
    algo = _draw_algorithm(draw, specs, late=False)
    bounds = _bounds(draw, n)
    pickle_at = draw(st.one_of(st.none(), st.integers(0, len(bounds))))
    unit = draw(st.sampled_from(sorted(SCALE)))
    queries = [_query(sp, i) for i, sp in enumerate(specs)]
    stream = sw.Stream(queries, value="v", time="ts" if timed else None, key="k", algorithm=algo)
    batches = [_batch(keys, key_type, ts, vals, dtype, lo, hi, unit) for lo, hi in bounds]
    stream, outs, _, _ = _drive(stream, batches, key_type, dtype, pickle_at)
    assert stream.rows_seen == n
    push_of = [p for p, (lo, hi) in enumerate(bounds) for _ in range(lo, hi)]
    want = _in_order_oracle(keys, ts, vals, push_of, specs, len(bounds), SCALE[unit])
    what = f"{specs} {algo} {unit} bounds={bounds}"
    _check_against(outs, want, [q.name for q in queries], what)
    for p, out in enumerate(outs):
        # a push: keys in order of their first row in the batch; the flush:
        # of their first row in the stream
        order = _first_seen(keys[slice(*bounds[p])] if p < len(bounds) else keys)
        for name, rows in out.items():
            _check_emission_order(rows, order, f"{what} push {p} {name}")


@pytest.mark.parametrize("kinds", OUT_OF_ORDER_KINDS, ids="+".join)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_keyed_out_of_order_stream_equals_the_watermark_model(kinds, data):
    draw = data.draw
    n = draw(st.integers(0, 40))
    keys, key_type, vals, dtype = _keys_and_values(draw, n)
    ts = _disordered_times(draw, n)
    lateness = draw(st.sampled_from([0, 0, 1, 2, 3, 5, 8, 12]))
    specs = _specs(draw, kinds)
    algo = _draw_algorithm(draw, specs, late=True)
    bounds = _bounds(draw, n)
    pickle_at = draw(st.one_of(st.none(), st.integers(0, len(bounds))))
    late_at = set(draw(st.lists(st.integers(0, len(bounds)), max_size=3)))
    unit = draw(st.sampled_from(sorted(SCALE)))
    queries = [_query(sp, i) for i, sp in enumerate(specs)]
    stream = sw.Stream(queries, value="v", time="ts", key="k", lateness=f"{lateness}s", algorithm=algo)
    assert stream.watermark is None
    batches = [_batch(keys, key_type, ts, vals, dtype, lo, hi, unit) for lo, hi in bounds]
    stream, outs, wms, late = _drive(stream, batches, key_type, dtype, pickle_at, late_at, unit, ooo=True)
    want, want_late, want_wms = _out_of_order_oracle(keys, ts, vals, bounds, specs, lateness, SCALE[unit])
    what = f"{specs} {algo} {unit} lateness={lateness} bounds={bounds}"
    assert wms == want_wms, what
    assert [x[:2] for x in late] == [x[:2] for x in want_late], what
    assert_same_list([x[2] for x in late], [x[2] for x in want_late], what=what)
    assert stream.row_counts == {"rows_in": n, "on_time": n - len(want_late), "late": len(want_late)}, what
    assert stream.rows_seen == n
    _check_against(outs, want, [q.name for q in queries], what)
    # windows close by the watermark, over every key: keys in order of
    # their first row in the stream (late rows included)
    for p, out in enumerate(outs):
        order = _first_seen(keys[:bounds[p][1]] if p < len(bounds) else keys)
        for name, rows in out.items():
            _check_emission_order(rows, order, f"{what} push {p} {name}")


# -- 2. batch cuts ------------------------------------------------------------


def _sorted_results(outs):
    res = {}
    for out in outs:
        for name, rows in out.items():
            res.setdefault(name, []).extend(rows)
    return {name: sorted(rows, key=lambda r: (r[0], r[1], r[2])) for name, rows in res.items()}


def _assert_identical(a, b, what):
    """Same windows, same values (NaN equal to NaN, -0.0 apart from 0.0)."""
    assert a.keys() == b.keys()
    for name in a:
        assert [r[:3] for r in a[name]] == [r[:3] for r in b[name]], f"{what} {name}"
        assert repr([r[3] for r in a[name]]) == repr([r[3] for r in b[name]]), f"{what} {name}"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), kinds=st.sampled_from(IN_ORDER_KINDS + [("time", "session", "late")]))
def test_results_do_not_depend_on_the_batch_cuts(data, kinds):
    # In order always; out of order when the lateness leaves no row late
    # (then every window is emitted at flush).
    draw = data.draw
    late = "late" in kinds
    kinds = tuple(k for k in kinds if k != "late")
    n = draw(st.integers(0, 40))
    keys, key_type, vals, dtype = _keys_and_values(draw, n)
    timed = kinds != ("count",)
    ts = (_disordered_times(draw, n) if late else _in_order_times(draw, keys)) if timed else None
    specs = _specs(draw, kinds)
    queries = [_query(sp, i) for i, sp in enumerate(specs)]
    results = []
    for bounds in ([(0, n)], _bounds(draw, n), _bounds(draw, n)):
        stream = sw.Stream(queries, value="v", time="ts" if timed else None, key="k",
                           lateness="1000000s" if late else None)
        batches = [_batch(keys, key_type, ts, vals, dtype, lo, hi) for lo, hi in bounds]
        stream, outs, _, lr = _drive(stream, batches, key_type, dtype, ooo=late)
        if late:
            assert lr == [] and stream.row_counts["late"] == 0
            assert all(not rows for out in outs[:-1] for rows in out.values())
        results.append((bounds, _sorted_results(outs)))
    for bounds, res in results[1:]:
        _assert_identical(res, results[0][1], f"{specs} bounds={bounds}")


# -- 3. pickle ----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data(), kinds=st.sampled_from([(k, False) for k in IN_ORDER_KINDS]
                                             + [(k, True) for k in OUT_OF_ORDER_KINDS]))
def test_a_pickle_round_trip_at_any_push_boundary_loses_nothing(data, kinds):
    draw = data.draw
    kinds, late = kinds
    n = draw(st.integers(0, 40))
    keys, key_type, vals, dtype = _keys_and_values(draw, n)
    timed = kinds != ("count",)
    ts = (_disordered_times(draw, n) if late else _in_order_times(draw, keys)) if timed else None
    specs = _specs(draw, kinds)
    lateness = f"{draw(st.integers(0, 12))}s" if late else None
    algo = _draw_algorithm(draw, specs, late)
    bounds = _bounds(draw, n)
    pickle_at = draw(st.integers(0, len(bounds)))
    late_at = set(draw(st.lists(st.integers(0, len(bounds)), max_size=3)))
    queries = [_query(sp, i) for i, sp in enumerate(specs)]
    batches = [_batch(keys, key_type, ts, vals, dtype, lo, hi) for lo, hi in bounds]
    runs = []
    for at in (None, pickle_at):
        stream = sw.Stream(queries, value="v", time="ts" if timed else None, key="k", lateness=lateness,
                           algorithm=algo)
        stream, outs, wms, lr = _drive(stream, batches, key_type, dtype, at, late_at, ooo=late)
        runs.append((stream, outs, wms, lr))
    (s0, o0, w0, l0), (s1, o1, w1, l1) = runs
    what = f"{specs} {algo} pickled before push {pickle_at} of {bounds}"
    assert len(o0) == len(o1)
    for p, (a, b) in enumerate(zip(o0, o1)):
        for q, sp in zip(queries, specs):
            ra, rb = a[q.name], b[q.name]
            assert [r[:3] for r in ra] == [r[:3] for r in rb], f"{what}: push {p} {q.name}"
            if sp[1] in LAST_BIT:
                assert_same_list([r[3] for r in ra], [r[3] for r in rb], rel=1e-12, what=f"{what}: push {p}")
            else:  # bit for bit
                assert repr([r[3] for r in ra]) == repr([r[3] for r in rb]), f"{what}: push {p} {q.name}"
    assert w0 == w1 and repr(l0) == repr(l1) and s0.rows_seen == s1.rows_seen == n, what
    if late:
        assert s0.row_counts == s1.row_counts, what
    # and after the flush: still flushed
    s2 = pickle.loads(pickle.dumps(s1))
    assert all(t.num_rows == 0 for t in s2.flush().values())
    with pytest.raises(ValueError, match="flushed"):
        s2.push(batches[0])


# var/std after a restore may differ in the last bit (the test below).
LAST_BIT = {"var", "std"}


@pytest.mark.xfail(strict=True, reason="restore rebuilds a window's aggregator from its saved partials (count "
                   "and in-order time windows: bulk_insert; out of order: re-positioned from the slice store), "
                   "re-associating var/std's merges: after a pickle round trip a window's var or std can differ "
                   "in the last bit from the stream that was not pickled (two_stacks, daba, flatfat, bint, "
                   "slideside, flatfit; auto)")
def test_a_pickle_round_trip_keeps_var_bit_for_bit():
    def run(pickled):
        s = sw.Stream(sw.Query("var", "4s", "1s", name="q"), time="ts", key="k", algorithm="two_stacks")
        s.push({"k": ["a"] * 4, "ts": pa.array([0, 3, 4, 5], pa.int64()).cast(TS), "v": [None, 0.0, 1.0, -2.0]})
        if pickled:
            s = pickle.loads(pickle.dumps(s))
        return s.flush()["q"].column("value").to_pylist()

    # [2, 6) and [3, 7) hold 0, 1, -2: 2.333333333333333 unpickled,
    # 2.3333333333333335 pickled
    assert repr(run(True)) == repr(run(False))


# -- 4. accounting per key ----------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_row_of_a_key_is_aggregated_or_returned_late(data):
    draw = data.draw
    n = draw(st.integers(0, 50))
    keys, key_type, _, _ = _keys_and_values(draw, n)
    vals = draw(st.lists(st.integers(-9, 9).map(float), min_size=n, max_size=n))  # no nulls: count = rows
    ts = _disordered_times(draw, n)
    gap, tumble = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    queries = [sw.Query("count", session=f"{gap}s", name="sessions"),
               sw.Query("count", f"{tumble}s", name="tumbling"),  # each row in exactly one window
               sw.Query("sum", session=f"{gap}s", name="sum")]
    stream = sw.Stream(queries, value="v", time="ts", key="k", lateness=f"{draw(st.integers(0, 6))}s")
    bounds = _bounds(draw, n)
    batches = [_batch(keys, key_type, ts, vals, "float64", lo, hi) for lo, hi in bounds]
    stream, outs, _, late = _drive(stream, batches, key_type, "float64", draw(st.integers(0, len(bounds))),
                                   set(draw(st.lists(st.integers(0, len(bounds)), max_size=3))), ooo=True)
    res = _sorted_results(outs)
    for k in set(keys):
        pushed = keys.count(k)
        k_late = [r for r in late if r[0] == k]
        assert sum(r[3] for r in res["sessions"] if r[0] == k) + len(k_late) == pushed, k
        assert sum(r[3] for r in res["tumbling"] if r[0] == k) + len(k_late) == pushed, k
        want_sum = sum(v for kk, v in zip(keys, vals) if kk == k) - sum(r[2] for r in k_late)
        assert same(sum(r[3] for r in res["sum"] if r[0] == k), want_sum), k
    assert not {r[0] for rows in res.values() for r in rows} - set(keys)
    c = stream.row_counts
    assert c == {"rows_in": n, "on_time": n - len(late), "late": len(late)}


# -- 5. sessions --------------------------------------------------------------


def _all(stream, batches):
    out = {}
    for b in batches:
        for name, t in stream.push(b).items():
            out.setdefault(name, []).extend(_rows(t, pa.string()))
    for name, t in stream.flush().items():
        out.setdefault(name, []).extend(_rows(t, pa.string()))
    return out


def _b(k, ts, v):
    return {"k": pa.array(k, pa.string()), "ts": pa.array(ts, pa.int64()).cast(TS), "v": pa.array(v, pa.float64())}


@pytest.mark.parametrize("lateness", [None, "0s", "100s"])
def test_rows_exactly_a_gap_apart_share_one_session(lateness):
    qs = [sw.Query("collect", session="5s", name="c"), sw.Query("count", session="5s", name="n")]
    s = sw.Stream(qs, time="ts", key="k", lateness=lateness)
    # a: 0, 5, 10 chain (each exactly the gap after the last); 16 is 6 after
    out = _all(s, [_b(["a", "b", "a"], [0, 3, 5], [1.0, 7.0, 2.0]),
                   _b(["a", "b", "a"], [10, 8, 16], [3.0, 8.0, 4.0])])
    assert sorted(out["c"]) == [("a", 0, 15, [1.0, 2.0, 3.0]), ("a", 16, 21, [4.0]), ("b", 3, 13, [7.0, 8.0])]
    assert sorted(out["n"]) == [("a", 0, 15, 3), ("a", 16, 21, 1), ("b", 3, 13, 2)]


def test_an_on_time_row_touching_two_open_sessions_merges_them():
    qs = [sw.Query(agg, session="5s", name=agg) for agg in ("collect", "first", "last", "argmax", "count", "sum")]
    s = sw.Stream(qs, time="ts", key="k", lateness="10s")
    # two sessions of key a, [0, 5] and [10, 15]; the watermark after: 0
    out = s.push(_b(["a", "a", "b"], [10, 0, 1], [5.0, 1.0, 9.0]))
    assert all(t.num_rows == 0 for t in out.values())
    assert s.watermark == EPOCH
    # 5 arrives late but on time (5 + 5 > 0): its [5, 10] touches both
    out = s.push(_b(["a"], [5], [3.0]))
    assert all(t.num_rows == 0 for t in out.values()) and s.late_rows().num_rows == 0
    out = {name: _rows(t, pa.string()) for name, t in s.push(_b(["b"], [40], [0.0])).items()}  # watermark 30
    assert out["collect"] == [("a", 0, 15, [1.0, 3.0, 5.0]), ("b", 1, 6, [9.0])]
    assert [r[3] for r in out["first"]] == [1.0, 9.0]
    assert [r[3] for r in out["last"]] == [5.0, 9.0]
    assert [r[3] for r in out["argmax"]] == [10, 1]  # event times
    assert [r[3] for r in out["count"]] == [3, 1]
    assert [r[3] for r in out["sum"]] == [9.0, 9.0]
    assert s.row_counts == {"rows_in": 5, "on_time": 5, "late": 0}
    # a row between two open sessions that touches only one joins that one
    s = sw.Stream(sw.Query("collect", session="5s", name="c"), time="ts", key="k", lateness="100s")
    out = _all(s, [_b(["a", "a"], [0, 20], [1.0, 2.0]), _b(["a"], [15], [3.0])])
    assert out["c"] == [("a", 0, 5, [1.0]), ("a", 15, 25, [3.0, 2.0])]


@pytest.mark.parametrize("lateness", [None, "100s"])
def test_session_windows_with_min_periods(lateness):
    qs = [sw.Query("sum", session="5s", min_periods=2, name="sum2"),
          sw.Query("count", session="5s", min_periods=2, name="count2"),
          sw.Query("mean", session="5s", name="mean"),
          sw.Query("count", session="5s", name="count")]
    s = sw.Stream(qs, time="ts", key="k", lateness=lateness)
    # sessions of a: {0: 1, 2: null} one value; {20: null, 21: null} none;
    # {40: 2, 41: 3, 42: null} two values
    v = pa.array([1.0, None, None, None, 2.0, 3.0, None], pa.float64())
    out = _all(s, [{"k": pa.array(["a"] * 7), "ts": pa.array([0, 2, 20, 21, 40, 41, 42], pa.int64()).cast(TS),
                    "v": v}])
    bounds = [("a", 0, 7), ("a", 20, 26), ("a", 40, 47)]
    for name, want in {"sum2": [None, None, 5.0], "count2": [None, None, 2], "mean": [1.0, None, 2.5],
                       "count": [1, 0, 2]}.items():
        assert [r[:3] for r in out[name]] == bounds, name  # an all-null session is still a window
        assert [r[3] for r in out[name]] == want, name


# -- 6. errors ----------------------------------------------------------------


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_a_null_key_is_refused_naming_the_row(key_type):
    s = sw.Stream([sw.Query("sum", "10s", name="t"), sw.Query("count", session="5s", name="s")],
                  time="ts", key="k", lateness="5s")
    s.push({"k": pa.array(["1"] if key_type == pa.string() else [1], key_type),
            "ts": pa.array([0], pa.int64()).cast(TS), "v": [1.0]})
    keys = pa.array(["1", None, "2"] if key_type == pa.string() else [1, None, 2], key_type)
    with pytest.raises(ValueError, match="key of row 1 is null"):
        s.push({"k": keys, "ts": pa.array([1, 2, 3], pa.int64()).cast(TS), "v": [1.0, 2.0, 3.0]})
    # the refused batch changed nothing
    assert s.row_counts == {"rows_in": 1, "on_time": 1, "late": 0}
    out = s.flush()
    assert out["t"].to_pylist()[0]["value"] == 1.0 and out["s"].to_pylist()[0]["value"] == 1
    assert out["t"].num_rows == out["s"].num_rows == 1


def test_decreasing_times_in_an_in_order_session_stream_are_refused():
    s = sw.Stream(sw.Query("sum", session="5s"), time="ts")
    s.push({"ts": pa.array([10], pa.int64()).cast(TS), "v": [1.0]})
    with pytest.raises(ValueError, match="non-decreasing: row 1 has time 9, after 11"):
        s.push({"ts": pa.array([11, 9], pa.int64()).cast(TS), "v": [1.0, 2.0]})
    with pytest.raises(ValueError, match="non-decreasing: row 0 has time 9, after 10"):  # 11 was refused
        s.push({"ts": pa.array([9], pa.int64()).cast(TS), "v": [1.0]})
    s = sw.Stream(sw.Query("sum", session="5s"), time="ts", key="k")
    s.push({"k": ["a", "b"], "ts": pa.array([10, 3], pa.int64()).cast(TS), "v": [1.0, 1.0]})
    with pytest.raises(ValueError, match=r"within each key: row 1 \(key \"a\"\) has time 9, after 10"):
        s.push({"k": ["b", "a"], "ts": pa.array([4, 9], pa.int64()).cast(TS), "v": [1.0, 1.0]})


def test_bad_session_queries():
    with pytest.raises(ValueError, match="either range= .* or session=, not both"):
        sw.Query("sum", "10s", session="5s")
    with pytest.raises(ValueError, match="either range= .* or session=, not both"):
        sw.Query("sum", 3, session="5s")
    for bad in (5, 2.5, [1]):
        with pytest.raises(ValueError, match="session must be a time span"):
            sw.Query("sum", session=bad)
    with pytest.raises(ValueError, match="not a time span"):
        sw.Query("sum", session="soon")
    with pytest.raises(ValueError, match="positive"):
        sw.Query("sum", session="0s")
    with pytest.raises(ValueError, match="needs the stream's event-time column"):
        sw.Stream(sw.Query("sum", session="5s"))
    with pytest.raises(ValueError, match="give range/slide as time spans"):
        sw.Stream([sw.Query("sum", session="5s"), sw.Query("sum", 3)], time="ts")
