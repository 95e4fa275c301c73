//! Pane reduction (partial aggregation's per-row work): 4M float64 / int64
//! rows cut into panes of 8, 64, 1024 and 65536 rows, reduced to sum and max
//! partials at every instruction-set level this CPU has (portable, AVX2,
//! AVX-512F), against the row-by-row fold the window operator used before
//! (`lift` + `combine` per row). numpy's `np.add.reduceat` /
//! `np.maximum.reduceat` on the same slices: benches/bench_partial.py.
//!
//! `cargo bench -p slidewise-core --features bench --bench partial`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use slidewise_core::monoid::AggOp;
use slidewise_core::ops::{Max, Sum};
use slidewise_core::ops::reduce::{available, reduce_panes, PaneReduce};

const N: usize = 4 << 20;

fn data() -> Vec<f64> {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    (0..N)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn row_by_row<M: AggOp>(xs: &[M::In], ends: &[usize]) -> Vec<M::Agg> {
    let mut out = Vec::with_capacity(ends.len());
    let mut a = 0;
    for &e in ends {
        let mut acc = M::identity();
        for &x in &xs[a..e] {
            M::combine_into(&mut acc, &M::lift(x, 0));
        }
        out.push(acc);
        a = e;
    }
    out
}

fn panes(c: &mut Criterion) {
    let xf = data();
    let xi: Vec<i64> = xf.iter().map(|&v| (v * 1e6) as i64).collect();
    for pane in [8usize, 64, 1024, 65_536] {
        let ends: Vec<usize> = (1..=N / pane).map(|k| k * pane).collect();
        let mut g = c.benchmark_group(format!("pane_{pane}"));
        g.throughput(Throughput::Elements(N as u64));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(300));
        g.measurement_time(Duration::from_secs(2));
        for level in available() {
            g.bench_function(BenchmarkId::new("sum_f64", level.name()), |b| {
                b.iter(|| reduce_panes(level, black_box(&xf), &ends, f64::sum))
            });
            g.bench_function(BenchmarkId::new("max_f64", level.name()), |b| {
                b.iter(|| reduce_panes(level, black_box(&xf), &ends, f64::max_key))
            });
            g.bench_function(BenchmarkId::new("sum_i64", level.name()), |b| {
                b.iter(|| reduce_panes(level, black_box(&xi), &ends, i64::sum))
            });
        }
        g.bench_function(BenchmarkId::new("sum_f64", "row_by_row"), |b| b.iter(|| row_by_row::<Sum<f64>>(black_box(&xf), &ends)));
        g.bench_function(BenchmarkId::new("max_f64", "row_by_row"), |b| b.iter(|| row_by_row::<Max<f64>>(black_box(&xf), &ends)));
        g.bench_function(BenchmarkId::new("sum_i64", "row_by_row"), |b| b.iter(|| row_by_row::<Sum<i64>>(black_box(&xi), &ends)));
        g.finish();
    }
}

criterion_group!(benches, panes);
criterion_main!(benches);
