"""The cost of each front end against a pyarrow call on the same data
(docs/pandas.md): rolling mean, window 100, float64. Every result is
checked equal to the pyarrow call's first; the calls are interleaved (one
round runs each once), best of REPS rounds.

    python benches/compare_frontends.py [rows]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

import slidewise as sw
import slidewise.pandas  # noqa: F401
if __package__:  # asv imports the benches package (and finds no benchmark here)
    from ._check import cpu_model
else:  # python benches/compare_frontends.py
    from _check import cpu_model

N = int(sys.argv[1]) if __name__ == "__main__" and len(sys.argv) > 1 else 1_000_000
W = 100
REPS = 15


def _np(r):
    if isinstance(r, (pa.Array, pa.ChunkedArray)):
        return r.to_numpy(zero_copy_only=False).astype(np.float64)
    return r.to_numpy().astype(np.float64)


def main():
    rng = np.random.default_rng(7)
    x = rng.normal(0, 1, N)
    xn = x.copy()
    xn[rng.random(N) < 0.01] = np.nan  # 1% NaN
    arr, arr_nan = pa.array(x), pa.array(xn)
    nulled = pa.array(xn, from_pandas=True)  # the same NaN as nulls: what nan="skip" must equal
    s, sn, ps = pd.Series(x, index=rng.permutation(N)), pd.Series(xn), pl.Series("v", x)
    base = sw.rolling(arr, W, "mean")
    base_skip = sw.rolling(nulled, W, "mean")
    cases = {
        "pyarrow in/out (reference)": (lambda: sw.rolling(arr, W, "mean"), base),
        "numpy in, pyarrow out": (lambda: sw.rolling(x, W, "mean"), base),
        "pandas Series in/out": (lambda: sw.rolling(s, W, "mean"), base),
        "polars Series in/out": (lambda: sw.rolling(ps, W, "mean"), base),
        "nan='skip', no NaN in the column": (lambda: sw.rolling(arr, W, "mean", nan="skip"), base),
        "pyarrow, 1% NaN as nulls (reference 2)": (lambda: sw.rolling(nulled, W, "mean"), base_skip),
        "nan='skip', 1% NaN": (lambda: sw.rolling(arr_nan, W, "mean", nan="skip"), base_skip),
        "pandas accessor s.sw.rolling, 1% NaN (min_periods=1)": (
            lambda: sn.sw.rolling(W, "mean", min_periods=1), base_skip),
        "pandas' own s.rolling().mean(), 1% NaN (min_periods=1)": (
            lambda: sn.rolling(W, min_periods=1).mean(), base_skip),
    }
    for label, (f, want) in cases.items():  # same answers before any timing
        np.testing.assert_allclose(_np(f()), _np(want), rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=label)
    best = {k: float("inf") for k in cases}
    for _ in range(REPS):
        for label, (f, _) in cases.items():
            t = time.perf_counter()
            f()
            best[label] = min(best[label], time.perf_counter() - t)
    print(f"{N:,} float64 rows, rolling mean w={W}; CPU: {cpu_model()}; best of {REPS}, interleaved")
    ref = best["pyarrow in/out (reference)"]
    ref2 = best["pyarrow, 1% NaN as nulls (reference 2)"]
    for label, t in best.items():
        r = ref2 if "1% NaN" in label and "reference 2" not in label else ref
        print(f"  {label:58s} {t * 1e3:8.2f} ms  {t / r:5.2f}x")
    print("  (ratios: against the pyarrow call; rows with 1% NaN against the pyarrow call over the same nulls)")


if __name__ == "__main__":
    main()
