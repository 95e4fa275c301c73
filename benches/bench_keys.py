"""asv: keys. Keyed per-row rolling (slidewise vs pandas groupby().rolling()
and polars `rolling_*(w).over(k)`), keyed time rolling (vs pandas
`groupby().rolling("10s", on=t)` and polars `rolling_*_by(t, "10s").over(k)`)
and keyed Stream push throughput, each peer on the same data in the same run
so ratios are comparable; peak memory of 1M keys with small windows (bytes
per key).

Run one-off (outside asv) with `python benches/bench_keys.py`: prints the
ratios measured in one run (peer time / slidewise time: > 1 means slidewise
is faster), checks that slidewise and polars agree on every case timed, and
measures the bytes per key in a fresh subprocess (`--memory` alone).
"""

import numpy as np

N = 2_000_000


def _data(n_keys, n=N, seed=42):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_keys, n).astype(np.int64), rng.normal(0.0, 1.0, n)


class KeyedRolling:
    params = (["max", "sum"], [100, 100_000], [10, 1000], ["slidewise", "polars", "pandas"])
    param_names = ["agg", "keys", "window", "library"]
    timeout = 600

    def setup(self, agg, keys, window, library):
        k, v = _data(keys)
        if library == "slidewise":
            import pyarrow as pa
            import slidewise as sw

            ka, va = pa.array(k), pa.array(v)
            self.run = lambda: sw.rolling(va, window, agg, keys=ka, min_periods=1)
        elif library == "polars":
            import polars as pl

            df = pl.DataFrame({"k": k, "v": v})
            f = getattr(pl.col("v"), f"rolling_{agg}")
            self.run = lambda: df.select(f(window, min_samples=1).over("k"))
        else:
            if keys > 1000 or window > 10:
                raise NotImplementedError("pandas is too slow here")  # asv skips
            import pandas as pd

            df = pd.DataFrame({"k": k, "v": v})
            self.run = lambda: getattr(df.groupby("k", sort=False)["v"].rolling(window, min_periods=1), agg)()

    def time_keyed_rolling(self, agg, keys, window, library):
        self.run()


class KeyedTimeRolling:
    """Per-row time rolling within each key; rows 1 ms apart (so per key
    ~keys ms apart: 100 keys -> ~100 rows in a 10 s window)."""

    params = (["max", "sum"], [100, 100_000], ["10s"], ["slidewise", "polars", "pandas"])
    param_names = ["agg", "keys", "window", "library"]
    timeout = 600

    def setup(self, agg, keys, window, library):
        k, v = _data(keys)
        t = np.datetime64("2026-01-01", "ns") + (np.arange(len(k), dtype=np.int64) * 1_000_000).astype("timedelta64[ns]")
        if library == "slidewise":
            import pyarrow as pa
            import slidewise as sw

            ka, va, ta = pa.array(k), pa.array(v), pa.array(t)
            self.run = lambda: sw.rolling(va, window, agg, keys=ka, timestamps=ta)
        elif library == "polars":
            import polars as pl

            df = pl.DataFrame({"k": k, "t": t, "v": v})
            f = getattr(pl.col("v"), f"rolling_{agg}_by")
            self.run = lambda: df.select(f("t", window_size=window).over("k"))
        else:
            if keys > 1000:
                raise NotImplementedError("pandas is too slow here")  # asv skips
            import pandas as pd

            df = pd.DataFrame({"k": k, "t": t, "v": v})
            self.run = lambda: getattr(df.groupby("k", sort=False).rolling(window, on="t")["v"], agg)()

    def time_keyed_time_rolling(self, agg, keys, window, library):
        self.run()


