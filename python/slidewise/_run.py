"""`slidewise run`: the main job on Spark (local mode by default).

Reads a parquet/csv input, runs one or more aggregate continuous queries
(``"max range=1000 slide=10"``; time spans such as ``range=10s`` need
``--time``) per ``--key`` with :func:`slidewise.spark.aggregate`, and writes
parquet. One query writes ``--output`` itself; several write one dataset per
query name under ``--output``. A progress bar polls Spark's status tracker.
"""

from __future__ import annotations

import contextlib
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


def window_label(text: str) -> str:
    """A --query's window as a dataset name: 'range=10s_slide=5s'."""
    kw = dict(p.split("=", 1) for p in text.split()[1:] if "=" in p)
    return "_".join(f"{k}={kw[k]}" for k in ("range", "slide") if k in kw)


class CliError(Exception):
    """An error the command line prints as one line (exit status 1)."""


def _reachable(url: str, what: str) -> None:
    """Fail fast, in one line, when a Spark master or Connect server does
    not accept connections (Spark itself retries for minutes)."""
    import socket
    from urllib.parse import urlparse

    u = urlparse(url)
    if u.scheme not in ("spark", "sc") or not u.hostname:
        return
    port = u.port or (15002 if u.scheme == "sc" else 7077)
    try:
        socket.create_connection((u.hostname, port), timeout=10).close()
    except OSError as e:
        raise CliError(f"cannot reach the {what} at {u.hostname}:{port} ({url}): {e.strerror or e}") from None


def run(input: str, value: str, queries: List[str], output: str, time_col: Optional[str] = None,
        key: Optional[str] = None, master: str = "local[*]", fmt: Optional[str] = None,
        remote: Optional[str] = None) -> Dict[str, int]:
    """Run the queries and write their windows: one dataset per window
    (a column per query), ``output`` itself when every query shares one
    window. Returns {dataset path: windows}. ``remote``: a Spark Connect
    URL (``sc://host:port``), instead of ``master``."""
    import slidewise.spark as ss

    qs = [parse_query(q) for q in queries]
    groups: Dict[str, List[int]] = {}
    for i, q in enumerate(queries):
        groups.setdefault(window_label(q), []).append(i)
    if any(q.time for q in qs) and time_col is None:
        raise ValueError("a time-span query (range=10s) needs --time COL")
    if not os.path.exists(input) and "://" not in input:
        raise CliError(f"--input {input}: no such file or directory")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    if remote:
        _reachable(remote, "Spark Connect server")
        own = True
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        spark = ConnectSession.builder.remote(remote).config("spark.sql.session.timeZone", "UTC").getOrCreate()
    else:
        _reachable(master, "Spark master")
        own = SparkSession.getActiveSession() is None
        spark = (SparkSession.builder.master(master).appName("slidewise run")
                 .config("spark.ui.showConsoleProgress", "false").config("spark.log.level", "ERROR")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    connect = type(spark).__module__.startswith("pyspark.sql.connect")
    try:
        fmt = fmt or ("csv" if input.lower().endswith(".csv") else "parquet")
        reader = spark.read.option("header", True).option("inferSchema", True) if fmt == "csv" else spark.read
        df = reader.format(fmt).load(input)
        for what, c in (("--value", value), ("--time", time_col), ("--key", key)):
            if c is not None and c not in df.columns:
                raise CliError(f"{what} {c}: no such column in {input} (columns: {', '.join(df.columns)})")
        order = time_col
        if order is None:
            order = "__row"
            df = df.withColumn(order, F.monotonically_increasing_id())
        t0 = time.perf_counter()
        counts: Dict[str, int] = {}
        progress: Any = contextlib.nullcontext() if connect else Progress(spark.sparkContext)
        with progress:
            for label, idx in groups.items():
                path = output if len(groups) == 1 else os.path.join(output, label)
                ss.aggregate(df, [qs[i] for i in idx], value, order, key=key).write.mode("overwrite").parquet(path)
                counts[path] = spark.read.parquet(path).count()
        dt = time.perf_counter() - t0
        for label, idx in groups.items():
            path = output if len(groups) == 1 else os.path.join(output, label)
            print(f"{', '.join(qs[i].name for i in idx)}: {counts[path]:,} windows -> {path}")
        print(f"done in {dt:.1f} s")
        return counts
    finally:
        if own:
            spark.stop()
