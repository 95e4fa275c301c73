"""Missing values at full speed (issue 36): every per-row kernel on columns
with random masks (0%, 1%, 50%, 100% missing, runs of nulls longer than the
window) against the oracle, as Arrow nulls, as NaN with ``nan="skip"`` (the
same answers as the nulls) and with NaN kept apart from nulls (valid NaN
values among nulls). The null slots hold garbage (NaN, inf, 1e300): a
kernel that reads a slot its mask says is missing fails here."""

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidewise as sw
from oracle import agg_rows, same

AGGS = ["sum", "mean", "count", "var", "std", "min", "max", "range", "first", "last", "median"]


def column(n, p, runs, run, nans, seed):
    """A random walk with ``p`` of its rows missing and ``runs`` runs of
    ``run`` missing rows; ``nans`` valid rows hold NaN (a value, under
    nan="propagate"). Returns the values (garbage in the missing slots) and
    the validity."""
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(-4, 5, n)) * 0.1
    miss = rng.random(n) < p
    for a in rng.integers(0, max(n, 1), runs):
        miss[a:a + run] = True
    x[miss] = rng.choice([np.nan, np.inf, -1e300, 7.5], int(miss.sum()))
    at = rng.integers(0, max(n, 1), nans if n else 0)
    x[at[~miss[at]]] = np.nan
    return x, ~miss


