"""slidewise.spark on a real cluster: a ``local-cluster[2,1,1024]`` master
(two executor JVMs, each with its own Python workers) whose executor Python
cannot import the driver's slidewise (tests/bare_python.py).

One driver process runs the whole scenario with one SparkSession and writes
what it saw; the tests below check it. The driver is a subprocess because a
process holds one SparkContext: this module's cluster would otherwise stop
the ``spark`` session other test modules share (conftest.py). The driver
imports slidewise from a temporary copy of the package (first on its
``sys.path``), which it changes on disk midway. Phases (each a different
executor Python environment, or a different driver build):

* ``bare``: the executors' Python lacks slidewise; the shipped copy is used.
* ``changed``: the driver's install changed on disk; the next call of the
  adapter ships the new build under a new name and the executors use it.
* ``mismatch``: the executors' Python has a slidewise of its own (another
  version and content); it is not used: the shipped copy is, with a warning
  in the executor's log naming both versions.
* ``twin``: the executors' Python has its own copy of exactly the driver's
  files (installed elsewhere, other mtimes); that copy is used.
* ``broken``: the driver ships a build that cannot be imported on the
  executors, which have another build of their own: the job fails with an
  error naming both versions.
* ``wheels``: the driver's files restored, the session's conf
  ``spark.slidewise.ship.wheels`` names the directory of the portable wheel
  `make wheel` built (tests/test_wheel.py); executors without slidewise
  load that wheel, shipped instead of the driver's package.

Every rolling result is compared with Spark's own window functions on the
same DataFrame, as Arrow (null and NaN kept apart).

The executor Python environment is switched between phases through
``SparkContext.environment`` (``PYTHONPATH``): Python workers are pooled by
(python, environment), so each phase gets fresh workers."""

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
import pytest

import slidewise as sw

pyspark = pytest.importorskip("pyspark")

from slidewise.spark import _ship  # noqa: E402
from test_wheel import _wheels  # noqa: E402

SPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
FAKE_VERSION = "0.0.0+fake"

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to tell executor JVMs apart"),
    pytest.mark.skipif(not os.path.exists(os.path.join(SPARK_HOME, "bin", "spark-class")),
                       reason="local-cluster needs SPARK_HOME's bin/spark-class (pip's pyspark has it)"),
]

