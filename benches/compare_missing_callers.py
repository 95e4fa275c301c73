"""Missing values beyond the per-row kernel (issue 36, "the same for every
caller"): keyed rolling (keys of even size, and Zipf-skewed keys where one
key holds a quarter of the rows; keys interleaved in the column, as rows
arrive), time windows, rolling_many and Stream pushes, each
on a clean float64 column and on the same column with 1% of its rows
missing (Arrow nulls), against polars on the same data with nulls.

    python benches/compare_missing_callers.py [--rows 2000000] [--repeat 3]
    python benches/compare_missing_callers.py --quick   # small: the checks only

Each call's result is checked first: keyed rolling against polars'
``rolling_*(w, min_samples=1).over(k)``, time windows against polars'
``rolling_*_by(ts, "60s")``, rolling_many against one ``rolling`` call per
window (bit for bit; with 64 windows, which share one pass, within
1e-12) and a Stream's pushes (100,000 rows each) against one
``rolling`` call over the whole column with the same count windows (the
windows' ends). The table gives each call's speed on the clean column, its
share of that speed with 1% nulls, and its speed-up over polars with
nulls."""

from __future__ import annotations

import argparse

import numpy as np

if __package__:
    from ._check import check, machine, timed, warm_up
else:
    from _check import check, machine, timed, warm_up


# Enough windows for the shared passes on a long column (rolling/many.rs
# `min_shared`: sum and mean take them from 64 windows).
MANY_64 = list(range(512, 32768 + 1, 512))
SKEWED = "keyed rolling, 1,000 Zipf-skewed keys, 100 rows"


def cases(rows: int, keys: int = 1000):
    import polars as pl
    import pyarrow as pa
    import slidewise as sw

    rng = np.random.default_rng(36)
    x = rng.normal(100.0, 5.0, rows).cumsum() / 100.0
    miss = rng.random(rows) < 0.01
    k = rng.integers(0, keys, rows)
    # Zipf(1.3) key sizes: the largest key a quarter of the rows, most keys a few.
    kz = (rng.zipf(1.3, rows) - 1) % keys
    ts = np.cumsum(rng.integers(1, 2000, rows)) * 1000  # us, ~1 row a second
    tcol = pa.array(ts, pa.timestamp("us"))
    out = []
    for agg in ("mean", "std", "max"):
        for label, missing in (("clean", None), ("1% nulls", miss)):
            col = pa.array(x, mask=missing) if missing is not None else pa.array(x)
            s = pl.Series("v", col)
            df = pl.DataFrame({"v": s, "k": k, "kz": kz, "ts": pl.Series(tcol)})
            pl_keyed = getattr(pl.col("v"), f"rolling_{agg}")(100, min_samples=1).over("k")
            pl_skew = getattr(pl.col("v"), f"rolling_{agg}")(100, min_samples=1).over("kz")
            pl_time = getattr(pl.col("v"), f"rolling_{agg}_by")("ts", window_size="60s")
            kcol, kzcol = pa.array(k), pa.array(kz)
            run = {
                ("keyed rolling, 1,000 keys, 100 rows", "slidewise"): lambda c=col, a=agg: sw.rolling(c, 100, a, keys=kcol),
                ("keyed rolling, 1,000 keys, 100 rows", "polars"): lambda a=agg, d=df, e=pl_keyed: d.select(e),
                (SKEWED, "slidewise"): lambda c=col, a=agg: sw.rolling(c, 100, a, keys=kzcol),
                (SKEWED, "polars"): lambda a=agg, d=df, e=pl_skew: d.select(e),
                ("time windows, 60 s", "slidewise"): lambda c=col, a=agg: sw.rolling(c, "60s", a, timestamps=tcol),
                ("time windows, 60 s", "polars"): lambda d=df, e=pl_time: d.select(e),
                ("rolling_many, 8 windows", "slidewise"):
                    lambda c=col, a=agg: sw.rolling_many(c, [16, 64, 256, 1024, 4096, 16384, 65536, 262144], a),
                ("rolling_many, 64 windows in [512, 32768] (one shared pass)", "slidewise"):
                    lambda c=col, a=agg: sw.rolling_many(c, MANY_64, a),
            }
            out.append((agg, label, col, kcol, tcol, run))
    return out


