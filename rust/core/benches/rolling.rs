//! Rolling max and sum on 10M float64 rows (`algorithm = auto`) at windows
//! 16, 1024, 65536 and 1M. Compare with bottleneck's move_max / move_sum on
//! the same shape, measured in the same session (see the report). Then
//! time windows of 60 s over 2M rows about a second apart (sum / count:
//! prefix differences, max: Lemire's filter, std: the FIFO over frames);
//! polars' `rolling_*_by` is in benches/bench_rolling.py `TimeWindows`.
//!
//! `cargo bench -p slidewise-core --features bench --bench rolling`

use std::hint::black_box;
use std::time::Duration;

use arrow_array::{Float64Array, Int64Array};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_dyn, rolling_time_dyn, Shape};

const N: usize = 10_000_000;

fn data() -> Float64Array {
    // xorshift, uniform in [-1, 1): no NaN, so the raw-value paths run.
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    Float64Array::from_iter_values((0..N).map(|_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }))
}

fn rolling(c: &mut Criterion) {
    let col = data();
    for (agg, name) in [(AggKind::Max, "max"), (AggKind::Sum, "sum")] {
        let mut g = c.benchmark_group(format!("rolling_{name}_f64_10m"));
        g.throughput(Throughput::Elements(N as u64));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(3));
        for w in [16usize, 1024, 65_536, 1_000_000] {
            g.bench_with_input(BenchmarkId::from_parameter(w), &w, |b, &w| {
                b.iter(|| rolling_dyn(black_box(&col), w, agg, None, Algorithm::Auto, Shape::default()).unwrap())
            });
        }
        g.finish();
    }
}

fn time_windows(c: &mut Criterion) {
    const M: usize = 2_000_000;
    let col = data().slice(0, M);
    // gaps of 1 to 1,999 ms (xorshift), in ms: a 60 s window holds ~60 rows
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut t = 0i64;
    let ts = Int64Array::from_iter_values((0..M).map(|_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        t += 1 + (s % 1999) as i64;
        t
    }));
    let mut g = c.benchmark_group("rolling_time_60s_f64_2m");
    g.throughput(Throughput::Elements(M as u64));
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
    for (agg, name) in [(AggKind::Sum, "sum"), (AggKind::Count, "count"), (AggKind::Max, "max"), (AggKind::Std, "std")] {
        g.bench_function(name, |b| {
            b.iter(|| rolling_time_dyn(black_box(&col), &ts, 60_000, agg, None, Algorithm::Auto, Shape::default()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, rolling, time_windows);
criterion_main!(benches);
