"""Write docs/benchmarks.md: run the comparison scripts of benches/ and put
their tables on one page, each under the command that reproduces it, the
CPU, the threads slidewise may use, the date and the commit.

    python benches/report.py            # the full runs (about 20-40 minutes on 2 cores)
    python benches/report.py --quick    # the same inputs, fewer repeats, cases and jobs (10-20 minutes)
    python benches/report.py --check    # each script's own --quick: the checks only, timings not worth reading
    python benches/report.py --only rolling,spark --output /tmp/b.md

`make report` builds the release extension and runs the full report;
`make report REPORT_ARGS=--quick` the quick one.

Every script checks each peer's result against slidewise's on the same data
before it times anything, and stops (exit status 1, naming the case) on a
difference; this script then stops too and writes nothing. The scripts
print markdown tables and a few lines of text: the tables are copied as
they are, the text into ``text`` blocks beside them.

The page ends with a static section, ``benches/benchmarks_earlier.md``: the
last tables measured on the other CPU this project runs on (an Intel Xeon),
dated, which no run here can reproduce. Replace it when that CPU comes back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence

if __package__:  # imported from the benches package (asv discovers every module)
    from ._check import cpu_model, cpus
else:  # python benches/report.py
    from _check import cpu_model, cpus

ROOT = Path(__file__).resolve().parent.parent
EARLIER = ROOT / "benches" / "benchmarks_earlier.md"


class Run(NamedTuple):
    args: Sequence[str]  # after `python`
    env: Dict[str, str] = {}


class Section(NamedTuple):
    key: str
    title: str
    about: str  # what the table compares, in a sentence or two
    full: List[Run]
    quick: List[Run]
    check: List[Run]


SECTIONS = [
    Section(
        "rolling", "`rolling()`: one window, per row",
        "slidewise's per-row kernels against bottleneck's `move_*`, polars' `rolling_*` and pandas' "
        "`rolling()`, on a random walk of float64. Mrows/s; ratio = slidewise's rate / the peer's. "
        "bottleneck and pandas run on one thread, polars on its pool. Then the exactness of the sums and "
        "variances against exact per-window values.",
        full=[Run(["benches/compare_rolling.py", "--repeat", "5"]),
              Run(["benches/compare_rolling.py", "--repeat", "5", "--threads", "1", "--aggs", "max,mean,std"])],
        quick=[Run(["benches/compare_rolling.py", "--repeat", "3", "--aggs", "max,min,mean,std"])],
        check=[Run(["benches/compare_rolling.py", "--quick"])],
    ),
    Section(
        "missing", "`rolling()` with missing values",
        "The same kernels with 1% and 10% of the rows missing at random and with runs of 10,000 missing "
        "rows: as Arrow nulls, as NaN with `nan=\"skip\"` and with `nan=\"propagate\"`, each as a share "
        "of the kernel's own speed on the clean column, against bottleneck on the data with NaN and polars "
        "with nulls; then the same with slidewise on one thread, as bottleneck runs. Then the other callers "
        "(keyed rolling, time windows, rolling_many, Stream pushes) on a clean column and with 1% nulls.",
        full=[Run(["benches/compare_rolling.py", "--missing", "--repeat", "3"]),
              Run(["benches/compare_rolling.py", "--missing", "--repeat", "3", "--aggs",
                   "count,first,last,first_ignore_nulls,last_ignore_nulls"]),
              Run(["benches/compare_rolling.py", "--missing", "--repeat", "3", "--threads", "1", "--aggs", "max,mean,std"]),
              Run(["benches/compare_missing_callers.py", "--repeat", "3"])],
        quick=[Run(["benches/compare_rolling.py", "--missing", "--repeat", "2", "--aggs", "max,mean,std,count,first,first_ignore_nulls,last_ignore_nulls"]),
               Run(["benches/compare_rolling.py", "--missing", "--repeat", "2", "--threads", "1", "--aggs", "max,mean,std"]),
               Run(["benches/compare_missing_callers.py", "--repeat", "3"])],
        check=[Run(["benches/compare_rolling.py", "--missing", "--quick"]),
               Run(["benches/compare_missing_callers.py", "--quick"])],
    ),
    Section(
        "many", "`rolling_many()`: 64 windows in one call",
        "64 random windows in [1, 32768] in one `rolling_many` call against 64 bottleneck calls, and the "
        "floor any implementation returning fresh columns pays: numpy allocating and writing the 64 outputs.",
        full=[Run(["benches/compare_many.py", "--agg", agg, "--skip-polars", "--repeat", "2"])
              for agg in ("max", "std", "sum")],
        quick=[Run(["benches/compare_many.py", "--agg", agg, "--rows", "4000000", "--skip-polars",
                    "--repeat", "2"]) for agg in ("max", "std")],
        check=[Run(["benches/compare_many.py", "--quick", "--agg", "max"])],
    ),
    Section(
        "order", "Rolling median, quantile and rank",
        "slidewise against bottleneck's `move_median` / `move_rank`, polars' `rolling_median` / "
        "`rolling_quantile` (q = 0.9, linear) and pandas. Mrows/s; ratio = slidewise / peer. Then the "
        "median and rank with 1% and 10% of the rows missing (nulls for slidewise and polars, NaN for "
        "bottleneck and pandas).",
        full=[Run(["benches/compare_order_stats.py", "--repeat", "5"]),
              Run(["benches/compare_order_stats.py", "--repeat", "5", "--aggs", "median,rank", "--missing", "0.01"]),
              Run(["benches/compare_order_stats.py", "--repeat", "5", "--aggs", "median,rank", "--missing", "0.1"])],
        quick=[Run(["benches/compare_order_stats.py", "--repeat", "3"]),
               Run(["benches/compare_order_stats.py", "--repeat", "3", "--aggs", "median,rank", "--missing", "0.01"]),
               Run(["benches/compare_order_stats.py", "--repeat", "3", "--aggs", "median,rank", "--missing", "0.1"])],
        check=[Run(["benches/compare_order_stats.py", "--quick"])],
    ),
    Section(
        "keys", "Keys: `rolling(..., keys=)` and keyed streams",
        "Keyed rolling against polars' `rolling_*(w).over(k)` / `rolling_*_by(t, \"10s\").over(k)` and "
        "pandas' `groupby(k).rolling(...)`, 2M rows, keys drawn uniformly; ratio = peer time / slidewise "
        "time (> 1: slidewise faster). The full run adds the memory per key of keyed streams and their "
        "push rates.",
        full=[Run(["benches/bench_keys.py"])],
        quick=[Run(["benches/bench_keys.py", "--rolling"])],
        check=[Run(["benches/bench_keys.py", "--quick"])],
    ),
    Section(
        "spark", "Spark: `slidewise.spark.rolling` against Spark's window frames",
        "Spark local[2]. A rolling max over 1,000 rows, unkeyed and keyed, against Spark's segment-tree "
        "frame and an identity `mapInArrow` pass (the floor for any job that hands every row to Python); "
        "then the keyed feature job (3 windows x max / mean / std over 8 Parquet files) on a clean column "
        "and with nulls, the files in time order and in random order (the shuffle path). "
        "Seconds, best of the repeats.",
        full=[Run(["benches/compare_spark.py", "--job", "rolling", "--repeat", "5", "--skip-default"]),
              Run(["benches/compare_spark.py", "--job", "features", "--repeat", "3", "--skip-default",
                   "--missing", "0,0.01,0.1", "--shuffled"])],
        quick=[Run(["benches/compare_spark.py", "--job", "rolling", "--repeat", "3", "--skip-default",
                    "--warmup", "1"]),
               Run(["benches/compare_spark.py", "--job", "features", "--repeat", "2", "--skip-default",
                    "--missing", "0,0.1", "--shuffled"])],
        check=[Run(["benches/compare_spark.py", "--quick", "--skip-default"])],
    ),
    Section(
        "spark-aggregate", "Spark: `slidewise.spark.aggregate` against `groupBy(window)`",
        "Spark local[2], classic and Spark Connect (a Connect server of its own beside the classic "
        "session). Sum, max and mean over 10-minute windows sliding 1 minute per key (1,000 keys) and over "
        "1-hour windows sliding 5 minutes unkeyed, 2M rows over 7 days from 8 Parquet files, every window "
        "written; results checked against Spark's first. Seconds, best of the repeats.",
        full=[Run(["benches/compare_spark.py", "--job", "aggregate", "--connect", "--repeat", "3"])],
        quick=[Run(["benches/compare_spark.py", "--job", "aggregate", "--connect", "--repeat", "2"])],
        check=[Run(["benches/compare_spark.py", "--job", "aggregate", "--quick"])],
    ),
    Section(
        "spark-stream", "Spark Structured Streaming: `stream_aggregate` against Spark's own",
        "Spark local[2], RocksDB state on both sides. The same micro-batches (a Parquet file source, "
        "maxFilesPerTrigger=1; 3% of rows up to 2 minutes late, 2% far behind the watermark) through "
        "`withWatermark.groupBy(key, F.window(10 min, 1 min)).agg(sum, max, avg)` and `stream_aggregate(..., "
        "wide=True)` (a row per window, as Spark's), windows checked equal first; then empty functions on the same stream: `applyInPandasWithState`, "
        "stream_aggregate's API (the floor of its work), and the `transformWithState` processors it did "
        "not choose; then 100,000 keys, keys drawn by Zipf's law, session windows (`F.session_window(ts, "
        "1 minute)`) through both, and the job through a Spark Connect client. Seconds, best of the repeats (with three or more, the median and every run below the table: Spark's own time moves 3.0-4.5 s between runs), and the RocksDB bytes of the last batch.",
        full=[Run(["benches/compare_spark_stream.py", "--floor", "--repeat", "3"]),
              Run(["benches/compare_spark_stream.py", "--keys", "100000", "--repeat", "2"]),
              Run(["benches/compare_spark_stream.py", "--skew", "1.2", "--repeat", "3"]),
              Run(["benches/compare_spark_stream.py", "--session", "1 minute", "--repeat", "3"]),
              Run(["benches/compare_spark_stream.py", "--connect", "--repeat", "3"]),
              Run(["benches/compare_spark_stream.py", "--connect", "--keys", "100000", "--repeat", "1"])],
        quick=[Run(["benches/compare_spark_stream.py", "--floor", "--repeat", "3"]),
               Run(["benches/compare_spark_stream.py", "--keys", "100000", "--repeat", "1"]),
               Run(["benches/compare_spark_stream.py", "--skew", "1.2", "--repeat", "2"]),
               Run(["benches/compare_spark_stream.py", "--session", "1 minute", "--repeat", "2"]),
               Run(["benches/compare_spark_stream.py", "--connect", "--repeat", "2"])],
        check=[Run(["benches/compare_spark_stream.py", "--quick"])],
    ),
]


def sh(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=True, cwd=ROOT,
                              env={**os.environ, "LC_ALL": "C"}).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def cpu() -> str:
    """The CPU's model name (lscpu, as the scripts print it) and the widest
    SIMD level it has."""
    flags = next((line for line in sh(["lscpu"]).splitlines() if line.startswith("Flags:")), "")
    simd = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
    return f"{cpu_model()} ({simd})"


def commit() -> str:
    head = sh(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = sh(["git", "status", "--porcelain", "--untracked-files=no"])
    return head + (" (with uncommitted changes)" if dirty else "")


def built_version() -> str:
    """``slidewise.__version__`` as the installed extension reports it (the
    dist-info of an editable install can name another version than the
    compiled module it loads)."""
    return sh([sys.executable, "-c", "import slidewise; print(slidewise.__version__)"]) or "not importable"


def source_version() -> str:
    """``[workspace.package] version`` of Cargo.toml: what the checkout builds."""
    import re

    m = re.search(r'^\[workspace\.package\][^\[]*?^version = "([^"]+)"',
                  (ROOT / "Cargo.toml").read_text(encoding="utf-8"), re.M | re.S)
    return m.group(1) if m else "unknown"


def versions() -> str:
    out = [f"Python {platform.python_version()}", f"slidewise {built_version()}"]
    for name in ("numpy", "pyarrow", "bottleneck", "polars", "pandas", "pyspark"):
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(out)


def load() -> str:
    try:
        return "%.1f" % os.getloadavg()[0]
    except OSError:
        return "?"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def command(run: Run) -> str:
    env = " ".join(f"{k}={v}" for k, v in run.env.items())
    return (env + " " if env else "") + "python " + " ".join(shlex.quote(a) for a in run.args)


def threads(run: Run, args: Sequence[str], stdout: str) -> str:
    """What the script's machine line says, else what the command asks."""
    for line in stdout.splitlines():
        if "slidewise threads:" in line:
            return line.split("slidewise threads:", 1)[1].split(";")[0].strip()
    if "--threads" in args:
        return args[list(args).index("--threads") + 1]
    t = run.env.get("SLIDEWISE_THREADS") or os.environ.get("SLIDEWISE_THREADS")
    return t if t else f"up to {min(cpus(), 4)}"