def _stream(col, agg, w: int = 1000, chunk: int = 100_000):
    """A Stream of one count-window query, fed ``chunk`` rows a push: the
    windows' values."""
    import pyarrow as pa
    import slidewise as sw

    st = sw.Stream([sw.Query(agg, w, 1, name="q")], value="v")
    got = []
    for i in range(0, len(col), chunk):
        got.append(st.push(pa.table({"v": col.slice(i, chunk)}))["q"].column("value"))
    return pa.chunked_array([c for g in got for c in g.chunks], type=pa.float64())


def main(argv=None) -> None:
    import polars as pl
    import pyarrow as pa
    import slidewise as sw

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.repeat = 200_000, 1
    print(machine("up to 2 (SLIDEWISE_THREADS unset)") + f"; polars thread pool: {pl.thread_pool_size()}")
    print(f"{args.rows:,} float64 rows, best of {args.repeat}, calls interleaved; each result checked first")
    print()
    speed = {}
    for agg, label, col, kcol, tcol, run in cases(args.rows):
        # the checks: polars with nulls; rolling_many and the Stream against rolling
        sl = run[("keyed rolling, 1,000 keys, 100 rows", "slidewise")]()
        po = run[("keyed rolling, 1,000 keys, 100 rows", "polars")]().to_series()
        check(f"keyed {agg} {label}", sl, po, "polars", rtol=1e-9, atol=1e-9)
        check(f"skewed keys {agg} {label}", run[(SKEWED, "slidewise")](), run[(SKEWED, "polars")]().to_series(), "polars",
              rtol=1e-9, atol=1e-9)
        sl = run[("time windows, 60 s", "slidewise")]()
        po = run[("time windows, 60 s", "polars")]().to_series()
        check(f"time {agg} {label}", sl, po, "polars", rtol=1e-9, atol=1e-9)
        many = run[("rolling_many, 8 windows", "slidewise")]()
        for w in (16, 4096, 262144):
            check(f"rolling_many {agg} {w} {label}", many.column(f"{agg}_{w}"), sw.rolling(col, w, agg),
                  "rolling", rtol=0.0)
        many = run[("rolling_many, 64 windows in [512, 32768] (one shared pass)", "slidewise")]()
        for w in (512, 8192, 32768):
            # the shared passes' contract: within 1e-12 of the window alone
            check(f"rolling_many, 64 windows, {agg} {w} {label}", many.column(f"{agg}_{w}"), sw.rolling(col, w, agg),
                  "rolling", rtol=1e-12, atol=1e-12)
        del many
        want = sw.rolling(col, 1000, agg)
        run[("Stream pushes of 100,000 rows, 1,000-row windows", "slidewise")] = lambda c=col, a=agg: _stream(c, a)
        check(f"Stream {agg} {label}", _stream(col, agg), want, "rolling", rtol=1e-12, atol=1e-12)
        warm_up(lambda: sw.rolling(col, 100, agg, keys=kcol), 0.5)
        best = timed(run, args.repeat)
        for (caller, who), sec in best.items():
            speed[(agg, caller, who, label)] = args.rows / sec / 1e6
    print("| agg | caller | clean Mrows/s | 1% nulls / clean | 1% nulls vs polars |")
    print("|---|---|---|---|---|")
    callers = dict.fromkeys(c for (_, c, _, _) in speed)
    for agg in ("mean", "std", "max"):
        for c in callers:
            clean = speed.get((agg, c, "slidewise", "clean"))
            nulls = speed.get((agg, c, "slidewise", "1% nulls"))
            pol = speed.get((agg, c, "polars", "1% nulls"))
            vs = f"{nulls / pol:.1f}x" if pol else "-"
            print(f"| {agg} | {c} | {clean:.0f} | {nulls / clean:.2f}x | {vs} |")


if __name__ == "__main__":
    main()
