"""Regenerate the figures of docs/: ``python docs/plots.py`` (needs matplotlib).

* ``algorithm_map.png``: which kernel ``rolling(..., algorithm="auto")``
  runs, by aggregation and window length. The table below mirrors the
  dispatch in ``rust/core/src/rolling/mod.rs`` (``specialised``),
  ``extreme.rs`` (``TWO_LEVEL_FROM``) and ``order.rs`` (``SORTED_BUFFER_MAX``,
  ``RANK_SORTED_MAX``); docs/algorithms.md explains each choice.
* ``demo_bands.png``: the demo's sensor signal with its rolling bands
  (``slidewise.demo.plot_bands`` on 10 minutes of readings).
"""

from __future__ import annotations

import os
from typing import List, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# Thresholds of the auto dispatch (rows); keep in step with the Rust constants.
TWO_LEVEL_FROM = 1 << 17  # extreme.rs
SORTED_BUFFER_MAX = 192  # order.rs: median / quantile
RANK_SORTED_MAX = 512  # order.rs: rank

KERNELS = {
    "van Herk (raw values, SIMD-dispatched)": "#1f77b4",
    "van Herk, two levels (16k-row sub-blocks)": "#6baed6",
    "compensated Subtract-on-Evict": "#2ca02c",
    "exact moments (double-double van Herk)": "#98df8a",
    "generic block kernel (TwoStacks flip)": "#ff7f0e",
    "sorted buffer": "#9467bd",
    "Suomela sort-based median": "#c5b0d5",
    "Fenwick tree over ranks": "#8c564b",
}

HI = 1 << 22  # right end of the map

# (aggregation label, [(first window, kernel), ...]) in window order.
ROWS: List[Tuple[str, List[Tuple[int, str]]]] = [
    ("max / min", [(1, "van Herk (raw values, SIMD-dispatched)"),
                   (TWO_LEVEL_FROM, "van Herk, two levels (16k-row sub-blocks)")]),
    ("range", [(1, "van Herk (raw values, SIMD-dispatched)")]),
    ("sum / mean / count", [(1, "compensated Subtract-on-Evict")]),
    ("var / std (no nulls)", [(1, "exact moments (double-double van Herk)")]),
    ("var / std (with nulls)", [(1, "generic block kernel (TwoStacks flip)")]),
    ("every other agg\n(argmax, first, geomean, ...)", [(1, "generic block kernel (TwoStacks flip)")]),
    ("median / quantile", [(1, "sorted buffer"), (SORTED_BUFFER_MAX + 1, "Suomela sort-based median")]),
    ("rank", [(1, "sorted buffer"), (RANK_SORTED_MAX + 1, "Fenwick tree over ranks")]),
]


def algorithm_map(path: str) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=100)
    for y, (_, spans) in enumerate(ROWS):
        for i, (start, kernel) in enumerate(spans):
            end = spans[i + 1][0] if i + 1 < len(spans) else HI
            ax.barh(y, end - start, left=start, height=0.7, color=KERNELS[kernel], edgecolor="white")
    ax.set_xscale("log", base=2)
    ax.set_xlim(1, HI)
    ax.set_yticks(range(len(ROWS)), [label for label, _ in ROWS], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("window (rows)")
    ax.set_title('rolling(..., algorithm="auto"): the kernel per aggregation and window', fontsize=10)
    used = [k for k in KERNELS if any(k == kern for _, spans in ROWS for _, kern in spans)]
    ax.legend(handles=[Patch(color=KERNELS[k], label=k) for k in used], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def demo_bands(path: str) -> None:
    from slidewise import demo

    demo.plot_bands(demo.sensor_stream(600 * demo.HZ), path, seconds=600)


if __name__ == "__main__":
    algorithm_map(os.path.join(HERE, "algorithm_map.png"))
    demo_bands(os.path.join(HERE, "demo_bands.png"))
    for name in ("algorithm_map.png", "demo_bands.png"):
        print(name, os.path.getsize(os.path.join(HERE, name)) // 1024, "KB")
