"""asv: per-row rolling aggregation, slidewise against its peers in one run.

Each benchmark runs the same rolling query on the same float64 array with
slidewise, polars and bottleneck (pandas only at small windows, where it is
not hopeless), so the ratio between them is measured on the same machine at
the same time.
"""

import numpy as np

N = 2_000_000
WINDOWS = [16, 1024, 65536, 1 << 20]


def _data():
    rng = np.random.default_rng(42)
    return rng.normal(1e3, 50.0, N).cumsum()


class Rolling:
    params = (["max", "sum", "std"], WINDOWS, ["slidewise", "polars", "bottleneck"])
    param_names = ["agg", "window", "library"]
    timeout = 300

    def setup(self, agg, window, library):
        self.x = _data()
        if library == "slidewise":
            import pyarrow as pa
            import slidewise as sw

            arr = pa.array(self.x)
            self.run = lambda: sw.rolling(arr, window, agg)
        elif library == "polars":
            import polars as pl

            s = pl.Series(self.x)
            f = {"max": s.rolling_max, "sum": s.rolling_sum, "std": s.rolling_std}[agg]
            self.run = lambda: f(window, min_samples=1)
        else:
            import bottleneck as bn

            f = {"max": bn.move_max, "sum": bn.move_sum, "std": bn.move_std}[agg]
            kw = {"ddof": 1} if agg == "std" else {}
            self.run = lambda: f(self.x, window, min_count=1, **kw)

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

    def time_rolling_named_algorithm(self, algorithm, window):
        self.sw.rolling(self.arr, window, "max", algorithm=algorithm)
