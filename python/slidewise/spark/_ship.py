"""Shipping: slidewise on executors whose Python lacks it, or has another build.

The functions run on executors with ``import slidewise``. :func:`ship`
(called by every entry point) zips a *build* of slidewise into a cache file
named by a hash of its contents and sends it to the session with
``SparkSession.addArtifacts(path, archive=True)`` (Spark 4, classic and
Connect sessions alike; a bare ``SparkContext`` gets ``addArchive``). The
build is either

* the driver's installed package, compiled extension included (the
  default), under ``slidewise_dist/``; or
* the wheels named by the setting (:data:`_ENV` ``SLIDEWISE_SHIP_WHEELS``, or
  the session's conf :data:`_CONF` ``spark.slidewise.ship.wheels``, which
  ``ship(spark, wheels=...)`` sets): a wheel, a directory of wheels, or a
  comma-separated list, each unpacked under ``slidewise_wheels/<wheel>/``,
  for a driver whose own extension does not load on the executors (a build
  needing a newer glibc, a macOS or Windows laptop). Their Python files must
  be the driver's own: the executor functions are the driver's modules,
  pickled by value; ``ship`` refuses wheels that differ.

The archive is sent once per session and build (Connect: its session id;
classic: its SparkContext, which holds the archives); a changed build is a
new archive name, sent again (with a ``RuntimeWarning`` on the driver, whose
process keeps the slidewise it imported). ``ship`` also records the build
(:data:`_BUILD`) for the executor functions pickled after it.

On an executor, :func:`_import_slidewise` returns the driver's build:

* the executor's own slidewise, when its files hash to the driver's build
  (or to one of the shipped wheels') (the same files, wherever and whenever
  installed; read once per worker process);
* else the shipped copy, found as ``<archive name>`` (the unpacked archive)
  in the SparkFiles root or the working directory (a Connect session's
  artifact directory): ``slidewise_dist``, or the first wheel whose tags fit
  this executor (Python, OS, machine, glibc) and that imports, put first on
  ``sys.path``. When the executor has a slidewise of its own that is another
  build, it is not used, and a ``RuntimeWarning`` in the executor's log names
  both versions and builds: a job gives the driver's answers, as it does
  in-process on the driver, whatever was installed on the cluster. When no
  shipped build can be imported there, the ``ImportError`` names the
  driver's build, the executor's own if any, the executor's Python,
  platform and glibc, and the builds on offer.

A worker process keeps the build it loaded (tagged ``slidewise._spark_build``)
until a task of another build arrives; then it drops its ``slidewise``
modules and loads that build.

The executor functions (the ``mapInArrow`` / ``applyInArrow`` functions,
the stateful processors) are defined in this package's modules, which
:func:`ship` registers with ``cloudpickle.register_pickle_by_value``: they
(and the classes and helpers they use, :func:`_import_slidewise` and the
value of :data:`_BUILD` when they are pickled included) travel by value, so
unpickling them needs no importable slidewise; each imports slidewise
through :func:`_import_slidewise` before it uses it. No executor function
may reference a slidewise module as a global.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

# The directory inside a shipped archive of the driver's package that goes on
# the executor's sys.path (it holds the ``slidewise`` package).
_DIST_ALIAS = "slidewise_dist"
# The directory inside a shipped archive of wheels: one directory per wheel,
# named by the wheel's file name (its tags), each holding a ``slidewise``.
_WHEELS_DIR = "slidewise_wheels"
# Hashed first: a change of archive layout is a new build name.
_FORMAT = b"slidewise-ship-3\0"
# This package: every module in it is pickled by value once shipped.
_PACKAGE = __name__.rpartition(".")[0]
# The setting naming wheels to ship instead of the driver's package: the
# session conf first (per session; ship(spark, wheels=...) sets it), then the
# environment variable.
_CONF = "spark.slidewise.ship.wheels"
_ENV = "SLIDEWISE_SHIP_WHEELS"

# (wheel file name, build hash of the slidewise package inside it)
Wheel = Tuple[str, str]
# The build last shipped from this process: (content hash, archive name,
# slidewise.__version__, the wheels shipped: empty for the driver's
# package). Executor functions carry the value it had when they were
# pickled; None until ship() runs.
_BUILD: Optional[Tuple[str, str, str, Tuple[Wheel, ...]]] = None


def _package_files(pkg: str) -> List[Tuple[str, str]]:
    """(name inside the archive, path) of the files of the package directory
    ``pkg`` that are shipped (no bytecode caches), sorted by name."""
    files = []
    base = os.path.dirname(pkg)
    for root, dirs, names in os.walk(pkg):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            if n.endswith((".pyc", ".pyo")):
                continue
            p = os.path.join(root, n)
            files.append((os.path.relpath(p, base).replace(os.sep, "/"), p))
    return sorted(files)


def _digest(files: Sequence[Tuple[str, Any]], open_: Callable[[Any], IO[bytes]] = lambda p: open(p, "rb")) -> str:
    """The build hash: sha256 over the files' names and contents (``open_``
    opens each file's second item: a path, or a zip member)."""
    h = hashlib.sha256(_FORMAT)
    for rel, p in files:
        h.update(f"{rel}\0".encode())
        with open_(p) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(b"%d\0" % len(chunk))
                h.update(chunk)
        h.update(b"\0end\0")
    return h.hexdigest()


