"""Reproduce Exp 1-5 of the F1 paper (Shein et al., CIKM'15, §5, Table 1):
WeaveShare plan-generation time with each edge counter, Bit Set vs F1 vs
F1 + GCD table ("F1 + Opt") vs our "fast".

Workloads as §5.1 describes them: Q_num ACQs on one stream; slides drawn
from 1..S_max (Normal) or from the primes <= S_max (Diverse) with a Zipf
distribution whose skew favours *large* slides (skew 0 = uniform); overlap
factor per ACQ uniform in 1..Ω_max; input rate λ. The paper does not give
ranges; we use range = Ω·slide, so Ω is exactly the query's overlap factor
and there are no fragments (as in its experiments' description).

Every run is a separate process with a time limit: a method that exceeds it
or refuses (the Bit Set's 2^30-bit bound, F1's 2^28-term bound) is marked
"stopped" and not run for larger settings of that experiment, like the
paper's "out of memory" crashes.

    python benches/f1_experiments.py            # quick: ~3 minutes
    python benches/f1_experiments.py --full     # the paper's grids, 5 repeats

Writes benches/paper/f1_experiments.{md,csv,png}.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

import slidewise as sw

METHODS = ["bitset", "f1", "f1_memo", "fast"]
OUT = Path(__file__).resolve().parent / "paper"

# Table 1 of the paper; "grid" is the varied parameter.
EXPS = {
    1: dict(param="q_num", q_num=None, s_max=1000, lam=0.002, zipf=0.5, omega=10, gen="Nrm",
            quick=[100, 300, 550, 1000, 10_000, 100_000, 1_000_000],
            full=[100, 200, 300, 400, 550, 1000, 3000, 10_000, 100_000, 1_000_000]),
    2: dict(param="s_max", q_num=1000, s_max=None, lam=1, zipf=3, omega=100, gen="Div",
            quick=[100, 400, 800, 2000, 10_000],
            full=[100, 200, 400, 600, 800, 1000, 2000, 5000, 10_000]),
    3: dict(param="lam", q_num=1000, s_max=100, lam=None, zipf=1, omega=1000, gen="Nrm",
            quick=[100, 900, 10_000, 1_000_000],
            full=[100, 400, 900, 10_000, 100_000, 1_000_000]),
    4: dict(param="zipf", q_num=50, s_max=500, lam=0.1, zipf=None, omega=100, gen="Nrm",
            quick=[0, 1, 2.25, 5, 100],
            full=[0, 0.5, 1, 1.5, 2, 2.25, 3, 5, 10, 50, 100]),
    5: dict(param="omega", q_num=1000, s_max=600, lam=1, zipf=3, omega=None, gen="Div",
            quick=[100, 40, 10, 1],
            full=[100, 80, 60, 40, 20, 10, 5, 1]),
}
# Paper, Table 2: average / max BS/F1 runtime ratio, and where BS stopped.
PAPER = {1: (350, 790, "550"), 2: (2200, 10_000, "800"), 3: (3800, 16_000, "900"),
         4: (14_000, 60_000, "2.25"), 5: (5600, 16_000, "40")}


def primes_upto(n: int) -> np.ndarray:
    sieve = np.ones(n + 1, bool)
    sieve[:2] = False
    for p in range(2, int(n ** 0.5) + 1):
        if sieve[p]:
            sieve[p * p::p] = False
    return np.flatnonzero(sieve)


def workload(q_num, s_max, zipf, omega_max, gen, seed):
    rng = np.random.default_rng(seed)
    values = primes_upto(s_max) if gen == "Div" else np.arange(1, s_max + 1)
    # Zipf over ranks counted from the largest slide: skew favours large ones.
    ranks = np.arange(len(values), 0, -1, dtype=float)
    p = ranks ** -float(zipf)
    p /= p.sum()
    slides = rng.choice(values, size=q_num, p=p).astype(np.int64)
    omega = rng.integers(1, omega_max + 1, size=q_num)
    return np.stack([omega * slides, slides], axis=1), omega.astype(float)


def _one(conn, queries, omega, lam, method):
    try:
        t = time.perf_counter()
        p = sw.plan(queries, rate=lam, method=method, omega=omega)
        conn.send(("ok", time.perf_counter() - t, len(p.groups), p.cost, p.no_share_cost))
    except Exception as e:  # the bounds: report, not crash
        conn.send(("refused", str(e)[:80], 0, 0.0, 0.0))


def timed(queries, omega, lam, method, limit):
    a, b = mp.Pipe(False)
    pr = mp.get_context("fork").Process(target=_one, args=(b, queries, omega, lam, method))
    pr.start()
    if a.poll(limit):
        r = a.recv()
        pr.join()
        return r
    pr.kill()
    pr.join()
    return ("timeout", f">{limit:g}s", 0, 0.0, 0.0)


def run(exps, full, limit, repeats):
    rows = []
    for e in exps:
        cfg = EXPS[e]
        stopped = set()
        for v in cfg["full" if full else "quick"]:
            c = dict(cfg)
            c[cfg["param"]] = v
            for rep in range(repeats):
                q, om = workload(c["q_num"], c["s_max"], c["zipf"], c["omega"], c["gen"], seed=1000 * e + rep)
                for m in METHODS:
                    if m in stopped:
                        rows.append(dict(exp=e, param=cfg["param"], value=v, rep=rep, method=m, status="stopped",
                                         seconds="", trees="", cost=""))
                        continue
                    status, sec, trees, cost, _ = timed(q, om, c["lam"], m, limit)
                    if status != "ok":
                        stopped.add(m)
                        print(f"exp {e} {cfg['param']}={v} {m}: {status} {sec}", flush=True)
                        sec = ""
                    rows.append(dict(exp=e, param=cfg["param"], value=v, rep=rep, method=m, status=status,
                                     seconds=sec, trees=trees, cost=cost))
                print(f"exp {e} {cfg['param']}={v} rep {rep}: " + ", ".join(
                    f"{r['method']}={r['seconds'] if r['seconds'] == '' else format(r['seconds'], '.4f')}"
                    for r in rows[-len(METHODS):]), flush=True)
    return rows


def summarise(rows):
    """Per experiment: mean seconds per (value, method); BS/F1 ratios."""
    import collections

    out = {}
    for e in sorted({r["exp"] for r in rows}):
        rs = [r for r in rows if r["exp"] == e]
        values = list(dict.fromkeys(r["value"] for r in rs))
        mean = collections.defaultdict(dict)
        trees = {}
        for v in values:
            for m in METHODS:
                secs = [r["seconds"] for r in rs if r["value"] == v and r["method"] == m and r["status"] == "ok"]
                st = {r["status"] for r in rs if r["value"] == v and r["method"] == m}
                mean[v][m] = (sum(secs) / len(secs)) if secs and st == {"ok"} else None
                t = [r["trees"] for r in rs if r["value"] == v and r["status"] == "ok"]
                if t:
                    trees[v] = sum(t) / len(t)
        ratios = [mean[v]["bitset"] / mean[v]["f1"] for v in values
                  if mean[v]["bitset"] and mean[v]["f1"]]
        bs_last = [v for v in values if mean[v]["bitset"] is not None]
        out[e] = dict(values=values, mean=mean, trees=trees, ratios=ratios,
                      bs_last=bs_last[-1] if bs_last else None)
    return out


def write(rows, summary, full):
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "f1_experiments.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    fmt = lambda x: "stopped" if x is None else (f"{x:.4f}" if x < 10 else f"{x:.1f}")  # noqa: E731
    lines = [f"# F1 paper Exp 1-5, reproduced ({'full' if full else 'quick'} run)", "",
             "WeaveShare plan-generation seconds per edge counter (mean of the repeats). "
             "`stopped`: refused by a bound or over the time limit (then not run for larger settings).", ""]
    lines += ["## Summary beside the paper (Table 2)", "",
              "| Exp | param | BS stopped after (ours) | BS stopped at (paper) | BS/F1 avg (ours) | BS/F1 max (ours) "
              "| BS/F1 avg (paper) | BS/F1 max (paper) |", "|---|---|---|---|---|---|---|---|"]
    for e, s in summary.items():
        r = s["ratios"]
        pa, pm, pst = PAPER[e]
        avg = f"{sum(r) / len(r):.0f}x" if r else "-"
        mx = f"{max(r):.0f}x" if r else "-"
        lines.append(f"| {e} | {EXPS[e]['param']} | {s['bs_last']} | {pst} | {avg} | {mx} | {pa}x | {pm}x |")
    for e, s in summary.items():
        lines += ["", f"## Exp {e}: varying {EXPS[e]['param']}", "",
                  f"| {EXPS[e]['param']} | trees | " + " | ".join(METHODS) + " | BS/F1 | F1/F1+Opt |",
                  "|---" * (len(METHODS) + 4) + "|"]
        for v in s["values"]:
            m = s["mean"][v]
            bf = f"{m['bitset'] / m['f1']:.0f}x" if m["bitset"] and m["f1"] else "-"
            fo = f"{m['f1'] / m['f1_memo']:.2f}x" if m["f1"] and m["f1_memo"] else "-"
            lines.append(f"| {v} | {s['trees'].get(v, 0):.0f} | " + " | ".join(fmt(m[k]) for k in METHODS)
                         + f" | {bf} | {fo} |")
    (OUT / "f1_experiments.md").write_text("\n".join(lines) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(summary), figsize=(4 * len(summary), 3.4))
    axes = np.atleast_1d(axes)
    for ax, (e, s) in zip(axes, summary.items()):
        xs = [str(v) for v in s["values"]]
        for m, mk in zip(METHODS, "osD^"):
            ys = [s["mean"][v][m] for v in s["values"]]
            ax.plot([x for x, y in zip(xs, ys) if y], [y for y in ys if y], marker=mk, label=m)
        ax.set_yscale("log")
        ax.set_title(f"Exp {e}: {EXPS[e]['param']}")
        ax.set_xlabel(EXPS[e]["param"])
        ax.tick_params(axis="x", rotation=45)
    axes[0].set_ylabel("plan time (s, log)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(OUT / "f1_experiments.png", dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="the paper's grids, 5 repeats, 120 s limit")
    ap.add_argument("--quick", action="store_true", help="the default: short grids, 1 repeat, 20 s limit")
    ap.add_argument("--exp", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    ap.add_argument("--limit", type=float, default=None)
    a = ap.parse_args()
    limit = a.limit or (120.0 if a.full else 20.0)
    rows = run(a.exp, a.full, limit, 5 if a.full else 1)
    s = summarise(rows)
    write(rows, s, a.full)
    print((OUT / "f1_experiments.md").read_text())


if __name__ == "__main__":
    main()
