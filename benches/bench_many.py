"""asv: rolling_many, 64 random windows in [1, 32768], "max" and "std" over
float64: slidewise's shared passes against 64 bottleneck.move_max / move_std
and 64 polars rolling_max / rolling_std calls in one run
(benches/compare_many.py prints the ratios at 10M rows; here 2M rows keep
the output to 1 GB). Each setup first checks
every window's column equal between slidewise and the peer (bottleneck for
slidewise's own run), so a wrong result fails the benchmark instead of
being timed (std: within compare_rolling.tolerance, as compare_many.py)."""

import numpy as np

from ._check import check
from .compare_rolling import tolerance

N = 2_000_000


def _setup():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, N).cumsum()
    ws = sorted(set(int(w) for w in rng.integers(1, 32769, 64)))
    return x, ws


class RollingMany:
    params = (["slidewise", "bottleneck", "polars"], ["max", "std"])
    param_names = ["library", "agg"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, library, agg):
        import pyarrow as pa
        import slidewise as sw

        x, ws = _setup()
        arr = pa.array(x)
        mine = lambda: sw.rolling_many(arr, ws, agg)  # noqa: E731
        # min_count / min_samples = 1: partial windows at the start, as slidewise's default
        if library == "polars":
            import polars as pl

            s = pl.Series(x)
            f = getattr(s, f"rolling_{agg}")
            peer = lambda: [f(w, min_samples=1) for w in ws]  # noqa: E731
        else:
            import bottleneck as bn

            f = getattr(bn, f"move_{agg}")
            kw = {"ddof": 1} if agg == "std" else {}
            peer = lambda: [f(x, w, min_count=1, **kw) for w in ws]  # noqa: E731
        self.run = mine if library == "slidewise" else peer
        # a max picks one of the values: equal, bit for bit; a std within
        # the peer's drift (compare_rolling.tolerance)
        name = "bottleneck" if library == "slidewise" else library
        for w, got, want in zip(ws, mine().columns, peer()):
            check(f"RollingMany({library}, {agg}), window {w}", got, want, name, **tolerance(agg, name, x, w))

    def time_64_windows(self, library, agg):
        self.run()


class RollingManyMissing:
    """The same 64 windows over the column with 1% of its rows null (issue
    36: the shared passes mask the null slots as they load them), beside
    the clean column: their ratio is the share of the clean speed. Each
    setup checks every window against rolling() on that window alone
    (within 1e-12, the shared passes' contract), which
    bench_rolling.RollingMissing checks against bottleneck."""

    params = (["nulls", "clean"], ["max", "std", "mean"])
    param_names = ["column", "agg"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, column, agg):
        import pyarrow as pa
        import slidewise as sw

        x, ws = _setup()
        miss = np.random.default_rng(36).random(N) < 0.01
        arr = pa.array(x, mask=miss) if column == "nulls" else pa.array(x)
        self.run = lambda: sw.rolling_many(arr, ws, agg)  # noqa: E731
        got = self.run()
        for w in ws[::8]:
            check(f"RollingManyMissing({column}, {agg}), window {w}", got.column(f"{agg}_{w}"), sw.rolling(arr, w, agg),
                  "rolling", rtol=1e-12, atol=1e-12)

    def time_64_windows(self, column, agg):
        self.run()
