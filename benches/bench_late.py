"""asv: the Python Stream over an out-of-order stream (time windows with
lateness), each general aggregator in one run so the ratios are comparable.

Rows arrive shuffled within a distance d of their time order (bounded
disorder); lateness covers most of it, so most rows update the slices of
the next window in place and a few come back as late rows.
"""

import numpy as np

N = 500_000
BATCH = 50_000


def _data(d):
    rng = np.random.default_rng(7)
    ts = np.cumsum(rng.integers(0, 20, N)).astype(np.int64) * 1_000_000  # ~10 ms apart
    idx = np.arange(N) + rng.integers(0, d + 1, N)
    order = np.argsort(idx, kind="stable")
    return ts[order], rng.normal(0.0, 1.0, N)


class LateStream:
    params = (["sum", "max"], [16, 1024], ["cbix", "flatfat", "two_stacks"])
    param_names = ["agg", "disorder", "algorithm"]
    timeout = 300

    def setup(self, agg, disorder, algorithm):
        import pyarrow as pa

        ts, v = _data(disorder)
        self.batches = [
            pa.table({"v": pa.array(v[i:i + BATCH]), "ts": pa.array(ts[i:i + BATCH]).cast(pa.timestamp("ns"))})
            for i in range(0, N, BATCH)
        ]

    def time_push(self, agg, disorder, algorithm):
        import slidewise as sw

        s = sw.Stream([sw.Query(agg, "60s", "1s"), sw.Query(agg, "10s", "1s")], value="v", time="ts",
                      lateness="2s", algorithm=algorithm)
        for b in self.batches:
            s.push(b)
        s.flush()
        s.late_rows()
