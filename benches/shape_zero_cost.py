"""The window-shape change costs nothing when the keywords are not used:
the plain calls of this build against those of a build of the commit
before it, in one process, interleaved, best of REPS (docs/DESIGN.md
"Window shape").

    # the build before, as a package named slidewise_base:
    git archive <base> | tar -x -C target/base_src
    (cd target/base_src && CARGO_TARGET_DIR=../ maturin build --release -o ../base_wheel)
    unzip the wheel's slidewise/ into target/base_pkg/slidewise_base/
    python benches/shape_zero_cost.py target/base_pkg
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa

if __name__ == "__main__":  # a script only: asv imports this module too, without a base build
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "target/base_pkg")
    import slidewise as new  # noqa: E402
    import slidewise_base as old  # noqa: E402
    from _check import cpu_model  # noqa: E402

N, REPS = 10_000_000, 9


def main():
    rng = np.random.default_rng(1)
    x = pa.array(rng.normal(size=N))
    ts = pa.array(np.cumsum(rng.integers(0, 3, N)).astype("datetime64[s]"))
    k = pa.array(rng.integers(0, 100, N))
    cases = {
        "sum 1024": lambda sw: sw.rolling(x, 1024, "sum"),
        "max 1024": lambda sw: sw.rolling(x, 1024, "max"),
        "std 1024": lambda sw: sw.rolling(x, 1024, "std"),
        "time sum 1024s": lambda sw: sw.rolling(x, "1024s", "sum", timestamps=ts),
        "time max 1024s": lambda sw: sw.rolling(x, "1024s", "max", timestamps=ts),
        "keyed sum 1024": lambda sw: sw.rolling(x, 1024, "sum", keys=k),
        "keyed time max 1024s": lambda sw: sw.rolling(x, "1024s", "max", keys=k, timestamps=ts),
    }
    print(f"{N:,} float64 rows; {cpu_model()}; best of {REPS}, interleaved")
    print("| plain call | before ms | after ms | after / before |\n|---|---|---|---|")
    for name, f in cases.items():
        assert f(new).equals(f(old)), name
        best = {"old": np.inf, "new": np.inf}
        for _ in range(REPS):
            for tag, sw in (("old", old), ("new", new)):
                t0 = time.perf_counter()
                f(sw)
                best[tag] = min(best[tag], time.perf_counter() - t0)
        print(f"| {name} | {best['old'] * 1e3:.1f} | {best['new'] * 1e3:.1f} | {best['new'] / best['old']:.3f} |")


if __name__ == "__main__":
    main()
