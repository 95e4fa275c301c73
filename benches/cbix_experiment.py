"""The CBiX experiment: CBiX vs general FlatFAT vs Two-Stacks-extended vs
recalc over windows of n = 2^10..2^20 partials with p in {0, 1, 4, 16} late
partials per slide (uniform over the window): ⊕ calls per slide and slides
per second, against Table 1 of the CBiX paper:

    FlatFAT  (p + 1) * log2(n)
    CBiX     (p1 + 1) * log2(n/k) + 3 * p2     (p1 late partials in the
             oldest checkpoint, p2 = p - p1 in the others; expected
             p1 = p / k for uniform lateness)
    Two-Stacks  p * (n + 1) / 4

The per-element work runs in Rust (examples/cbix_experiment.rs, one
monomorphised loop per aggregator), so Python does not distort it.

    python benches/cbix_experiment.py [n_min_log2 n_max_log2]

writes benches/paper/cbix_experiment.{csv,md,png}.
``--csv FILE`` tables and plots a CSV the example already printed instead.
"""

from __future__ import annotations

import csv
import io
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "paper")
STEM = os.environ.get("CBIX_STEM", "cbix_experiment")  # output file names


def run(lo: int, hi: int) -> list:
    cmd = ["cargo", "run", "-q", "--profile", "fastdev", "-p", "slidewise-core", "--example", "cbix_experiment",
           "--", str(lo), str(hi)]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def predicted(alg: str, n: int, p: int, k: int) -> float:
    if alg == "flatfat":
        return (p + 1) * math.log2(n)
    if alg == "cbix":
        p1 = p / k
        return (p1 + 1) * math.log2(n / k) + 3 * (p - p1)
    if alg == "two_stacks":
        return p * (n + 1) / 4
    return float("nan")


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--csv":
        with open(sys.argv[2]) as f:
            rows = list(csv.DictReader(f))
    else:
        lo, hi = (int(a) for a in sys.argv[1:3]) if len(sys.argv) >= 3 else (10, 20)
        rows = run(lo, hi)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, STEM + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    by = {(r["algorithm"], int(r["n"]), int(r["p"])): r for r in rows}
    ks = {int(r["n"]): int(r["k"]) for r in rows if r["algorithm"] == "cbix"}
    ns = sorted({int(r["n"]) for r in rows})
    lines = [
        "# CBiX experiment: ⊕ calls per slide and throughput (one run, same machine)",
        "",
        "Window of n partials sliding by one partial; p late partials per slide folded into uniformly random",
        "slots of the window; then a query. Sum over int64. `ops` = measured ⊕ calls per slide (amortised,",
        "including checkpoint rebuilds, flips and resizes); `T1` = CBiX paper Table 1 prediction",
        "(CBiX: p1 = p/k expected late partials in the oldest checkpoint); `k`: checkpoints CBiX runs with (Theorem 4.1 with p1 = 0, then m = n/k rounded up to a power of two).",
        "Throughput ratio = CBiX slides/s over general FlatFAT slides/s (best of 5, at least 200,000 slides).",
        "",
        "| n | p | k | CBiX ops | CBiX T1 | FlatFAT ops | FlatFAT T1 | Two-Stacks ops | Two-Stacks T1 | recalc ops"
        " | CBiX/FlatFAT throughput |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in ns:
        k = ks[n]
        for p in (0, 1, 4, 16):
            c, f = by.get(("cbix", n, p)), by.get(("flatfat", n, p))
            t, r = by.get(("two_stacks", n, p)), by.get(("recalc", n, p))
            cell = lambda x: f"{float(x['ops_per_slide']):.1f}" if x else "–"  # noqa: E731
            ratio = float(c["slides_per_sec"]) / float(f["slides_per_sec"]) if c and f else float("nan")
            lines.append(
                f"| 2^{int(math.log2(n))} | {p} | {k} | {cell(c)} | {predicted('cbix', n, p, k):.1f} | {cell(f)} | "
                f"{predicted('flatfat', n, p, k):.1f} | {cell(t)} | {predicted('two_stacks', n, p, k):.1f} | {cell(r)} | "
                f"{ratio:.2f}x |"
            )
    with open(os.path.join(OUT, STEM + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(18, 8), sharex=True)
    colors = {"cbix": "C0", "flatfat": "C1", "two_stacks": "C2", "recalc": "C3"}
    for j, p in enumerate((0, 1, 4, 16)):
        for alg, col in colors.items():
            pts = [(n, by[(alg, n, p)]) for n in ns if (alg, n, p) in by]
            if not pts:
                continue
            xs = [n for n, _ in pts]
            axes[0, j].plot(xs, [float(r["ops_per_slide"]) for _, r in pts], "o-", color=col, label=alg)
            if alg != "recalc":
                axes[0, j].plot(xs, [predicted(alg, n, p, ks[n]) for n in xs], "--", color=col, alpha=0.6,
                                label=f"{alg} (Table 1)")
            axes[1, j].plot(xs, [float(r["slides_per_sec"]) for _, r in pts], "o-", color=col, label=alg)
        axes[0, j].set_title(f"p = {p} late partials / slide")
        for ax in axes[:, j]:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
        axes[1, j].set_xlabel("n (partials in the window)")
    axes[0, 0].set_ylabel("⊕ calls per slide")
    axes[1, 0].set_ylabel("slides per second")
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].legend(fontsize=7)
    fig.suptitle("CBiX vs general FlatFAT vs Two-Stacks-extended vs recalc (sum over int64)")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, STEM + ".png"), dpi=110)


if __name__ == "__main__":
    main()