class KeyedStreamPush:
    """Rows per second through a keyed Stream (batches of 100k rows)."""

    params = ([100, 100_000], ["count", "time"])
    param_names = ["keys", "window"]
    timeout = 600

    def setup(self, keys, window):
        import pyarrow as pa
        import slidewise as sw

        k, v = _data(keys, n=1_000_000)
        if window == "count":
            self.make = lambda: sw.Stream([sw.Query("sum", 10, 1), sw.Query("sum", 100, 10)], value="v", key="k")
            self.batches = [{"k": pa.array(k[i:i + 100_000]), "v": pa.array(v[i:i + 100_000])}
                            for i in range(0, len(k), 100_000)]
        else:
            ts = np.arange(len(k), dtype=np.int64) * 1_000_000  # 1 ms apart
            t = pa.array(ts.astype("datetime64[ns]"))
            self.make = lambda: sw.Stream(sw.Query("sum", "1s", "100ms"), value="v", time="t", key="k")
            self.batches = [{"k": pa.array(k[i:i + 100_000]), "t": t[i:i + 100_000], "v": pa.array(v[i:i + 100_000])}
                            for i in range(0, len(k), 100_000)]

    def time_push(self, keys, window):
        s = self.make()
        for b in self.batches:
            s.push(b)


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

    if "--memory" in sys.argv:
        # one case per process: ru_maxrss is a high-water mark
        w = int(sys.argv[sys.argv.index("--memory") + 1]) if len(sys.argv) > 2 else 10
        rss, ckpt = peak_rss_per_key(window=w, rows_per_key=2 * w)
        print(f"| 1M keys, count window {w} (sum, slide 1), {2 * w} rows/key | {rss:.0f} | {ckpt:.0f} |")
        sys.exit(0)

    import subprocess

    import pyarrow as pa

    print("| memory case | peak RSS growth, bytes/key | checkpoint, bytes/key |")
    print("|---|---|---|")
    sys.stdout.flush()
    # a fresh process, so the peak is the state's, not an earlier benchmark's
    for w in (2, 10):
        subprocess.run([sys.executable, __file__, "--memory", str(w)], check=True)

    def as_np(r):
        if isinstance(r, (pa.Array, pa.ChunkedArray)):
            return np.asarray(r.to_numpy(zero_copy_only=False), dtype=float)
        return r.to_series().to_numpy().astype(float)

    print()
    print(f"N = {N:,} rows; ratio = peer time / slidewise time (same run, best of 3; pandas 1 run)")
    print()
    print("| case | slidewise ms | polars | pandas |")
    print("|---|---|---|---|")
    for b, windows in ((KeyedRolling(), [10, 1000]), (KeyedTimeRolling(), ["10s"])):
        kind = "rolling" if isinstance(b, KeyedRolling) else "time rolling"
        for agg in ["max", "sum"]:
            for keys in [100, 100_000]:
                for window in windows:
                    t, res = {}, {}
                    for lib in ["slidewise", "polars", "pandas"]:
                        try:
                            b.setup(agg, keys, window, lib)
                        except NotImplementedError:
                            continue
                        t[lib] = best(b.run, 1 if lib == "pandas" else 3)
                        if lib != "pandas":
                            res[lib] = as_np(b.run())
                    # the numbers compare equal work: same answers as polars
                    ok = np.allclose(res["slidewise"], res["polars"], rtol=1e-9, atol=1e-9, equal_nan=True)
                    assert ok, (kind, agg, keys, window)
                    cell = {lib: f"{t[lib] / t['slidewise']:.1f}x" if lib in t else "-" for lib in ("polars", "pandas")}
                    print(f"| keyed {kind} {agg}, {keys:,} keys, window {window} | {t['slidewise']*1e3:.0f} "
                          f"| {cell['polars']} | {cell['pandas']} |")
                    sys.stdout.flush()
    p = KeyedStreamPush()
    for keys in [100, 100_000]:
        for window in ["count", "time"]:
            p.setup(keys, window)
            dt = best(lambda: p.time_push(keys, window), 2)
            print(f"| keyed Stream push, {keys:,} keys, {window} windows | {1_000_000 / dt / 1e6:.1f} M rows/s | | |")
