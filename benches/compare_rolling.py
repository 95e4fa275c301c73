"""Per-row rolling on 10M float64: slidewise against bottleneck, polars and
pandas, all measured in this one run (best of `--repeat`, the calls
interleaved), printed as a
markdown table of Mrows/s and ratios under a line naming the CPU. Before
each case is timed, every peer's result is checked against slidewise's on
the same data; a difference stops the script, naming the case. Also checks
the exactness claim of the sum kernel against math.fsum on a stream mixing
1e8 and 1e-3 magnitudes.

    python benches/compare_rolling.py [--rows 10000000] [--repeat 7] [--threads 2]
    python benches/compare_rolling.py --quick      # tiny: the checks only, no timings worth reading
    python benches/compare_rolling.py --missing    # columns with missing values (issue 36)

``--missing`` times each aggregation on the same random walk with 1% and
10% of its rows missing at random and with runs of 10,000 missing rows (a
sensor down; 1% of the rows), each three ways: Arrow nulls, NaN with
``nan="skip"`` and NaN with ``nan="propagate"``, beside the clean column in
the same rounds (and the clean column with ``nan="skip"``, the pandas
accessor's default); bottleneck gets the data with NaN (its missing value),
polars the nulls. Checked first: nulls against bottleneck and polars,
``nan="skip"`` against the nulls' result (bit for bit but mean / var / std,
whose jobs without NaN run unmasked: to 1e-13), ``nan="skip"`` on the clean
column against ``nan="propagate"`` bit for bit, ``nan="propagate"``
against bottleneck's result with NaN wherever the window holds a NaN
(max / sum / mean / var / std; min is NaN only where every value is; count
counts NaN as a value).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import pyarrow as pa

import slidewise as sw

if __package__:  # imported from the benches package (asv discovers every module)
    from ._check import Mismatch, check, drift, ends_want, machine, timed, warm_up
else:  # python benches/compare_rolling.py
    from _check import Mismatch, check, drift, ends_want, machine, timed, warm_up

AGGS = ("max", "min", "sum", "mean", "std", "var", "std_pop")
# --missing also takes these (--aggs): range against max - min of each peer,
# median against bottleneck's move_median and polars' rolling_median, count
# against each peer's rolling sum of the valid rows' ones (neither has a
# rolling count); first / last (Spark's: a null row is a row) and their
# ignore_nulls forms against numpy's gather of the row each window picks,
# neither peer has them.
ENDS = ("first", "last", "first_ignore_nulls", "last_ignore_nulls")
MISSING_AGGS = AGGS + ("range", "median", "count") + ENDS


def peers(x, agg, w):
    """The peers' calls for one case. min_count / min_samples / min_periods = 1:
    the first w - 1 rows get the partial window's value, as slidewise's
    default (Spark's ROWS frame); no NaN in the data, so pandas' and
    bottleneck's NaN-as-missing does not come in. std / var are the sample
    ones (ddof=1) everywhere, std_pop the population std (ddof=0); over one
    value the sample std is null in slidewise and polars, NaN in bottleneck
    and pandas."""
    import bottleneck as bn
    import polars as pl

    s = pl.Series(x)
    out = {
        "bottleneck": {"max": lambda: bn.move_max(x, w, min_count=1), "min": lambda: bn.move_min(x, w, min_count=1),
                       "sum": lambda: bn.move_sum(x, w, min_count=1),
                       "mean": lambda: bn.move_mean(x, w, min_count=1),
                       "std": lambda: bn.move_std(x, w, min_count=1, ddof=1),
                       "var": lambda: bn.move_var(x, w, min_count=1, ddof=1),
                       "std_pop": lambda: bn.move_std(x, w, min_count=1, ddof=0)}[agg],
        "polars": {"max": lambda: s.rolling_max(w, min_samples=1), "min": lambda: s.rolling_min(w, min_samples=1),
                   "sum": lambda: s.rolling_sum(w, min_samples=1),
                   "mean": lambda: s.rolling_mean(w, min_samples=1),
                   "std": lambda: s.rolling_std(w, min_samples=1),
                   "var": lambda: s.rolling_var(w, min_samples=1),
                   "std_pop": lambda: s.rolling_std(w, min_samples=1, ddof=0)}[agg],
    }
    if w <= 1024:
        import pandas as pd

        ps = pd.Series(x)
        out["pandas"] = {"max": lambda: ps.rolling(w, min_periods=1).max(),
                         "min": lambda: ps.rolling(w, min_periods=1).min(),
                         "sum": lambda: ps.rolling(w, min_periods=1).sum(),
                         "mean": lambda: ps.rolling(w, min_periods=1).mean(),
                         "std": lambda: ps.rolling(w, min_periods=1).std(),
                         "var": lambda: ps.rolling(w, min_periods=1).var(),
                         "std_pop": lambda: ps.rolling(w, min_periods=1).std(ddof=0)}[agg]
    return out


# Peers whose result is a running update, row by row: they keep the rounding
# error of every row before, relative to the largest values seen rather than
# to the window's result. On this data at 10M rows, bottleneck's move_sum and
# move_mean are up to 1.3e-7 relative off slidewise's (exact) sum where a
# window's sum cancels to 0.003, its move_std 1.7e-5 and pandas' std 5.3e-5
# (values up to 4,700, window stds down to 0.24): all below 1/20 of drift().
# polars' and pandas' sums and means are compensated and stay within 2e-13
# relative of slidewise's, polars' std within 2e-12.
RUNNING = {"bottleneck": {"sum", "mean", "std", "var", "std_pop"}, "pandas": {"std", "var", "std_pop"}}


def tolerance(agg, peer, x, w):
    """check() keywords for one peer's result: max picks one of the values,
    so equal (bit for bit); otherwise 1e-9 relative, and for a running update
    drift() at the data's scale on top: window x max|x| for a sum, max|x| for
    a mean, max x**2 for a std, compared through its variance (the quantity
    the update carries)."""
    if agg in ("max", "min"):
        return {"rtol": 0.0}
    if agg not in RUNNING.get(peer, ()):
        return {"rtol": 1e-9}
    m = float(np.abs(x).max())
    scale = {"sum": min(w, len(x)) * m, "mean": m, "std": m * m, "var": m * m, "std_pop": m * m}[agg]
    return {"rtol": 1e-9, "atol": drift(len(x), scale), "squared": agg.startswith("std")}


def exact_moments(samples: int = 300):
    """Worst relative error of sw.rolling mean / var / std against exact
    per-window values (math.fsum; statistics.variance on Fractions), next to
    bottleneck's, on 1e9 plus unit noise and on values mixing 1e8 and 1e-3
    (runs of large values between stretches of small ones), 200,000 rows,
    windows 16 and 4,096; full windows only (bottleneck's min_count=w)."""
    import statistics
    from fractions import Fraction

    import bottleneck as bn

    rows = 200_000
    rng = np.random.default_rng(11)
    big = (rng.random(rows) < 0.01) | ((np.arange(rows) // 500) % 7 == 3)
    sets = {"1e9 + N(0,1)": 1e9 + rng.normal(0.0, 1.0, rows),
            "1e8 and 1e-3 mixed": np.where(big, rng.uniform(1e8, 2e8, rows), rng.uniform(1e-3, 2e-3, rows))}
    out = []
    for name, x in sets.items():
        for w in (16, 4096):
            got = {a: sw.rolling(x, w, a).to_numpy(zero_copy_only=False) for a in ("mean", "var", "std")}
            peer = {"mean": bn.move_mean(x, w), "var": bn.move_var(x, w, ddof=1), "std": bn.move_std(x, w, ddof=1)}
            worst = {(a, who): 0.0 for a in got for who in ("slidewise", "bottleneck")}
            for i in np.linspace(w - 1, rows - 1, samples if w < 1000 else samples // 10).astype(int):
                xs = x[i - w + 1:i + 1]
                v = float(statistics.variance([Fraction(float(t)) for t in xs]))
                exact = {"mean": math.fsum(xs) / w, "var": v, "std": math.sqrt(v)}
                for a in got:
                    for who, r in (("slidewise", got[a]), ("bottleneck", peer[a])):
                        worst[a, who] = max(worst[a, who], abs(r[i] - exact[a]) / abs(exact[a]))
            out.append((name, w, worst))
    return out


def exactness(rows: int, w: int = 1000, samples: int = 2000, huge: bool = False) -> float:
    """Worst relative error of sw.rolling(sum) against math.fsum of the same
    window, on values mixing 1e8 and 1e-3, or (``huge``) a random walk of
    tenths with a few clusters of values near ±1e300, whose windows after
    them hold small sums again (bottleneck's running sum for comparison is
    returned too)."""
    import bottleneck as bn

    rng = np.random.default_rng(7)
    if huge:
        x = rng.integers(-4, 5, rows).cumsum() / 10.0
        for at in rng.integers(0, rows - 64, 5):
            x[at:at + 64:9] = np.where(rng.random(8) < 0.5, -1e300, 1e300) * (1 + rng.random(8))
    else:
        big = rng.random(rows) < 0.01
        x = np.where(big, rng.uniform(1e8, 2e8, rows), rng.uniform(1e-3, 2e-3, rows))
    got = sw.rolling(x, w, "sum").to_numpy()
    bnv = bn.move_sum(x, w, min_count=1)
    worst_sw = worst_bn = 0.0
    for i in np.linspace(w, rows - 1, samples).astype(int):
        exact = math.fsum(x[i - w + 1:i + 1])
        worst_sw = max(worst_sw, abs(got[i] - exact) / (abs(exact) or 1.0))
        worst_bn = max(worst_bn, abs(bnv[i] - exact) / (abs(exact) or 1.0))
    return worst_sw, worst_bn


MISSING = ("1%", "10%", "runs of 10,000")


def holes(n: int, kind: str, rng) -> np.ndarray:
    """Which of `n` rows are missing: at random (1%, 10%), or runs of
    10,000 rows starting at random, 1% of the rows in all."""
    if kind.endswith("%"):
        return rng.random(n) < float(kind[:-1]) / 100
    miss = np.zeros(n, dtype=bool)
    for a in rng.integers(0, max(n - 10_000, 1), max(n // 1_000_000, 1)):
        miss[a:a + 10_000] = True
    return miss


def valid_in_window(ok: np.ndarray, w: int) -> np.ndarray:
    """How many rows of each row's window (the row and the w - 1 before)
    are `ok`."""
    c = np.concatenate([[0], np.cumsum(ok)])
    i = np.arange(len(ok))
    return c[i + 1] - c[np.maximum(i + 1 - w, 0)]


def missing_main(a, x) -> None:
    """The --missing table (module doc)."""
    import bottleneck as bn
    import polars as pl

    rng = np.random.default_rng(7)
    clean = pa.array(x)
    print("| agg | window | missing | clean Mrows/s | nulls / clean | skip / clean | propagate / clean "
          "| skip, no NaN / clean | nulls vs bottleneck | skip vs bottleneck | propagate vs bottleneck | nulls vs polars |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in MISSING:
        miss = holes(len(x), kind, rng)
        xn = np.where(miss, np.nan, x)
        nulls = pa.array(x, mask=miss)
        withnan = pa.array(xn)  # NaN, no nulls
        s = pl.Series(nulls)
        ok = (~miss).astype(np.float64)
        for agg in a.aggs.split(","):
            for w in map(int, a.windows.split(",")):
                if w > len(x):
                    continue
                if agg in ENDS:
                    ends_row(agg, w, kind, miss, x, clean, nulls, withnan, a.repeat)
                    continue
                ddof = 0 if agg == "std_pop" else 1
                bnf = {"max": lambda: bn.move_max(xn, w, min_count=1), "min": lambda: bn.move_min(xn, w, min_count=1),
                       "sum": lambda: bn.move_sum(xn, w, min_count=1), "mean": lambda: bn.move_mean(xn, w, min_count=1),
                       "std": lambda: bn.move_std(xn, w, min_count=1, ddof=ddof), "std_pop": lambda: bn.move_std(xn, w, min_count=1, ddof=ddof),
                       "var": lambda: bn.move_var(xn, w, min_count=1, ddof=ddof),
                       "range": lambda: bn.move_max(xn, w, min_count=1) - bn.move_min(xn, w, min_count=1),
                       "median": lambda: bn.move_median(xn, w, min_count=1),
                       # bottleneck and polars have no rolling count: the sum of the valid rows' ones
                       "count": lambda: bn.move_sum(ok, w, min_count=1)}[agg]
                plf = {"max": lambda: s.rolling_max(w, min_samples=1), "min": lambda: s.rolling_min(w, min_samples=1),
                       "sum": lambda: s.rolling_sum(w, min_samples=1), "mean": lambda: s.rolling_mean(w, min_samples=1),
                       "std": lambda: s.rolling_std(w, min_samples=1), "std_pop": lambda: s.rolling_std(w, min_samples=1, ddof=0),
                       "var": lambda: s.rolling_var(w, min_samples=1),
                       "range": lambda: s.rolling_max(w, min_samples=1) - s.rolling_min(w, min_samples=1),
                       "median": lambda: s.rolling_median(w, min_samples=1),
                       "count": lambda: s.is_not_null().cast(pl.Float64).rolling_sum(w, min_samples=1)}[agg]
                calls = {
                    "clean": lambda: sw.rolling(clean, w, agg),
                    "nulls": lambda: sw.rolling(nulls, w, agg),
                    "skip": lambda: sw.rolling(withnan, w, agg, nan="skip"),
                    "propagate": lambda: sw.rolling(withnan, w, agg, nan="propagate"),
                    # The pandas accessor's default on a column without NaN.
                    "skip0": lambda: sw.rolling(clean, w, agg, nan="skip"),
                    "bottleneck": bnf,
                    "polars": plf,
                }
                case = f"rolling {agg}, window {w:,}, {kind} missing"
                got, want = calls["nulls"](), bnf()
                if agg in ("std", "var", "std_pop"):
                    # bottleneck's running update carries a residue from the
                    # rows before: over one value it divides it by n - ddof = 0
                    # (inf, where slidewise is null), and after a long gap a
                    # window of a few values is off (1e-3 relative on the std
                    # of 2 values, slidewise equal to statistics.variance on
                    # Fractions). There, polars' (compensated) values.
                    few = valid_in_window(~miss, w) < 32
                    want = np.where(few, plf().to_numpy(), want)
                exact = agg in ("range", "count")
                tol = {"rtol": 0.0} if exact else tolerance(agg, "bottleneck", np.nan_to_num(xn), w)
                if agg in ("std", "var", "std_pop"):
                    # After a gap a window holds few values, whose variance
                    # is small beside the residue bottleneck's running update
                    # carries (seen: 8e-9 relative on the std of 3 values,
                    # slidewise equal to statistics.variance on Fractions).
                    tol["rtol"] = 1e-6
                check(case, got, want, "bottleneck", **tol)
                check(case, got, plf(), "polars", **({"rtol": 0.0} if exact else tolerance(agg, "polars", x, w)))
                # Jobs without NaN run unmasked: mean / var / std within ulps.
                check(case + ', nan="skip"', calls["skip"](), got, "slidewise on nulls", rtol=1e-13)
                check(f"rolling {agg}, window {w:,}, no NaN, nan=\"skip\"", calls["skip0"](), calls["clean"](), "slidewise, nan=\"propagate\"", rtol=0.0)
                if agg != "median":  # NaN is a value there (above +inf), bottleneck's median skips it
                    # min: NaN is above every number; count: NaN is a value, counted
                    prop_want = (want if agg == "min" else valid_in_window(np.ones(len(x), dtype=bool), w) if agg == "count"
                                 else np.where(valid_in_window(miss, w) > 0, np.nan, want))
                    check(case + ', nan="propagate"', calls["propagate"](), prop_want, "bottleneck, NaN where the window holds one", **tol)
                    del prop_want
                del got, want
                t = timed(calls, a.repeat)
                r = {k: len(x) / v / 1e6 for k, v in t.items()}
                share = [f"{r[k] / r['clean']:.2f}x" for k in ("nulls", "skip", "propagate", "skip0")]
                vs = [f"{r[k] / r['bottleneck']:.1f}x" for k in ("nulls", "skip", "propagate")]
                print(f"| {agg} | {w:,} | {kind} | {r['clean']:.0f} | " + " | ".join(share + vs)
                      + f" | {r['nulls'] / r['polars']:.1f}x |", flush=True)


def ends_row(agg, w, kind, miss, x, clean, nulls, withnan, repeat) -> None:
    """One --missing row for first / last and their ignore_nulls forms:
    each way checked against numpy's gather of the row each window picks
    (NaN a value under nan="propagate"), then timed beside the clean
    column; no peer has them, so no ratios to peers."""
    case = f"rolling {agg}, window {w:,}, {kind} missing"
    want = ends_want(agg, w, x, miss)
    check(case, sw.rolling(nulls, w, agg), want, "numpy's gather", rtol=0.0)
    check(case + ', nan="skip"', sw.rolling(withnan, w, agg, nan="skip"), want, "numpy's gather", rtol=0.0)
    check(case + ', nan="propagate"', sw.rolling(withnan, w, agg, nan="propagate"), ends_want(agg, w, x, miss, True),
          "numpy's gather, NaN a value", rtol=0.0)
    t = timed({"clean": lambda: sw.rolling(clean, w, agg), "nulls": lambda: sw.rolling(nulls, w, agg),
               "skip": lambda: sw.rolling(withnan, w, agg, nan="skip"),
               "propagate": lambda: sw.rolling(withnan, w, agg, nan="propagate"),
               "skip0": lambda: sw.rolling(clean, w, agg, nan="skip")}, repeat)
    r = {k: len(x) / v / 1e6 for k, v in t.items()}
    share = [f"{r[k] / r['clean']:.2f}x" for k in ("nulls", "skip", "propagate", "skip0")]
    print(f"| {agg} | {w:,} | {kind} | {r['clean']:.0f} | " + " | ".join(share) + " | — | — | — | — |", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=7, help="best of this many (the README table: 7)")
    p.add_argument("--windows", default="16,1024,65536,1048576")
    p.add_argument("--aggs", default=",".join(AGGS))
    p.add_argument("--dtype", default="float64", choices=["float64", "int64", "int32"],
                   help="the column's dtype (ints: the random walk rounded; max / min only make sense)")
    p.add_argument("--missing", action="store_true", help="columns with missing values (module doc)")
    p.add_argument("--quick", action="store_true", help="20,000 rows, windows 16 and 1024, one repeat: the checks only")
    p.add_argument("--threads", type=int, default=None,
                   help="SLIDEWISE_THREADS for slidewise (rolling() splits a call's rows from 2^20 rows on; "
                        "default: the environment's, else up to min(CPUs, 4))")
    a = p.parse_args()
    if a.quick:
        a.rows, a.repeat, a.windows = 20_000, 1, "16,1024"
    import polars as pl

    x = np.random.default_rng(42).normal(size=a.rows).cumsum()
    if a.dtype != "float64":
        x = np.round(x * 1000).astype(a.dtype)
    arr = pa.array(x)
    import os

    if a.threads is not None:
        os.environ["SLIDEWISE_THREADS"] = str(a.threads)
    cap = min(os.cpu_count() or 1, 4)
    env = os.environ.get("SLIDEWISE_THREADS")
    threads = f"SLIDEWISE_THREADS={env}" if env else f"up to {cap} (SLIDEWISE_THREADS unset)"
    print(machine(threads + ", from 2^20 rows") + f"; polars thread pool: {pl.thread_pool_size()}"
          + f"; SLIDEWISE_SIMD={os.environ.get('SLIDEWISE_SIMD', '(unset: the widest the CPU has)')}")
    if a.missing:
        print(f"{a.rows:,} float64 rows, best of {a.repeat}, calls interleaved; ratios of speeds; "
              "each result checked first\n")
        warm_up(lambda: sw.rolling(arr, 1024, "mean"))
        missing_main(a, x)
        return
    print(f"{a.rows:,} {a.dtype} rows, best of {a.repeat}; Mrows/s (ratio = slidewise / peer); "
          "each peer's result checked against slidewise's first\n")
    print("| agg | window | slidewise | bottleneck | polars | pandas | vs bottleneck | vs polars | vs pandas |")
    print("|---|---|---|---|---|---|---|---|---|")
    warm_up(lambda: sw.rolling(arr, 1024, "mean"))
    for agg in a.aggs.split(","):
        for w in map(int, a.windows.split(",")):
            if w > a.rows:  # bottleneck refuses a window longer than the data
                print(f"| {agg} | {w:,} | window longer than the {a.rows:,} rows: skipped |")
                continue
            runs = peers(x, agg, w)
            got = sw.rolling(arr, w, agg)
            for name, f in runs.items():
                check(f"rolling {agg}, window {w:,}, {a.rows:,} rows", got, f(), name, **tolerance(agg, name, x, w))
            del got
            t = timed({"slidewise": lambda: sw.rolling(arr, w, agg), **runs}, a.repeat)
            r = {k: a.rows / t[k] / 1e6 for k in runs}
            mine = a.rows / t["slidewise"] / 1e6
            cells = [f"{r[k]:.0f}" if k in r else "-" for k in ("bottleneck", "polars", "pandas")]
            ratios = [f"{mine / r[k]:.1f}x" if k in r else "-" for k in ("bottleneck", "polars", "pandas")]
            print(f"| {agg} | {w:,} | {mine:.0f} | " + " | ".join(cells + ratios) + " |", flush=True)
    e_sw, e_bn = exactness(a.rows)
    print(f"\nrolling sum, window 1000, values mixing 1e8 and 1e-3: worst relative error vs math.fsum "
          f"slidewise {e_sw:.1e}, bottleneck.move_sum {e_bn:.1e}")
    e_sw, e_bn = exactness(a.rows, huge=True)
    print(f"rolling sum, window 1000, a random walk of tenths with clusters of values near ±1e300: worst relative "
          f"error vs math.fsum slidewise {e_sw:.1e}, bottleneck.move_sum {e_bn:.1e}")
    print("\nworst relative error vs exact per-window values (fsum; statistics.variance on Fractions):\n")
    print("| data | window | mean: slidewise | bottleneck | var: slidewise | bottleneck | std: slidewise | bottleneck |")
    print("|---|---|---|---|---|---|---|---|")
    for name, w, worst in exact_moments(60 if a.quick else 300):
        cells = [f"{worst[agg, who]:.1e}" for agg in ("mean", "var", "std") for who in ("slidewise", "bottleneck")]
        print(f"| {name} | {w:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        sys.exit(f"check failed, nothing timed for this case: {e}")
