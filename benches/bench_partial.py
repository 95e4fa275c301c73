"""asv: pane reduction (partial aggregation) against numpy.

A tumbling count window (range = slide = pane) over one batch makes the
window operator reduce every pane of the batch into one partial (SIMD, run-
time dispatched: slidewise_core::ops::reduce) and emit it; numpy does the
same slices with ``np.add.reduceat`` / ``np.maximum.reduceat``. Same data,
same run, so the ratio is what to read. Each setup first checks slidewise's
panes against numpy's, so a wrong result fails the benchmark instead of
being timed.
"""

import numpy as np

from ._check import check

N = 4_000_000
PANES = [8, 64, 1024, 65536]


class PaneReduction:
    params = (["sum", "max"], PANES, ["slidewise", "numpy"])
    param_names = ["agg", "pane", "library"]
    timeout = 300

    def setup(self, agg, pane, library):
        import pyarrow as pa
        import slidewise as sw

        rng = np.random.default_rng(3)
        x = rng.normal(0.0, 1.0, N)
        batch = pa.record_batch({"v": pa.array(x)})
        q = [sw.Query(agg, pane, pane)]
        idx = np.arange(0, N, pane)
        f = np.add.reduceat if agg == "sum" else np.maximum.reduceat
        mine = lambda: sw.Stream(q).push(batch)  # noqa: E731
        self.run = mine if library == "slidewise" else (lambda: f(x, idx))
        # push() emits the full panes (the last, partial one waits for
        # flush()): numpy's first N // pane are the overlap. max: equal; sum:
        # 1e-9 relative plus 1e-9 of the pane's sum of |x| (the two sum in
        # different orders, and a sum's rounding error is relative to its
        # terms' magnitudes, not to the sum, which cancels towards 0 here).
        full = N // pane
        tol = {"rtol": 0.0} if agg == "max" else {"atol": 1e-9 * np.add.reduceat(np.abs(x), idx)[:full]}
        check(f"PaneReduction({agg}, {pane})", mine()[q[0].name].column("value"), f(x, idx)[:full],
              "numpy reduceat", **tol)

    def time_reduce(self, agg, pane, library):
        self.run()
