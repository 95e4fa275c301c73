"""slidewise.polars (the ``sw`` expression namespace) at many keys, against
polars' own ``rolling_*(w).over("k")`` on the same frame, in one run:

* ``ns .over()`` ``pl.col("v").sw.rolling(w, agg).over("k")``: the namespace
  rewrites this to the ``over=`` form (polars would call a Python function
  once per key);
* ``ns over=``   ``pl.col("v").sw.rolling(w, agg, over="k")``: one call, all keys;
* ``ns .over() per key`` the same expression after ``* 1.0``, which the
  namespace cannot rewrite: polars calls it once per key (timed once, on
  --over-rows rows): what ``.over()`` cost before the rewrite;
* ``pyarrow``    ``slidewise.rolling(v, w, agg, keys=k, min_periods=w)`` on the
  frame's columns: what the namespace costs over a plain slidewise call.

Interleaved, best of ``--repeat``; every result is checked equal to polars'
before anything is timed. Prints a markdown table under the CPU line.

    python benches/bench_polars_ns.py [--rows 1000000] [--keys 100000] [--window 10] [--repeat 5]
    python benches/bench_polars_ns.py --quick      # tiny: the checks only
    python benches/bench_polars_ns.py --time --repeat 3   # time windows (by=) instead

asv runs the ``.over()``, ``over=`` and polars cases at 1M rows, 100k keys.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import polars as pl

import slidewise as sw
import slidewise.polars  # noqa: F401  (registers .sw)

if __package__:  # asv imports the benches package
    from ._check import machine
else:  # python benches/bench_polars_ns.py
    from _check import machine

AGGS = ["sum", "mean", "max", "min", "std", "median"]


def frame(rows: int, keys: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    v = rng.normal(0.0, 1.0, rows)
    v[rng.random(rows) < 0.01] = np.nan  # NaN and nulls both present: polars' rules apply
    return pl.DataFrame({"k": rng.integers(0, keys, rows), "v": v}).with_columns(
        pl.when(pl.int_range(pl.len()) % 97 == 0).then(None).otherwise(pl.col("v")).alias("v"))


def exprs(agg: str, w: int) -> dict:
    native = pl.col("v").rolling_median(w) if agg == "median" else getattr(pl.col("v"), f"rolling_{agg}")(w)
    return {
        "polars .over()": lambda df: df.select(native.over("k")).to_series(),
        "ns over=": lambda df: df.select(pl.col("v").sw.rolling(w, agg, over="k")).to_series(),
        "pyarrow": lambda df: pl.Series(sw.rolling(df["v"], w, agg, keys=df["k"], min_periods=w)),
        "ns .over()": lambda df: df.select(pl.col("v").sw.rolling(w, agg).over("k")).to_series(),
        "ns .over() per key": lambda df: df.select((pl.col("v").sw.rolling(w, agg) * 1.0).over("k")).to_series(),
    }


def check(agg: str, got: pl.Series, want: pl.Series, nan_rule: bool = True) -> None:
    """Equal nulls, NaN and values (1e-6). ``nan_rule=False``: a plain
    slidewise min skips NaN (Spark's order) where polars gives NaN, so only
    the rows where neither is NaN are compared."""
    nan_ok = (got.is_nan() == want.is_nan()).fill_null(True).all() if nan_rule else True
    ok = (got.is_null() == want.is_null()).all() and nan_ok
    both = got.is_not_null() & want.is_not_null() & ~got.is_nan().fill_null(False) & ~want.is_nan().fill_null(False)
    diff = (got.filter(both) - want.filter(both)).abs().max() or 0.0
    if not ok or diff > 1e-6:
        raise AssertionError(f"{agg}: slidewise.polars differs from polars (max abs diff {diff}, nulls/NaN equal: {ok})")


def best(f, df, repeat: int) -> float:
    t = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        f(df)
        t = min(t, time.perf_counter() - t0)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--over-rows", type=int, default=1_000_000, help="rows for the per-key .over() case (timed once)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time", action="store_true", help="the time-window comparison only")
    a = ap.parse_args()
    if a.quick:
        a.rows, a.keys, a.repeat, a.over_rows = 20_000, 2_000, 1, 20_000
    if a.time:
        print(machine("polars' pool and slidewise: 1 call each"))
        return windows_by_time(a.rows, a.keys, a.repeat)
    df = frame(a.rows, a.keys)
    small = frame(a.over_rows, a.keys * a.over_rows // a.rows)
    print(machine("polars' pool and slidewise: 1 call each"))
    print(f"{a.rows:,} rows, {a.keys:,} keys, window {a.window}, best of {a.repeat}; "
          f".over() per key: {a.over_rows:,} rows, timed once\n")
    print("| agg | polars `.over()` s | ns `.over()` s | ns `over=` s | pyarrow call s | polars / ns `.over()` "
          "| polars / ns `over=` | ns `over=` / pyarrow | ns `.over()` per key s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for agg in AGGS:
        fs = exprs(agg, a.window)
        want = fs["polars .over()"](df)
        check(agg, fs["ns over="](df), want)
        check(agg, fs["ns .over()"](df), want)
        check(agg, fs["pyarrow"](df), want, nan_rule=agg != "min")
        check(agg, fs["ns .over() per key"](small), exprs(agg, a.window)["polars .over()"](small))
        t = {name: float("inf") for name in ("polars .over()", "ns .over()", "ns over=", "pyarrow")}
        for _ in range(a.repeat):  # interleaved: the machine's load hits all alike
            for name in t:
                t[name] = min(t[name], best(fs[name], df, 1))
        t_over = best(fs["ns .over() per key"], small, 1)
        print(f"| {agg} | {t['polars .over()']:.3f} | {t['ns .over()']:.3f} | {t['ns over=']:.3f} | {t['pyarrow']:.3f} | "
              f"{t['polars .over()'] / t['ns .over()']:.2f} | {t['polars .over()'] / t['ns over=']:.2f} | "
              f"{t['ns over='] / t['pyarrow']:.2f} | {t_over:.2f} |")


def windows_by_time(rows: int, keys: int, repeat: int) -> None:
    """``--time``: 10 s windows over strictly increasing datetime[ns] (one
    hour), sum, keyed and not, against polars' rolling_sum_by (.over)."""
    rng = np.random.default_rng(0)
    t = pl.Series(np.sort(rng.integers(0, 3600 * 10**9, rows))).cast(pl.Datetime("ns"))
    df = pl.DataFrame({"k": rng.integers(0, keys, rows), "t": t, "v": rng.normal(0.0, 1.0, rows)})
    cases = {
        "polars rolling_sum_by(t, 10s).over(k)": lambda d: d.select(pl.col("v").rolling_sum_by("t", "10s").over("k")),
        "ns rolling(10s, by=t, over=k)": lambda d: d.select(pl.col("v").sw.rolling("10s", "sum", by="t", over="k")),
        "polars rolling_sum_by(t, 10s)": lambda d: d.select(pl.col("v").rolling_sum_by("t", "10s")),
        "ns rolling(10s, by=t)": lambda d: d.select(pl.col("v").sw.rolling("10s", "sum", by="t")),
    }
    names = list(cases)
    for peer, mine in ((names[0], names[1]), (names[2], names[3])):
        check("sum", cases[mine](df).to_series(), cases[peer](df).to_series())
    best_t = {n: float("inf") for n in names}
    for _ in range(repeat):
        for n in names:
            best_t[n] = min(best_t[n], best(cases[n], df, 1))
    print(f"\ntime windows: {rows:,} rows, {keys:,} keys, best of {repeat}")
    for n in names:
        print(f"- {n}: {best_t[n]:.3f} s")


class PolarsNamespace:
    """asv: 1M rows, 100k keys, window 10: the namespace's ``.over()`` and
    ``over=`` (one call each) against polars' own .over() (the per-key form
    is in the script only: minutes under asv's repeats)."""

    params = (["sum", "max", "std"],)
    param_names = ["agg"]
    timeout = 300

    def setup(self, agg):
        self.df = frame(1_000_000, 100_000)
        self.f = exprs(agg, 10)
        want = self.f["polars .over()"](self.df)
        check(agg, self.f["ns over="](self.df), want)
        check(agg, self.f["ns .over()"](self.df), want)

    def time_namespace_over(self, agg):
        self.f["ns .over()"](self.df)

    def time_namespace_over_keyword(self, agg):
        self.f["ns over="](self.df)

    def time_polars_over(self, agg):
        self.f["polars .over()"](self.df)


if __name__ == "__main__":
    main()
