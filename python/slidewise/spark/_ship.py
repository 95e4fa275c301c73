"""Shipping: slidewise on executors whose Python lacks it.

The functions run on executors with ``import slidewise``; when the
executors' Python lacks slidewise, :func:`ship` (called automatically by
every entry point) has sent a zip of this installed package, compiled
extension included, with ``SparkContext.addArchive``; the executor side
(:func:`_import_slidewise`) puts it on ``sys.path`` only when ``import
slidewise`` fails, so an executor with its own (matching) install uses that
one.

The executor functions (the ``mapInArrow`` / ``applyInArrow`` functions,
the stateful processors) are defined in this package's modules, which
:func:`ship` registers with ``cloudpickle.register_pickle_by_value``: they
(and the classes and helpers they use) travel by value, so unpickling them
needs no importable slidewise; each imports slidewise through
:func:`_import_slidewise` before it uses it. No executor function may
reference a slidewise module as a global.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from typing import Any, Dict

# The name the shipped archive is unpacked under on executors.
_DIST_ALIAS = "slidewise_dist"
# This package: every module in it is pickled by value once shipped.
_PACKAGE = __name__.rpartition(".")[0]


def _package_zip() -> str:
    """Zip the installed slidewise package (with its compiled extension) into
    a cache file named by a hash of its contents; reused while unchanged."""
    import zipfile

    import slidewise

    pkg = os.path.dirname(os.path.abspath(slidewise.__file__))
    files = []
    h = hashlib.sha256()
    for root, dirs, names in os.walk(pkg):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in sorted(names):
            if n.endswith((".pyc", ".pyo")):
                continue
            p = os.path.join(root, n)
            st = os.stat(p)
            rel = os.path.relpath(p, os.path.dirname(pkg))
            files.append((p, rel))
            h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}".encode())
    cache = os.environ.get("SLIDEWISE_CACHE") or os.path.join(tempfile.gettempdir(), f"slidewise-{os.getuid()}")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"slidewise-{h.hexdigest()[:16]}.zip")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p, rel in sorted(files, key=lambda x: x[1]):
                z.write(p, rel)
        os.replace(tmp, path)
    return path


_SHIPPED: Dict[int, str] = {}


def ship(spark: Any) -> str:
    """Send this slidewise (package dir incl. the extension, as a .zip) to the
    executors of ``spark`` once per SparkContext; returns the zip's path."""
    sc = spark.sparkContext if hasattr(spark, "sparkContext") else spark
    key = id(sc._jsc) if getattr(sc, "_jsc", None) is not None else id(sc)
    path = _package_zip()
    if key in _SHIPPED:
        if _SHIPPED[key] != path:
            import warnings

            warnings.warn("slidewise changed on disk after it was shipped to this SparkContext; executors "
                          "without their own slidewise keep the first build (restart the session to ship "
                          "the new one)", RuntimeWarning, stacklevel=3)
    else:
        sc.addArchive(path + "#" + _DIST_ALIAS)
        _SHIPPED[key] = path
        # Executor functions are defined in this package's modules; pickle
        # them (and _Spec, _Roller, the stateful processors) by value so
        # that unpickling does not need an importable slidewise before
        # _import_slidewise has run. Registering the package covers every
        # module in it.
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[_PACKAGE])
    return path


def _import_slidewise():
    """Executor side: the local slidewise if importable, else the shipped one."""
    try:
        import slidewise  # noqa: F401
    except ImportError:
        from pyspark import SparkFiles

        d = SparkFiles.get(_DIST_ALIAS)
        if d not in sys.path:
            sys.path.insert(0, d)
        for m in [m for m in sys.modules if m == "slidewise" or m.startswith("slidewise.")]:
            del sys.modules[m]
        import slidewise  # noqa: F401
    return sys.modules["slidewise"]
