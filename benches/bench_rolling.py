"""asv: per-row rolling aggregation, slidewise against its peers in one run.

Each benchmark runs the same rolling query on the same float64 array with
slidewise, polars and bottleneck (pandas is in benches/compare_rolling.py),
so the ratio between them is measured on the same machine at the same time. Each setup first checks the result it is about to time
against the other side's on the same data (slidewise's against polars', a
peer's against slidewise's), so a wrong result fails the benchmark instead
of being timed.
"""

import numpy as np

from ._check import check, drift, ends_want

N = 2_000_000
WINDOWS = [16, 1024, 65536, 1 << 20]


def _data():
    rng = np.random.default_rng(42)
    return rng.normal(1e3, 50.0, N).cumsum()


def _peer(x, agg, window, library):
    """The peer's call. min_samples / min_count = 1: the first window - 1 rows
    get the partial window's value, as slidewise's default."""
    if library == "polars":
        import polars as pl

        s = pl.Series(x)
        if agg == "count":  # polars has no rolling count: the sum of the valid rows' ones
            ones = s.is_not_null().cast(pl.Float64)
            return lambda: ones.rolling_sum(window, min_samples=1)
        if agg == "range":
            return lambda: s.rolling_max(window, min_samples=1) - s.rolling_min(window, min_samples=1)
        f = {"max": s.rolling_max, "min": s.rolling_min, "sum": s.rolling_sum, "std": s.rolling_std,
             "mean": s.rolling_mean, "var": s.rolling_var, "median": s.rolling_median}[agg]
        return lambda: f(window, min_samples=1)
    import bottleneck as bn

    if agg == "range":
        return lambda: bn.move_max(x, window, min_count=1) - bn.move_min(x, window, min_count=1)
    if agg == "count":  # nor has bottleneck
        ok = (~np.isnan(x)).astype(np.float64)
        return lambda: bn.move_sum(ok, window, min_count=1)
    f = {"max": bn.move_max, "min": bn.move_min, "sum": bn.move_sum, "std": bn.move_std, "mean": bn.move_mean,
         "var": bn.move_var, "median": bn.move_median}[agg]
    kw = {"ddof": 1} if agg in ("std", "var") else {}
    return lambda: f(x, window, min_count=1, **kw)


def _tolerance(x, agg, window, peer):
    """max picks one of the values: equal. polars' sum and std agree with
    slidewise within 1e-9 relative. bottleneck updates a running sum / mean
    and squared deviation row by row, keeping the rounding error of all rows
    before, relative to the largest values seen rather than to the window's
    result (its std here is up to 1.5e-3 relative off slidewise's at window
    16: stds from 670 among values up to 2e9): on top of 1e-9 relative,
    drift() at the data's scale, the std compared through its variance (the
    error stays below 1/50 of it)."""
    if agg in ("max", "min", "range", "count"):
        return {"rtol": 0.0}
    if agg == "median":  # a value, or the mean of two
        return {"rtol": 1e-15}
    if peer == "polars":
        return {"rtol": 1e-9}
    m = float(np.abs(x).max())
    scale = {"sum": min(window, len(x)) * m, "mean": m, "std": m * m, "var": m * m}[agg]
    return {"rtol": 1e-9, "atol": drift(len(x), scale), "squared": agg == "std"}


class Rolling:
    params = (["max", "min", "sum", "mean", "std", "var"], WINDOWS, ["slidewise", "polars", "bottleneck"])
    param_names = ["agg", "window", "library"]
    timeout = 300

    def setup(self, agg, window, library):
        import pyarrow as pa
        import slidewise as sw

        self.x = _data()
        arr = pa.array(self.x)
        mine = lambda: sw.rolling(arr, window, agg)  # noqa: E731
        if library == "slidewise":
            self.run, peer = mine, "polars"
            got, want = mine(), _peer(self.x, agg, window, peer)()
        else:
            self.run, peer = _peer(self.x, agg, window, library), library
            got, want = mine(), self.run()
        check(f"Rolling({agg}, {window}, {library})", got, want, peer, **_tolerance(self.x, agg, window, peer))

    def time_rolling(self, agg, window, library):
        self.run()


