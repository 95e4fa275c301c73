//! Missing values at full speed (issue 36): every per-row kernel with
//! validity masks of every density (0%, 1%, 50%, 100% missing), runs of
//! nulls longer than the window, and nulls at the cuts of threaded runs,
//! against the independent oracle (`common::plain`), NaN and null kept
//! apart. The null slots hold garbage (NaN, inf, 1e300), so a kernel that
//! reads a slot its mask says is missing gives a wrong answer here. Every
//! thread count gives the bits of one thread.

use crate::common::{agrees, bits, cells, plain_at, val_at, xorshift};
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_split, Split};
use std::sync::Arc;

const AGGS: [AggKind; 16] = [
    AggKind::Sum,
    AggKind::Mean,
    AggKind::Count,
    AggKind::Var,
    AggKind::Std,
    AggKind::VarPop,
    AggKind::StdPop,
    AggKind::Max,
    AggKind::Min,
    AggKind::Range,
    AggKind::First,
    AggKind::Last,
    AggKind::FirstNonNull,
    AggKind::LastNonNull,
    AggKind::Geomean,
    AggKind::ArgMax,
];

/// A column of `n` rows: a random walk (in tenths: the variance's fast
/// path passes its check on it) with rare NaN / inf / -0.0 among the valid
/// values when `specials`; the missing rows are drawn with probability
/// `p_missing`, plus `runs` runs of nulls of `run` rows, plus short runs at
/// the threads' cuts (`n t / k` for k in 2..6); their slots hold garbage.
fn column(n: usize, seed: u64, p_missing: f64, runs: usize, run: usize, specials: bool) -> (Vec<f64>, Vec<bool>) {
    let mut s = seed | 1;
    let mut walk = 0.0;
    let mut xs = Vec::with_capacity(n);
    let mut ok = Vec::with_capacity(n);
    for _ in 0..n {
        let r = xorshift(&mut s);
        walk += ((r >> 20) % 9) as f64 - 4.0;
        xs.push(match (specials, r % 2048) {
            (true, 0) => f64::NAN,
            (true, 1) => f64::INFINITY,
            (true, 2) => -0.0,
            _ => walk * 0.1,
        });
        ok.push(((r >> 11) as f64 / (1u64 << 53) as f64) >= p_missing);
    }
    for _ in 0..runs {
        let at = xorshift(&mut s) as usize % n.max(1);
        for i in at..(at + run).min(n) {
            ok[i] = false;
        }
    }
    for k in 2..6 {
        for t in 1..k {
            let c = n * t / k;
            let lo = c.saturating_sub((xorshift(&mut s) % 6) as usize);
            for i in lo..(c + (xorshift(&mut s) % 6) as usize).min(n) {
                ok[i] = false;
            }
        }
    }
    for i in 0..n {
        if !ok[i] {
            xs[i] = [f64::NAN, f64::INFINITY, -1e300, 7.5][(xorshift(&mut s) % 4) as usize];
        }
    }
    (xs, ok)
}

fn array(dt: &DataType, xs: &[f64], ok: &[bool]) -> ArrayRef {
    let nulls = Some(NullBuffer::from(ok.to_vec()));
    let int = |x: f64, m: i64| if x.is_finite() && x.abs() < 1e18 { (x * 10.0) as i64 % m } else { 1 << 40 };
    match dt {
        DataType::Float64 => Arc::new(PrimitiveArray::<Float64Type>::new(ScalarBuffer::from(xs.to_vec()), nulls)),
        DataType::Float32 => Arc::new(PrimitiveArray::<Float32Type>::new(ScalarBuffer::from(xs.iter().map(|&x| x as f32).collect::<Vec<_>>()), nulls)),
        DataType::Int64 => Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(xs.iter().map(|&x| int(x, i64::MAX)).collect::<Vec<_>>()), nulls)),
        _ => Arc::new(PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(xs.iter().map(|&x| int(x, 1 << 20) as i32).collect::<Vec<_>>()), nulls)),
    }
}


fn check(xs: &[f64], ok: &[bool], window: usize, threads: usize, dts: &[DataType], every: usize, aggs: &[AggKind]) -> Result<(), TestCaseError> {
    for dt in dts {
        let col = array(dt, xs, ok);
        let rows = cells(&col);
        for &agg in aggs {
            let split = |t| Split { threads: Some(t), min_rows: 1 };
            let one = rolling_split(&col, window, agg, None, Algorithm::Auto, split(1)).unwrap();
            let many = rolling_split(&col, window, agg, None, Algorithm::Auto, split(threads)).unwrap();
            for i in 0..one.len() {
                prop_assert_eq!(bits(&one, i), bits(&many, i), "{} on {} window {} threads {} row {}", agg.name(), dt, window, threads, i);
            }
            for i in (0..one.len()).step_by(every) {
                let (w, scale) = plain_at(&rows, window, agg, None, i);
                let g = val_at(&many, i);
                prop_assert!(agrees(agg, &g, &w, scale), "{} on {} window {} row {}: got {:?}, want {:?}", agg.name(), dt, window, i, g, w);
            }
        }
    }
    Ok(())
}

fn density() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(0.01), Just(0.5), Just(1.0), 0.0f64..1.0]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Columns of up to a few thousand rows (several of the sum's lane
    /// groups and the variance's blocks), every density, runs of nulls
    /// longer than the window, every dtype.
    #[test]
    fn masks_equal_the_oracle(
        n in 0usize..3_000,
        seed in any::<u64>(),
        p in density(),
        runs in 0usize..4,
        run in prop_oneof![1usize..8, 50usize..600],
        specials in prop::bool::weighted(0.3),
        w in prop_oneof![1usize..20, 20usize..400, 400usize..3_000],
        threads in 2usize..6,
    ) {
        let (xs, ok) = column(n, seed, p, runs, run, specials);
        // The oracle costs a window a row: sample rows of the larger cases.
        let every = (n * w.min(n) / 300_000).max(1);
        check(&xs, &ok, w, threads, &[DataType::Float64, DataType::Float32, DataType::Int64, DataType::Int32], every, &AGGS)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Long float64 columns (the sum's groups of four 16-row-or-longer
    /// segments in every mode, threads cutting between them), sampled rows
    /// against the oracle.
    #[test]
    fn long_masks_equal_the_oracle(
        n in 20_000usize..60_000,
        seed in any::<u64>(),
        p in density(),
        run in prop_oneof![1usize..8, 500usize..20_000],
        specials in prop::bool::weighted(0.3),
        w in prop_oneof![1usize..64, 64usize..5_000, 5_000usize..40_000],
        threads in 2usize..6,
    ) {
        let (xs, ok) = column(n, seed, p, 2, run, specials);
        check(&xs, &ok, w, threads, &[DataType::Float64], (n * w.min(n) / 2_000_000).max(31), &AGGS)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    /// max / min / range from a window of 2^16 rows on (the two-level
    /// kernel: sub-blocks of 16k rows, threads cut on them), masks of
    /// every density and sensor gaps longer than the sub-blocks; sampled
    /// rows against the oracle.
    #[test]
    fn two_level_masks_equal_the_oracle(
        n in 140_000usize..200_000,
        seed in any::<u64>(),
        p in density(),
        run in prop_oneof![1usize..8, 20_000usize..70_000],
        specials in prop::bool::weighted(0.3),
        w in 65_536usize..140_000,
        threads in 2usize..4,
    ) {
        let (xs, ok) = column(n, seed, p, 2, run, specials);
        check(&xs, &ok, w, threads, &[DataType::Float64, DataType::Int64], 997, &[AggKind::Max, AggKind::Min, AggKind::Range])?;
    }
}