_DRIVER = textwrap.dedent(r'''
    import json, os, shutil, sys, time, warnings
    START = time.time()
    out, drv, fake, twin, real, wheels = sys.argv[1:7]
    sys.path.insert(0, drv)  # the driver's slidewise: the temporary copy
    import numpy as np, pandas as pd
    import pyarrow as pa
    import pyarrow.feather as feather
    import slidewise
    assert os.path.dirname(slidewise.__file__) == os.path.join(drv, "slidewise"), slidewise.__file__
    import slidewise.spark as ss
    from slidewise.spark import _ship
    from slidewise.spark._ship import _import_slidewise
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    T_IMPORT = time.time() - START
    JIT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # short-lived JVMs on few cores: less compiling
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("slidewise-cluster")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.task.maxFailures", "1")
             .config("spark.driver.extraJavaOptions", JIT).config("spark.executor.extraJavaOptions", JIT)
             .config("spark.sql.adaptive.enabled", "false").config("spark.sql.codegen.wholeStage", "false")
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    deadline = time.time() + 180  # executors register after the session starts
    while sc._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.time() < deadline:
        time.sleep(0.1)
    res = {"seconds": {"start": round(time.time() - START, 2)}, "driver_pid": os.getpid(),
           "version": slidewise.__version__, "executors": sc._jsc.sc().getExecutorMemoryStatus().size() - 1,
           "phases": {}}

    def probe(it):
        """Per partition: which process, executor and slidewise ran it."""
        import importlib.util, json, os, sys
        import pyarrow as pa
        from pyspark import SparkFiles
        for _ in it:
            pass
        pre = sys.modules.get("slidewise")
        spec = importlib.util.find_spec("slidewise") if pre is None else None
        mod = _import_slidewise()
        with open(f"/proc/{os.getppid()}/stat") as f:  # worker <- daemon <- executor JVM
            jvm_pid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{jvm_pid}/cmdline", "rb") as f:
            jvm = [a.decode() for a in f.read().split(b"\0")]
        info = {"pid": os.getpid(), "jvm_pid": jvm_pid, "python": sys.executable,
                "bare": os.environ.get("SLIDEWISE_TEST_BARE"),
                "jvm_main": [a for a in jvm if a.startswith("org.apache.spark.")],
                "executor": jvm[jvm.index("--executor-id") + 1] if "--executor-id" in jvm else None,
                "preloaded": getattr(pre, "__file__", None), "own": spec.origin if spec else None,
                "file": mod.__file__, "version": mod.__version__, "build": getattr(mod, "_spark_build", None),
                "mark": getattr(mod, "_SHIP_TEST_MARK", None), "fake": getattr(mod, "_FAKE", False),
                "root": os.path.realpath(SparkFiles.getRootDirectory())}
        yield pa.RecordBatch.from_pydict({"info": [json.dumps(info)]})

    def run_probe():
        rows = spark.range(0, 4, 1, 4).mapInArrow(probe, "info string").collect()
        return [json.loads(r.info) for r in rows]

    rng = np.random.default_rng(11)
    n = 400
    pdf = pd.DataFrame({"id": np.arange(n), "k": rng.integers(0, 4, n), "t": rng.permutation(n),
                        "v": rng.normal(size=n).round(3)})
    v = (F.when(F.col("id") % 11 == 3, F.lit(None)).when(F.col("id") % 13 == 5, F.lit(float("nan")))
         .when((F.col("k") == 2) & F.col("t").between(100, 160), F.lit(None)))  # all-null frames
    sdf = spark.createDataFrame(pdf).withColumn("v", v.otherwise(F.col("v")).cast("double")).repartition(4)
    FN = {"max": F.max, "mean": F.avg, "sum": F.sum}
    CASES = {"keyed": (5, ["max", "mean"], ["k"]), "unkeyed": (7, ["sum", "max"], [])}

    for case, (w, aggs, keys) in CASES.items():  # Spark's own answers
        win = (Window.partitionBy(*keys) if keys else Window).orderBy("t").rowsBetween(-(w - 1), 0)
        want = sdf.select("id", *[FN[a]("v").over(win).alias(f"{a}_{w}") for a in aggs])
        feather.write_feather(want.toArrow(), os.path.join(out, f"{case}-want.arrow"))

    res["seconds"].update(imports=round(T_IMPORT, 2), data=round(time.time() - START, 2))

    def compare(phase, cases):
        """slidewise.spark.rolling's answers, as Arrow, into files."""
        for case in cases:
            w, aggs, keys = CASES[case]
            got = ss.rolling(sdf, "v", "t", w, aggs, **({"partition_by": keys} if keys else {"num_partitions": 3}))
            feather.write_feather(got.select("id", *[f"{a}_{w}" for a in aggs]).toArrow(),
                                  os.path.join(out, f"{phase}-{case}-got.arrow"))

    def stream(phase):
        """stream_aggregate (pane state per bucket of keys, in Spark's
        default state store) and Spark's own streaming aggregation over the
        same three Parquet micro-batches, into Arrow files."""
        src = os.path.join(out, f"{phase}-stream-src")
        os.makedirs(src)
        ts = pd.to_datetime(1_700_000_000 + pdf["t"], unit="s", utc=True)
        vs = pdf["v"].where(pdf["id"] % 11 != 3)  # nulls
        for i in range(3):
            sel = (pdf["t"] // 134) == i
            pd.DataFrame({"k": pdf["k"][sel], "ts": ts[sel], "v": vs[sel]}).to_parquet(
                os.path.join(src, f"part-{i}.parquet"))
            os.utime(os.path.join(src, f"part-{i}.parquet"), (1_000_000 + i, 1_000_000 + i))
        qs = [slidewise.Query(a, "40s", "20s", name=a) for a in ("sum", "first")]
        ref = lambda d: (d.withWatermark("ts", "5 seconds").groupBy("k", F.window("ts", "40 seconds", "20 seconds")
                                                                     .alias("w"))
                         .agg(F.sum("v").alias("sum"), F.min_by("v", "ts").alias("first"))
                         .select("k", "w.start", "w.end", "sum", "first"))
        for name, build in (("got", lambda d: ss.stream_aggregate(d, qs, "v", "ts", key="k", watermark="5 seconds")),
                            ("want", ref)):
            d = spark.readStream.schema("k bigint, ts timestamp, v double").option("maxFilesPerTrigger", 1).parquet(src)
            where = os.path.join(out, f"{phase}-stream-{name}")
            q = (build(d).writeStream.outputMode("append").format("parquet").option("path", where + "-sink")
                 .option("checkpointLocation", where + "-ck").trigger(availableNow=True).start())
            q.awaitTermination()
            feather.write_feather(spark.read.parquet(where + "-sink").toArrow(), where + ".arrow")

    def phase(name, body):
        r = res["phases"][name] = {}
        t0 = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                body(r)
            except Exception as e:
                r["error"] = f"{type(e).__name__}: {e}"
        r["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        r["build"] = list(_ship._BUILD or ())
        r["archives"] = sorted(os.path.basename(a) for a in sc.listArchives)
        r["seconds"] = round(time.time() - t0, 2)

    def bare(r):
        compare("bare", ["keyed", "unkeyed"])
        stream("bare")
        r["probe"] = run_probe()

    def changed(r):
        with open(os.path.join(drv, "slidewise", "__init__.py"), "a") as f:
            f.write('\n_SHIP_TEST_MARK = "changed"\n')
        compare("changed", ["keyed"])  # the adapter ships the new build
        r["probe"] = run_probe()

    def mismatch(r):
        sc.environment["PYTHONPATH"] = fake  # executors' own (other) slidewise
        r["probe"] = run_probe()
        compare("mismatch", ["keyed"])

    def twin_(r):
        shutil.copytree(os.path.join(drv, "slidewise"), os.path.join(twin, "slidewise"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for d, _, names in os.walk(twin):
            for m in names:
                os.utime(os.path.join(d, m), (1e9, 1e9))  # same files, other mtimes
        sc.environment["PYTHONPATH"] = twin
        r["probe"] = run_probe()

    def broken(r):
        with open(os.path.join(drv, "slidewise", "__init__.py"), "a") as f:
            f.write('\nif __import__("os").environ.get("SLIDEWISE_TEST_BARE"):\n'
                    '    raise ImportError("simulated: built for another platform")\n')
        sc.environment["PYTHONPATH"] = fake
        ss.rolling(sdf, "v", "t", 5, ["max"], partition_by="k").collect()

    def wheels_(r):
        shutil.copyfile(os.path.join(real, "__init__.py"), os.path.join(drv, "slidewise", "__init__.py"))
        sc.environment["PYTHONPATH"] = ""  # executors without slidewise again
        spark.conf.set("spark.slidewise.ship.wheels", wheels)
        compare("wheels", ["keyed", "unkeyed"])
        r["probe"] = run_probe()

    for name, body in [("bare", bare), ("changed", changed), ("mismatch", mismatch), ("twin", twin_),
                       ("broken", broken)] + ([("wheels", wheels_)] if wheels else []):
        phase(name, body)
    res["seconds"]["phases"] = round(time.time() - START, 2)
    spark.stop()
    res["seconds"]["stop"] = round(time.time() - START, 2)
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(res, f)
''')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Run the driver above once: its result.json, paths, and the executors'
    logs. Stops no SparkSession of this process."""
    import bare_python as bp

    tmp = tmp_path_factory.mktemp("cluster")
    real = os.path.dirname(os.path.realpath(sw.__file__))
    bare = bp.make(tmp / "bare", real)
    drv, fake, twin, out, home = (tmp / d for d in ("drv", "fake", "twin", "out", "spark_home"))
    # SPARK_HOME: pip's pyspark has the scripts and jars local-cluster needs,
    # but its workers write their directories (executor logs, unpacked
    # archives) under SPARK_HOME/work: a mirror of the pyspark directory
    # (links) keeps them here
    home.mkdir()
    for name in os.listdir(SPARK_HOME):
        if name != "work":
            os.symlink(os.path.join(SPARK_HOME, name), home / name)
    shutil.copytree(real, drv / "slidewise", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (fake / "slidewise").mkdir(parents=True)
    (fake / "slidewise" / "__init__.py").write_text(f'__version__ = "{FAKE_VERSION}"\n_FAKE = True\n')
    for d in (twin, out):
        d.mkdir()
    script = tmp / "driver.py"
    script.write_text(_DRIVER)
    env = dict(os.environ)
    env.update(PYSPARK_PYTHON=bare, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_HOME=str(home),
               SLIDEWISE_CACHE=str(tmp / "cache"), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("PYTHONPATH", None)
    env.pop(_ship._ENV, None)
    try:
        wheels = os.path.dirname(_wheels()[0])
    except pytest.skip.Exception:  # run by hand without a wheel: that phase only is skipped
        wheels = ""
    r = subprocess.run([sys.executable, str(script), str(out), str(drv), str(fake), str(twin), real, wheels],
                       capture_output=True, text=True, env=env, timeout=900, cwd=str(tmp))
    assert r.returncode == 0 and (out / "result.json").exists(), r.stderr[-5000:]
    res = json.loads((out / "result.json").read_text())
    logs = []
    for p in glob.glob(str(home / "work" / "app-*" / "*" / "stderr")):  # the executors' logs
        with open(p, errors="replace") as f:
            logs.append(f.read())
    res.update(tmp=str(tmp), out=str(out), drv=str(drv), fake=str(fake), twin=str(twin), bare=bare, real=real,
               wheels=wheels, executor_logs="".join(logs))
    yield res
    # the bulky parts: package copies, zips, archives unpacked by the executors
    for d in [drv, twin, tmp / "cache"] + glob.glob(str(home / "work" / "app-*" / "*" / "slidewise-*")):
        shutil.rmtree(d, ignore_errors=True)


def _flags(a):
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    null = a.is_null().to_numpy(zero_copy_only=False)
    nan = pc.is_nan(a).fill_null(False).to_numpy(zero_copy_only=False) if pa.types.is_floating(a.type) \
        else np.zeros(len(a), bool)
    return a, null, nan


def _same(got: pa.Table, want: pa.Table, what: str) -> None:
    """Row by row by id: same ids and column names, per column the same
    type, nulls at the same rows, NaN at the same rows, the rest within
    1e-9 (relative)."""
    got, want = got.sort_by("id"), want.sort_by("id")
    assert got.column_names == want.column_names, (what, got.column_names, want.column_names)
    assert got["id"].equals(want["id"]), what
    for c in got.column_names[1:]:
        x, nx, ax = _flags(got[c])
        y, ny, ay = _flags(want[c])
        assert x.type == y.type, (what, c, x.type, y.type)
        for label, fx, fy in (("null", nx, ny), ("NaN", ax, ay)):
            bad = np.flatnonzero(fx != fy)[:5]
            assert not bad.size, f"{what} {c}: {label} differs at rows {bad.tolist()}"
        ok = pa.array(~(nx | ax))
        np.testing.assert_allclose(x.filter(ok).to_numpy(), y.filter(ok).to_numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{what} {c}")


def _shipped_dir(res, probe, build):
    """Where the executor of ``probe`` unpacked the archive of ``build``."""
    return os.path.join(probe["root"], build[1], _ship._DIST_ALIAS, "slidewise")


def _under(path, d) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(d) + os.sep)


def test_runs_on_separate_executor_jvms_without_slidewise(cluster):
    assert cluster["executors"] == 2, cluster["executors"]
    probes = cluster["phases"]["bare"]["probe"]
    assert len(probes) == 4
    for p in probes:
        assert p["bare"] == "1", p  # the executor Python is the wrapper that hides slidewise
        assert os.path.realpath(p["python"]) == os.path.realpath(sys.executable), p
        assert "org.apache.spark.executor.CoarseGrainedExecutorBackend" in p["jvm_main"], p
        assert p["pid"] != cluster["driver_pid"], p
        assert p["preloaded"] is None or _under(p["preloaded"], p["root"]), p  # nothing but the shipped copy
        assert p["own"] is None, p  # the executor's own `import slidewise` finds nothing
    every = [p for ph in cluster["phases"].values() for p in ph.get("probe", [])]
    assert len({p["executor"] for p in every}) == 2, [p["executor"] for p in every]
    assert len({p["jvm_pid"] for p in every}) == 2


@pytest.mark.parametrize("phase,case", [("bare", "keyed"), ("bare", "unkeyed"), ("changed", "keyed"),
                                        ("mismatch", "keyed")])
def test_results_equal_spark(cluster, phase, case):
    assert "error" not in cluster["phases"][phase], cluster["phases"][phase]
    out = cluster["out"]
    got = feather.read_table(os.path.join(out, f"{phase}-{case}-got.arrow"))
    want = feather.read_table(os.path.join(out, f"{case}-want.arrow"))
    _same(got, want, f"{phase}/{case}")
    assert want.num_rows == 400
    if case == "keyed":  # the data exercise nulls, NaN and all-null frames
        assert pc.sum(pc.is_nan(want["mean_5"])).as_py() and want["max_5"].null_count


def test_stream_aggregate_equals_spark_on_executors_without_slidewise(cluster):
    """stream_aggregate's function and its probes run on executors whose
    Python lacks slidewise (the shipped copy, imported by name there), with
    the state in Spark's default store: Spark's own windows and values."""
    assert "error" not in cluster["phases"]["bare"], cluster["phases"]["bare"]
    got = feather.read_table(os.path.join(cluster["out"], "bare-stream-got.arrow"))
    want = feather.read_table(os.path.join(cluster["out"], "bare-stream-want.arrow"))
    assert want.num_rows >= 20
    def ids(k, start):  # one id per (key, window)
        return pc.add(pc.multiply(pc.cast(k, pa.int64()), 10**12), pc.cast(pc.cast(start, pa.timestamp("s")), pa.int64()))

    for q in ("sum", "first"):
        g = got.filter(pc.equal(got["query"], q))
        _same(pa.table({"id": ids(g["k"], g["window_start"]), "value": g["value"]}),
              pa.table({"id": ids(want["k"], want["start"]), "value": want[q]}), f"stream {q}")


def test_executors_use_the_shipped_copy(cluster):
    ph = cluster["phases"]["bare"]
    build = ph["build"]
    assert build[2] == cluster["version"] == sw.__version__
    assert ph["archives"] == [build[1]], ph["archives"]
    for p in ph["probe"]:
        assert os.path.dirname(os.path.realpath(p["file"])) == _shipped_dir(cluster, p, build), p
        assert not _under(p["file"], cluster["real"]) and not _under(p["file"], cluster["drv"]), p
        assert p["build"] == build[0] and p["version"] == build[2] and p["mark"] is None, p
    assert not ph["warnings"], ph["warnings"]


def test_changed_install_on_the_driver_is_reshipped(cluster):
    first, ph = cluster["phases"]["bare"]["build"], cluster["phases"]["changed"]
    build = ph["build"]
    assert build[0] != first[0] and build[1] != first[1]
    assert ph["archives"] == sorted([first[1], build[1]]), ph["archives"]
    assert any("changed on disk" in w and build[1] in w for w in ph["warnings"]), ph["warnings"]
    # worker processes that ran the first build now run the new one
    assert {p["pid"] for p in ph["probe"]} & {p["pid"] for p in cluster["phases"]["bare"]["probe"]}
    for p in ph["probe"]:
        assert os.path.dirname(os.path.realpath(p["file"])) == _shipped_dir(cluster, p, build), p
        assert p["mark"] == "changed" and p["build"] == build[0], p
    zips = sorted(os.path.basename(z) for z in glob.glob(os.path.join(cluster["tmp"], "cache", "*.zip")))
    assert zips == sorted(list(cluster["phases"].values())[-1]["archives"]), zips  # every build shipped


def test_mismatched_install_on_the_executors_is_not_used_and_reported(cluster):
    ph = cluster["phases"]["mismatch"]
    build = ph["build"]
    assert build == cluster["phases"]["changed"]["build"]
    fresh = [p for p in ph["probe"] if p["preloaded"] is None]  # a worker's first task
    assert fresh, ph["probe"]
    for p in fresh:  # the executor's own `import slidewise` would work, and find the other build
        assert p["own"] == os.path.join(cluster["fake"], "slidewise", "__init__.py"), p
    for p in ph["probe"]:
        assert not p["fake"] and p["version"] == cluster["version"] != FAKE_VERSION, p
        assert os.path.dirname(os.path.realpath(p["file"])) == _shipped_dir(cluster, p, build), p
        assert p["mark"] == "changed" and p["build"] == build[0], p
    logs = cluster["executor_logs"]
    want = (f"this executor's own slidewise {FAKE_VERSION} at {os.path.join(cluster['fake'], 'slidewise')}",
            f"is not the driver's slidewise {cluster['version']} (build {build[0][:16]})",
            f"using the copy the driver shipped ({build[1]})")
    assert all(w in logs for w in want), (want, logs[-3000:])


def test_matching_install_on_the_executors_is_used(cluster):
    """Same files as the driver's, other path and mtimes: the executor's own."""
    ph = cluster["phases"]["twin"]
    own = os.path.join(cluster["twin"], "slidewise", "__init__.py")
    assert [p for p in ph["probe"] if p["preloaded"] is None], ph["probe"]
    for p in ph["probe"]:
        assert p["own"] in (None, own) and p["preloaded"] in (None, own), p
        assert os.path.realpath(p["file"]) == os.path.realpath(own), p
        assert p["mark"] == "changed" and p["build"] == ph["build"][0], p


def test_unimportable_shipped_build_fails_naming_both_versions(cluster):
    ph = cluster["phases"]["broken"]
    err = ph.get("error", "")
    build = ph["build"]
    assert build[0] != cluster["phases"]["twin"]["build"][0]
    for w in (f"the driver's slidewise {cluster['version']} (build {build[0][:16]})", "cannot be imported",
              f"own slidewise {FAKE_VERSION}", "simulated: built for another platform"):
        assert w in err, (w, err[-3000:])


@pytest.mark.parametrize("case", ["keyed", "unkeyed"])
def test_portable_wheel_named_by_the_setting_is_shipped(cluster, case):
    """The wheel `make wheel` built, named by the session's conf, runs on
    executors without slidewise and gives Spark's answers."""
    if not cluster["wheels"]:
        _wheels()  # skips (run by hand without a wheel) or fails (make test)
    ph = cluster["phases"]["wheels"]
    assert "error" not in ph, ph
    build = ph["build"]
    assert [w for w, _ in build[3]] == sorted(n for n in os.listdir(cluster["wheels"]) if n.endswith(".whl"))
    assert build[1] in ph["archives"] and not ph["warnings"], ph
    for p in ph["probe"]:
        assert p["bare"] == "1" and p["own"] is None, p  # the executor's Python lacks slidewise
        stems = [w[:-len(".whl")] for w, _ in build[3]]
        where = os.path.dirname(os.path.dirname(os.path.realpath(p["file"])))
        assert os.path.basename(where) in stems, p
        assert os.path.dirname(where) == os.path.join(p["root"], build[1], _ship._WHEELS_DIR), p
        assert p["build"] == build[0] and p["version"] == cluster["version"] and p["mark"] is None, p
    out = cluster["out"]
    _same(feather.read_table(os.path.join(out, f"wheels-{case}-got.arrow")),
          feather.read_table(os.path.join(out, f"{case}-want.arrow")), f"wheels/{case}")
