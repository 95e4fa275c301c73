//! Per-step throughput of every FIFO algorithm in steady state: one step is
//! evict + insert + query on a full window (slide 1), the FlatFIT paper's
//! Experiment 1 setting (§5). Static dispatch through `with_fifo!`, so each
//! algorithm is monomorphised per operation as in production.
//!
//! `cargo bench -p slidewise-core --features bench --bench fifo_step -- --quick`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use slidewise_core::fifo::{Algorithm, FifoAggregator, New};
use slidewise_core::ops::{Max, Sum};
use slidewise_core::AggOp;

const WINDOWS: [usize; 6] = [1, 1 << 4, 1 << 8, 1 << 12, 1 << 16, 1 << 20];
/// Recalc is O(n) per step: stop where it is still measurable quickly.
const RECALC_MAX: usize = 1 << 12;
/// Distinct inputs, cycled (a power of two, larger than the L1 cache).
const INPUTS: usize = 1 << 14;

/// Deterministic pseudo-random values (xorshift), so runs are comparable.
fn inputs<M: AggOp<In = f64>>() -> Vec<M::Agg> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..INPUTS as i64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            M::lift((x >> 11) as f64 / (1u64 << 53) as f64 * 1000.0, i)
        })
        .collect()
}

fn step<M: AggOp<In = f64>, A: FifoAggregator<M> + New>(c: &mut Criterion, group: &str, algo: Algorithm, n: usize) {
    let xs = inputs::<M>();
    let mut a = A::new_with_capacity(n).unwrap();
    for i in 0..n {
        a.insert(xs[i % INPUTS].clone());
    }
    let mut i = n;
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    g.bench_function(BenchmarkId::new(algo.name(), n), |b| {
        b.iter(|| {
            a.evict();
            a.insert(xs[i & (INPUTS - 1)].clone());
            i = i.wrapping_add(1);
            black_box(a.query())
        })
    });
    g.finish();
}

fn run<M: AggOp<In = f64>>(c: &mut Criterion, group: &str) {
    for algo in Algorithm::ALL {
        if algo.check::<M>().is_err() {
            continue;
        }
        for n in WINDOWS {
            if algo == Algorithm::Recalc && n > RECALC_MAX {
                continue;
            }
            slidewise_core::with_fifo!(algo, M, step(c, group, algo, n));
        }
    }
}

fn fifo_step(c: &mut Criterion) {
    run::<Max<f64>>(c, "step/max_f64");
    run::<Sum<f64>>(c, "step/sum_f64");
}

criterion_group! {
    name = benches;
    // About 1 s per case, ~90 cases: the whole run stays within 4 minutes.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(700));
    targets = fifo_step
}
criterion_main!(benches);
