"""asv: keys. Keyed per-row rolling (slidewise vs pandas groupby().rolling()
and polars `rolling_*(w).over(k)`), keyed time rolling (vs pandas
`groupby().rolling("10s", on=t)` and polars `rolling_*_by(t, "10s").over(k)`)
and keyed Stream push throughput, each peer on the same data in the same run
so ratios are comparable; peak memory of 1M keys with small windows (bytes
per key).

Each rolling setup first checks the result it is about to time against the
other side's on the same data (slidewise's against polars', a peer's against
slidewise's), so a wrong result fails the benchmark instead of being timed.

Run one-off (outside asv) with `python benches/bench_keys.py [--quick]`:
prints the CPU, the ratios measured in one run (peer time / slidewise time:
> 1 means slidewise is faster; every case checked by its setup first), and
measures the bytes per key in a fresh subprocess (`--memory` alone).
"""

import numpy as np

if __package__:  # asv imports the benches package
    from ._check import check, drift, machine
else:  # python benches/bench_keys.py
    from _check import check, drift, machine

N = 2_000_000


def _data(n_keys, n=None, seed=42):
    n = N if n is None else n
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_keys, n).astype(np.int64), rng.normal(0.0, 1.0, n)


def _check_keyed(case, agg, v, window_rows, mine, peer, name):
    """slidewise's keyed result (aligned with the input rows) against a
    peer's: polars' over("k") is aligned too; pandas' groupby().rolling() is
    in key order, indexed by (key, input row), so re-aligned here (outside
    the timed call). max picks one of the values: equal. The peers' sums
    are running sums per key, which keep the rounding error of earlier rows:
    1e-9 relative plus drift() at the scale of a window's largest possible
    sum (window_rows x max|v|)."""
    want = peer()
    if name == "polars":
        want = want.to_series()
    elif name == "pandas":
        want = want.droplevel(0).sort_index()
    tol = {"rtol": 0.0} if agg == "max" else {"atol": drift(len(v), window_rows * float(np.abs(v).max()))}
    check(case, mine(), want, name, **tol)


class KeyedRolling:
    """400,000 keys are 5 rows per key: short keys, which run batched
    (max / min in one padded column, sum / mean / std restarted per key)."""

    params = (["max", "sum", "mean", "std"], [100, 100_000, 400_000], [10, 1000], ["slidewise", "polars", "pandas"])
    param_names = ["agg", "keys", "window", "library"]
    timeout = 600

    def setup(self, agg, keys, window, library):
        if library == "pandas" and (keys > 1000 or window > 10):
            raise NotImplementedError("pandas is too slow here")  # asv skips
        import pyarrow as pa
        import slidewise as sw

        k, v = _data(keys)
        ka, va = pa.array(k), pa.array(v)
        # min_periods / min_samples = 1 everywhere: a key's first rows get
        # their partial window's value, as slidewise's default
        mine = lambda: sw.rolling(va, window, agg, keys=ka, min_periods=1)  # noqa: E731
        if library == "pandas":
            import pandas as pd

            df = pd.DataFrame({"k": k, "v": v})
            self.run = lambda: getattr(df.groupby("k", sort=False)["v"].rolling(window, min_periods=1), agg)()
        else:
            import polars as pl

            df = pl.DataFrame({"k": k, "v": v})
            f = getattr(pl.col("v"), f"rolling_{agg}")
            peer = lambda: df.select(f(window, min_samples=1).over("k"))  # noqa: E731
            self.run = mine if library == "slidewise" else peer
        _check_keyed(f"KeyedRolling({agg}, {keys}, {window}, {library})", agg, v, window, mine,
                     self.run if library != "slidewise" else peer, "polars" if library == "slidewise" else library)

    def time_keyed_rolling(self, agg, keys, window, library):
        self.run()


