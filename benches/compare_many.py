"""rolling_many: 64 random windows in [1, 32768] over 10M float64, "max"
(or --agg min / sum / mean / std / var): slidewise's rolling_many against 64
bottleneck.move_max (move_sum, ...) calls and 64 polars
rolling_max calls, all in this one run (best of `--repeat`), printed as a
markdown table with the ratio to bottleneck, under a line naming the CPU and
the threads slidewise may use. Also the floor: allocating and writing the
same 64 output columns with numpy (np.full). Before anything is timed, every
window's column is checked equal to bottleneck's and polars' on the same data;
a difference stops the script, naming the window.

    python benches/compare_many.py [--rows 10000000] [--windows 64] [--repeat 2]
    python benches/compare_many.py --quick     # tiny: the checks only, no timings worth reading

The output is windows x rows x 8 bytes (5 GB by default): one library's
result is kept alive at a time.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np
import pyarrow as pa

import slidewise as sw

if __package__:  # imported from the benches package (asv discovers every module)
    from ._check import Mismatch, check, machine, many_threads
    from .compare_rolling import tolerance
else:  # python benches/compare_many.py
    from _check import Mismatch, check, machine, many_threads
    from compare_rolling import tolerance


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
    ap.add_argument("--agg", default="max", choices=["max", "min", "sum", "mean", "std", "var"])
    ap.add_argument("--skip-polars", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="300,000 rows (x 64 windows: enough for the threaded pass), one repeat: the checks only")
    a = ap.parse_args()
    if a.quick:
        a.rows, a.repeat = 300_000, 1

    import bottleneck as bn
    import polars as pl

    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, a.rows).cumsum()
    ws = sorted(set(int(w) for w in rng.integers(1, a.max_window + 1, a.windows)))
    while len(ws) < a.windows:
        ws = sorted(set(ws) | {int(rng.integers(1, a.max_window + 1))})
    arr = pa.array(x)
    s = pl.Series(x)
    bn_name = {"max": "move_max", "min": "move_min", "sum": "move_sum", "mean": "move_mean", "std": "move_std",
               "var": "move_var"}[a.agg]
    kw = {"ddof": 1} if a.agg in ("std", "var") else {}

    def bn_f(v, w, min_count):
        return getattr(bn, bn_name)(v, w, min_count=min_count, **kw)

    gb = a.rows * len(ws) * 8 / 1e9
    threads = many_threads(a.rows, len(ws))
    if os.environ.get("SLIDEWISE_THREADS", "").strip().isdigit():
        threads = max(1, min(threads, int(os.environ["SLIDEWISE_THREADS"])))
    print(machine(f"{threads} (rolling_many's shared pass, every agg here: "
                  "min(4, CPUs, SLIDEWISE_THREADS) when rows x windows >= 2^24, else 1)") + f"; polars thread pool: {pl.thread_pool_size()}")
    peers = "bottleneck's" + ("" if a.skip_polars else " and polars'")
    print(f"{a.rows:,} float64 rows, {len(ws)} windows in [1, {a.max_window}], agg {a.agg}, "
          f"output {gb:.2f} GB, best of {a.repeat}; every column checked equal to {peers} first\n", flush=True)

    # Before timing: every window's column against bottleneck's and polars'
    # (min_count / min_samples = 1: the first w - 1 rows get the partial
    # window's value, as slidewise's default). max / min pick one of the
    # values, so equal, bit for bit (no NaN in the data).
    # sum / mean / std / var: within 1e-9 relative plus bottleneck's running
    # drift at the data's scale (as compare_rolling.tolerance), polars 1e-9.
    pl_f = getattr(s, f"rolling_{a.agg}")
    t = sw.rolling_many(arr, ws, a.agg)
    for w in ws:
        got = t.column(f"{a.agg}_{w}")
        case = f"rolling_many {a.agg}, window {w:,} (one of {len(ws)}), {a.rows:,} rows"
        check(case, got, bn_f(x, w, min_count=1), "bottleneck", **tolerance(a.agg, "bottleneck", x, w))
        if not a.skip_polars:
            check(case, got, pl_f(w, min_samples=1), "polars", **tolerance(a.agg, "polars", x, w))
    del t, got

    runs = {
        "slidewise rolling_many": lambda: sw.rolling_many(arr, ws, a.agg),
        f"bottleneck move_{a.agg} x{len(ws)}": lambda: [bn_f(x, w, min_count=1) for w in ws],
        "numpy: allocate + write the output only": lambda: [np.full(a.rows, 1.0) for _ in ws],
    }
    if not a.skip_polars:
        runs[f"polars rolling_{a.agg} x{len(ws)}"] = lambda: [pl_f(w, min_samples=1) for w in ws]
    times = {name: timed(f, a.repeat) for name, f in runs.items()}
    base = times[f"bottleneck move_{a.agg} x{len(ws)}"]
    print("| run | seconds | speed-up vs bottleneck |")
    print("|---|---:|---:|")
    for name, t in times.items():
        print(f"| {name} | {t:.3f} | {base / t:.1f}x |")


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        sys.exit(f"check failed, nothing timed: {e}")
