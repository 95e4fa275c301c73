"""asv: the optimizer. Edge counting per method on one query set (the ratio
between methods is what matters), and WeaveShare planning of the F1 paper's
Exp 1 workload."""

import numpy as np


def _exp1(q_num, seed=1):
    # F1 paper Exp 1: S_max 1000, Zipf 0.5 towards large slides, Ω_max 10.
    rng = np.random.default_rng(seed)
    values = np.arange(1, 1001)
    p = np.arange(1000, 0, -1, dtype=float) ** -0.5
    slides = rng.choice(values, size=q_num, p=p / p.sum())
    omega = rng.integers(1, 11, size=q_num)
    return np.stack([omega * slides, slides], axis=1), omega.astype(float)


class CountEdges:
    # Slides with a composite the Bit Set can still hold, with fragments.
    params = (["bitset", "f1", "f1_memo", "fast"], ["small", "fragments"])
    param_names = ["method", "set"]

    def setup(self, method, which):
        import slidewise as sw

        if which == "small":
            self.q = [(s, s) for s in (12, 14, 15, 16, 18, 20, 21, 22, 25, 27)]
        else:
            self.q = [(2 * s + 1, s) for s in (12, 14, 15, 16, 18, 20, 21, 22, 25, 27)]
        self.run = lambda: sw.count_edges(self.q, method=method)

    def time_count_edges(self, method, which):
        self.run()


class Plan:
    params = ([1000, 100_000, 1_000_000], ["f1", "fast"])
    param_names = ["q_num", "method"]
    timeout = 300

    def setup(self, q_num, method):
        import slidewise as sw

        q, om = _exp1(q_num)
        self.run = lambda: sw.plan(q, rate=0.002, method=method, omega=om)

    def time_plan(self, q_num, method):
        self.run()
