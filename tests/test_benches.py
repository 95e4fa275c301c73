"""The asv suite imports: asv discovers benchmarks by importing every
module of ``benches/`` (as the package ``benches``), so one script that runs
at import, needs a second build there, or has a module-level function
named like a benchmark that is not one breaks ``make bench`` for every
benchmark."""

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = ("time_", "timeraw_", "track_", "mem_", "peakmem_")


def test_every_bench_module_imports_as_asv_imports_it(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr(sys, "argv", ["asv", "discover"])  # what asv's runner sees
    names = [m.name for m in pkgutil.iter_modules([str(ROOT / "benches")])]
    assert "bench_keys" in names
    for name in names:
        mod = importlib.import_module(f"benches.{name}")
        for fname, f in vars(mod).items():
            if inspect.isfunction(f) and f.__module__ == mod.__name__ and fname.startswith(PREFIXES):
                # a module-level benchmark takes its params, or none
                n_args = len(inspect.signature(f).parameters)
                assert n_args == len(getattr(f, "params", ()) or ()) or n_args == 0 and not hasattr(f, "params"), (
                    f"benches/{name}.py: {fname} looks like an asv benchmark but takes {n_args} arguments")