def expect(x, valid, w, agg, i):
    lo = max(0, i - w + 1)
    if agg == "count":
        return int(valid[lo:i + 1].sum())
    if agg == "median":
        v = x[lo:i + 1][valid[lo:i + 1]]
        if len(v) == 0:
            return None
        s = np.sort(v)  # NaN sorts last: above every number (Spark)
        m = len(s)
        return float(s[m // 2]) if m % 2 else float((s[m // 2 - 1] + s[m // 2]) / 2)
    return agg_rows(x, valid, lo, i + 1, agg)


def check(arr, x, valid, w, what, **kw):
    rows = range(len(x)) if len(x) * w <= 200_000 else np.linspace(0, len(x) - 1, 300).astype(int)
    for agg in AGGS:
        got = sw.rolling(arr, w, agg, **kw).to_pylist()
        for i in rows:
            want = expect(x, valid, w, agg, int(i))
            g = got[i]
            if agg == "std" and want is not None and g is not None:
                g, want = g * g, want * want  # compare variances (a std of ~0 has a large relative error)
            assert same(g, want, 1e-9, 1e-9), f"{what} {agg} w={w} row {i}: got {got[i]!r}, want {want!r}"


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 3000),
    p=st.sampled_from([0.0, 0.01, 0.5, 1.0]),
    runs=st.integers(0, 3),
    run=st.sampled_from([3, 300, 2000]),
    w=st.sampled_from([1, 2, 5, 16, 100, 1000, 5000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_masks_as_nulls_and_as_nan_skip_equal_the_oracle(n, p, runs, run, w, seed):
    x, valid = column(n, p, runs, run, 0, seed)
    what = f"n={n} p={p} runs={runs}x{run}"
    check(pa.array(x, mask=~valid), x, valid, w, what + " nulls")
    # The same holes as NaN, skipped: the nulls' answers.
    xn = np.where(valid, x, np.nan)
    check(pa.array(xn), xn, valid, w, what + ' nan="skip"', nan="skip")


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 3000),
    p=st.sampled_from([0.0, 0.01, 0.5]),
    nans=st.integers(1, 20),
    w=st.sampled_from([1, 3, 16, 100, 1000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_nan_stays_a_value_among_nulls(n, p, nans, w, seed):
    """nan="propagate": valid NaN values propagate (sum, mean, var, std,
    max) or sit above every number (min, median), nulls are skipped."""
    x, valid = column(n, p, 1, 50, nans, seed)
    check(pa.array(x, mask=~valid), x, valid, w, f"n={n} p={p} nans={nans}")


@pytest.mark.parametrize("agg", ["sum", "mean", "var", "std", "min", "max", "median"])
def test_a_sensor_down_longer_than_the_window(agg):
    """A run of 10,000 missing rows in a 40,000-row column, windows shorter
    and longer than the run."""
    rng = np.random.default_rng(36)
    x = np.cumsum(rng.normal(size=40_000))
    valid = np.ones(len(x), dtype=bool)
    valid[15_000:25_000] = False
    x[~valid] = np.inf
    arr = pa.array(x, mask=~valid)
    for w in (16, 1000, 20_000):
        got = sw.rolling(arr, w, agg).to_pylist()
        for i in list(range(14_990, 15_010)) + list(range(24_990, 25_030)) + list(range(25_000 + w - 20, min(25_000 + w + 20, 40_000))):
            want = expect(x, valid, w, agg, i)
            assert same(got[i], want, 1e-9, 1e-9), f"{agg} w={w} row {i}: got {got[i]!r}, want {want!r}"


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 2000),
    p=st.sampled_from([0.0, 0.01, 0.5, 1.0]),
    nans=st.integers(0, 40),
    w=st.sampled_from([1, 3, 16, 100, 1000]),
    off=st.integers(0, 70),
    f32=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_nan_skip_on_a_column_with_nulls_too(n, p, nans, w, off, f32, seed):
    """nan="skip" on a column holding both nulls (garbage in their slots,
    NaN among it) and valid NaN values, sliced (an offset into the
    validity words) and in float32: the NaN rows and the null rows are
    both missing, and nothing else is (the NaN mask is built word-wise in
    Rust, ANDed with the validity)."""
    x, valid = column(n + off, p, 1, 50, nans, seed)
    if f32:
        with np.errstate(over="ignore"):  # garbage -1e300 in null slots
            x = x.astype(np.float32).astype(np.float64)  # the values float32 holds
    arr = pa.array(x, mask=~valid, type=pa.float32() if f32 else pa.float64()).slice(off)
    x, valid = x[off:], valid[off:]
    keep = valid & ~np.isnan(x)
    check(arr, x, keep, w, f"n={n} p={p} nans={nans} off={off} f32={f32} skip", nan="skip")


@pytest.mark.parametrize("agg", ["max", "min", "range"])
@pytest.mark.parametrize("p", [0.01, 0.5])
def test_max_min_of_long_windows_with_holes(agg, p):
    """Windows from 2^16 rows on take max / min's two-level kernel (and its
    thread cuts): with nulls (garbage NaN / inf in their slots) it equals
    pandas on the same holes as NaN."""
    import pandas as pd

    rng = np.random.default_rng(16)
    n = 300_000
    x = np.cumsum(rng.normal(size=n))
    miss = rng.random(n) < p
    miss[100_000:130_000] = True  # a gap longer than a sub-block
    arr = pa.array(np.where(miss, rng.choice([np.nan, np.inf, -np.inf], n), x), mask=miss)
    s = pd.Series(np.where(miss, np.nan, x))
    for w in (70_000, 200_000):
        r = s.rolling(w, min_periods=1)
        want = {"max": r.max(), "min": r.min(), "range": r.max() - r.min()}[agg].to_numpy()
        got = sw.rolling(arr, w, agg).to_numpy(zero_copy_only=False)
        got = np.where(np.isnan(got.astype(float)), np.nan, got)
        np.testing.assert_array_equal(got, want, err_msg=f"{agg} p={p} w={w}")


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 3000),
    p=st.sampled_from([0.0, 0.01, 0.5]),
    p_nan=st.sampled_from([0.001, 0.01, 0.1, 0.5, 1.0]),
    p_inf=st.sampled_from([0.0, 0.005, 0.05]),
    w=st.sampled_from([1, 2, 3, 16, 100, 1000, 5000]),
    mp=st.sampled_from([None, 1, 2, 3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_dense_nan_propagates_among_nulls(n, p, p_nan, p_inf, w, mp, seed):
    """nan="propagate" with NaN at every density and +-inf (the sums and
    moments run their masked kernels on the finite rows and mark the
    windows holding the others): NaN with a NaN or both infinities, else
    the infinity for sum / mean; NaN for var / std; nulls skipped and
    min_periods counting NaN as a value, against the oracle."""
    x, valid = column(n, p, 1, 300, 0, seed)
    rng = np.random.default_rng(seed + 1)
    u = rng.random(n)
    x = np.where(valid & (u < p_nan), np.nan, x)
    x = np.where(valid & (u >= p_nan) & (u < p_nan + p_inf), rng.choice([np.inf, -np.inf], n), x)
    arr = pa.array(x, mask=~valid)
    rows = range(n) if n * w <= 200_000 else np.linspace(0, n - 1, 300).astype(int)
    for agg in ["sum", "mean", "count", "var", "std"]:
        got = sw.rolling(arr, w, agg, min_periods=mp).to_pylist() if mp is None or mp <= w else None
        if got is None:
            continue
        for i in rows:
            i = int(i)
            lo = max(0, i - w + 1)
            want = expect(x, valid, w, agg, i)
            if mp is not None and valid[lo:i + 1].sum() < mp:
                want = None
            g = got[i]
            if agg == "std" and want is not None and g is not None:
                g, want = g * g, want * want
            assert same(g, want, 1e-9, 1e-9), f"{agg} n={n} p={p} p_nan={p_nan} p_inf={p_inf} w={w} mp={mp} row {i}: got {got[i]!r}, want {want!r}"


@pytest.mark.parametrize("p_nan", [0.01, 0.1])
def test_nan_propagate_on_a_long_column_split_over_threads(p_nan):
    """2^20 rows and more split over threads: NaN / +-inf among 1% nulls
    (NaN and null kept apart) at every cut, windows short and longer than
    a thread's job; against pandas on the finite values, with the windows
    that hold a NaN or an infinity set from their counts."""
    import pandas as pd

    rng = np.random.default_rng(36)
    n = (1 << 20) + 12_345
    x = 100 + rng.normal(size=n)
    u = rng.random(n)
    x[u < p_nan] = np.nan
    x[rng.integers(0, n, 30)] = np.inf
    x[rng.integers(0, n, 30)] = -np.inf
    valid = rng.random(n) >= 0.01
    for c in (n // 2, n // 3, 2 * n // 3, n // 4, 3 * n // 4):
        valid[c - 3:c + 3] = False
    arr = pa.array(np.where(valid, x, 7.5), mask=~valid)
    fin = np.where(valid & np.isfinite(x), x, np.nan)
    for w in (16, 1000, 70_000):
        def count(m):
            return pd.Series((valid & m).astype(np.int64)).rolling(w, min_periods=1).sum().to_numpy()

        nan, pinf, ninf, k = count(np.isnan(x)), count(x == np.inf), count(x == -np.inf), count(np.ones(n, dtype=bool))
        r = pd.Series(fin).rolling(w, min_periods=1)
        for agg, base in (("sum", r.sum()), ("mean", r.mean()), ("var", pd.Series(fin).rolling(w, min_periods=2).var()), ("std", None)):
            got = sw.rolling(arr, w, agg).to_numpy(zero_copy_only=False).astype(float)
            if agg == "std":
                got, base = got * got, pd.Series(fin).rolling(w, min_periods=2).var()
            want = base.to_numpy().copy()
            if agg in ("sum", "mean"):
                want[pinf > 0] = np.inf
                want[ninf > 0] = -np.inf
                want[(nan > 0) | ((pinf > 0) & (ninf > 0))] = np.nan
                want[k == 0] = np.nan  # null (to_numpy: NaN)
            else:
                want[(nan + pinf + ninf) > 0] = np.nan
                want[k < 2] = np.nan
            np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8, err_msg=f"{agg} p_nan={p_nan} w={w}")
            # NaN where the window holds one, and nowhere else but the nulls.
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{agg} p_nan={p_nan} w={w}")


def test_nan_skip_on_a_long_column_equals_its_nulls():
    """nan="skip" past 2^20 rows: the NaN mask is built over threads (cut at
    64-row words; sum and mean: by each job, its words of the output's
    validity shared at the cuts) and ANDed with the validity; the answers
    are those of the same holes as nulls, bit for bit."""
    rng = np.random.default_rng(37)
    n = (1 << 21) + 4_099
    x = np.cumsum(rng.normal(size=n))
    x[rng.random(n) < 0.01] = np.nan
    valid = rng.random(n) >= 0.01
    for c in (n // 2, n // 3, 2 * n // 3, n // 4, 3 * n // 4):
        x[c - 70:c + 70] = np.nan  # NaN across the cuts
    skip = pa.array(x, mask=~valid).slice(3)
    holes = pa.array(np.where(np.isnan(x), 0.0, x), mask=~(valid & ~np.isnan(x))).slice(3)
    for w in (16, 5000):
        for agg in ("sum", "mean", "count", "var", "std", "max", "min"):
            a = sw.rolling(skip, w, agg, nan="skip")
            b = sw.rolling(holes, w, agg)
            assert a.equals(b), f"{agg} w={w}"


def test_nan_skip_where_most_jobs_hold_no_nan():
    """nan="skip" runs each job as nan="propagate" does until it meets a
    NaN, and masks only the jobs that do: on a column without NaN the
    answers are propagate's, bit for bit, validity included; with NaN only
    in runs nowhere near the first rows or the sampled words (so found by
    the kernels alone), the answers are those of the same holes as nulls:
    bit for bit, but for the mean, var and std, whose NaN-free jobs store
    propagate's bits (the unmasked kernels round differently): within a
    few ulps, the validity exact."""
    rng = np.random.default_rng(41)
    n = (1 << 21) + 1_001
    x = np.cumsum(rng.normal(size=n))
    clean = pa.array(x)
    for w in (16, 5000):
        for agg in ("sum", "mean", "count", "var", "std", "max", "min", "range"):
            assert sw.rolling(clean, w, agg, nan="skip").equals(sw.rolling(clean, w, agg)), f"no NaN: {agg} w={w}"
    for a in (1_000_100, 1_700_300):
        x[a:a + 3_000] = np.nan
    skip = pa.array(x)
    holes = pa.array(np.where(np.isnan(x), 0.0, x), mask=np.isnan(x))
    for w in (16, 5000):
        for agg in ("sum", "count", "max", "min", "range", "mean", "var", "std"):
            a = sw.rolling(skip, w, agg, nan="skip")
            b = sw.rolling(holes, w, agg)
            if agg not in ("mean", "var", "std"):
                assert a.equals(b), f"{agg} w={w}"
                continue
            assert a.is_valid().equals(b.is_valid()), f"{agg} w={w}"
            got, want = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, err_msg=f"{agg} w={w}")


FAULTS = """
import resource, sys
import numpy as np, pyarrow as pa, slidewise as sw
n = 10_000_000
rng = np.random.default_rng(7)
a = pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.01)
sw.rolling(a, 1024, sys.argv[1])  # the first call backs its blocks
if sys.argv[2] == "others":
    # Calls that free blocks of other sizes, which no later call asks for.
    for k in range(12):
        sw.rolling(pa.array(rng.standard_normal(200_000 + 64 * k)), 16, "max")
faults = []
for _ in range(3):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    r = sw.rolling(a, 1024, sys.argv[1])
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    del r
print(*faults)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux page-fault counts")
@pytest.mark.parametrize("agg", ["mean", "std", "max"])
def test_a_repeated_call_with_nulls_first_touches_no_fresh_memory(agg):
    """The extension keeps the large blocks a call frees (its output, the
    output's validity bitmap, their scratch) for the next call of that size
    (rust/python/src/alloc.rs). A 10M-row column's 1.25 MB bitmaps went back
    to glibc, which handed fresh pages to the next call: 578 page faults a
    call, a tenth of a mean's time with nulls on a VM that backs memory
    lazily. Counted by the minor page faults of a fresh interpreter after a
    first call, with glibc's mmap threshold fixed at its default (128 KiB):
    the threshold otherwise moves with what the process freed before, and
    the faults came and went with the heap's history."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    out = subprocess.run([sys.executable, "-c", FAULTS, agg, "alone"], capture_output=True, text=True, check=True, env=env)
    # A page or two of small allocations may come and go; a bitmap is 305
    # pages, the 80 MB output 40 (huge pages) or 20,000.
    assert min(map(int, out.stdout.split())) < 20, out.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="Linux page-fault counts")
def test_blocks_of_other_sizes_do_not_push_out_a_calls_output():
    """Twelve calls on shorter columns between two calls on a 10M-row one
    free blocks of twelve sizes no later call asks for: the kept 80 MB
    output must outlast them (the smallest kept block goes first when every
    slot is taken), or the next call faults in 80 MB afresh. Dropping the
    oldest instead ran a benchmark page's rolling mean at 0.12x of its
    speed."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    out = subprocess.run([sys.executable, "-c", FAULTS, "mean", "others"], capture_output=True, text=True, check=True, env=env)
    # The first call after them.
    assert int(out.stdout.split()[0]) < 20, out.stdout
