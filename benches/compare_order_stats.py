"""Rolling median / quantile / rank on 2M float64: slidewise against
bottleneck (move_median, move_rank), polars (rolling_median,
rolling_quantile) and pandas, all measured in this one run, printed as a
markdown table of Mrows/s and ratios under a line naming the CPU.

Before a case is timed every peer's result is checked against slidewise's
on the same data (a difference stops the script, naming the case). Timings
are interleaved (slidewise, then each peer, repeated) and the best of
`--repeat` is kept. `--kernels` adds the per-kernel table (sorted buffer,
Suomela's median_sort, Fenwick rank) behind the `auto` crossovers.

    python benches/compare_order_stats.py [--rows 2000000] [--repeat 5]
    python benches/compare_order_stats.py --quick     # the checks only
    SLIDEWISE_THREADS=1 python benches/compare_order_stats.py   # one thread
    python benches/compare_order_stats.py --missing 0.01   # 1% of the rows missing

``--missing F``: that share of the rows missing at random: Arrow nulls
for slidewise and polars, NaN for bottleneck and pandas (each skips them,
as slidewise skips nulls).

Median, quantile (and rank up to window 512, the sorted buffer) split a
column of >= 2^18 rows over min(CPUs, 4)
threads (`SLIDEWISE_THREADS` caps it); the header says which ran.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pyarrow as pa

import slidewise as sw
from slidewise import _slidewise

if __package__:
    from ._check import Mismatch, check, machine, timed, warm_up
else:
    from _check import Mismatch, check, machine, timed, warm_up

# pandas at every window is minutes; bottleneck's move_rank is O(window) a row.
PANDAS_MAX = 1000
RANK_MAX = 1000


def peers(x, agg, w, arr=None):
    """The peers' calls, min_count / min_samples / min_periods = 1 (slidewise's
    partial windows at the start): on ``x`` (NaN: missing), polars on
    ``arr`` (the same rows, nulls where ``x`` has NaN)."""
    import bottleneck as bn
    import pandas as pd
    import polars as pl

    s, ps = pl.Series(x if arr is None else arr), pd.Series(x)
    out = {}
    if agg == "median":
        out["bottleneck"] = lambda: bn.move_median(x, w, min_count=1)
        out["polars"] = lambda: s.rolling_median(w, min_samples=1)
        if w <= PANDAS_MAX:
            out["pandas"] = lambda: ps.rolling(w, min_periods=1).median()
    elif agg == "quantile":
        out["polars"] = lambda: s.rolling_quantile(0.9, "linear", w, min_samples=1)
        if w <= PANDAS_MAX:
            out["pandas"] = lambda: ps.rolling(w, min_periods=1).quantile(0.9)
    elif agg == "rank" and w <= RANK_MAX:
        out["bottleneck"] = lambda: bn.move_rank(x, w, min_count=1)
    return out


def ours(arr, agg, w, kernel="auto"):
    kw = (0.9, "linear") if agg == "quantile" else (None, None)
    return lambda: _slidewise.rolling_order(arr, [w], agg, kw[0], kw[1], None, kernel)[0]


def public(arr, agg, w):
    return sw.rolling(arr, w, agg, **({"q": 0.9} if agg == "quantile" else {}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--windows", default="10,100,1000,10000,100000")
    p.add_argument("--aggs", default="median,quantile,rank")
    p.add_argument("--kernels", action="store_true", help="also time each kernel (the auto crossovers)")
    p.add_argument("--quick", action="store_true", help="20,000 rows, one repeat: the checks only")
    p.add_argument("--missing", type=float, default=0.0, help="the share of rows missing (default 0)")
    a = p.parse_args()
    if a.quick:
        a.rows, a.repeat = 20_000, 1
    import polars as pl

    rng = np.random.default_rng(42)
    x = rng.normal(size=a.rows).cumsum()
    miss = rng.random(a.rows) < a.missing
    arr = pa.array(x, mask=miss if a.missing else None)
    x[miss] = np.nan
    cap = os.environ.get("SLIDEWISE_THREADS")
    used = f"at most {cap} (SLIDEWISE_THREADS)" if cap else f"min(CPUs, 4) = {min(os.cpu_count() or 1, 4)} for >= 2^18 rows"
    print(machine(used) + f"; polars thread pool: {pl.thread_pool_size()}; bottleneck: 1")
    print(f"{a.rows:,} float64 rows{f', {a.missing:.0%} missing' if a.missing else ''}, best of {a.repeat} interleaved; Mrows/s (ratio = slidewise / peer); "
          "each peer's result checked against slidewise's first; quantile is q=0.9, linear\n")
    print("| agg | window | slidewise | bottleneck | polars | pandas | vs bottleneck | vs polars | vs pandas |")
    print("|---|---|---|---|---|---|---|---|---|")
    names = ("bottleneck", "polars", "pandas")
    warm_up(lambda: public(arr, "median", 100))
    for agg in a.aggs.split(","):
        for w in map(int, a.windows.split(",")):
            if w > a.rows:
                continue
            runs = peers(x, agg, w, arr if a.missing else None)
            got = public(arr, agg, w)
            for name, f in runs.items():
                # bottleneck's median is (a + b) / 2 as ours; polars
                # interpolates a + (b - a) / 2: within an ulp or two.
                rtol = 0.0 if (name, agg) == ("bottleneck", "median") else 1e-12
                check(f"rolling {agg}, window {w:,}, {a.rows:,} rows", got, f(), name, rtol=rtol)
            del got
            t = timed({"slidewise": lambda: public(arr, agg, w), **runs}, a.repeat)
            r = {k: a.rows / v / 1e6 for k, v in t.items()}
            mine = r["slidewise"]
            cells = [f"{r[k]:.1f}" if k in r else "-" for k in names]
            ratios = [f"{mine / r[k]:.1f}x" if k in r else "-" for k in names]
            print(f"| {agg} | {w:,} | {mine:.1f} | " + " | ".join(cells + ratios) + " |", flush=True)
    if a.kernels:
        print("\nKernels (Mrows/s, same data; `auto` picks by window):\n")
        print("| agg | window | sorted_buffer | median_sort | fenwick |")
        print("|---|---|---|---|---|")
        ks = {"median": ["sorted_buffer", "median_sort"], "rank": ["sorted_buffer", "fenwick"]}
        for agg in ("median", "rank"):
            for w in map(int, a.windows.split(",")):
                fs = {k: ours(arr, agg, w, k) for k in ks[agg] if not (k == "sorted_buffer" and w > 10_000)}
                ref = fs[ks[agg][-1]]()
                for k, f in fs.items():
                    check(f"{agg} kernel {k}, window {w:,}", f(), ref, ks[agg][-1], rtol=0.0)
                t = timed(fs, a.repeat)
                cell = {k: f"{a.rows / v / 1e6:.1f}" for k, v in t.items()}
                print(f"| {agg} | {w:,} | " + " | ".join(cell.get(k, "-") for k in ("sorted_buffer", "median_sort", "fenwick")) + " |",
                      flush=True)


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        sys.exit(f"check failed, nothing timed for this case: {e}")