def render(stdout: str) -> str:
    """Tables as they are; runs of other lines in ``text`` blocks."""
    out: List[str] = []
    text: List[str] = []

    def flush_text() -> None:
        while text and not text[-1].strip():
            text.pop()
        while text and not text[0].strip():
            text.pop(0)
        if text:
            out.append("```text\n" + "\n".join(text) + "\n```\n")
        text.clear()

    lines = stdout.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            flush_text()
            table = []
            while i < len(lines) and lines[i].startswith("|"):
                table.append(lines[i])
                i += 1
            out.append("\n".join(table) + "\n")
        else:
            text.append(lines[i])
            i += 1
    flush_text()
    return "\n".join(out)


def run_one(run: Run, stamp: str) -> str:
    cmd = [sys.executable] + list(run.args)
    print(f"\n== {command(run)}", file=sys.stderr, flush=True)
    started, t0, load0 = now(), time.monotonic(), load()
    p = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **run.env}, stdout=subprocess.PIPE, text=True)
    sys.stderr.write(p.stdout)
    if p.returncode != 0:
        sys.exit(f"report: `{command(run)}` failed (exit status {p.returncode}); nothing written")
    head = (f"`{command(run)}` · CPU {cpu()}, {cpus()} CPUs available · slidewise threads: "
            f"{threads(run, run.args, p.stdout)} · {started}, {time.monotonic() - t0:.0f} s, load average "
            f"{load0} at the start · commit {stamp}")
    return head + "\n\n" + render(p.stdout)