class KeyedRollingSkewedMissing:
    """Realistic keys (issue 36): 1,000 keys of Zipf(1.3) sizes (the largest
    a quarter of the rows, most a few), interleaved as rows arrive, on a
    clean column and on the same column with 1% nulls (polars gets the
    nulls too). Checked against polars first."""

    params = (["max", "mean", "std"], ["clean", "nulls"], ["slidewise", "polars"])
    param_names = ["agg", "column", "library"]
    timeout = 600

    def setup(self, agg, column, library):
        import polars as pl
        import pyarrow as pa
        import slidewise as sw

        rng = np.random.default_rng(36)
        k = (rng.zipf(1.3, N) - 1) % 1000
        v = rng.normal(0.0, 1.0, N)
        miss = rng.random(N) < 0.01 if column == "nulls" else None
        ka, va = pa.array(k), pa.array(v, mask=miss)
        df = pl.DataFrame({"k": k, "v": pl.Series(va)})
        f = getattr(pl.col("v"), f"rolling_{agg}")
        peer = lambda: df.select(f(100, min_samples=1).over("k"))  # noqa: E731
        mine = lambda: sw.rolling(va, 100, agg, keys=ka)  # noqa: E731
        self.run = mine if library == "slidewise" else peer
        _check_keyed(f"KeyedRollingSkewedMissing({agg}, {column}, {library})", agg, v, 100, mine, peer, "polars")

    def time_keyed_rolling(self, agg, column, library):
        self.run()


class KeyedRollingShaped:
    """Keyed rolling median / quantile (0.9, linear) and centred windows
    (`center=True`) against polars' `rolling_*(w, center=...).over(k)`;
    first (Spark's `first` over the frame) against what a polars user
    writes for it, `shift(w - 1).fill_null(first())` per key (the data has
    no nulls); geomean against `log().rolling_mean(w).exp()` per key, on
    the values' magnitudes. Short keys run batched: order statistics in one padded
    column, centred windows as trailing ones shifted, the cut tails of sums
    and moments restarted per key and reversed, first / last as a gather."""

    params = (["median", "quantile", "max centred", "sum centred", "std centred", "median centred", "first", "geomean"],
              [100, 100_000, 400_000], [10, 1000], ["slidewise", "polars"])
    param_names = ["case", "keys", "window", "library"]
    timeout = 600

    def setup(self, case, keys, window, library):
        import polars as pl
        import pyarrow as pa
        import slidewise as sw

        agg, center = case.split(" ")[0], case.endswith("centred")
        kw = {"q": 0.9} if agg == "quantile" else {}
        k, v = _data(keys)
        if agg == "geomean":
            v = abs(v)
        ka, va = pa.array(k), pa.array(v)
        mine = lambda: sw.rolling(va, window, agg, keys=ka, min_periods=1, center=center, **kw)  # noqa: E731
        df = pl.DataFrame({"k": k, "v": v})
        if agg == "quantile":
            e = pl.col("v").rolling_quantile(0.9, "linear", window_size=window, min_samples=1, center=center)
        elif agg == "first":
            e = pl.col("v").shift(window - 1).fill_null(pl.col("v").first())
        elif agg == "geomean":
            e = pl.col("v").log().rolling_mean(window, min_samples=1).exp()
        else:
            e = getattr(pl.col("v"), f"rolling_{agg}")(window, min_samples=1, center=center)
        peer = lambda: df.select(e.over("k"))  # noqa: E731
        name = f"KeyedRollingShaped({case}, {keys}, {window})"
        if agg == "first":
            check(name, mine(), peer().to_series(), "polars", rtol=0.0)
        elif agg == "geomean":
            # polars' running mean of logs drifts by ~1e-16 x the logs' size a row
            check(name, mine(), peer().to_series(), "polars", rtol=1e-9, atol=0.0)
        elif agg in ("median", "quantile"):
            # two values interpolated: (a + b) / 2 against a + (b - a) / 2
            check(name, mine(), peer().to_series(), "polars", rtol=1e-12, atol=1e-15)
        else:
            _check_keyed(name, agg, v, window, mine, peer, "polars")
        self.run = mine if library == "slidewise" else peer

    def time_keyed_rolling_shaped(self, case, keys, window, library):
        self.run()


