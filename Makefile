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

.PHONY: setup build build-release rust-build wheel test test-rust test-python test-spark test-spark-long test-local test-abi3 typecheck demo bench clean

SHELL := /bin/bash
# $(call stage,NAME,COMMAND): run COMMAND and print how long it took and
# the CPU it used (user + system, its children's included), so the cost of
# each CI stage, and how much of the 2 cores it kept busy, stays visible.
# (`times` in the subshell: the processes it waited for; the JVMs a test
# process starts are left out.)
stage = @t0=$$(date +%s); f=$$(mktemp); ( $(2); rc=$$?; times > $$f; exit $$rc ); rc=$$?; \
	cpu=$$(tail -1 $$f | awk '{ for (i = 1; i <= 2; i++) { split($$i, t, "m"); s += 60 * t[1] + t[2] } } END { printf "%.0f", s }'); rm -f $$f; \
	echo "== stage $(1): $$(( $$(date +%s) - t0 ))s, $$cpu CPU-s (exit $$rc)"; exit $$rc

# What the tests and the demo need (a variable: its commas stay out of $(call)).
PIP_TEST := "maturin>=1.9.4,<2" "ziglang>=0.13,<0.18" numpy "pyarrow>=15" pandas polars bottleneck hypothesis pytest "pyspark>=4,<5" protobuf grpcio grpcio-status googleapis-common-protos zstandard mypy

# --no-compile: no .pyc for every module of every package at install (21 of
# its 45 CPU-seconds, beside the Rust build; Intel Xeon, 2 vCPUs): Python
# writes them for the modules imported, when first imported.
$(VENV)/.deps: pyproject.toml
	$(call stage,setup,$(PYTHON) -m venv $(VENV) && $(PY) -m pip install --quiet --upgrade pip && \
		$(PY) -m pip install --quiet --no-compile $(PIP_TEST) && touch $@)

# matplotlib for the demo's plot and the papers' figures; asv for benchmarks.
# Neither is needed by the tests.
$(VENV)/.plot-deps: $(VENV)/.deps
	$(PY) -m pip install --quiet matplotlib
	touch $@

$(VENV)/.bench-deps: $(VENV)/.plot-deps
	$(PY) -m pip install --quiet asv
	touch $@

setup: $(VENV)/.deps

# The Rust tests, compiled (not run): this also compiles the core the
# extension links, so `build` after it only compiles the binding.
rust-build:
	$(call stage,rust-build,cargo test --workspace --tests --no-run)

# The portable extension: on Linux (glibc), the extension's final link goes
# through zig (rust/zigcc) against glibc 2.17's symbol versions, so its wheel
# is manylinux2014 and loads on executors as old as CentOS 7, and maturin's
# audit refuses a .so that needs more. Only that link changes (a rustc flag
# of the binding crate, not a cargo linker setting): the crates it links are
# the ones `cargo test` compiles, shared, not compiled again for another
# target as `maturin build --zig` would. Every build of the extension links
# this way (the editable one too), so `wheel` reuses the test build's
# compile. LINK= COMPAT= builds with the system linker instead.
ifneq ($(shell getconf GNU_LIBC_VERSION 2>/dev/null),)
LINK ?= -- -C linker=$(abspath rust/zigcc)
COMPAT ?= --compatibility manylinux2014
endif

# The extension pytest loads: the shared test profile (editable install).
build: setup rust-build
	$(call stage,build,maturin develop --quiet $(LINK))

# The extension benchmarks and the demo time: release (thin LTO).
build-release: setup
	maturin develop --release --quiet $(LINK)

# The wheel to install or ship (docs/spark.md): dist/slidewise-*.whl, for
# CPython 3.9+ (abi3) on this platform, manylinux2014 on Linux. PROFILE=dev
# packs the test build (seconds after `build`); `make test` does, and checks
# that wheel (tests/test_wheel.py, stage abi3).
PROFILE ?= release
wheel: setup
	$(call stage,wheel,rm -f dist/slidewise-*.whl && maturin build --quiet --profile $(PROFILE) $(COMPAT) -i $(PY) -o dist $(LINK))

test-rust: rust-build
	$(call stage,test-rust,cargo test --workspace --tests)

