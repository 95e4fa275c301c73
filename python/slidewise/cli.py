"""`slidewise` command line: `slidewise run` runs the main job on Spark, `slidewise demo` its demo."""

from __future__ import annotations

import argparse


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def _fail(message: str) -> int:
    import sys

    print(f"slidewise: error: {message}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="slidewise", description="Incremental sliding-window aggregation")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="DEBS-style sensor stream: several ACQs, timed next to polars and bottleneck")
    d.add_argument("--rows", type=int, default=10_000_000)
    d.add_argument("--repeat", type=int, default=3)
    d.add_argument("--spark-rows", type=int, default=2_000_000, help="rows for the Spark part (0: skip it)")
    d.add_argument("--plot", default="out/slidewise_demo.png", help="PNG path of the bands plot ('' to skip)")
    r = sub.add_parser("run", help="the main job: window aggregates of a parquet/csv file on Spark")
    r.add_argument("--input", required=True, help="parquet or csv file/directory")
    r.add_argument("--value", required=True, help="value column")
    r.add_argument("--time", help="event-time column (needed for time spans like range=10s)")
    r.add_argument("--key", help="key column: windows per key")
    r.add_argument("--query", action="append", required=True,
                   help='e.g. "max range=1000 slide=10" or "mean range=10s slide=5s"; repeat for several')
    r.add_argument("--output", required=True, help="output parquet (a directory per query when several)")
    r.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    r.add_argument("--remote", help="Spark Connect URL (sc://host:port) instead of --master")
    r.add_argument("--format", choices=["parquet", "csv"], help="input format (default: by extension)")
    args = p.parse_args(argv)
    if args.cmd == "run":
        from slidewise import _run

        try:
            _run.run(args.input, args.value, args.query, args.output, time_col=args.time, key=args.key,
                     master=args.master, fmt=args.format, remote=args.remote)
        except (ValueError, TypeError) as e:
            p.error(str(e))
        except _run.CliError as e:
            return _fail(str(e))
        except Exception as e:  # Spark's own errors (AnalysisException, ...): their first line, no traceback
            return _fail(f"{type(e).__name__}: {_first_line(e)}")
        return 0
    if args.cmd == "demo":
        from slidewise import demo

        demo.run(rows=args.rows, repeat=args.repeat, spark_rows=args.spark_rows, plot=args.plot or None)
    return 0
