"""The abi3 wheel on a second CPython: run by `make test` (stage abi3) with
another interpreter than the test suite's, in a venv holding only the
built wheel, numpy and pyarrow. It checks that the extension loaded is the
stable-ABI one and that it computes: each result against plain Python."""

import random
import sys

import pyarrow as pa

import slidewise as sw
from slidewise import _slidewise

assert _slidewise.__file__.endswith(".abi3.so"), _slidewise.__file__

rng = random.Random(7)
xs = [rng.randint(-50, 50) for _ in range(500)]
w = 17


def naive(f):
    return [f(xs[max(0, i - w + 1): i + 1]) for i in range(len(xs))]


assert sw.rolling(xs, w, "sum").to_pylist() == naive(sum)
assert sw.rolling(pa.array(xs, pa.float64()), w, "max").to_pylist() == [float(v) for v in naive(max)]
keys = [i % 3 for i in range(len(xs))]
got = sw.rolling(xs, 4, "min", keys=keys).to_pylist()
want = []
for i, k in enumerate(keys):
    mine = [xs[j] for j in range(i + 1) if keys[j] == k][-4:]
    want.append(min(mine))
assert got == want

s = sw.Stream([sw.Query("sum", range=10, slide=5)])
t = s.push(pa.record_batch({"v": pa.array(xs[:100])}))["sum_10_5"]
for a, e, v in zip(*(t.column(c).to_pylist() for c in ("window_start", "window_end", "value"))):
    assert v == sum(xs[a:e]) and a == max(0, e - 10), (a, e, v)
assert t.num_rows == 20, t.num_rows
print(f"abi3 wheel OK on CPython {sys.version.split()[0]}: {_slidewise.__file__.rsplit('/', 1)[-1]}")
