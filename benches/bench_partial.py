"""asv: pane reduction (partial aggregation) against numpy.

A tumbling count window (range = slide = pane) over one batch makes the
window operator reduce every pane of the batch into one partial (SIMD, run-
time dispatched: slidewise_core::partial::reduce) and emit it; numpy does the
same slices with ``np.add.reduceat`` / ``np.maximum.reduceat``. Same data,
same run, so the ratio is what to read.
"""

import numpy as np

N = 4_000_000
PANES = [8, 64, 1024, 65536]


class PaneReduction:
    params = (["sum", "max"], PANES, ["slidewise", "numpy"])
    param_names = ["agg", "pane", "library"]
    timeout = 300

    def setup(self, agg, pane, library):
        rng = np.random.default_rng(3)
        x = rng.normal(0.0, 1.0, N)
        if library == "slidewise":
            import pyarrow as pa
            import slidewise as sw

            batch = pa.record_batch({"v": pa.array(x)})
            q = [sw.Query(agg, pane, pane)]
            self.run = lambda: sw.Stream(q).push(batch)
        else:
            idx = np.arange(0, N, pane)
            f = np.add.reduceat if agg == "sum" else np.maximum.reduceat
            self.run = lambda: f(x, idx)

    def time_reduce(self, agg, pane, library):
        self.run()
