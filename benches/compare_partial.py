"""Pane reduction against numpy in one run: a tumbling count window
(range = slide = pane) over one 4M-row float64 batch makes slidewise's window
operator reduce each pane into a partial (SIMD, run-time dispatch) and emit
it; numpy reduces the same slices with np.add.reduceat / np.maximum.reduceat.
Prints a markdown table of Mrows/s and the ratio (best of --repeat) under a
line naming the CPU. Before each case is timed, slidewise's panes are checked
against numpy's on the same data; a difference stops the script, naming the
case.

    python benches/compare_partial.py [--rows 4000000] [--repeat 5]
    python benches/compare_partial.py --quick     # tiny: the checks only, no timings worth reading
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pyarrow as pa

import slidewise as sw

if __package__:  # imported from the benches package (asv discovers every module)
    from ._check import Mismatch, check, machine
else:  # python benches/compare_partial.py
    from _check import Mismatch, check, machine


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
    ap.add_argument("--quick", action="store_true", help="100,000 rows, one repeat: the checks only")
    a = ap.parse_args()
    if a.quick:
        a.rows, a.repeat = 100_000, 1
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, a.rows)
    batch = pa.record_batch({"v": pa.array(x)})
    print(machine("1 (Stream.push runs on the calling thread)"))
    print(f"{a.rows:,} float64 rows, best of {a.repeat}; slidewise's panes checked against numpy's first\n")
    print("| agg | pane | slidewise Mrows/s | numpy reduceat Mrows/s | slidewise / numpy |")
    print("|---|---:|---:|---:|---:|")
    for agg, f in (("sum", np.add.reduceat), ("max", np.maximum.reduceat)):
        for pane in (8, 64, 1024, 65536):
            q = [sw.Query(agg, pane, pane)]
            idx = np.arange(0, a.rows, pane)
            # push() emits the panes the batch closes: the full ones. The
            # last, partial pane (rows % pane rows) waits for flush(), so
            # numpy's first rows // pane panes are the overlap compared.
            got = sw.Stream(q).push(batch)[q[0].name].column("value")
            want = f(x, idx)[: a.rows // pane]
            # max picks one of the values: equal. A sum's rounding error is
            # relative to the sum of its terms' magnitudes, not to the sum,
            # which cancels towards 0 for these N(0, 1) values; the two sum in
            # different orders, so 1e-9 of the pane's sum of |x| on top.
            tol = {"rtol": 0.0} if agg == "max" else {
                "rtol": 1e-9, "atol": 1e-9 * np.add.reduceat(np.abs(x), idx)[: a.rows // pane]}
            check(f"tumbling {agg}, pane {pane:,}, {a.rows:,} rows", got, want, "numpy reduceat", **tol)
            ts = best(lambda: sw.Stream(q).push(batch), a.repeat)
            tn = best(lambda: f(x, idx), a.repeat)
            print(f"| {agg} | {pane} | {a.rows / ts / 1e6:.0f} | {a.rows / tn / 1e6:.0f} | {tn / ts:.2f}x |", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        sys.exit(f"check failed, nothing timed for this case: {e}")