def splice(page: str, blocks: Dict[str, str], how: str) -> str:
    """``page`` with the sections titled as ``blocks``' keys replaced by
    them (the others, the header and the earlier CPU's tables kept), and a
    line under the header per section rerun, saying ``how`` (replacing
    that section's line of an earlier rerun)."""
    head, *parts = page.split("\n## ")
    # one line per section rerun: a section's earlier line goes
    lines = [ln for ln in head.rstrip("\n").split("\n") if not any(ln.startswith(f"Rerun since: {t}: ") for t in blocks)]
    kept = re.sub(r"\n{3,}", "\n\n", "\n".join(lines).rstrip("\n"))
    out = [kept + "".join(f"\n\nRerun since: {t}: by {how}." for t in blocks) + "\n"]
    for p in parts:
        title = p.split("\n", 1)[0]
        out.append(blocks[title].rstrip("\n") + "\n" if title in blocks else "## " + p.rstrip("\n") + "\n")
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats")
    mode.add_argument("--check", action="store_true", help="each script's --quick: the checks only")
    ap.add_argument("--only", default=None, help="comma-separated sections: " + ",".join(s.key for s in SECTIONS))
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    a = ap.parse_args(argv)
    chosen = SECTIONS if a.only is None else [s for s in SECTIONS if s.key in a.only.split(",")]
    if a.only is not None and len(chosen) != len(a.only.split(",")):
        ap.error(f"--only takes {', '.join(s.key for s in SECTIONS)}")
    kind = "check" if a.check else "quick" if a.quick else "full"
    if built_version() != source_version():
        # With a CARGO_TARGET_DIR shared between checkouts, maturin can install
        # another checkout's build: measure nothing rather than the wrong code.
        sys.exit(f"report: the installed extension is slidewise {built_version()}, the checkout builds "
                 f"{source_version()}: rebuild it (`make build-release`) and check before measuring")
    stamp = commit()
    start = now()
    me = "python benches/report.py" + {"full": "", "quick": " --quick", "check": " --check"}[kind]
    body: List[str] = []
    blocks = {}
    for s in chosen:
        runs = getattr(s, kind)
        block = [f"## {s.title}\n\n{s.about}\n"] + [run_one(r, stamp) for r in runs]
        blocks[s.title] = "\n".join(block)
        body.extend(block)
    if a.only is not None and Path(a.output).exists():
        # the other sections stay as they are on the page: replace these only
        page = splice(Path(a.output).read_text(encoding="utf-8"), blocks, f"`{me} --only {a.only}` on {start}, commit {stamp}")
        Path(a.output).write_text(page, encoding="utf-8")
        print(f"wrote {a.output} ({', '.join(blocks)})", file=sys.stderr)
        return
    note = {
        "full": "the full runs",
        "quick": "the quick runs: the full runs' inputs (rolling_many's 4M rows instead of 10M), with fewer "
                 "repeats, cases and jobs",
        "check": "each script's `--quick`, the checks only: **the timings are not worth reading**",
    }[kind]
    page = f"""# Benchmarks

<!-- Generated by benches/report.py: do not edit by hand. Run `make report` (or `{me}`). -->

Generated by `{me}` ({note}) on {start}.

- CPU: {cpu()}, {cpus()} CPUs available (a KVM guest shared with other work: absolute rates are noisy,
  so every table compares libraries measured in the same run).
- Commit: {stamp}. `make report` builds the release extension first; run by hand, the script measures
  whatever build is installed.
- {versions()}.

Every script checks each peer's result against slidewise's on the same data before timing it, and
stops on a difference. Each table below names the command that reproduces it, the CPU, the threads
slidewise may use, when it ran and the commit. The design behind the figures is in
[DESIGN.md](DESIGN.md); the README shows the headline ratios.

""" + "\n".join(body)
    if EARLIER.exists() and a.only is None:
        page += "\n" + EARLIER.read_text(encoding="utf-8")
    Path(a.output).write_text(page.rstrip("\n") + "\n", encoding="utf-8")
    print(f"wrote {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
