"""asv: rolling_many, 64 random windows in [1, 32768], "max" over float64:
slidewise's shared pass against 64 bottleneck.move_max and 64 polars
rolling_max calls in one run (benches/compare_many.py prints the ratios at
10M rows; here 2M rows keep the output to 1 GB). Each setup first checks
every window's column equal between slidewise and the peer (bottleneck for
slidewise's own run), so a wrong result fails the benchmark instead of
being timed."""

import numpy as np

from ._check import check

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
        import pyarrow as pa
        import slidewise as sw

        x, ws = _setup()
        arr = pa.array(x)
        mine = lambda: sw.rolling_many(arr, ws, "max")  # noqa: E731
        # min_count / min_samples = 1: partial windows at the start, as slidewise's default
        if library == "polars":
            import polars as pl

            s = pl.Series(x)
            peer = lambda: [s.rolling_max(w, min_samples=1) for w in ws]  # noqa: E731
        else:
            import bottleneck as bn

            peer = lambda: [bn.move_max(x, w, min_count=1) for w in ws]  # noqa: E731
        self.run = mine if library == "slidewise" else peer
        # a max picks one of the values: equal, bit for bit
        for w, got, want in zip(ws, mine().columns, peer()):
            check(f"RollingMany({library}), window {w}", got, want,
                  "bottleneck" if library == "slidewise" else library, rtol=0.0)

    def time_max_64_windows(self, library):
        self.run()
