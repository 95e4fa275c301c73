"""asv: rolling_many, 64 random windows in [1, 32768], "max" over float64:
slidewise's shared pass against 64 bottleneck.move_max and 64 polars
rolling_max calls in one run (benches/compare_many.py prints the ratios at
10M rows; here 2M rows keep the output to 1 GB)."""

import numpy as np

N = 2_000_000


def _setup():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, N).cumsum()
    ws = sorted(set(int(w) for w in rng.integers(1, 32769, 64)))
    return x, ws


class RollingMany:
    params = (["slidewise", "bottleneck", "polars"],)
    param_names = ["library"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, library):
        x, ws = _setup()
        if library == "slidewise":
            import pyarrow as pa
            import slidewise as sw

            arr = pa.array(x)
            self.run = lambda: sw.rolling_many(arr, ws, "max")
        elif library == "bottleneck":
            import bottleneck as bn

            self.run = lambda: [bn.move_max(x, w, min_count=1) for w in ws]
        else:
            import polars as pl

            s = pl.Series(x)
            self.run = lambda: [s.rolling_max(w, min_samples=1) for w in ws]

    def time_max_64_windows(self, library):
        self.run()
