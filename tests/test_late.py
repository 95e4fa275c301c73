"""Out-of-order streams (Stream(..., time=, lateness=)): every emitted window
equals the naive aggregate of exactly the on-time rows it covers, for every
algorithm, random bounded disorder, lateness and batch cuts, with a pickle
round trip mid-stream; rows in == rows aggregated + rows reported late;
lateness=0 on sorted data equals the in-order Stream; errors."""

import datetime
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from oracle import agg_window, same

LATE_ALGOS = ["auto", "cbix", "flatfat", "two_stacks", "recalc"]
ORDER_SENSITIVE = {"argmax", "argmin", "first", "last", "first_ignore_nulls", "last_ignore_nulls", "collect"}
AGGS = ["sum", "max", "min", "count", "mean", "var", "range", "maxcount", "first", "last", "last_ignore_nulls", "collect", "argmax"]


def _disordered(draw, n):
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 7]), min_size=n, max_size=n))
    ts = list(np.cumsum(gaps) - 11)
    d = draw(st.integers(0, 10))
    rnd = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    for i in range(n):  # shuffle within distance d
        j = i + int(rnd.integers(0, d + 1))
        if j < n:
            ts[i], ts[j] = ts[j], ts[i]
    v = draw(st.lists(st.one_of(st.none(), st.integers(-9, 9).map(float)), min_size=n, max_size=n))
    return [int(t) for t in ts], v


def _model(ts, v, lateness, cuts, shapes):
    """Spark's watermark, batch by batch: (on-time rows as (t, arrival, v,
    the watermark their batch found), late rows as (t, v), watermark after
    each batch). An on-time row joins only the windows still open (ending
    after that watermark): Spark drops a row per window. A row is late when,
    for some query (range, slide), the last window holding it ends at or
    before the watermark the batch found; the watermark is the largest time
    of earlier batches minus lateness."""
    on, late, wms, mx, prev = [], [], [], None, 0
    for c in cuts:
        wm = None if mx is None else mx - lateness
        for i in range(prev, c):
            t, x = ts[i], v[i]
            ends = [(t // s) * s + r for r, s in shapes]
            if wm is not None and any(t < e <= wm for e in ends):
                late.append((t, x))
            else:
                on.append((t, i, x, wm))
        if c > prev:
            m = max(ts[prev:c])
            mx = m if mx is None else max(mx, m)
        wms.append(None if mx is None else mx - lateness)
        prev = c
    return sorted(on), late, wms


def _windows(on, agg, range_, slide, min_periods=None):
    """{(start, end): value} of every window holding an on-time row."""
    keys = set()
    for t, _, _, wm in on:
        j = (t - range_) // slide + 1
        while j * slide <= t:
            if wm is None or j * slide + range_ > wm:
                keys.add((j * slide, j * slide + range_))
            j += 1
    out = {}
    for s, e in keys:
        rows = [(t, x) for t, _, x, wm in on if s <= t < e and (wm is None or e > wm)]
        out[(s, e)] = agg_window(agg, [x for _, x in rows], [t for t, _ in rows], min_periods)
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_late_stream_equals_naive_on_time_rows(data):
    n = data.draw(st.integers(0, 90))
    ts, v = _disordered(data.draw, n)
    lateness = data.draw(st.integers(0, 12))
    agg = data.draw(st.sampled_from(AGGS))
    algo = data.draw(st.sampled_from([a for a in LATE_ALGOS if not (a == "cbix" and agg in ORDER_SENSITIVE)]))
    shapes = data.draw(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 6)), min_size=1, max_size=2, unique=True))
    queries = [sw.Query(agg, datetime.timedelta(microseconds=0) + datetime.timedelta(seconds=r), f"{s}s",
                        name=f"q{i}") for i, (r, s) in enumerate(shapes)]
    tsec = pa.timestamp("s")
    stream = sw.Stream(queries, value="v", time="ts", lateness=f"{lateness}s", algorithm=algo)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=4))))
    pickle_at = data.draw(st.integers(0, len(cuts)))
    on, late, wms = _model(ts, v, lateness, cuts + [n], shapes)
    got = {q.name: [] for q in queries}
    late_got = []
    prev = 0
    for i, c in enumerate(cuts + [n]):
        if i == pickle_at:
            stream = pickle.loads(pickle.dumps(stream))
        b = pa.table({"v": pa.array(v[prev:c], pa.float64()), "ts": pa.array(ts[prev:c], pa.int64()).cast(tsec)})
        for name, t in stream.push(b).items():
            rows = t.to_pylist()
            wm = wms[i]
            for r in rows:  # final: emitted only once the watermark passed the end
                end = int(r["window_end"].replace(tzinfo=datetime.timezone.utc).timestamp())
                assert wm is not None and end <= wm
            got[name] += rows
        if i % 2:
            late_got += stream.late_rows().to_pylist()
        prev = c
    for name, t in stream.flush().items():
        got[name] += t.to_pylist()
    lt = stream.late_rows()
    assert lt.column_names == ["ts", "v"] and lt.schema.field("ts").type == tsec
    late_got += lt.to_pylist()
    epoch = datetime.datetime(1970, 1, 1)
    assert [(int((r["ts"] - epoch).total_seconds()), r["v"]) for r in late_got] == late
    c = stream.row_counts
    assert c["rows_in"] == n == c["on_time"] + c["late"] and c["late"] == len(late)
    assert stream.rows_seen == n
    for q, (r, s) in zip(queries, shapes):
        want = _windows(on, agg, r, s)
        rows = got[q.name]
        keys = [(int((x["window_start"] - epoch).total_seconds()), int((x["window_end"] - epoch).total_seconds()))
                for x in rows]
        assert keys == sorted(want), (q, algo)
        for k, x in zip(keys, rows):
            assert same(x["value"], want[k]), (q, algo, k, x["value"], want[k])


