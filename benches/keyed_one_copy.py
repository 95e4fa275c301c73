"""Keyed rolling / rolling_many: time of the calls whose per-key results
are put back in input row order (rust/core/src/rolling/keyed.rs
`per_segment_many`), on 1M rows with 100k, 10k, 1k and 100 keys (10 to
10k rows per key; short segments: the put-back dominates). Run before and after a change to
the put-back with the same build flags; every output is checked against a
pandas groupby().rolling() oracle on the first call.

    python benches/keyed_one_copy.py [--repeat 7] [--keys 100000 100]

Prints the CPU, the load, the slidewise threads (keyed calls run on one
thread), and the best time of each case.
"""

import argparse
import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa

import slidewise as sw

N = 1_000_000
WINDOWS = [10, 100, 1000]
AGGS = ["sum", "max", "count"]


def _cpu():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def _oracle(k, v, w, agg):
    # pandas applies min_periods to count by rows, slidewise by values:
    # count compared with min_periods=0, slidewise's nulls there as 0
    s = pd.Series(v)
    r = s.groupby(k).rolling(w, min_periods=0 if agg == "count" else 1)
    got = getattr(r, agg)().droplevel(0).sort_index()
    return got.to_numpy(dtype=float)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--keys", type=int, nargs="*", default=[100_000, 10_000, 1_000, 100])
    args = ap.parse_args()
    print(f"CPU: {_cpu()}; load average {os.getloadavg()}; slidewise threads: 1 (keyed)")
    rng = np.random.default_rng(7)
    for n_keys in args.keys:
        k = rng.integers(0, n_keys, N).astype(np.int64)
        v = rng.normal(size=N)
        v[rng.random(N) < 0.05] = np.nan  # nulls, to exercise the validity put-back
        ka = pa.array(k)
        va = pa.array(v, from_pandas=True)
        cases = {
            "rolling_many 3 aggs x 3 windows": lambda: sw.rolling_many(va, WINDOWS, AGGS, keys=ka, min_periods=1),
            "rolling sum w=100": lambda: sw.rolling(va, 100, "sum", keys=ka, min_periods=1),
            "rolling_many median 3 windows": lambda: sw.rolling_many(va, WINDOWS, "median", keys=ka, min_periods=1),
        }
        # check first (outside the timing)
        t = cases["rolling_many 3 aggs x 3 windows"]()
        vn = pd.Series(v)
        for agg in AGGS:
            for w in (10, 1000):
                got = t.column(f"{agg}_{w}").to_numpy(zero_copy_only=False).astype(float)
                if agg == "count":
                    got = np.nan_to_num(got, nan=0.0)
                want = _oracle(k, vn, w, agg)
                np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)
        m = cases["rolling_many median 3 windows"]().column("median_100").to_numpy(zero_copy_only=False)
        np.testing.assert_allclose(m, _oracle(k, vn, 100, "median"), rtol=1e-12, equal_nan=True)
        for name, f in cases.items():
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                f()
                best = min(best, time.perf_counter() - t0)
            print(f"{N // 1000}k rows, {n_keys} keys | {name:34s} | best of {args.repeat}: {best * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
