"""Checkpoints refuse corruption: a keyed Stream's pickle and the per-key
state of slidewise.spark.stream_aggregate (pane partials, or rows) carry a
checksum over everything they restore. Random byte flips (1-4 bytes),
truncations and insertions are each refused with an error, or restore to
exactly the original answers; none gives different ones. Old pickles
without a checksum still load; errors name the version that wrote them."""

import pickle

import numpy as np
import pyarrow as pa
import pytest

import slidewise as sw


def _corruptions(data, n, seed):
    """``n`` corrupted copies of ``data``: 1-4 flipped bytes, a truncation
    or an inserted byte, drawn at random."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        b = bytearray(data)
        kind = i % 4
        if kind < 2:
            for pos in rng.choice(len(b), int(rng.integers(1, 5)), replace=False):
                b[pos] ^= int(rng.integers(1, 256))
        elif kind == 2:
            del b[int(rng.integers(0, len(b))):]
        else:
            b.insert(int(rng.integers(0, len(b) + 1)), int(rng.integers(0, 256)))
        yield bytes(b)


def _stream():
    qs = [sw.Query("sum", "10s", "5s", name="sum"), sw.Query("max", "10s", name="max"),
          sw.Query("mean", "20s", "10s", name="mean")]
    s = sw.Stream(qs, time="ts", key="k", lateness="5s")
    rng = np.random.default_rng(3)
    n = 60
    s.push({"v": rng.normal(size=n), "ts": pa.array(np.sort(rng.integers(0, 40, n)), pa.timestamp("s")),
            "k": pa.array(rng.integers(0, 4, n))})
    return s


def _answers(s):
    rng = np.random.default_rng(4)
    n = 40
    out = s.push({"v": rng.normal(size=n), "ts": pa.array(np.sort(rng.integers(35, 80, n)), pa.timestamp("s")),
                  "k": pa.array(rng.integers(0, 5, n))})
    fin = s.flush()
    return {q: (out[q].to_pylist(), fin[q].to_pylist()) for q in out}


def test_stream_pickles_refuse_corruption():
    data = pickle.dumps(_stream())
    want = _answers(pickle.loads(data))
    assert sum(len(a) + len(b) for a, b in want.values()) > 20
    refused = same = 0
    for bad in _corruptions(data, 1200, seed=1):
        try:
            s = pickle.loads(bad)
        except Exception:  # refused: by the checksum, or by pickle itself
            refused += 1
            continue
        if not isinstance(s, sw.Stream):
            # pickle's own opcodes carry no checksum: a flip there can make
            # it return another object (the sealed bytes, a tuple), which
            # has no answers to give
            refused += 1
            continue
        assert _answers(s) == want  # loaded: the corruption touched nothing it restores
        same += 1
    assert refused > 1000, (refused, same)


def test_stream_checksum_error_names_versions():
    st = _stream().__getstate__()
    assert st["version"] == 9 and st["slidewise"] == sw.__version__
    body = bytearray(st["body"])
    body[len(body) // 2] ^= 1
    s = sw.Stream.__new__(sw.Stream)
    with pytest.raises(ValueError, match=f"written by slidewise {sw.__version__}.*checksum mismatch"):
        s.__setstate__({**st, "body": bytes(body)})
    # a pickle of version 8 (no checksum) still loads, and says it predates the versions named
    old = _stream()._state()
    s.__setstate__(old)
    assert _answers(s) == _answers(pickle.loads(pickle.dumps(_stream())))
    with pytest.raises(ValueError, match="written by a slidewise before 0.2.*state version 99"):
        s.__setstate__({**old, "version": 99})


def test_aggregators_have_no_checkpoint():
    """The raw FIFO aggregators cannot be pickled at all: a clear TypeError,
    never a partial checkpoint."""
    a = sw.aggregators.FlatFIT("max")
    a.insert(1.0)
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(a)


def test_stream_aggregate_key_state_refuses_corruption():
    """stream_aggregate's state, both kinds: a bucket's panes (its
    watermark, bucket count and partials as Arrow IPC) and a pickle of rows
    (checked without Spark: the codecs alone)."""
    from slidewise.spark import _stream_state as S

    keys = pa.table({"k": pa.array(["a", "a", "b", None])})
    panes = S._row_partials(keys, np.array([3, 3, 5, 9]), np.array([1.5, np.nan, -2.0, 0.0]),
                            np.array([False, False, False, True]), 2)
    bucket = S._encode_bucket(123_000_000, 4, panes)
    final, buckets, got = S._decode_bucket(bucket)
    assert (final, buckets, repr(got.to_pydict())) == (123_000_000, 4, repr(panes.to_pydict()))
    assert S._unseal(S._BUCKET_MAGIC, bucket)[0] == sw.__version__
    rows = S._seal(S._ROWS_MAGIC, pickle.dumps({"t": np.arange(5), "v": np.ones(5), "m": np.zeros(5, bool),
                                                "final": 7}))
    for data, load in [(bucket, lambda b: (lambda f, n, t: (f, n, t.to_pydict()))(*S._decode_bucket(b))),
                       (rows, lambda b: pickle.loads(S._unseal(S._ROWS_MAGIC, b)[1]))]:
        good = load(data)
        refused = 0
        for bad in _corruptions(data, 400, seed=2):
            try:
                got = load(bad)
            except ValueError as e:
                assert "cannot restore slidewise.spark.stream_aggregate state" in str(e)
                refused += 1
                continue
            assert pickle.dumps(got) == pickle.dumps(good)
        assert refused >= 390, refused


class _GroupState:
    """The calls of pyspark's GroupState that stream_aggregate's processors
    make (applyInPandasWithState's, without Spark)."""

    def __init__(self, value, wm_ms):
        self.value, self.wm_ms, self.hasTimedOut = value, wm_ms, False

    @property
    def getOption(self):
        return None if self.value is None else (self.value,)

    def getCurrentWatermarkMs(self):
        return self.wm_ms

    def update(self, v):
        self.value = v[0]

    def remove(self):
        self.value = None

    def setTimeoutTimestamp(self, ms):
        pass


def _pane_call(queries, state, ts_s, values):
    """One call of the pane processor (one bucket, key "k") on rows at
    ``ts_s`` seconds: its output frames concatenated."""
    import pandas as pd
    from slidewise.spark import _stream_state as S
    from slidewise.spark._streaming import _Shell

    work = S.engine(_Shell("panes", queries, "v", "ts", ["k"], buckets=1))
    t = np.asarray(ts_s, np.int64) * 1_000_000
    v = np.asarray(values, np.float64)
    rows = pd.DataFrame({"k": np.zeros(len(t), np.int64), "ts": t.astype(np.float64), "v": v,
                         S._NULL_COL: np.zeros(len(t), bool), S._LATE_COL: pd.to_datetime(t + 3_000_000, unit="us", utc=True)})
    out = list(work(None, iter([rows]), state))
    return pd.concat(out, ignore_index=True) if out else None


def test_stream_aggregate_bucket_state_keeps_its_queries_fields():
    """A bucket's state keeps only the partials its queries read (max and
    mean: n, cnt, s, mx, nan; no m2 / mn), as zstd-compressed Arrow IPC. A
    state of an older writer (every field, uncompressed) restores to the
    same windows; a state written for other aggregations is refused by
    name, never read as zeros."""
    import struct

    from slidewise.spark import _stream_state as S

    qs = [sw.Query("max", "2s", "1s", name="max"), sw.Query("mean", "2s", "1s", name="mean")]
    st = _GroupState(None, 0)
    assert _pane_call(qs, st, [1, 1, 2, 3], [1.5, -2.0, 4.0, 0.5]) is None  # nothing final yet
    final, _, panes = S._decode_bucket(st.value)
    assert panes.column_names == ["k", "p", "n", "cnt", "s", "mx", "nan"]
    big = pa.table({"k": np.arange(10_000) // 20, "p": np.arange(10_000) % 20, "s": np.ones(10_000)})
    assert len(S._encode_bucket(0, 1, big)) < big.nbytes / 4  # compressed
    # the older writer: every field of _FIELDS, no compression
    full = S._combine(S._row_partials(pa.table({"k": pa.array([0, 0, 0, 0])}), np.array([1, 1, 2, 3]) * 1_000_000,
                                      np.array([1.5, -2.0, 4.0, 0.5]), np.zeros(4, bool), 1_000_000), ["k", "p"])
    assert set(full.column_names) >= set(S._FIELDS)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, full.schema) as w:
        w.write_table(full)
    old = S._seal(S._BUCKET_MAGIC, struct.pack("<qq", final, 1) + sink.getvalue().to_pybytes())
    new = _pane_call(qs, _GroupState(st.value, 10_000), [9], [7.0])
    older = _pane_call(qs, _GroupState(old, 10_000), [9], [7.0])
    assert new is not None and len(new) == 8  # the first rows' windows (ending at 2-5 s), two queries
    assert new.to_dict() == older.to_dict()
    with pytest.raises(ValueError, match=r"written for other aggregations \(it has no partials \['m2'\]"):
        _pane_call([sw.Query("std", "2s", "1s", name="std")], _GroupState(st.value, 10_000), [9], [7.0])
