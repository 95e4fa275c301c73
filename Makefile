# Two entry points (README): `make demo` runs the main job, `make test` runs
# every test. Both start from nothing: they create .venv, install the Python
# packages from PyPI and build the extension with maturin.
#
# Builds: `make test` compiles once, in the `dev` profile (optimised, debug
# assertions and overflow checks on), shared by `cargo test` and the
# extension pytest loads. `make demo` and `make bench` build `release`.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup build build-release test test-rust test-python demo bench clean

$(VENV)/.deps: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.9.4,<2" numpy "pyarrow>=15" pandas polars bottleneck \
		hypothesis pytest "pyspark>=4,<5" protobuf
	touch $@

# asv and matplotlib only for benchmarks.
$(VENV)/.bench-deps: $(VENV)/.deps
	$(PY) -m pip install --quiet asv matplotlib
	touch $@

setup: $(VENV)/.deps

# The extension pytest loads: the shared test profile (editable install).
build: setup
	maturin develop --quiet

# The extension benchmarks and the demo time: release (thin LTO).
build-release: setup
	maturin develop --release --quiet

test-rust:
	cargo test --workspace --tests

test-python: build
	$(PY) -m pytest

test: test-rust test-python

demo: build-release
	$(PY) -m slidewise demo

# asv against the installed build (quick); see asv.conf.json for history runs.
bench: build-release $(VENV)/.bench-deps
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --quick --show-stderr -E existing:$(abspath $(PY))

clean:
	rm -rf $(VENV) target .asv
