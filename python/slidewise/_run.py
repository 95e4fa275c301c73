"""`slidewise run`: the main job on Spark (local mode by default).

Reads a parquet/csv input, runs one or more aggregate continuous queries
(``"max range=1000 slide=10"``; time spans such as ``range=10s`` need
``--time``) per ``--key`` with :func:`slidewise.spark.aggregate`, and writes
parquet. One query writes ``--output`` itself; several write one dataset per
query name under ``--output``. A progress bar polls Spark's status tracker.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, TextIO, Union

if TYPE_CHECKING:
    from ._query import Query

_KEYS = {"range", "slide", "name", "min_periods"}


def parse_query(text: str) -> Query:
    """'max range=1000 slide=10 [name=x] [min_periods=k]' -> slidewise.Query"""
    import slidewise as sw

    parts = text.split()
    if not parts:
        raise ValueError("empty --query")
    agg, kw = parts[0], {}
    for p in parts[1:]:
        if "=" not in p:
            raise ValueError(f"--query {text!r}: expected key=value after the aggregation, got {p!r}")
        k, v = p.split("=", 1)
        if k not in _KEYS:
            raise ValueError(f"--query {text!r}: unknown key {k!r} (use {', '.join(sorted(_KEYS))})")
        kw[k] = v
    if "range" not in kw:
        raise ValueError(f"--query {text!r}: needs range=")
    def val(v: str) -> Union[int, str]:
        return int(v) if v.isdigit() else v
    rng = val(kw["range"])
    slide = val(kw.get("slide", "1" if isinstance(rng, int) else kw["range"]))
    mp = int(kw["min_periods"]) if "min_periods" in kw else None
    name = kw.get("name") or f"{agg}_{kw['range']}_{kw.get('slide', kw['range'] if not isinstance(rng, int) else 1)}"
    return sw.Query(agg, rng, slide, name=name, min_periods=mp)


class Progress:
    """A one-line progress bar from Spark's status tracker (stages' tasks)."""

    def __init__(self, sc: Any, stream: TextIO = sys.stderr, width: int = 30, interval: float = 0.2) -> None:
        self.sc, self.stream, self.width, self.interval = sc, stream, width, interval
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self.updates = 0

    def __enter__(self) -> "Progress":
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.stream.write("\r" + " " * (self.width + 50) + "\r")
        self.stream.flush()

    def _loop(self) -> None:
        tr = self.sc.statusTracker()
        while not self._stop.wait(self.interval):
            try:
                ids = tr.getActiveStageIds()
                infos = [tr.getStageInfo(s) for s in ids]
            except Exception:  # the context is stopping
                return
            infos = [i for i in infos if i is not None]
            if not infos:
                continue
            total = sum(i.numTasks for i in infos)
            done = sum(i.numCompletedTasks for i in infos)
            frac = done / total if total else 0.0
            fill = int(frac * self.width)
            self.stream.write(f"\r[{'#' * fill}{'.' * (self.width - fill)}] stage "
                              f"{','.join(str(s) for s in ids)}: {done}/{total} tasks")
            self.stream.flush()
            self.updates += 1


def run(input: str, value: str, queries: List[str], output: str, time_col: Optional[str] = None,
        key: Optional[str] = None, master: str = "local[*]", fmt: Optional[str] = None) -> Dict[str, int]:
    import slidewise.spark as ss

    qs = [parse_query(q) for q in queries]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    own = SparkSession.getActiveSession() is None
    spark = (SparkSession.builder.master(master).appName("slidewise run")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    if own:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        fmt = fmt or ("csv" if input.lower().endswith(".csv") else "parquet")
        reader = spark.read.option("header", True).option("inferSchema", True) if fmt == "csv" else spark.read
        df = reader.format(fmt).load(input)
        order = time_col
        if order is None:
            if any(q.time for q in qs):
                raise ValueError("a time-span query (range=10s) needs --time COL")
            order = "__row"
            df = df.withColumn(order, F.monotonically_increasing_id())
        t0 = time.perf_counter()
        res = ss.aggregate(df, qs, value, order, key=key)
        counts: Dict[str, int] = {}
        with Progress(spark.sparkContext):
            for q in qs:
                path = output if len(qs) == 1 else os.path.join(output, q.name)
                r = res[q.name]
                r.write.mode("overwrite").parquet(path)
                counts[q.name] = spark.read.parquet(path).count()
        dt = time.perf_counter() - t0
        for q in qs:
            print(f"{q.name}: {counts[q.name]:,} windows -> "
                  f"{output if len(qs) == 1 else os.path.join(output, q.name)}")
        print(f"done in {dt:.1f} s")
        return counts
    finally:
        if own:
            spark.stop()
