"""The GIL is released while Rust computes."""

import threading
import time

import numpy as np
import pyarrow as pa

import slidewise as sw


def assert_threads_progress_during(call):
    """Run `call` while another Python thread counts; with the GIL held for
    the whole call, no bytecode of that thread could run strictly inside it."""
    stamps = []
    stop = threading.Event()

    def spin():
        i = 0
        while not stop.is_set():
            i += 1
            if i % 200 == 0:
                stamps.append(time.perf_counter())

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
    finally:
        stop.set()
        t.join()
    margin = (t1 - t0) * 0.1
    inside = [s for s in stamps if t0 + margin < s < t1 - margin]
    assert inside, f"no progress during a {t1 - t0:.3f}s call"


def test_python_threads_progress_during_a_long_rolling():
    x = pa.array(np.random.default_rng(0).normal(0, 1, 10_000_000))
    assert_threads_progress_during(lambda: sw.rolling(x, 4, "sum"))
