"""Per-row rolling on 10M float64: slidewise against bottleneck, polars and
pandas, all measured in this one run (best of `--repeat`), printed as a
markdown table of Mrows/s and ratios. Also checks the exactness claim of the
sum kernel against math.fsum on a stream mixing 1e8 and 1e-3 magnitudes.

    python benches/compare_rolling.py [--rows 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pyarrow as pa

import slidewise as sw


def best(f, repeat):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def peers(x, agg, w):
    import bottleneck as bn
    import polars as pl

    s = pl.Series(x)
    out = {
        "bottleneck": {"max": lambda: bn.move_max(x, w, min_count=1), "sum": lambda: bn.move_sum(x, w, min_count=1),
                       "mean": lambda: bn.move_mean(x, w, min_count=1),
                       "std": lambda: bn.move_std(x, w, min_count=1, ddof=1)}[agg],
        "polars": {"max": lambda: s.rolling_max(w, min_samples=1), "sum": lambda: s.rolling_sum(w, min_samples=1),
                   "mean": lambda: s.rolling_mean(w, min_samples=1),
                   "std": lambda: s.rolling_std(w, min_samples=1)}[agg],
    }
    if w <= 1024:
        import pandas as pd

        ps = pd.Series(x)
        out["pandas"] = {"max": lambda: ps.rolling(w, min_periods=1).max(),
                         "sum": lambda: ps.rolling(w, min_periods=1).sum(),
                         "mean": lambda: ps.rolling(w, min_periods=1).mean(),
                         "std": lambda: ps.rolling(w, min_periods=1).std()}[agg]
    return out


def exactness(rows: int, w: int = 1000, samples: int = 2000) -> float:
    """Worst relative error of sw.rolling(sum) against math.fsum of the same
    window, on values mixing 1e8 and 1e-3 (bottleneck's running sum for
    comparison is returned too)."""
    import bottleneck as bn

    rng = np.random.default_rng(7)
    big = rng.random(rows) < 0.01
    x = np.where(big, rng.uniform(1e8, 2e8, rows), rng.uniform(1e-3, 2e-3, rows))
    got = sw.rolling(x, w, "sum").to_numpy()
    bnv = bn.move_sum(x, w, min_count=1)
    worst_sw = worst_bn = 0.0
    for i in np.linspace(w, rows - 1, samples).astype(int):
        exact = math.fsum(x[i - w + 1:i + 1])
        worst_sw = max(worst_sw, abs(got[i] - exact) / abs(exact))
        worst_bn = max(worst_bn, abs(bnv[i] - exact) / abs(exact))
    return worst_sw, worst_bn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--windows", default="16,1024,65536,1048576")
    p.add_argument("--aggs", default="max,sum,mean,std")
    a = p.parse_args()
    x = np.random.default_rng(42).normal(size=a.rows).cumsum()
    arr = pa.array(x)
    print(f"{a.rows:,} float64 rows, best of {a.repeat}; Mrows/s (ratio = slidewise / peer)\n")
    print("| agg | window | slidewise | bottleneck | polars | pandas | vs bottleneck | vs polars | vs pandas |")
    print("|---|---|---|---|---|---|---|---|---|")
    for agg in a.aggs.split(","):
        for w in map(int, a.windows.split(",")):
            t_sw = best(lambda: sw.rolling(arr, w, agg), a.repeat)
            r = {k: a.rows / best(f, a.repeat) / 1e6 for k, f in peers(x, agg, w).items()}
            mine = a.rows / t_sw / 1e6
            cells = [f"{r[k]:.0f}" if k in r else "-" for k in ("bottleneck", "polars", "pandas")]
            ratios = [f"{mine / r[k]:.1f}x" if k in r else "-" for k in ("bottleneck", "polars", "pandas")]
            print(f"| {agg} | {w:,} | {mine:.0f} | " + " | ".join(cells + ratios) + " |", flush=True)
    e_sw, e_bn = exactness(a.rows)
    print(f"\nrolling sum, window 1000, values mixing 1e8 and 1e-3: worst relative error vs math.fsum "
          f"slidewise {e_sw:.1e}, bottleneck.move_sum {e_bn:.1e}")


if __name__ == "__main__":
    main()