class KeyedRollingMany:
    """rolling_many keyed: windows 5 / 10 / 50 of max, mean and std (nine
    features) against polars' nine `rolling_*(w).over(k)` expressions in one
    select. 400,000 keys are 5 rows per key (batched: max padded, mean and
    std restarted per key)."""

    params = ([100, 100_000, 400_000], ["slidewise", "polars"])
    param_names = ["keys", "library"]
    timeout = 600
    windows = (5, 10, 50)
    aggs = ("max", "mean", "std")

    def setup(self, keys, library):
        import polars as pl
        import pyarrow as pa
        import slidewise as sw

        k, v = _data(keys)
        ka, va = pa.array(k), pa.array(v)
        mine = lambda: sw.rolling_many(va, list(self.windows), list(self.aggs), keys=ka, min_periods=1)  # noqa: E731
        df = pl.DataFrame({"k": k, "v": v})
        exprs = [getattr(pl.col("v"), f"rolling_{a}")(w, min_samples=1).over("k").alias(f"{a}_{w}")
                 for a in self.aggs for w in self.windows]
        peer = lambda: df.select(exprs)  # noqa: E731
        got, want = mine(), peer()
        for a in self.aggs:
            for w in self.windows:
                tol = {"rtol": 0.0} if a == "max" else {"atol": drift(len(v), w * float(np.abs(v).max()))}
                check(f"KeyedRollingMany({keys}, {a}_{w})", got.column(f"{a}_{w}"), want[f"{a}_{w}"], "polars", **tol)
        self.run = mine if library == "slidewise" else peer

    def time_keyed_rolling_many(self, keys, library):
        self.run()


class KeyedTimeRolling:
    """Per-row time rolling within each key; rows 1 ms apart (so per key
    ~keys ms apart: 100 keys -> ~100 rows in a 10 s window)."""

    params = (["max", "sum"], [100, 100_000], ["10s"], ["slidewise", "polars", "pandas"])
    param_names = ["agg", "keys", "window", "library"]
    timeout = 600

    def setup(self, agg, keys, window, library):
        if library == "pandas" and keys > 1000:
            raise NotImplementedError("pandas is too slow here")  # asv skips
        import pyarrow as pa
        import slidewise as sw

        k, v = _data(keys)
        t = np.datetime64("2026-01-01", "ns") + (np.arange(len(k), dtype=np.int64) * 1_000_000).astype("timedelta64[ns]")
        ka, va, ta = pa.array(k), pa.array(v), pa.array(t)
        # each library's default: a value from the first row of the span on
        # (min_periods / min_samples 1)
        mine = lambda: sw.rolling(va, window, agg, keys=ka, timestamps=ta)  # noqa: E731
        if library == "pandas":
            import pandas as pd

            df = pd.DataFrame({"k": k, "t": t, "v": v})
            self.run = lambda: getattr(df.groupby("k", sort=False).rolling(window, on="t")["v"], agg)()
        else:
            import polars as pl

            df = pl.DataFrame({"k": k, "t": t, "v": v})
            f = getattr(pl.col("v"), f"rolling_{agg}_by")
            peer = lambda: df.select(f("t", window_size=window).over("k"))  # noqa: E731
            self.run = mine if library == "slidewise" else peer
        # rows are 1 ms apart: a 10 s span holds at most 10,000 rows
        _check_keyed(f"KeyedTimeRolling({agg}, {keys}, {window}, {library})", agg, v, 10_000, mine,
                     self.run if library != "slidewise" else peer, "polars" if library == "slidewise" else library)

    def time_keyed_time_rolling(self, agg, keys, window, library):
        self.run()


