# Two entry points (README): `make demo` runs the main job, `make test` runs
# every test. Both start from nothing: they create .venv, install the Python
# packages from PyPI and build the extension with maturin.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup build test test-rust test-python demo bench clean

$(VENV)/.deps: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.9.4,<2" numpy "pyarrow>=15" pandas polars bottleneck \
		hypothesis pytest "pyspark>=4,<5" protobuf asv matplotlib
	touch $@

setup: $(VENV)/.deps

# Release build of the extension into the venv (editable install).
build: setup
	maturin develop --release --quiet

test-rust:
	cargo test -p slidewise-core

test-python: build
	$(PY) -m pytest -q

test: test-rust test-python

demo: build
	$(PY) -m slidewise demo

# asv against the installed build (quick); see asv.conf.json for history runs.
bench: build
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --quick --show-stderr -E existing:$(abspath $(PY))

clean:
	rm -rf $(VENV) target .asv
