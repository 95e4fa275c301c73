//! Per-slide throughput of the general (out-of-order) aggregators in steady
//! state: one slide is insert newest + evict oldest + p late partials folded
//! into random slots of the window + query (CBiX paper §3.3 setting).
//! Static dispatch: each aggregator monomorphised for max over f64.
//! The full sweep with ⊕ counts is benches/cbix_experiment.py.
//!
//! `cargo bench -p slidewise-core --features bench --bench general -- --quick`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use slidewise_core::general::{Cbix, GeneralAggregator, GeneralFlatFat, GeneralRecalc, NewGeneral, TwoStacksExt};
use slidewise_core::ops::Max;
use slidewise_core::AggOp;

type M = Max<f64>;

fn bench_one<A: GeneralAggregator<M> + NewGeneral>(c: &mut Criterion, name: &str, n: usize, p: usize) {
    let mut g = c.benchmark_group(format!("general/p{p}"));
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(2));
    g.warm_up_time(Duration::from_millis(500));
    let mut a = A::new_general(n).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for id in 0..n as u64 {
        a.insert(id, M::lift((rnd() % 1000) as f64, 0)).unwrap();
    }
    let mut end = n as u64;
    g.bench_function(BenchmarkId::new(name, n), |b| {
        b.iter(|| {
            a.insert(end, M::lift((rnd() % 1000) as f64, 0)).unwrap();
            end += 1;
            a.evict_upto(end - n as u64);
            for _ in 0..p {
                let id = end - n as u64 + rnd() % n as u64;
                a.insert(id, M::lift((rnd() % 1000) as f64, 0)).unwrap();
            }
            black_box(a.query());
        })
    });
    g.finish();
}

fn general(c: &mut Criterion) {
    for p in [0usize, 1, 4, 16] {
        for n in [1usize << 10, 1 << 14, 1 << 18] {
            bench_one::<Cbix<M>>(c, "cbix", n, p);
            bench_one::<GeneralFlatFat<M>>(c, "flatfat", n, p);
            if n <= 1 << 10 || p == 0 {
                bench_one::<TwoStacksExt<M>>(c, "two_stacks", n, p);
            }
            if n <= 1 << 10 {
                bench_one::<GeneralRecalc<M>>(c, "recalc", n, p);
            }
        }
    }
}

criterion_group!(benches, general);
criterion_main!(benches);
