"""Shipping: slidewise on executors whose Python lacks it, or has another build.

The functions run on executors with ``import slidewise``. :func:`ship`
(called by every entry point) zips the driver's installed package, compiled
extension included, into a cache file named by a hash of its contents (its
*build*), and sends it with ``SparkContext.addArchive`` under the name
``slidewise-<hash>``; a changed install on the driver is a new build and is
sent again under its own name (with a ``RuntimeWarning`` on the driver,
whose process keeps the slidewise it imported). ``ship`` also records the build
(:data:`_BUILD`: hash, archive name, version) for the executor functions
pickled after it.

On an executor, :func:`_import_slidewise` returns the driver's build:

* the executor's own slidewise, when its files hash to the driver's build
  (the same files, wherever and whenever installed; read once per worker
  process);
* else the shipped copy (``<SparkFiles root>/slidewise-<hash>/slidewise_dist``
  first on ``sys.path``). When the executor has a slidewise of its own that
  is another build, it is not used, and a ``RuntimeWarning`` in the executor's
  log names both versions and builds: a job gives the driver's answers, as
  it does in-process on the driver, whatever was installed on the cluster.
  When the shipped copy cannot be imported there (another Python version or
  platform), the ``ImportError`` names the driver's build, the executor's
  own if any, and the executor's Python.

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
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

# The directory inside every shipped archive that goes on the executor's
# sys.path (it holds the ``slidewise`` package).
_DIST_ALIAS = "slidewise_dist"
# Hashed first: a change of archive layout is a new build name.
_FORMAT = b"slidewise-ship-2\0"
# This package: every module in it is pickled by value once shipped.
_PACKAGE = __name__.rpartition(".")[0]

# The build last shipped from this process: (content hash, archive name,
# slidewise.__version__). Executor functions carry the value it had when
# they were pickled; None until ship() runs.
_BUILD: Optional[Tuple[str, str, str]] = None


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


def _digest(files: List[Tuple[str, str]]) -> str:
    """The build hash: sha256 over the files' names and contents."""
    h = hashlib.sha256(_FORMAT)
    for rel, p in files:
        with open(p, "rb") as f:
            h.update(f"{rel}\0{os.fstat(f.fileno()).st_size}\0".encode())
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


# Driver side: build hash by the package directory and (name, size, mtime,
# inode) of every file, so that an unchanged install is not read again on
# every call.
_DIGESTS: Dict[Tuple[Any, ...], str] = {}


def _package_build() -> Tuple[str, str]:
    """Zip the installed slidewise package (with its compiled extension) into
    a cache file named by its build hash; reused while unchanged. Returns
    (build hash, zip path)."""
    import zipfile

    import slidewise

    pkg = os.path.dirname(os.path.abspath(slidewise.__file__))
    files = _package_files(pkg)
    stats: List[Any] = [pkg]
    for rel, p in files:
        st = os.stat(p)
        stats.append((rel, st.st_size, st.st_mtime_ns, st.st_ino))
    key = tuple(stats)
    digest = _DIGESTS.get(key)
    if digest is None:
        digest = _DIGESTS[key] = _digest(files)
    cache = os.environ.get("SLIDEWISE_CACHE") or os.path.join(tempfile.gettempdir(), f"slidewise-{os.getuid()}")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"slidewise-{digest[:16]}.zip")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for rel, p in files:
                z.write(p, f"{_DIST_ALIAS}/{rel}")
        os.replace(tmp, path)
    return digest, path


def _package_zip() -> str:
    """The zip :func:`ship` sends (see :func:`_package_build`)."""
    return _package_build()[1]


# SparkContext (application id) -> {build hash: archive name} sent to it.
_SHIPPED: Dict[str, Dict[str, str]] = {}