def _stream_case(kind, k, v, batch=100_000):
    """A keyed Stream of `kind` and its batches: count windows, in-order
    time windows, out-of-order time windows (rows shuffled within 1 s,
    lateness 2 s), and sessions in order and out of order."""
    import pyarrow as pa
    import slidewise as sw

    n = len(k)
    ts = np.arange(n, dtype=np.int64) * 1_000_000  # 1 ms apart
    if kind.endswith("late"):
        rng = np.random.default_rng(1)
        ts = ts[np.argsort(np.arange(n) + rng.integers(0, 1000, n), kind="stable")]
    t = pa.array(ts.astype("datetime64[ns]"))
    late = "2s" if kind.endswith("late") else None
    if kind == "count":
        make = lambda: sw.Stream([sw.Query("sum", 10, 1), sw.Query("sum", 100, 10)], value="v", key="k")  # noqa: E731
    elif kind.startswith("time"):
        make = lambda: sw.Stream(sw.Query("sum", "1s", "100ms"), value="v", time="t", key="k", lateness=late)  # noqa
    else:
        make = lambda: sw.Stream(sw.Query("sum", session="500ms"), value="v", time="t", key="k", lateness=late)  # noqa
    cols = lambda i: ({"k": pa.array(k[i:i + batch]), "v": pa.array(v[i:i + batch])} if kind == "count"  # noqa
                      else {"k": pa.array(k[i:i + batch]), "t": t[i:i + batch], "v": pa.array(v[i:i + batch])})
    return make, [cols(i) for i in range(0, n, batch)]


STREAM_KINDS = ["count", "time", "time_late", "session", "session_late"]


class KeyedStreamPush:
    """Rows per second through a keyed Stream (batches of 100k rows), in
    order and out of order (global watermark)."""

    params = ([100, 100_000], STREAM_KINDS)
    param_names = ["keys", "window"]
    timeout = 600

    def setup(self, keys, window):
        k, v = _data(keys, n=1_000_000)
        self.make, self.batches = _stream_case(window, k, v)

    def time_push(self, keys, window):
        s = self.make()
        for b in self.batches:
            s.push(b)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def rss_per_kind(kind, n_keys=100_000, rows_per_key=20):
    """Resident bytes per key a keyed Stream of `kind` (see _stream_case)
    holds after `rows_per_key` rows per key (RSS after the pushes minus
    before; the pushes' own buffers are freed by then), and its checkpoint
    bytes per key. Rows of one key are 100 s apart (1 ms per row, 100k
    keys): each key's windows hold a row or two, so this is the per-key
    overhead of each kind of state."""
    import gc

    rng = np.random.default_rng(0)
    k = np.tile(np.arange(n_keys, dtype=np.int64), rows_per_key)
    v = rng.normal(size=len(k))
    make, batches = _stream_case(kind, k, v, batch=100_000)
    gc.collect()
    s = make()
    before = _rss()
    for b in batches:
        s.push(b)
    gc.collect()
    return (_rss() - before) / n_keys, len(pickle_bytes(s)) / n_keys


def peak_rss_per_key(n_keys=1_000_000, window=10, rows_per_key=20):
    """Bytes of peak RSS growth per key: a keyed count-window sum stream over
    `n_keys` keys, each pushed `rows_per_key` rows (window full)."""
    import gc
    import resource

    import pyarrow as pa
    import slidewise as sw

    rng = np.random.default_rng(0)
    batch = 500_000
    k = np.tile(np.arange(n_keys, dtype=np.int64), rows_per_key)
    v = rng.normal(size=len(k))
    gc.collect()
    s = sw.Stream(sw.Query("sum", window, 1, name="s"), value="v", key="k")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # feed in batches: the transient per-batch buffers are small next to the state
    for i in range(0, len(k), batch):
        s.push({"k": pa.array(k[i:i + batch]), "v": pa.array(v[i:i + batch])})
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return (after - before) / n_keys, len(pickle_bytes(s)) / n_keys


def pickle_bytes(s):
    import pickle

    return pickle.dumps(s)


