"""Shared by the comparison scripts and the asv benchmarks: the machine line
printed above every table, and the check that slidewise and a peer computed
the same result on the same data before either is timed.

Import it as ``from ._check import ...`` inside the ``benches`` package (asv)
and as ``from _check import ...`` when a file of ``benches/`` runs as a script.
"""

from __future__ import annotations

import math
import os
import subprocess

import numpy as np

EPS = float(np.finfo(np.float64).eps)


class Mismatch(AssertionError):
    """slidewise and a peer disagree: the timings would compare different work."""


def cpu_model() -> str:
    """The CPU's model name, from ``lscpu`` or else /proc/cpuinfo."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True, env={**os.environ, "LC_ALL": "C"})
        for line in out.stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def cpus() -> int:
    """CPUs this process may run on (its affinity mask, as Rust's
    ``available_parallelism`` counts them; a cgroup quota is not read)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def many_threads(rows: int, windows: int) -> int:
    """Threads of rolling_many's shared max/min pass: min(4, CPUs) when
    rows x windows >= 2**24, else 1 (rust/core/src/rolling/many.rs). Every
    other slidewise call runs on the calling thread."""
    return min(4, cpus()) if rows * windows >= 1 << 24 else 1


def machine(threads: str) -> str:
    """The line printed above each table: the CPU and the threads slidewise may use."""
    return f"CPU: {cpu_model()} ({cpus()} CPUs available); slidewise threads: {threads}"


def warm_up(f, seconds: float = 1.0) -> None:
    """Call `f` untimed for `seconds` (at least 10 calls) before the first
    table row. On this 2-vCPU KVM guest a fresh process's first ~0.2 s of
    two-thread calls run at a third of their later speed (seen on an AMD
    EPYC: a 2-thread rolling median of 2M rows at 46-73 Mrows/s for its
    first 10 calls, then 130-150; one thread is steady from the first
    call), which best-of-5 timings did not always outlast; the first case
    of a table then measured the warm-up, not the kernel."""
    import time

    t0, k = time.perf_counter(), 0
    while k < 10 or time.perf_counter() - t0 < seconds:
        f()
        k += 1


def timed(fs: dict, repeat: int) -> dict:
    """Best of `repeat` for each call, the calls interleaved (each once per
    round): this shared VM's speed drifts between and within processes, and
    a drift then hits slidewise and its peers alike, so their ratio holds
    where back-to-back bests did not (mean at window 1M on the AMD EPYC:
    1.0-1.8x bottleneck across runs)."""
    import time

    best = {k: float("inf") for k in fs}
    for _ in range(repeat):
        for k, f in fs.items():
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def drift(rows: int, scale: float) -> float:
    """Absolute error a running update (bottleneck's move_*, pandas' rolling
    var/std) may carry after ``rows`` updates of values up to ``scale``: each
    update rounds at ``EPS * scale`` and keeps the error of all updates
    before it, which add up like a random walk (``sqrt(rows)``); 10x margin.
    Measured on the benchmarks' data (random walks of 2M and 10M rows, all
    windows), bottleneck's sums, means and variances and pandas' variances
    stay below 1/20 of it."""
    return 10 * EPS * math.sqrt(max(rows, 1)) * scale


def as_numpy(result):
    """(float64 values, null mask or None) of a result: pyarrow Array or
    ChunkedArray, polars Series, pandas Series or numpy array. Nulls are NaN
    in the values; the mask is None for numpy and pandas, which have only NaN."""
    kind = type(result).__module__.split(".")[0]
    if kind == "pyarrow":
        if hasattr(result, "combine_chunks"):
            result = result.combine_chunks()
        nulls = result.is_null().to_numpy(zero_copy_only=False)
        return np.asarray(result.to_numpy(zero_copy_only=False), dtype=np.float64), nulls
    if kind == "polars":
        return result.cast(float).to_numpy(), result.is_null().to_numpy()
    return np.asarray(result, dtype=np.float64), None


def spark_column(job, col: str, order: str = "t"):
    """A Spark job's column ``col`` in ``order`` order (a unique column),
    collected as Arrow, so null and NaN stay apart."""
    import pyarrow.compute as pc

    t = job.select(order, col).toArrow()
    return t.column(col).take(pc.sort_indices(t.column(order)))