def ship(spark: Union[SparkSession, SparkContext]) -> str:
    """Send this slidewise (package dir incl. the extension, as a .zip) to the
    executors of ``spark``, once per SparkContext and build, and make it the
    build that executor functions pickled from now on require; returns the
    zip's path."""
    global _BUILD
    sc = spark.sparkContext if hasattr(spark, "sparkContext") else spark
    digest, path = _package_build()
    name = os.path.basename(path)[:-len(".zip")]
    sent = _SHIPPED.setdefault(str(sc.applicationId), {})
    if digest not in sent:
        if sent:
            import warnings

            warnings.warn(f"slidewise changed on disk since it was shipped to this SparkContext; shipping the new "
                          f"build ({name}) to the executors, which use it from now on; this driver process keeps "
                          "the slidewise it imported until restarted", RuntimeWarning, stacklevel=3)
        # a distinct name per build: Spark serves added files by name
        sc.addArchive(path + "#" + name)
        sent[digest] = name
    _BUILD = (digest, name, str(getattr(sys.modules.get("slidewise"), "__version__", "unknown")))
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


def _load_build(build: Tuple[str, str, str]) -> ModuleType:
    """Load the build ``build`` (see :func:`_import_slidewise`) and tag it."""
    import importlib
    import importlib.util

    from pyspark import SparkFiles

    digest, name, version = build
    root = os.path.realpath(SparkFiles.getRootDirectory())

    def shipped(p: str) -> bool:
        return os.path.basename(p) == _DIST_ALIAS and os.path.realpath(p).startswith(root + os.sep)

    def tag(m: ModuleType) -> ModuleType:
        setattr(m, "_spark_build", digest)
        return m

    mod = sys.modules.get("slidewise")
    if mod is not None:  # loaded, and not tagged as this build
        f = getattr(mod, "__file__", None)
        pkg = os.path.dirname(os.path.abspath(f)) if f else None
        if (getattr(mod, "_spark_build", None) is None and pkg and not shipped(os.path.dirname(pkg))
                and _digest(_package_files(pkg)) == digest):
            return tag(mod)  # imported by other code on the executor, and the driver's build
        _forget_slidewise()
    sys.path[:] = [p for p in sys.path if not shipped(p)]  # earlier builds
    importlib.invalidate_caches()
    try:
        spec = importlib.util.find_spec("slidewise")
    except (ImportError, ValueError):
        spec = None
    own = None
    if spec is not None and spec.origin and os.path.isabs(spec.origin):
        pkg = os.path.dirname(spec.origin)
        theirs = _digest(_package_files(pkg))
        if theirs == digest:
            return tag(importlib.import_module("slidewise"))
        import warnings

        own = f"slidewise {_local_version(pkg)} at {pkg} (build {theirs[:16]})"
        warnings.warn(f"this executor's own {own} is not the driver's slidewise {version} (build {digest[:16]}); "
                      f"not using it: using the copy the driver shipped ({name})", RuntimeWarning)
    dist = os.path.abspath(os.path.join(SparkFiles.get(name), _DIST_ALIAS))
    here = f"this executor (Python {sys.version.split()[0]} at {sys.executable}, {sys.platform})"
    drivers = f"the driver's slidewise {version} (build {digest[:16]})"
    hint = (f" This executor's own {own} is another build, not used either." if own else "") + \
        " Install the driver's build on the executors, or run the driver on the executors' Python and platform."
    if not os.path.isdir(os.path.join(dist, "slidewise")):
        raise ImportError(f"{drivers} is not on {here} at {dist}: was it shipped to this SparkContext with "
                          f"slidewise.spark.ship(spark)?" + hint)
    sys.path.insert(0, dist)
    importlib.invalidate_caches()
    try:
        mod = importlib.import_module("slidewise")
        got = os.path.realpath(os.path.dirname(os.path.abspath(mod.__file__ or "")))
        if got != os.path.realpath(os.path.join(dist, "slidewise")):
            raise ImportError(f"import slidewise gave {got}")
    except Exception as e:
        _forget_slidewise()
        sys.path.remove(dist)
        raise ImportError(f"{drivers}, shipped to {dist}, cannot be imported on {here}: {type(e).__name__}: {e}."
                          + hint) from e
    return tag(mod)
