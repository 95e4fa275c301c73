"""Pane reduction against numpy in one run: a tumbling count window
(range = slide = pane) over one 4M-row float64 batch makes slidewise's window
operator reduce each pane into a partial (SIMD, run-time dispatch) and emit
it; numpy reduces the same slices with np.add.reduceat / np.maximum.reduceat.
Prints a markdown table of Mrows/s and the ratio (best of --repeat); checks
the results agree first.

    python benches/compare_partial.py [--rows 4000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, a.rows)
    batch = pa.record_batch({"v": pa.array(x)})
    print(f"\n{a.rows:,} float64 rows, best of {a.repeat}\n")
    print("| agg | pane | slidewise Mrows/s | numpy reduceat Mrows/s | slidewise / numpy |")
    print("|---|---:|---:|---:|---:|")
    for agg, f in (("sum", np.add.reduceat), ("max", np.maximum.reduceat)):
        for pane in (8, 64, 1024, 65536):
            q = [sw.Query(agg, pane, pane)]
            idx = np.arange(0, a.rows, pane)
            got = sw.Stream(q).push(batch)[q[0].name].column("value").to_numpy()
            want = f(x, idx)[: len(got)]
            assert np.allclose(got, want, rtol=1e-12, atol=1e-9), (agg, pane)
            ts = best(lambda: sw.Stream(q).push(batch), a.repeat)
            tn = best(lambda: f(x, idx), a.repeat)
            print(f"| {agg} | {pane} | {a.rows / ts / 1e6:.0f} | {a.rows / tn / 1e6:.0f} | {tn / ts:.2f}x |")


if __name__ == "__main__":
    main()