# Driver side: build hashes by (name, size, mtime, inode) of the files read,
# so that an unchanged install or wheel is not read again on every call.
_DIGESTS: Dict[Tuple[Any, ...], Any] = {}


def _stat_key(kind: str, paths: Sequence[str]) -> Tuple[Any, ...]:
    stats: List[Any] = [kind]
    for p in paths:
        st = os.stat(p)
        stats.append((p, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(stats)


def _cache_zip(digest: str, fill: Callable[[Any], None]) -> str:
    """The cache file ``slidewise-<digest>.zip``, written by ``fill(zipfile)``
    unless it exists."""
    import zipfile

    cache = os.environ.get("SLIDEWISE_CACHE") or os.path.join(tempfile.gettempdir(), f"slidewise-{os.getuid()}")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"slidewise-{digest[:16]}.zip")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            fill(z)
        os.replace(tmp, path)
    return path


def _driver_package() -> str:
    import slidewise

    return os.path.dirname(os.path.abspath(slidewise.__file__))


def _package_build() -> Tuple[str, str]:
    """Zip the installed slidewise package (with its compiled extension) into
    a cache file named by its build hash; reused while unchanged. Returns
    (build hash, zip path)."""
    pkg = _driver_package()
    files = _package_files(pkg)
    key = _stat_key(pkg, [p for _, p in files])
    digest = _DIGESTS.get(key)
    if digest is None:
        digest = _DIGESTS[key] = _digest(files)

    def fill(z: Any) -> None:
        for rel, p in files:
            z.write(p, f"{_DIST_ALIAS}/{rel}")

    return digest, _cache_zip(digest, fill)


def _package_zip() -> str:
    """The zip :func:`ship` sends (see :func:`_package_build`)."""
    return _package_build()[1]


def _wheel_tags(name: str) -> Optional[Tuple[str, str, List[str], List[str], List[str]]]:
    """(distribution, version, python tags, abi tags, platform tags) of the
    wheel file name ``name`` (PEP 427), None if it is not one."""
    if not name.endswith(".whl"):
        return None
    parts = name[:-len(".whl")].split("-")
    if len(parts) not in (5, 6):
        return None
    py, abi, plat = parts[-3:]
    return parts[0], parts[1], py.split("."), abi.split("."), plat.split(".")


def _wheel_paths(setting: str, source: str) -> List[str]:
    """The slidewise wheels the setting names: each comma-separated item is
    a wheel or a directory (its ``slidewise-*.whl``)."""
    out: List[str] = []
    for item in (s.strip() for s in setting.split(",")):
        if not item:
            continue
        p = os.path.abspath(os.path.expanduser(item))
        if os.path.isdir(p):
            found = sorted(os.path.join(p, n) for n in os.listdir(p)
                           if n.endswith(".whl") and (_wheel_tags(n) or ("",))[0].lower() == "slidewise")
            if not found:
                raise ValueError(f"{source} names the directory {p}, which holds no slidewise wheel "
                                 "(slidewise-*.whl): build one with `make wheel` (docs/spark.md)")
            out += found
        elif os.path.isfile(p):
            tags = _wheel_tags(os.path.basename(p))
            if tags is None or tags[0].lower() != "slidewise":
                raise ValueError(f"{source} names {p}, which is not a slidewise wheel (slidewise-*.whl)")
            out.append(p)
        else:
            raise ValueError(f"{source} names {p}, which does not exist")
    if not out:
        raise ValueError(f"{source} is set but names no wheel")
    return out


def _check_python_files(whl: str, z: Any, members: List[str]) -> None:
    """Refuse a wheel whose Python files are not the driver's own."""
    pkg = _driver_package()
    mine = {rel: p for rel, p in _package_files(pkg) if rel.endswith(".py")}
    theirs = {m for m in members if m.endswith(".py")}
    differ = sorted(set(mine) ^ theirs)
    for rel in sorted(set(mine) & theirs):
        with open(mine[rel], "rb") as f:
            if f.read() != z.read(rel):
                differ.append(rel)
    if differ:
        import slidewise

        tags = _wheel_tags(os.path.basename(whl))
        more = f" and {len(differ) - 5} more" if len(differ) > 5 else ""
        raise ValueError(
            f"the wheel {whl} (slidewise {tags[1] if tags else '?'}) does not hold this driver's Python files "
            f"(slidewise {getattr(slidewise, '__version__', '?')} at {pkg}): {', '.join(differ[:5])}{more} differ. "
            "Executors run functions pickled from the driver's own modules, so the wheels shipped must be built "
            "from the same source as the driver's install (`make wheel` there), or installed on the driver")


def _wheels_build(paths: List[str]) -> Tuple[str, str, Tuple[Wheel, ...]]:
    """Check the wheels and zip them, unpacked, into a cache file named by
    their build hash. Returns (build hash, zip path, wheels)."""
    import zipfile

    key = _stat_key("wheels", paths)
    wheels = _DIGESTS.get(key)
    if wheels is None:
        found = []
        for w in paths:
            with zipfile.ZipFile(w) as z:
                members = sorted(m for m in z.namelist() if m.startswith("slidewise/") and not m.endswith("/")
                                 and not m.endswith((".pyc", ".pyo")) and "/__pycache__/" not in m)
                _check_python_files(w, z, members)
                found.append((os.path.basename(w), _digest([(m, m) for m in members], z.open)))
        wheels = _DIGESTS[key] = tuple(sorted(found))
    names = [n for n, _ in wheels]
    if len(set(names)) < len(names):
        raise ValueError(f"two wheels to ship have the same file name: {sorted(names)}")
    h = hashlib.sha256(_FORMAT + b"wheels\0")
    for n, d in wheels:
        h.update(f"{n}\0{d}\0".encode())
    digest = h.hexdigest()

    def fill(z: Any) -> None:
        for w in paths:
            with zipfile.ZipFile(w) as src:
                for m in src.namelist():  # the package and any vendored libraries, not the metadata
                    if not m.endswith("/") and ".dist-info/" not in m:
                        z.writestr(f"{_WHEELS_DIR}/{os.path.basename(w)[:-len('.whl')]}/{m}", src.read(m))

    return digest, _cache_zip(digest, fill), wheels


def _wheels_setting(spark: Any) -> Optional[Tuple[str, str]]:
    """(value, where it was read) of the wheels setting, None if unset."""
    conf = getattr(spark, "conf", None)
    v = conf.get(_CONF, None) if conf is not None else None
    if v:
        return str(v), f"the Spark conf {_CONF}"
    v = os.environ.get(_ENV)
    if v:
        return v, f"the environment variable {_ENV}"
    return None


# Session (see _session_key) -> {build hash: (archive name, what it holds:
# "package" or "wheels")} sent to it.
_SHIPPED: Dict[str, Dict[str, Tuple[str, str]]] = {}


def _session_key(spark: Any) -> str:
    """The key of what ``spark`` holds shipped. Connect: artifacts are per
    session (and the client has no SparkContext). Classic: ``addArtifacts``
    adds the archive to the SparkContext, shared by its sessions."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return "connect:" + str(spark.session_id)
    sc = spark.sparkContext if hasattr(spark, "sparkContext") else spark
    return "classic:" + str(sc.applicationId)


def ship(spark: Union[SparkSession, SparkContext], wheels: Optional[Union[str, Sequence[str]]] = None) -> str:
    """Send slidewise to the executors of ``spark`` (a classic or Spark
    Connect session, or a SparkContext), once per session and build, and
    make it the build that executor functions pickled from now on require;
    returns the path of the archive sent.

    The build is the driver's installed package (its compiled extension
    included), unless wheels are named: ``wheels`` (a wheel, a directory of
    wheels, or several), which sets the session's conf
    ``spark.slidewise.ship.wheels`` for every later call, else that conf,
    else the environment variable ``SLIDEWISE_SHIP_WHEELS`` (a
    comma-separated list). Each executor loads the wheel built for its
    platform. The wheels' Python files must be the driver's
    (``ValueError`` otherwise)."""
    global _BUILD
    import slidewise

    conf = getattr(spark, "conf", None)  # a SparkSession's; a SparkContext has the environment only
    setting = _wheels_setting(spark)
    if wheels is not None:
        if conf is None:
            raise TypeError("ship(wheels=...) needs a SparkSession (it sets the session's conf "
                            f"{_CONF}); with a SparkContext, set the environment variable {_ENV}")
        setting = (wheels if isinstance(wheels, str) else ",".join(os.fspath(w) for w in wheels),
                   "ship(wheels=...)")
    shipped: Tuple[Wheel, ...] = ()
    if setting is None:
        digest, path = _package_build()
        kind, what = "package", "slidewise changed on disk"
    else:
        digest, path, shipped = _wheels_build(_wheel_paths(*setting))
        kind, what = "wheels", f"the wheels to ship (named by {setting[1]}) changed"
    if wheels is not None and conf is not None and setting is not None:  # checked: now the session's
        conf.set(_CONF, setting[0])  # setting, for every later call
    name = os.path.basename(path)  # the archive's directory on the executors
    sent = _SHIPPED.setdefault(_session_key(spark), {})
    if digest not in sent:
        if kind in {k for _, k in sent.values()}:  # not when switching between the package and wheels
            import warnings

            warnings.warn(f"{what} since slidewise was shipped to this Spark session; shipping the new build "
                          f"({name}) to the executors, which use it from now on; this driver process keeps the "
                          "slidewise it imported until restarted", RuntimeWarning, stacklevel=3)
        if hasattr(spark, "addArtifacts"):  # a SparkSession, classic or Connect (Spark 4)
            spark.addArtifacts(path, archive=True)
        else:  # a SparkContext
            spark.addArchive(path)
        sent[digest] = (name, kind)
    _BUILD = (digest, name, str(getattr(slidewise, "__version__", "unknown")), shipped)
    # Executor functions are defined in this package's modules; pickle them
    # (and _Spec, _Roller, the stateful processors, _import_slidewise with
    # _BUILD) by value so that unpickling does not need an importable
    # slidewise before _import_slidewise has run. Registering the package
    # covers every module in it.
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[_PACKAGE])  # type: ignore[no-untyped-call]  # pyspark's vendored cloudpickle has no hints
    return path


def _import_slidewise() -> ModuleType:
    """Executor side: the driver's slidewise build (see the module docstring);
    on the driver (no task running) or before any ship(), ``import slidewise``."""
    build = _BUILD
    mod = sys.modules.get("slidewise")
    if build is not None and mod is not None and getattr(mod, "_spark_build", None) == build[0]:
        return mod
    from pyspark import TaskContext

    if build is None or TaskContext.get() is None:
        import slidewise

        return slidewise
    return _load_build(build)


def _invalidate_dir_caches() -> None:
    """importlib.invalidate_caches() for directories only: what a worker
    must forget once a build is unpacked or dropped (its directory listings
    and the paths it found missing). The full call also makes every zip on
    sys.path (pyspark's, py4j's) re-read its directory: ~0.5 s of a worker's
    first task."""
    import importlib.machinery as im

    for name, finder in list(sys.path_importer_cache.items()):
        if finder is None or not os.path.isabs(name):
            del sys.path_importer_cache[name]
        elif isinstance(finder, im.FileFinder):
            finder.invalidate_caches()


def _forget_slidewise() -> None:
    for m in [m for m in sys.modules if m == "slidewise" or m.startswith("slidewise.")]:
        del sys.modules[m]


def _local_version(pkg: str) -> str:
    """The version of the slidewise package directory ``pkg``, not importing
    it: its distribution's metadata next to it, else a literal
    ``__version__`` in its ``__init__.py``, else the installed distribution's."""
    import importlib.metadata as md
    import re

    try:
        for d in md.distributions(path=[os.path.dirname(pkg)]):
            if (d.metadata["Name"] or "").lower() == "slidewise":
                return d.version
    except Exception:
        pass
    try:
        with open(os.path.join(pkg, "__init__.py"), encoding="utf-8") as f:
            m = re.search(r"""^__version__\s*(?::[^=]*)?=\s*["']([^"']+)["']""", f.read(), re.M)
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        return md.version("slidewise")
    except Exception:
        return "unknown"


