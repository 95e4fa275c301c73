"""rolling_many: 64 random windows in [1, 32768] over 10M float64, "max":
slidewise's shared pass against 64 bottleneck.move_max calls and 64 polars
rolling_max calls, all in this one run (best of `--repeat`), printed as a
markdown table with the ratio to bottleneck. Also the floor: allocating and
writing the same 64 output columns with numpy (np.empty + fill), and a
bit-for-bit check of slidewise against bottleneck on a few windows.

    python benches/compare_many.py [--rows 10000000] [--windows 64] [--repeat 2]

The output is windows x rows x 8 bytes (5 GB by default): one library's
result is kept alive at a time.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import pyarrow as pa

import slidewise as sw


def timed(f, repeat):
    t = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        r = f()
        t = min(t, time.perf_counter() - t0)
        del r
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--windows", type=int, default=64)
    ap.add_argument("--max-window", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--agg", default="max", choices=["max", "min"])
    ap.add_argument("--skip-polars", action="store_true")
    a = ap.parse_args()

    import bottleneck as bn
    import polars as pl

    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, a.rows).cumsum()
    ws = sorted(set(int(w) for w in rng.integers(1, a.max_window + 1, a.windows)))
    while len(ws) < a.windows:
        ws = sorted(set(ws) | {int(rng.integers(1, a.max_window + 1))})
    arr = pa.array(x)
    s = pl.Series(x)
    bn_f = bn.move_max if a.agg == "max" else bn.move_min

    # Correctness first: a few columns bit for bit against bottleneck.
    t = sw.rolling_many(arr, ws, a.agg)
    for w in (ws[0], ws[len(ws) // 2], ws[-1]):
        got = t.column(f"{a.agg}_{w}").to_numpy()
        want = bn_f(x, w, min_count=1)
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), w
    del t

    runs = {
        "slidewise rolling_many": lambda: sw.rolling_many(arr, ws, a.agg),
        f"bottleneck move_{a.agg} x{len(ws)}": lambda: [bn_f(x, w, min_count=1) for w in ws],
        "numpy: allocate + write the output only": lambda: [np.full(a.rows, 1.0) for _ in ws],
    }
    if not a.skip_polars:
        f = s.rolling_max if a.agg == "max" else s.rolling_min
        runs[f"polars rolling_{a.agg} x{len(ws)}"] = lambda: [f(w, min_samples=1) for w in ws]
    times = {name: timed(f, a.repeat) for name, f in runs.items()}
    base = times[f"bottleneck move_{a.agg} x{len(ws)}"]
    gb = a.rows * len(ws) * 8 / 1e9
    print(f"\n{a.rows:,} float64 rows, {len(ws)} windows in [1, {a.max_window}], agg {a.agg}, "
          f"output {gb:.2f} GB, best of {a.repeat}\n")
    print("| run | seconds | speed-up vs bottleneck |")
    print("|---|---:|---:|")
    for name, t in times.items():
        print(f"| {name} | {t:.3f} | {base / t:.1f}x |")


if __name__ == "__main__":
    main()
