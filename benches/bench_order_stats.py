"""asv: rolling median / quantile / rank, slidewise against bottleneck and
polars on the same 2M float64 rows in one run (pandas is in
benches/compare_order_stats.py). Each setup checks the result it is about
to time against the other side's first, so a wrong result fails the
benchmark instead of being timed."""

import numpy as np

from ._check import check

N = 2_000_000
WINDOWS = [10, 100, 1000, 10_000, 100_000]


def _data():
    return np.random.default_rng(42).normal(size=N).cumsum()


def _call(x, arr, agg, window, library):
    """min_count / min_samples = 1: partial windows at the start, as slidewise."""
    if library == "slidewise":
        import slidewise as sw

        kw = {"q": 0.9} if agg == "quantile" else {}
        return lambda: sw.rolling(arr, window, agg, **kw)
    if library == "polars":
        import polars as pl

        s = pl.Series(x)
        if agg == "median":
            return lambda: s.rolling_median(window, min_samples=1)
        if agg == "quantile":
            return lambda: s.rolling_quantile(0.9, "linear", window, min_samples=1)
        return None
    import bottleneck as bn

    if agg == "median":
        return lambda: bn.move_median(x, window, min_count=1)
    if agg == "rank" and window <= 1000:  # O(window) a row
        return lambda: bn.move_rank(x, window, min_count=1)
    return None


class OrderStats:
    params = (["median", "quantile", "rank"], WINDOWS, ["slidewise", "bottleneck", "polars"])
    param_names = ["agg", "window", "library"]
    timeout = 300

    def setup(self, agg, window, library):
        import pyarrow as pa

        x = _data()
        arr = pa.array(x)
        self.run = _call(x, arr, agg, window, library)
        if self.run is None:
            raise NotImplementedError(f"{library} has no rolling {agg} (or not at window {window})")
        mine = _call(x, arr, agg, window, "slidewise")
        peer = library if library != "slidewise" else ("bottleneck" if agg != "quantile" else "polars")
        want = _call(x, arr, agg, window, peer)
        if want is None:
            return  # nothing to check slidewise against at this window (rank past 1000)
        exact = (peer, agg) == ("bottleneck", "median")
        check(f"OrderStats({agg}, {window}, {library})", mine(), want(), peer, rtol=0.0 if exact else 1e-12)

    def time_rolling(self, agg, window, library):
        self.run()


class OrderStatsTime:
    """Time windows (one row a second, so "Ns" holds N rows): slidewise
    against pandas ``rolling("Ns")`` (polars' rolling_*_by has no median
    checked here); 200k rows, pandas being slow."""

    params = (["median", "quantile", "rank"], ["10s", "1000s"], ["slidewise", "pandas"])
    param_names = ["agg", "window", "library"]
    timeout = 300

    def setup(self, agg, window, library):
        import pandas as pd
        import pyarrow as pa

        import slidewise as sw

        x = _data()[:200_000]
        ts = pa.array(np.arange(len(x)).astype("datetime64[s]"))
        kw = {"q": 0.9} if agg == "quantile" else {}
        mine = lambda: sw.rolling(pa.array(x), window, agg, timestamps=ts, **kw)  # noqa: E731
        if agg == "rank":
            if library == "pandas":
                raise NotImplementedError("pandas has no rolling rank over a time window to compare")
            self.run = mine
            return
        r = pd.Series(x, index=pd.DatetimeIndex(ts.to_numpy())).rolling(window)
        peer = (lambda: r.median().to_numpy()) if agg == "median" else (lambda: r.quantile(0.9).to_numpy())
        self.run = mine if library == "slidewise" else peer
        check(f"OrderStatsTime({agg}, {window})", mine(), peer(), "pandas", rtol=1e-12)

    def time_rolling(self, agg, window, library):
        self.run()


class OrderStatsStream:
    """A count-window Stream query (range 1000, slide 1 or 100) over 2M rows
    pushed in batches of 100k, against the same windows read from one
    ``sw.rolling`` call (the kernel the Stream runs per push)."""

    params = (["median", "rank"], [1, 100], ["stream", "rolling"])
    param_names = ["agg", "slide", "way"]
    timeout = 300

    def setup(self, agg, slide, way):
        import pyarrow as pa

        import slidewise as sw

        x = _data()
        batches = [{"v": pa.array(x[i:i + 100_000])} for i in range(0, len(x), 100_000)]

        def stream():
            s = sw.Stream(sw.Query(agg, 1000, slide, name="q"))
            return pa.concat_tables([s.push(b)["q"] for b in batches])["value"]

        def rolling():
            return sw.rolling(pa.array(x), 1000, agg).to_numpy()[slide - 1::slide]

        self.run = stream if way == "stream" else rolling
        check(f"OrderStatsStream({agg}, {slide})", stream(), rolling(), "rolling", rtol=0.0)

    def time_query(self, agg, slide, way):
        self.run()
