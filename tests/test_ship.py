"""Shipping slidewise to executors (slidewise.spark.ship) over Spark
Connect, wheels named by the setting, and the choice of a wheel by tags.

The Connect tests use the ``spark_connect`` fixture (conftest.py: a real
SparkConnectServer JVM on loopback): nothing on that path may reach for a
SparkContext. Its executors' Python is this venv's, whose slidewise is
the driver's own build: to see the shipped copy loaded, the wheels shipped
here carry one extra file (not Python), so their build differs from the
installed one while their Python files are the driver's. Wheels come from
the one `make wheel` built (SLIDEWISE_TEST_WHEELS or dist/, see
tests/test_wheel.py), repacked."""

import json
import os
import re
import sys
import warnings
import zipfile

import pytest

import slidewise as sw

pyspark = pytest.importorskip("pyspark")

from pyspark import cloudpickle  # noqa: E402

from slidewise.spark import _ship  # noqa: E402
from slidewise.spark._ship import _import_slidewise  # noqa: E402
from test_wheel import _wheels  # noqa: E402

# the probes below run on executors, where this test module is not importable
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _repack(src, dst_dir, name=None, extra=None, lib=None):
    """A copy of the wheel ``src`` in ``dst_dir`` (renamed ``name``): plus a
    file slidewise/<extra[0]> holding extra[1]; the extension's bytes
    replaced by ``lib``."""
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(str(dst_dir), name or os.path.basename(src))
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zo:
        for m in zi.namelist():
            data = zi.read(m)
            if lib is not None and m.endswith(".so"):
                data = lib
            zo.writestr(m, data)
        if extra:
            zo.writestr(f"slidewise/{extra[0]}", extra[1])
    return dst


def _probe_for(name):
    """A mapInArrow function: per partition, the slidewise build this
    executor loaded (or the error), and whether the archive ``name`` is
    unpacked in its working directory."""

    def probe(it):
        import json
        import os

        import pyarrow as pa
        from pyspark import SparkFiles

        for _ in it:
            pass
        info = {"cwd": os.path.realpath(os.getcwd()), "root": os.path.realpath(SparkFiles.getRootDirectory()),
                "entry_is_dir": os.path.isdir(os.path.join(os.getcwd(), name))}
        try:
            mod = _import_slidewise()  # pickled by value, with the _BUILD of the last ship()
            info.update(file=os.path.realpath(mod.__file__), build=getattr(mod, "_spark_build", None),
                        version=mod.__version__, computes=mod.rolling([1.0, 2.0, 3.0], 2, "sum").to_pylist())
        except ImportError as e:
            info["error"] = str(e)
        yield pa.RecordBatch.from_pydict({"info": [json.dumps(info)]})

    return probe


def _run_probe(spark):
    rows = spark.range(0, 2, 1, 2).mapInArrow(_probe_for(_ship._BUILD[1]), "info string").collect()
    return [json.loads(r.info) for r in rows]


@pytest.fixture
def connect(spark_connect):
    """The Connect session, with no wheels setting before and after."""
    spark_connect.conf.unset(_ship._CONF)
    yield spark_connect
    spark_connect.conf.unset(_ship._CONF)


def test_connect_ships_the_driver_package(connect):
    path = _ship.ship(connect)
    build = _ship._BUILD
    assert build[1] == os.path.basename(path) and build[3] == ()
    assert _ship._session_key(connect) == "connect:" + connect.session_id
    for p in _run_probe(connect):
        assert "error" not in p, p
        # the archive is unpacked, as a directory named by the archive, in the session's directory
        assert p["entry_is_dir"] and p["cwd"] == p["root"], p
        assert p["build"] == build[0] and p["version"] == sw.__version__, p
        assert p["computes"] == [1.0, 3.0, 5.0], p
    assert _ship.ship(connect) == path  # once per session: the same archive


def test_connect_ships_wheels_named_by_the_argument(connect, tmp_path):
    whl = _repack(_wheels()[0], tmp_path / "wheels", extra=("_ship_mark.txt", "shipped"))
    path = _ship.ship(connect, wheels=str(tmp_path / "wheels"))
    assert connect.conf.get(_ship._CONF) == str(tmp_path / "wheels")  # the setting for later calls
    build = _ship._BUILD
    assert [w for w, _ in build[3]] == [os.path.basename(whl)], build
    with zipfile.ZipFile(path) as z:
        assert not [m for m in z.namelist() if _ship._DIST_ALIAS in m]
    stem = os.path.basename(whl)[:-len(".whl")]
    for p in _run_probe(connect):
        assert "error" not in p, p
        want = os.path.join(p["cwd"], build[1], _ship._WHEELS_DIR, stem, "slidewise", "__init__.py")
        assert p["file"] == want, p  # the shipped wheel, not the executor's own slidewise
        assert p["build"] == build[0] and p["computes"] == [1.0, 3.0, 5.0], p
    # an implicit ship() (every entry point's) keeps shipping the session's wheels
    assert _ship.ship(connect) == path and _ship._BUILD == build