def _libc() -> Tuple[str, Optional[Tuple[int, int]]]:
    """This machine's C library: ("glibc", version), ("musl", None: not
    read), or ("", None) off Linux."""
    if not sys.platform.startswith("linux"):
        return "", None
    try:
        lib, ver = os.confstr("CS_GNU_LIBC_VERSION").split()  # type: ignore[union-attr]  # None: not glibc
        major, minor = ver.split(".")[:2]
        return lib, (int(major), int(minor))
    except (AttributeError, ValueError, OSError):
        return "musl", None


def _describe_platform() -> str:
    import platform

    lib, ver = _libc()
    c = f", {lib} {'.'.join(map(str, ver))}" if ver else (f", {lib}" if lib else "")
    return f"Python {sys.version.split()[0]} at {sys.executable}, {sys.platform} {platform.machine()}{c}"


def _wheel_fit(wheel: str) -> Tuple[Optional[Tuple[int, ...]], str]:
    """Whether this interpreter and machine can load the wheel named
    ``wheel``, by its tags: (a preference, higher first; None if it does
    not fit, with the reason)."""
    import platform
    import re

    tags = _wheel_tags(wheel)
    if tags is None:
        return None, "not a wheel file name"
    _, _, pys, abis, plats = tags
    v = sys.version_info
    cp = sys.implementation.name == "cpython"

    def py_ok(py: str, abi: str) -> bool:
        m = re.fullmatch(r"(cp|py)(\d)(\d*)", py)
        if m is None or (m.group(1) == "cp" and not cp):
            return False
        want = (int(m.group(2)), int(m.group(3) or 0))
        if abi == "abi3" or abi == "none":  # the stable ABI, or pure Python: this version or later
            return (v.major, v.minor) >= want if m.group(3) else v.major == want[0]
        return abi == f"cp{v.major}{v.minor}" and (v.major, v.minor) == want

    if not any(py_ok(py, abi) for py in pys for abi in abis):
        return None, f"for Python {'.'.join(pys)} ({'.'.join(abis)})"
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine) if sys.platform.startswith("linux") \
        else machine
    lib, ver = _libc()
    best: Optional[Tuple[int, ...]] = None
    for t in plats:
        legacy = {"manylinux1": "manylinux_2_5", "manylinux2010": "manylinux_2_12", "manylinux2014": "manylinux_2_17"}
        for old, new in legacy.items():
            if t.startswith(old + "_"):
                t = new + t[len(old):]
        m = re.fullmatch(r"(manylinux|musllinux)_(\d+)_(\d+)_(\w+)", t)
        fit: Optional[Tuple[int, ...]] = None
        if t == "any":
            fit = (0,)
        elif m and m.group(4) == arch:
            need = (int(m.group(2)), int(m.group(3)))
            if m.group(1) == "manylinux" and lib == "glibc" and ver is not None and ver >= need:
                fit = (3, *need)
            elif m.group(1) == "musllinux" and lib == "musl":  # its version is not read: loading tells
                fit = (2, *need)
        elif t == f"linux_{arch}" and sys.platform.startswith("linux"):
            fit = (1,)  # a local build, for some glibc: loading tells
        elif sys.platform == "darwin" and (m := re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", t)):
            mac = tuple(int(x) for x in (platform.mac_ver()[0] or "0.0").split(".")[:2])
            if m.group(3) in (machine, "universal2") and mac >= (int(m.group(1)), int(m.group(2))):
                fit = (3, int(m.group(1)), int(m.group(2)))
        elif sys.platform == "win32" and t == {"amd64": "win_amd64", "arm64": "win_arm64", "x86": "win32"}.get(machine):
            fit = (3,)
        if fit is not None and (best is None or fit > best):
            best = fit
    return best, ("" if best is not None else f"for {'.'.join(plats)}")


def _load_build(build: Tuple[str, str, str, Tuple[Wheel, ...]]) -> ModuleType:
    """Load the build ``build`` (see :func:`_import_slidewise`) and tag it."""
    import importlib
    import importlib.util

    from pyspark import SparkFiles

    digest, name, version, wheels = build
    roots = [os.path.realpath(SparkFiles.getRootDirectory()), os.path.realpath(os.getcwd())]
    accepted = {digest} | {d for _, d in wheels}

    def shipped(p: str) -> bool:  # a directory of a shipped build (this one or another)
        return (os.path.basename(p) == _DIST_ALIAS or os.path.basename(os.path.dirname(p)) == _WHEELS_DIR) and \
            any(os.path.realpath(p).startswith(r + os.sep) for r in roots)

    def tag(m: ModuleType) -> ModuleType:
        setattr(m, "_spark_build", digest)
        return m

    mod = sys.modules.get("slidewise")
    if mod is not None:  # loaded, and not tagged as this build
        f = getattr(mod, "__file__", None)
        pkg = os.path.dirname(os.path.abspath(f)) if f else None
        if (getattr(mod, "_spark_build", None) is None and pkg and not shipped(os.path.dirname(pkg))
                and _digest(_package_files(pkg)) in accepted):
            return tag(mod)  # imported by other code on the executor, and the driver's build
        _forget_slidewise()
    sys.path[:] = [p for p in sys.path if not shipped(p)]  # earlier builds
    _invalidate_dir_caches()
    try:
        spec = importlib.util.find_spec("slidewise")
    except (ImportError, ValueError):
        spec = None
    own = None
    if spec is not None and spec.origin and os.path.isabs(spec.origin):
        pkg = os.path.dirname(spec.origin)
        theirs = _digest(_package_files(pkg))
        if theirs in accepted:
            return tag(importlib.import_module("slidewise"))
        import warnings

        own = f"slidewise {_local_version(pkg)} at {pkg} (build {theirs[:16]})"
        warnings.warn(f"this executor's own {own} is not the driver's slidewise {version} (build {digest[:16]}); "
                      f"not using it: using the copy the driver shipped ({name})", RuntimeWarning)
    here = f"this executor ({_describe_platform()})"
    drivers = f"the driver's slidewise {version} (build {digest[:16]})"
    todo = "add a wheel built for this platform to the wheels named by" if wheels else \
        "install the driver's build on the executors, or ship wheels built for them: name a wheel or a " \
        "directory of wheels in"
    hint = (f" This executor's own {own} is another build, not used either." if own else "") + \
        f" To fix: {todo} the environment variable {_ENV} or the Spark conf {_CONF} (`make wheel` builds a " \
        "manylinux2014 one, for any Linux with glibc 2.17 or later; docs/spark.md)."
    found = [os.path.join(r, name) for r in roots if os.path.isdir(os.path.join(r, name))]
    if not found:
        raise ImportError(f"{drivers} is not on {here} in {' or '.join(sorted(set(roots)))}: was it shipped to "
                          f"this session with slidewise.spark.ship(spark)?" + hint)
    if not wheels:
        candidates = [(os.path.abspath(os.path.join(found[0], _DIST_ALIAS)), f"the copy shipped ({name})")]
        offer = ""
    else:
        fits = []
        offer_l = []
        for w, _ in wheels:
            rank, why = _wheel_fit(w)
            offer_l.append(w + (f" ({why})" if rank is None else ""))
            if rank is not None:
                fits.append((rank, w))
        fits.sort(key=lambda x: x[0], reverse=True)
        candidates = [(os.path.abspath(os.path.join(found[0], _WHEELS_DIR, w[:-len(".whl")])), w) for _, w in fits]
        offer = f" Builds on offer: {'; '.join(offer_l)}."
    errors = []
    for dist, what in candidates:
        if not os.path.isdir(os.path.join(dist, "slidewise")):
            errors.append(f"{what}: no slidewise package at {dist}")
            continue
        sys.path.insert(0, dist)
        _invalidate_dir_caches()
        try:
            mod = importlib.import_module("slidewise")
            got = os.path.realpath(os.path.dirname(os.path.abspath(mod.__file__ or "")))
            if got != os.path.realpath(os.path.join(dist, "slidewise")):
                raise ImportError(f"import slidewise gave {got}")
            return tag(mod)
        except Exception as e:
            _forget_slidewise()
            sys.path.remove(dist)
            errors.append(f"{what}, at {dist}: {type(e).__name__}: {e}")
    if not errors:
        raise ImportError(f"{drivers} has no build {here} can load.{offer}" + hint)
    raise ImportError(f"{drivers} cannot be imported on {here}: {'; '.join(errors)}.{offer}" + hint)