def check(case: str, got, want, peer: str, *, rtol: float = 1e-9, atol: float = 0.0, squared: bool = False) -> None:
    """Raise :class:`Mismatch` naming ``case`` unless slidewise's ``got``
    equals ``peer``'s ``want`` row by row: the same number of rows; the same
    null rows and NaN rows where the peer keeps them apart (pyarrow,
    polars), else slidewise's nulls and NaNs exactly at the peer's NaNs
    (numpy, pandas: NaN is their only missing value); every other row within
    ``rtol * |want| + atol`` (0 and 0: equal; ``atol`` a number or an
    array with one per row). ``squared`` compares ``got**2`` with
    ``want**2``: a std through its variance, the quantity a running update
    carries, with ``2 * rtol`` (the variance's relative error for ``rtol``
    on the std)."""
    g, gnull = as_numpy(got)
    w, wnull = as_numpy(want)
    if gnull is None:
        gnull = np.zeros(len(g), dtype=bool)
    if len(g) != len(w):
        raise Mismatch(f"{case}: slidewise gave {len(g):,} rows, {peer} {len(w):,}")
    gnan, wnan = np.isnan(g), np.isnan(w)
    if wnull is not None:
        bad = (gnull != wnull) | ((gnan & ~gnull) != (wnan & ~wnull))
    else:
        bad = gnan != wnan
    both = ~(gnan | wnan)
    a, b = (g[both] ** 2, w[both] ** 2) if squared else (g[both], w[both])
    atol = np.broadcast_to(np.asarray(atol, dtype=np.float64), g.shape)  # a number or one per row
    with np.errstate(invalid="ignore", over="ignore"):
        tol = (2 * rtol if squared else rtol) * np.abs(b) + atol[both]
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= tol)
    bad[both] = ~((a == b) | close)  # an infinity must be equal
    if bad.any():
        rows = np.flatnonzero(bad)
        i = rows[0]

        def show(v, nulls):
            return "null" if nulls is not None and nulls[i] else repr(float(v[i]))

        raise Mismatch(f"{case}: slidewise and {peer} differ in {len(rows):,} of {len(g):,} rows "
                       f"(tolerance {rtol:g} relative + {atol[i]:g}{' on the squares' if squared else ''}); "
                       f"first at row {i:,}: slidewise {show(g, gnull)}, {peer} {show(w, wnull)}")


class connect_server:
    """A Spark Connect server in a JVM of its own (``SparkConnectServer``,
    master ``local[2]``, on a free loopback port) for a process that also
    holds a classic session: pyspark's ``remote("local[2]")`` would start its
    server inside that process's JVM, which a classic session forbids. Use
    as ``with connect_server(conf) as url:``; the client is then built with
    the Connect builder (``pyspark.sql.connect.session.SparkSession``)."""

    def __init__(self, conf: "dict | None" = None, timeout: float = 180.0) -> None:
        self.conf, self.timeout = dict(conf or {}), timeout

    def __enter__(self) -> str:
        import socket
        import sys
        import tempfile
        import time

        import pyspark

        home = os.path.dirname(os.path.abspath(pyspark.__file__))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile("w", prefix="slidewise-connect-", suffix=".log", delete=False)
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port),
                "spark.ui.enabled": "false", **self.conf}
        cmd = [os.path.join(home, "bin", "spark-submit"), "--class",
               "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]"]
        for k, v in conf.items():
            cmd += ["--conf", f"{k}={v}"]
        env = dict(os.environ, SPARK_HOME=home, PYSPARK_PYTHON=sys.executable)
        env.pop("SPARK_REMOTE", None)
        self.proc = subprocess.Popen(cmd + ["spark-internal"], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited ({self.proc.returncode}); see {self.log.name}")
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return f"sc://127.0.0.1:{port}"
            except OSError:
                if time.monotonic() > deadline:
                    self.proc.kill()
                    raise RuntimeError(f"the Spark Connect server did not listen within {self.timeout:.0f} s; "
                                       f"see {self.log.name}")
                time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()



def ends_want(agg: str, w: int, x: np.ndarray, miss: np.ndarray, propagate: bool = False):
    """rolling ``agg`` (first, last, first_ignore_nulls, last_ignore_nulls)
    of ``x`` over windows of ``w`` rows, ``miss`` its missing rows, by
    numpy's gather of the row each window picks: as a pyarrow array with
    nulls, or (``propagate``: ``nan="propagate"``, NaN a value) as floats
    with NaN at the missing rows."""
    import pyarrow as pa

    i = np.arange(len(x))
    lo = np.maximum(i + 1 - w, 0)
    if propagate or agg in ("first", "last"):
        at = lo if agg.startswith("first") else i
        return np.where(miss[at], np.nan, x[at]) if propagate else pa.array(x[at], mask=miss[at])
    if agg == "first_ignore_nulls":  # the next valid row at or after the start
        at = np.minimum.accumulate(np.where(miss, len(x), i)[::-1])[::-1][lo]
        none = at > i
    else:  # the last valid row at or before the end
        at = np.maximum.accumulate(np.where(miss, -1, i))
        none = at < lo
    at = np.where(none, 0, at)
    return pa.array(x[at], mask=none)