def test_executor_that_can_load_no_wheel_names_its_platform(connect, tmp_path):
    """A wheel for another platform, and one whose tags fit but whose
    extension cannot load: the executor's error names its platform, its
    glibc and both builds with why each was not used."""
    src = _wheels()[0]
    d = tmp_path / "wheels"
    mac = _repack(src, d, name="slidewise-%s-cp39-abi3-macosx_11_0_arm64.whl" % sw.__version__,
                  lib=b"not a Mach-O file")
    broken = _repack(src, d, lib=b"not an ELF file")
    os.environ[_ship._ENV] = str(d)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _ship.ship(connect)
        # after another test's wheels in this session: another build, said so
        assert all("changed since slidewise was shipped" in str(w.message) for w in caught), caught
        probes = _run_probe(connect)
    finally:
        del os.environ[_ship._ENV]
    import platform

    glibc = os.confstr("CS_GNU_LIBC_VERSION")
    for p in probes:
        err = p.get("error", "")
        for want in (f"the driver's slidewise {sw.__version__} (build {_ship._BUILD[0][:16]})",
                     f"linux {platform.machine()}, {glibc}", os.path.basename(mac) + " (for macosx_11_0_arm64)",
                     os.path.basename(broken) + ", at ", "Builds on offer", _ship._ENV):
            assert want in err, (want, err)
        assert "own slidewise" in err  # the venv's, another build: named, not used


def test_wheels_with_other_python_files_are_refused(spark, tmp_path, monkeypatch):
    """Executors run the driver's modules, pickled: a wheel of other Python
    files is refused at ship time, naming both versions; the session's
    setting is left as it was."""
    bad = _repack(_wheels()[0], tmp_path / "w", name="slidewise-9.9.9-cp39-abi3-manylinux_2_17_x86_64.whl",
                  extra=("spark/_extra.py", "x = 1\n"))
    before = spark.conf.get(_ship._CONF, None)
    with pytest.raises(ValueError) as e:
        _ship.ship(spark, wheels=bad)
    msg = str(e.value)
    assert "(slidewise 9.9.9)" in msg and f"this driver's Python files (slidewise {sw.__version__}" in msg, msg
    assert "slidewise/spark/_extra.py" in msg, msg
    assert spark.conf.get(_ship._CONF, None) == before
    for setting, err in [(str(tmp_path / "nothing"), "does not exist"), (str(tmp_path), "holds no slidewise wheel")]:
        monkeypatch.setenv(_ship._ENV, setting)
        with pytest.raises(ValueError, match=re.escape(err)) as e:
            _ship.ship(spark)
        assert _ship._ENV in str(e.value)


@pytest.mark.parametrize("plat,fits", [
    ("manylinux2014_{arch}.manylinux_2_17_{arch}", True),
    ("manylinux_2_5_{arch}", True),
    ("manylinux_2_999_{arch}", False),  # a newer glibc than any
    ("manylinux_2_17_other", False),
    ("linux_{arch}", True),  # a local build: loading tells
    ("musllinux_1_2_{arch}", False),  # this test runs on glibc
    ("macosx_11_0_arm64", False),
    ("win_amd64", False),
])
def test_wheel_choice_by_platform_tags(plat, fits):
    import platform

    if not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION"):
        pytest.skip("tags checked on glibc Linux")
    name = f"slidewise-1.0-cp39-abi3-{plat.format(arch=platform.machine())}.whl"
    rank, why = _ship._wheel_fit(name)
    assert (rank is not None) == fits, (name, rank, why)
    assert (why == "") == fits


@pytest.mark.parametrize("py,abi,fits", [
    ("cp39", "abi3", True), ("cp{v}", "abi3", True), ("cp{next}", "abi3", False),
    ("cp{v}", "cp{v}", True), ("cp39", "cp39", sys.version_info[:2] == (3, 9)), ("py3", "none", True),
])
def test_wheel_choice_by_python_tags(py, abi, fits):
    v = f"{sys.version_info.major}{sys.version_info.minor}"
    nxt = f"{sys.version_info.major}{sys.version_info.minor + 1}"
    name = f"slidewise-1.0-{py.format(v=v, next=nxt)}-{abi.format(v=v)}-any.whl"
    assert (_ship._wheel_fit(name)[0] is not None) == fits, name