if __name__ == "__main__":
    import sys
    import time

    def best(f, reps=3):
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    if "--memory-kind" in sys.argv:
        kind = sys.argv[sys.argv.index("--memory-kind") + 1]
        rss, ckpt = rss_per_kind(kind)
        print(f"| 100k keys, keyed {kind} stream (sum), 20 rows/key, resident | {rss:.0f} | {ckpt:.0f} |")
        sys.exit(0)

    if "--memory" in sys.argv:
        # one case per process: ru_maxrss is a high-water mark
        w = int(sys.argv[sys.argv.index("--memory") + 1]) if len(sys.argv) > 2 else 10
        rss, ckpt = peak_rss_per_key(window=w, rows_per_key=2 * w)
        print(f"| 1M keys, count window {w} (sum, slide 1), {2 * w} rows/key | {rss:.0f} | {ckpt:.0f} |")
        sys.exit(0)

    import subprocess

    # --quick: 20,000 rows, no memory cases, no Stream push: the checks only
    quick = "--quick" in sys.argv
    # --rolling: the keyed rolling tables only
    rolling_only = "--rolling" in sys.argv
    if quick:
        N = 20_000
    import os

    threads = os.environ.get("SLIDEWISE_THREADS", "up to the CPUs, at most 4")
    print(machine(f"{threads} for keyed rolling (columns of 2^18 rows or more); Stream.push on the calling thread"))
    if not (quick or rolling_only):
        print()
        print("| memory case | peak RSS growth, bytes/key | checkpoint, bytes/key |")
        print("|---|---|---|")
        sys.stdout.flush()
        # a fresh process, so the peak is the state's, not an earlier benchmark's
        for w in (2, 10):
            subprocess.run([sys.executable, __file__, "--memory", str(w)], check=True)
        for kind in STREAM_KINDS:
            subprocess.run([sys.executable, __file__, "--memory-kind", kind], check=True)

    print()
    print(f"N = {N:,} rows; ratio = peer time / slidewise time (same run, best of 3; pandas 1 run); "
          "each case's result checked by its setup first")
    print()
    print("| case | slidewise ms | polars | pandas |")
    print("|---|---|---|---|")
    for b, windows in ((KeyedRolling(), [10, 1000]), (KeyedTimeRolling(), ["10s"])):
        kind = "rolling" if isinstance(b, KeyedRolling) else "time rolling"
        for agg in b.params[0]:
            for keys in b.params[1]:
                for window in windows:
                    t = {}
                    for lib in ["slidewise", "polars", "pandas"]:
                        try:
                            b.setup(agg, keys, window, lib)  # checks the result against the other side's
                        except NotImplementedError:
                            continue
                        t[lib] = best(b.run, 1 if lib == "pandas" else 3)
                    cell = {lib: f"{t[lib] / t['slidewise']:.1f}x" if lib in t else "-" for lib in ("polars", "pandas")}
                    print(f"| keyed {kind} {agg}, {keys:,} keys, window {window} | {t['slidewise']*1e3:.0f} "
                          f"| {cell['polars']} | {cell['pandas']} |")
                    sys.stdout.flush()
    b = KeyedRollingShaped()
    for case in b.params[0]:
        for keys in b.params[1]:
            for window in b.params[2]:
                t = {}
                for lib in b.params[3]:
                    b.setup(case, keys, window, lib)  # checks slidewise against polars
                    t[lib] = best(b.run, 3)
                print(f"| keyed rolling {case}, {keys:,} keys, window {window} | {t['slidewise']*1e3:.0f} "
                      f"| {t['polars'] / t['slidewise']:.1f}x | - |")
                sys.stdout.flush()
    b = KeyedRollingMany()
    for keys in b.params[0]:
        t = {}
        for lib in b.params[1]:
            b.setup(keys, lib)  # checks slidewise's nine columns against polars'
            t[lib] = best(b.run, 3)
        print(f"| keyed rolling_many max / mean / std x windows 5 / 10 / 50, {keys:,} keys | {t['slidewise']*1e3:.0f} "
              f"| {t['polars'] / t['slidewise']:.1f}x | - |")
        sys.stdout.flush()
    p = KeyedStreamPush()
    for keys in [] if quick or rolling_only else [100, 100_000]:
        for window in STREAM_KINDS:
            p.setup(keys, window)
            dt = best(lambda: p.time_push(keys, window), 2)
            print(f"| keyed Stream push, {keys:,} keys, {window} | {1_000_000 / dt / 1e6:.1f} M rows/s | | |")