@pytest.mark.parametrize("agg", sorted(sw.MONOID_AGGS))
def test_lateness_zero_on_sorted_data_equals_in_order_stream(agg):
    rng = np.random.default_rng(3)
    n = 2000
    ts = np.cumsum(rng.integers(0, 3, n)) * 1_000_000_000
    v = rng.integers(-20, 20, n).astype(float)
    vals = pa.array(np.where(rng.random(n) < 0.1, None, v).tolist(), pa.float64())
    b = pa.table({"v": vals, "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("ns"))})
    qs = [sw.Query(agg, "10s", "3s"), sw.Query(agg, "7s", "7s")]
    a = sw.Stream(qs, time="ts")
    late = sw.Stream(qs, time="ts", lateness=0)
    got_a, got_l = {}, {}
    for lo in range(0, n, 333):
        for k, t in a.push(b.slice(lo, 333)).items():
            got_a.setdefault(k, []).extend(t.to_pylist())
        for k, t in late.push(b.slice(lo, 333)).items():
            got_l.setdefault(k, []).extend(t.to_pylist())
    for k, t in a.flush().items():
        got_a[k].extend(t.to_pylist())
    for k, t in late.flush().items():
        got_l[k].extend(t.to_pylist())
    assert late.late_rows().num_rows == 0
    for k in got_a:
        assert [(r["window_start"], r["window_end"]) for r in got_a[k]] == [
            (r["window_start"], r["window_end"]) for r in got_l[k]]
        assert all(same(x["value"], y["value"]) for x, y in zip(got_a[k], got_l[k])), k


def test_late_rows_are_reported_not_dropped():
    s = sw.Stream(sw.Query("sum", "10s", name="q"), time="ts", lateness=datetime.timedelta(seconds=5))
    out = s.push({"v": [1.0, 2.0], "ts": pa.array([100, 120], pa.timestamp("s"))})
    # watermark 115 after the batch: the window [100, 110) is final.
    assert [r["value"] for r in out["q"].to_pylist()] == [1.0]
    assert s.watermark == datetime.datetime(1970, 1, 1, 0, 1, 55)
    # 104's only window ended at 110 <= 115: late. 114's window [110, 120)
    # is still open (Spark's rule is per window, not per row): on time.
    out = s.push({"v": [3.0, 4.0, 5.0], "ts": pa.array([104, 114, 116], pa.timestamp("s"))})
    assert out["q"].num_rows == 0
    late = s.late_rows()
    assert late.to_pylist() == [{"ts": datetime.datetime(1970, 1, 1, 0, 1, 44), "v": 3.0}]
    assert s.late_rows().num_rows == 0  # only since the last call
    rest = s.flush()["q"].to_pylist()
    assert [r["value"] for r in rest] == [9.0, 2.0]  # [110, 120) without the late 3.0; [120, 130)
    assert s.row_counts == {"rows_in": 5, "on_time": 4, "late": 1}
    # Within one batch nothing is late, whatever its order (Spark's
    # micro-batches): the watermark moves after the batch.
    s = sw.Stream(sw.Query("sum", "10s", name="q"), time="ts", lateness=0)
    out = s.push({"v": [1.0, 2.0, 3.0], "ts": pa.array([100, 150, 101], pa.timestamp("s"))})
    assert [r["value"] for r in out["q"].to_pylist()] == [4.0] and s.late_rows().num_rows == 0


def test_late_stream_errors():
    q = sw.Query("first", "10s")
    with pytest.raises(ValueError, match="cbix.*first"):
        sw.Stream(q, time="ts", lateness="5s", algorithm="cbix")
    sw.Stream(q, time="ts", lateness="5s", algorithm="auto")  # auto picks flatfat
    with pytest.raises(ValueError, match="cannot run an out-of-order stream"):
        sw.Stream(sw.Query("sum", "10s"), time="ts", lateness="5s", algorithm="daba")
    with pytest.raises(ValueError, match="lateness=... needs time windows"):
        sw.Stream(sw.Query("sum", 10), lateness=3)
    with pytest.raises(ValueError, match="lateness"):
        sw.Stream(sw.Query("sum", "10s"), time="ts", lateness=-1)
    with pytest.raises(ValueError, match="lateness"):
        sw.Stream(sw.Query("sum", "10s"), time="ts", lateness="soon")
    with pytest.raises(ValueError, match="late_rows"):
        sw.Stream(sw.Query("sum", "10s"), time="ts").late_rows()
    s = sw.Stream(sw.Query("sum", "10s"), time="ts", lateness="1s")
    with pytest.raises(ValueError, match="null"):
        s.push({"v": [1.0], "ts": pa.array([None], pa.timestamp("s"))})
    s.flush()
    with pytest.raises(ValueError, match="flushed"):
        s.push({"v": [1.0], "ts": pa.array([5], pa.timestamp("s"))})


def test_old_pickles_still_load():
    s = sw.Stream(sw.Query("sum", "10s", name="q"), time="ts")
    s.push({"v": [1.0, 2.0], "ts": pa.array([1, 12], pa.timestamp("s"))})
    st_ = s._state()  # the dict a version-8 pickle held, unsealed
    st_["version"] = 3
    del st_["lateness"]
    s2 = sw.Stream.__new__(sw.Stream)
    s2.__setstate__(st_)
    assert s2.flush()["q"].to_pylist()[0]["value"] == 2.0
    st_["version"] = 99
    with pytest.raises(ValueError, match="state version"):
        sw.Stream.__new__(sw.Stream).__setstate__(st_)
