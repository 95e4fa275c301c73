"""Does a WeaveShare plan really run faster? Run a real sw.Stream over the
same rows under three groupings — the WeaveShare plan, no sharing (one plan
per query), one shared plan for all queries — and compare the measured
throughput with the order eq. 1 predicts.

    python benches/plan_execution.py [--rows 2000000]

Writes benches/paper/plan_execution.md.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import slidewise as sw

OUT = Path(__file__).resolve().parent / "paper"

WORKLOADS = {
    # Many queries with slides that weave well (divisors of 120) and a few
    # that do not: WeaveShare should group the weavers, isolate the rest.
    "mixed": [(r, s) for s in (4, 8, 12, 24, 40, 60, 120) for r in (2 * s, 5 * s)] + [(50, 37), (90, 41), (70, 43)],
    # Identical and nested slides: sharing everything is right.
    "nested": [(k * s, s) for s in (5, 10, 20, 40) for k in (2, 3, 6, 10)],
    # Pairwise coprime slides with fragments: sharing multiplies the edges.
    "coprime": [(2 * s + 3, s) for s in (7, 11, 13, 17, 19, 23)],
    # Small windows over many slides: the final aggregation is cheap.
    "small_windows": [(s + 1, s) for s in range(20, 44, 2)],
}


def cost_of(queries, groups, o1=False):
    """Eq. 1 (count windows: λ = 1 row per row) for a grouping. ``o1``: the
    variant for O(1) final aggregation (SlideSide, FlatFIT, TwoStacks): an
    edge costs one insert into its group's aggregator, not Ω_i combines per
    query, and the queries' answers (Σ 1/slide per row) are the same under
    every grouping, so C' = Σ_groups (λ + E_g)."""
    by = {q.name: q for q in queries}
    c = 0.0
    for g in groups:
        qs = [by[n] for n in g]
        composite = math.lcm(*(q.slide for q in qs))
        if sum(2 * composite // q.slide for q in qs) > MAX_EDGES:
            return math.inf  # plan.rs refuses such a group: the plan cannot run
        e = sw.count_edges(qs, method="fast") / math.lcm(*(q.slide for q in qs))
        c += 1 + (e if o1 else e * sum(q.range / q.slide for q in qs))
    return c


MAX_EDGES = 1 << 24  # plan.rs: edges one period of a shared plan may hold


def throughput(queries, plan, xs, repeats):
    best = math.inf
    for _ in range(repeats):
        try:
            s = sw.Stream(queries, plan=plan)
        except ValueError:  # plan.rs refuses a composite slide over its edge bound
            return 0.0
        t = time.perf_counter()
        for b in xs:
            s.push(b)
        s.flush()
        best = min(best, time.perf_counter() - t)
    return sum(len(b) for b in xs) / best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--agg", default="sum")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    data = rng.normal(size=a.rows)
    xs = [pa.record_batch({"v": pa.array(data[i:i + 100_000])}) for i in range(0, a.rows, 100_000)]
    lines = ["# WeaveShare plans executed", "",
             f"{a.rows:,} float64 rows, agg={a.agg}, count windows, best of {a.repeats}. "
             "Model: eq. 1 per row (λ = 1 row per row; lower is better). Throughput in M rows/s (higher is better).",
             "", "| workload | queries | plan | groups | model cost | M rows/s | model rank | measured rank "
             "| O(1)-final cost | its rank |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    agree = agree1 = 0
    for wname, shapes in WORKLOADS.items():
        queries = [sw.Query(a.agg, r, s, name=f"q{i}_{r}_{s}") for i, (r, s) in enumerate(shapes)]
        p = sw.plan(queries)
        plans = {
            "weaveshare": (p, p.groups),
            "no sharing": ("none", [[q.name] for q in queries]),
            "one tree": ("default", [[q.name for q in queries]]),
        }
        res = {}
        for pname, (arg, groups) in plans.items():
            res[pname] = (len(groups), cost_of(queries, groups), throughput(queries, arg, xs, a.repeats),
                          cost_of(queries, groups, o1=True))
        # Rank the plans that can run; eq. 1 plus feasibility (a group over
        # plan.rs's edge bound costs infinity) must put the others last.
        model = sorted(res, key=lambda k: res[k][1])
        model1 = sorted(res, key=lambda k: res[k][3])
        meas = sorted(res, key=lambda k: (res[k][2] == 0, -res[k][2]))
        agree += model == meas
        agree1 += model1 == meas
        for pname, (ng, cost, tput, cost1) in res.items():
            shown = "cannot run" if math.isinf(cost) else f"{cost:.4f}"
            shown1 = "cannot run" if math.isinf(cost1) else f"{cost1:.4f}"
            got = "cannot run" if tput == 0 else f"{tput / 1e6:.2f}"
            lines.append(f"| {wname} | {len(queries)} | {pname} | {ng} | {shown} | {got} | "
                         f"{model.index(pname) + 1} | {meas.index(pname) + 1} | {shown1} | {model1.index(pname) + 1} |")
        print(wname, {k: (round(v[1], 4), round(v[2] / 1e6, 2)) for k, v in res.items()}, flush=True)
    lines += ["", f"Model order = measured order in {agree} of {len(WORKLOADS)} workloads (eq. 1), "
                  f"{agree1} of {len(WORKLOADS)} (O(1)-final variant)."]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "plan_execution.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