# The tests check the wheel of the test build (PROFILE=dev, also for
# test-abi3): SLIDEWISE_TEST_WHEELS makes tests/test_wheel.py and the
# local-cluster test require it (they skip without it when run by hand).
# pytest runs as three processes, side by side: the tests that run Spark,
# in two (marked `spark_long`, Structured Streaming and the local cluster,
# and `spark`, by tests/conftest.py), and the rest. A Spark test spends
# much of its time waiting on the JVM, with a core idle, which the others
# fill. Each test runs in exactly one of the three.
PYTEST = SLIDEWISE_TEST_WHEELS=dist $(PY) -m pytest -p no:cacheprovider --durations=10
test-python test-spark test-spark-long test-local test-abi3: PROFILE = dev
test-python: test-spark-long test-spark test-local
test-spark-long: build wheel
	$(call stage,test-spark-long,$(PYTEST) -m spark_long)
test-spark: build wheel
	$(call stage,test-spark,$(PYTEST) -m spark)
test-local: build wheel
	$(call stage,test-local,$(PYTEST) -m "not spark and not spark_long")

# abi3: the extension is built for CPython's stable ABI (3.9 and later), so
# one wheel serves every version. The wheel `make wheel` packs (in `make
# test`: from the test build, the same compiled extension: seconds; the
# portable one, the one tests/test_wheel.py checks) runs on a second CPython,
# 3.9 (the floor), from pyenv, in a venv of its own with numpy and pyarrow only.
ABI3_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.9*/bin/python))
ABI3_VENV := .venv-abi3

$(ABI3_VENV)/.deps:
	@if [ -z "$(ABI3_PYTHON)" ]; then echo "no CPython 3.9 under pyenv: set ABI3_PYTHON to a second CPython"; exit 1; fi
	$(call stage,abi3-setup,$(ABI3_PYTHON) -m venv $(ABI3_VENV) && $(ABI3_VENV)/bin/pip install --quiet --no-compile numpy "pyarrow>=15" && touch $@)

test-abi3: wheel $(ABI3_VENV)/.deps
	$(call stage,test-abi3,$(ABI3_VENV)/bin/pip install --quiet --no-deps --force-reinstall dist/slidewise-*-cp39-abi3-*.whl && \
		$(ABI3_VENV)/bin/python tests/abi3_smoke.py)

# mypy --strict over the package, the binding's stub and the docs' examples
# (tests/typing; [tool.mypy] in pyproject.toml). It reads sources only, so it
# needs no build and runs while the Rust compiles.
typecheck: setup
	$(call stage,typecheck,$(PY) -m mypy)

# The compiles first (the Python setups and the type check beside the Rust
# build of the tests and the core, then the binding), the test runs after,
# all at once: cargo's proptests and the three pytest processes, whose
# Spark tests leave a core idle while they wait on the JVM, instead of the
# proptests beside the binding's compile, which keeps both cores busy.
# Each target's output is printed whole when it ends. The wheel is packed
# between the two (seconds: the test build's extension), alone, so that it
# never waits on cargo's lock behind the Rust tests.
# Measured and not kept: pytest starting on the extension alone, with the
# Rust tests compiled beside it (CI 1021-1042 s against 956 s, Intel Xeon,
# 2 vCPUs): a run is bound by its CPU, and pytest lost more to that compile
# than it gained by starting 50 s earlier.
test:
	@$(MAKE) --no-print-directory -j2 --output-sync=target build typecheck $(ABI3_VENV)/.deps
	@$(MAKE) --no-print-directory PROFILE=dev -o build -o rust-build -o setup wheel
	@$(MAKE) --no-print-directory -j5 --output-sync=target -o build -o rust-build -o setup -o wheel test-spark-long test-spark test-rust test-local test-abi3

demo: build-release $(VENV)/.plot-deps
	$(PY) -m slidewise demo

# asv against the installed build (quick); see asv.conf.json for history runs.
bench: build-release $(VENV)/.bench-deps
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --quick --show-stderr -E existing:$(abspath $(PY))

clean:
	rm -rf $(VENV) $(ABI3_VENV) target dist .asv .mypy_cache

# docs/benchmarks.md from the comparison scripts (benches/report.py), on the
# release build: `make report` runs them in full (20-40 minutes on 2 cores),
# `make report REPORT_ARGS=--quick` fewer repeats, cases and jobs (10-20).
.PHONY: report
report: build-release
	$(PY) benches/report.py $(REPORT_ARGS)
