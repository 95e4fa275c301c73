"""An executor Python that cannot import the driver's slidewise, made
without a network and without a second environment.

``make(directory, hide)`` writes ``directory/python``: a shell script that
runs this interpreter (``sys.executable``) with ``directory/site`` first on
``PYTHONPATH``; that directory holds a copy of this file as
``sitecustomize.py``. Imported as ``sitecustomize`` (at interpreter start),
it replaces importlib's ``PathFinder`` in ``sys.meta_path`` by a wrapper
that does not find ``slidewise`` or ``slidewise.*`` when the spec it would
return lies under ``hide`` (the driver's package directory), nor the
installed distribution's metadata; a copy elsewhere (the one Spark ships
with ``SparkContext.addArchive``) is still found. The script also sets
``SLIDEWISE_TEST_BARE=1`` so that a probe can tell it ran under it.
"""

import os
import sys

ENV_HIDE = "SLIDEWISE_TEST_HIDE"
ENV_BARE = "SLIDEWISE_TEST_BARE"
_PKG = "slidewise"


def make(directory, hide) -> str:
    """Write the wrapper script and its sitecustomize under ``directory``;
    return the script's path. ``hide``: the package directory to hide."""
    import shlex
    import shutil

    site = os.path.join(str(directory), "site")
    os.makedirs(site, exist_ok=True)
    shutil.copyfile(os.path.abspath(__file__), os.path.join(site, "sitecustomize.py"))
    script = os.path.join(str(directory), "python")
    q = shlex.quote
    with open(script, "w") as f:
        f.write("#!/bin/sh\n"
                f"PYTHONPATH={q(site)}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                f"{ENV_HIDE}={q(os.path.realpath(str(hide)))}\n"
                f"{ENV_BARE}=1\n"
                f"export PYTHONPATH {ENV_HIDE} {ENV_BARE}\n"
                f'exec {q(sys.executable)} "$@"\n')
    os.chmod(script, 0o755)
    return script


def _under(path, root) -> bool:
    try:
        p = os.path.realpath(path)
    except (TypeError, ValueError):
        return False
    return p == root or p.startswith(root + os.sep)


class HidingPathFinder:
    """``importlib.machinery.PathFinder``, minus the hidden slidewise."""

    def __init__(self, inner, hide):
        self._inner = inner
        self._hide = hide

    def _hidden(self, spec) -> bool:
        locs = list(spec.submodule_search_locations or [])
        if spec.origin and os.path.isabs(spec.origin):
            locs.append(spec.origin)
        return any(_under(p, self._hide) for p in locs)

    def find_spec(self, name, path=None, target=None):
        spec = self._inner.find_spec(name, path, target)
        if spec is not None and (name == _PKG or name.startswith(_PKG + ".")) and self._hidden(spec):
            return None
        return spec

    def invalidate_caches(self):
        return self._inner.invalidate_caches()

    def find_distributions(self, *args, **kwargs):
        for d in self._inner.find_distributions(*args, **kwargs):
            try:
                name = (d.metadata["Name"] or "").lower()
            except Exception:
                name = ""
            if name != _PKG:
                yield d

    def __getattr__(self, name):
        return getattr(self._inner, name)


def install() -> None:
    hide = os.environ.get(ENV_HIDE)
    if not hide:
        return
    import importlib.machinery

    hide = os.path.realpath(hide)
    pf = importlib.machinery.PathFinder
    sys.meta_path[:] = [HidingPathFinder(pf, hide) if f is pf else f for f in sys.meta_path]
    # anything imported before this ran (nothing of slidewise in practice)
    for m in [m for m in sys.modules if m == _PKG or m.startswith(_PKG + ".")]:
        del sys.modules[m]


if __name__ == "sitecustomize":
    install()
