"""`slidewise` command line: `slidewise demo` runs the main job's demo."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="slidewise", description="Incremental sliding-window aggregation")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="DEBS-style sensor stream: several ACQs, timed next to polars and bottleneck")
    d.add_argument("--rows", type=int, default=10_000_000)
    d.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    if args.cmd == "demo":
        from slidewise import demo

        demo.run(rows=args.rows, repeat=args.repeat)
    return 0