class RollingMissing:
    """Columns with missing values (issue 36; the full table in
    compare_rolling.py --missing): 1% or 10% of the rows at random, or runs
    of 10,000 rows (a sensor down), as Arrow nulls, as NaN under
    nan="skip", and as NaN under nan="propagate"; bottleneck on the data
    with NaN (its missing value), polars on the nulls (range: max - min;
    count: their rolling sums of the valid rows' ones, neither has a count;
    first / last / last_ignore_nulls: neither has them, numpy's gather
    checks them).
    Each setup checks the call it times: slidewise's nulls against
    bottleneck, "skip" bit for bit against the nulls, "propagate" against
    bottleneck with NaN where the window holds one (min: as bottleneck;
    median: NaN above every number, bottleneck with NaN as +inf), polars
    against slidewise."""

    params = (["max", "min", "range", "sum", "mean", "std", "var", "median", "count", "first", "last", "last_ignore_nulls"],
              [16, 1024, 65536], ["1%", "10%", "runs"],
              ["nulls", "skip", "propagate", "polars", "bottleneck"])
    param_names = ["agg", "window", "missing", "how"]
    timeout = 300

    def setup(self, agg, window, missing, how):
        import pyarrow as pa
        import slidewise as sw

        x = _data()
        rng = np.random.default_rng(36)
        if missing == "runs":
            miss = np.zeros(len(x), dtype=bool)
            for a in rng.integers(0, len(x) - 10_000, max(len(x) // 1_000_000, 1)):
                miss[a:a + 10_000] = True
        else:
            miss = rng.random(len(x)) < float(missing[:-1]) / 100
        xn = np.where(miss, np.nan, x)
        nulls, withnan = pa.array(x, mask=miss), pa.array(xn)
        if agg in ("first", "last", "last_ignore_nulls"):
            self.setup_ends(agg, window, missing, how, x, miss, nulls, withnan)
            return
        bn_run = _peer(xn, agg, window, "bottleneck")
        want = bn_run()
        c = np.concatenate([[0], np.cumsum(miss)])
        i = np.arange(len(x))
        holes = c[i + 1] - c[np.maximum(i + 1 - window, 0)]  # missing rows per window
        got = sw.rolling(nulls, window, agg)
        if agg in ("std", "var"):
            # bottleneck's running update carries a residue from the rows
            # before: over one value it divides it by n - 1 = 0 (inf, where
            # slidewise is null), and after a long gap a window of a few
            # values is off (1e-3 relative on the std of 2 values). There,
            # slidewise's own values (checked against polars' below).
            few = np.minimum(i + 1, window) - holes < 32
            want = np.where(few, got.to_numpy(zero_copy_only=False), want)
        case = f"RollingMissing({agg}, {window}, {missing}, {how})"
        tol = _tolerance(np.nan_to_num(xn), agg, window, "bottleneck")
        if agg in ("std", "var"):
            # After a gap a window holds few values, whose variance is small
            # beside the residue bottleneck's running update carries.
            tol["rtol"] = 1e-6
        check(case, got, want, "bottleneck", **tol)
        runs = {
            "nulls": lambda: sw.rolling(nulls, window, agg),
            "skip": lambda: sw.rolling(withnan, window, agg, nan="skip"),
            "propagate": lambda: sw.rolling(withnan, window, agg, nan="propagate"),
            "bottleneck": bn_run,
        }
        if how in ("polars", "nulls"):
            runs["polars"] = _peer(nulls, agg, window, "polars")
            check(case, got, runs["polars"](), "polars", **_tolerance(x, agg, window, "polars"))
        elif how == "skip":
            check(case, runs["skip"](), got, "slidewise on nulls", rtol=0.0)
        elif how == "propagate":
            if agg == "median":  # NaN above every number: NaN where the median lands on one
                import bottleneck as bn

                high = bn.move_median(np.where(miss, np.inf, x), window, min_count=1)
                check(case, runs["propagate"](), np.where(np.isinf(high), np.nan, high),
                      "bottleneck with NaN as +inf", **tol)
            elif agg == "count":  # NaN is a value, counted
                check(case, runs["propagate"](), np.minimum(i + 1, window), "the clean column's count", rtol=0.0)
            else:
                check(case, runs["propagate"](), want if agg == "min" else np.where(holes > 0, np.nan, want),
                      "bottleneck, NaN where the window holds one", **tol)
        self.run = runs[how]

    def setup_ends(self, agg, window, missing, how, x, miss, nulls, withnan):
        """first / last (Spark's: a null row is a row) and last_ignore_nulls
        (a last known price): no peer has them; each way checked against
        numpy's gather of the row each window picks (NaN a value under
        "propagate")."""
        import slidewise as sw

        if how in ("polars", "bottleneck"):
            raise NotImplementedError(f"{how} has no rolling {agg}")
        self.run = {
            "nulls": lambda: sw.rolling(nulls, window, agg),
            "skip": lambda: sw.rolling(withnan, window, agg, nan="skip"),
            "propagate": lambda: sw.rolling(withnan, window, agg, nan="propagate"),
        }[how]
        check(f"RollingMissing({agg}, {window}, {missing}, {how})", self.run(),
              ends_want(agg, window, x, miss, how == "propagate"), "numpy's gather", rtol=0.0)

    def time_rolling(self, agg, window, missing, how):
        self.run()


class TimeWindows:
    """Time windows (``rolling(x, "60s", timestamps=ts)``, issue 36's
    callers): 2M rows about a second apart, clean and with 1% nulls,
    against polars' ``rolling_*_by(ts, "60s")`` on the same nulls (count:
    polars' count of the window's non-null values, ``rolling_sum_by`` of
    the validity). Each setup checks slidewise against polars first."""

    params = (["sum", "mean", "count", "std", "max"], ["clean", "1%"], ["slidewise", "polars"])
    param_names = ["agg", "missing", "library"]
    timeout = 300

    def setup(self, agg, missing, library):
        import polars as pl
        import pyarrow as pa
        import slidewise as sw

        rng = np.random.default_rng(36)
        x = _data()
        miss = rng.random(len(x)) < 0.01 if missing == "1%" else None
        ts = pa.array(np.cumsum(rng.integers(1, 2000, len(x))) * 1000, pa.timestamp("us"))
        col = pa.array(x, mask=miss)
        df = pl.DataFrame({"v": pl.Series(col), "ts": pl.Series(ts)})
        if agg == "count":
            expr = pl.col("v").is_not_null().cast(pl.Int64).rolling_sum_by("ts", window_size="60s")
        else:
            expr = getattr(pl.col("v"), f"rolling_{agg}_by")("ts", window_size="60s")
        mine = lambda: sw.rolling(col, "60s", agg, timestamps=ts)  # noqa: E731
        theirs = lambda: df.select(expr).to_series()  # noqa: E731
        check(f"TimeWindows({agg}, {missing})", mine(), theirs(), "polars",
              rtol=0.0 if agg in ("max", "count") else 1e-9)
        self.run = mine if library == "slidewise" else theirs

    def time_rolling(self, agg, missing, library):
        self.run()


class RollingThreads:
    """slidewise alone with SLIDEWISE_THREADS=1 and =2 (rolling() splits a
    call's rows over threads from 2^20 rows; each thread count gives the
    same bits): the speed-up of the split against Rolling's bottleneck rows.
    The 1-thread result is checked equal, bit for bit, before timing."""

    params = (["max", "min", "mean", "std", "var"], WINDOWS, [1, 2])
    param_names = ["agg", "window", "threads"]
    timeout = 300

    def setup(self, agg, window, threads):
        import os

        import pyarrow as pa
        import slidewise as sw

        self.saved = os.environ.get("SLIDEWISE_THREADS")
        x = _data()
        arr = pa.array(x)
        os.environ["SLIDEWISE_THREADS"] = "1"
        want = sw.rolling(arr, window, agg)
        os.environ["SLIDEWISE_THREADS"] = str(threads)
        self.run = lambda: sw.rolling(arr, window, agg)
        check(f"RollingThreads({agg}, {window}, {threads})", self.run(), want, "one thread", rtol=0.0)

    def teardown(self, agg, window, threads):
        import os

        if self.saved is None:
            os.environ.pop("SLIDEWISE_THREADS", None)
        else:
            os.environ["SLIDEWISE_THREADS"] = self.saved

    def time_rolling(self, agg, window, threads):
        self.run()


class RollingInt:
    """max / min on int64 (their own kernel per dtype) against bottleneck."""

    params = (["max", "min"], WINDOWS, ["slidewise", "bottleneck"])
    param_names = ["agg", "window", "library"]
    timeout = 300

    def setup(self, agg, window, library):
        import pyarrow as pa
        import slidewise as sw

        self.x = np.round(_data()).astype(np.int64)
        arr = pa.array(self.x)
        mine = lambda: sw.rolling(arr, window, agg)  # noqa: E731
        peer = _peer(self.x, agg, window, "bottleneck")
        self.run = mine if library == "slidewise" else peer
        check(f"RollingInt({agg}, {window}, {library})", mine(), peer(), "bottleneck", rtol=0.0)

    def time_rolling(self, agg, window, library):
        self.run()


class Steps:
    """One raw aggregator per algorithm: per-step cost seen from Python in
    batches (insert_many), the overhead users of the research API pay."""

    params = (["two_stacks", "daba", "flatfat", "bint", "flatfit", "slideside"], [1024])
    param_names = ["algorithm", "window"]

    def setup(self, algorithm, window):
        import pyarrow as pa
        import slidewise as sw

        self.arr = pa.array(_data()[:200_000])
        self.algorithm = algorithm
        self.window = window
        self.sw = sw
        # the named algorithm's max against bottleneck's, equal (a max picks one of the values)
        import bottleneck as bn

        check(f"Steps({algorithm}, {window})", sw.rolling(self.arr, window, "max", algorithm=algorithm),
              bn.move_max(self.arr.to_numpy(), window, min_count=1), "bottleneck", rtol=0.0)

    def time_rolling_named_algorithm(self, algorithm, window):
        self.sw.rolling(self.arr, window, "max", algorithm=algorithm)


SHAPES = {
    # name: (time window?, rolling keywords)
    "plain": (False, {}),
    "closed_left": (False, {"closed": "left"}),
    "closed_both": (False, {"closed": "both"}),
    "center": (False, {"center": True}),
    "step_4": (False, {"step": 4}),
    "step_10000": (False, {"step": 10_000}),
    "time_plain": (True, {}),
    "time_closed_both": (True, {"closed": "both"}),
    "time_center": (True, {"center": True}),
}


def _shape_times(n):
    # one row a second with some ties, as int64 seconds
    rng = np.random.default_rng(7)
    return np.cumsum(rng.integers(0, 3, n)).astype("datetime64[s]").astype("datetime64[ns]")


class Shape:
    """Window shape (closed / center / step) against the plain call and
    against pandas with the same keywords, window 1024 (rows or seconds).
    Each setup checks slidewise against pandas (min_periods=1 on both)."""

    params = (list(SHAPES), ["sum", "max"], ["slidewise", "pandas"])
    param_names = ["shape", "agg", "library"]
    timeout = 300

    def setup(self, shape, agg, library):
        import pandas as pd
        import pyarrow as pa
        import slidewise as sw

        time, kw = SHAPES[shape]
        x = _data()
        arr = pa.array(x)
        if time:
            ts = _shape_times(len(x))
            tarr = pa.array(ts)
            df = pd.DataFrame({"t": ts, "x": x})
            mine = lambda: sw.rolling(arr, "1024s", agg, timestamps=tarr, min_periods=1, **kw)  # noqa: E731
            theirs = lambda: getattr(df.rolling("1024s", on="t", min_periods=1, **kw).x, agg)()  # noqa: E731
        else:
            s = pd.Series(x)
            mine = lambda: sw.rolling(arr, 1024, agg, min_periods=1, **kw)  # noqa: E731
            theirs = lambda: getattr(s.rolling(1024, min_periods=1, **kw), agg)()  # noqa: E731
        check(f"Shape({shape}, {agg})", mine(), theirs(), "pandas", rtol=0.0 if agg == "max" else 1e-9,
              atol=0.0 if agg == "max" else drift(len(x), 1024 * float(np.abs(x).max())))
        self.run = mine if library == "slidewise" else theirs

    def time_shape(self, shape, agg, library):
        self.run()
