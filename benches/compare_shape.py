"""Window shape: the cost of closed= / center= / step= against the plain
call, and pandas with the same keywords, in one run (docs/DESIGN.md
"Window shape"). Each slidewise result is checked equal to pandas' first.

    python benches/compare_shape.py [rows]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa

import slidewise as sw
if __package__:  # asv imports the benches package (and finds no benchmark here)
    from ._check import check, cpu_model, drift
else:  # python benches/compare_shape.py
    from _check import check, cpu_model, drift

N = int(sys.argv[1]) if __name__ == "__main__" and len(sys.argv) > 1 else 10_000_000
W = 1024
REPS = 5

CASES = [
    # (label, time window?, keywords)
    ("plain", False, {}),
    ("closed='left'", False, {"closed": "left"}),
    ("closed='both'", False, {"closed": "both"}),
    ("closed='neither'", False, {"closed": "neither"}),
    ("center=True", False, {"center": True}),
    ("center=True, closed='left'", False, {"center": True, "closed": "left"}),
    ("step=4", False, {"step": 4}),
    ("step=100000", False, {"step": 100_000}),
    ("time plain", True, {}),
    ("time closed='both'", True, {"closed": "both"}),
    ("time closed='left'", True, {"closed": "left"}),
    ("time center=True", True, {"center": True}),
]


def main():
    rng = np.random.default_rng(42)
    x = rng.normal(1e3, 50.0, N)
    arr = pa.array(x)
    ts = np.cumsum(rng.integers(0, 3, N)).astype("datetime64[s]").astype("datetime64[ns]")
    tarr = pa.array(ts)
    s, df = pd.Series(x), pd.DataFrame({"t": ts, "x": x})
    print(f"{N:,} float64 rows, window {W} (rows, or seconds at 0-2 s apart); {cpu_model()}; best of {REPS}")
    for agg in ("sum", "max", "std"):
        calls = {}
        for label, tw, kw in CASES:
            if tw:
                mine = lambda kw=kw: sw.rolling(arr, f"{W}s", agg, timestamps=tarr, min_periods=1, **kw)  # noqa: E731
                theirs = lambda kw=kw: getattr(df.rolling(f"{W}s", on="t", min_periods=1, **kw).x, agg)()  # noqa: E731
            else:
                mine = lambda kw=kw: sw.rolling(arr, W, agg, min_periods=1, **kw)  # noqa: E731
                theirs = lambda kw=kw: getattr(s.rolling(W, min_periods=1, **kw), agg)()  # noqa: E731
            check(f"{agg} {label}", mine(), theirs(), "pandas", rtol=0.0 if agg == "max" else 1e-9,
                  atol=0.0 if agg == "max" else drift(N, W * 1e3 * (1e3 if agg == "std" else 1)),
                  squared=agg == "std")
            calls[label] = (mine, theirs)
        # interleaved: every case once per round, best per case
        times = {k: [np.inf, np.inf] for k in calls}
        for _ in range(REPS):
            for k, (mine, theirs) in calls.items():
                times[k][0] = min(times[k][0], best_once(mine))
                times[k][1] = min(times[k][1], best_once(theirs))
        base = {False: times["plain"][0], True: times["time plain"][0]}
        print(f"\n| {agg} | slidewise ms | vs plain | pandas ms | pandas / slidewise |\n|---|---|---|---|---|")
        for label, tw, _ in CASES:
            m, p = times[label]
            print(f"| {label} | {m * 1e3:.1f} | {m / base[tw]:.2f}x | {p * 1e3:.0f} | {p / m:.1f}x |")


def best_once(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
