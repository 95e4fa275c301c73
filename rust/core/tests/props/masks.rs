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
use slidewise_core::rolling::{rolling_skip_nan_dyn, rolling_split, Shape, Split};
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
    check_mp(xs, ok, window, None, threads, dts, every, aggs)
}

/// Every thread count gives the bits of one thread, and every `every`-th
/// row equals the independent oracle (`plain_at`), null and NaN apart.
#[allow(clippy::too_many_arguments)]
fn check_mp(xs: &[f64], ok: &[bool], window: usize, min_periods: Option<usize>, threads: usize, dts: &[DataType], every: usize,
            aggs: &[AggKind]) -> Result<(), TestCaseError> {
    for dt in dts {
        let col = array(dt, xs, ok);
        let rows = cells(&col);
        for &agg in aggs {
            let split = |t| Split { threads: Some(t), min_rows: 1 };
            let one = rolling_split(&col, window, agg, min_periods, Algorithm::Auto, split(1)).unwrap();
            let many = rolling_split(&col, window, agg, min_periods, Algorithm::Auto, split(threads)).unwrap();
            for i in 0..one.len() {
                prop_assert_eq!(bits(&one, i), bits(&many, i), "{} on {} window {} threads {} row {}", agg.name(), dt, window, threads, i);
            }
            for i in (0..one.len()).step_by(every) {
                let (w, scale) = plain_at(&rows, window, agg, min_periods, i);
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

/// `nan="propagate"` (issue 36): a column whose valid values hold NaN,
/// +inf and -inf at the given densities (runs of NaN longer than the
/// window too), with or without nulls (their slots garbage). The sums,
/// moments and extremes run their masked kernels on the finite (max /
/// min: not NaN) rows and mark the windows that hold the others; against the oracle, which keeps NaN a
/// value and null missing, with `min_periods`, and every thread count
/// giving the bits of one thread.
fn column_nan(n: usize, seed: u64, p_nan: f64, p_inf: f64, p_missing: f64, run: usize) -> (Vec<f64>, Vec<bool>) {
    let (mut xs, mut ok) = column(n, seed, p_missing, if p_missing > 0.0 { 1 } else { 0 }, run, false);
    if p_missing == 0.0 {
        // The null slots' garbage (at the thread cuts too, -1e300
        // included) becomes valid.
        ok.iter_mut().for_each(|o| *o = true);
    }
    let mut s = seed.rotate_left(17) | 1;
    let u = |s: &mut u64| (xorshift(s) >> 11) as f64 / (1u64 << 53) as f64;
    for i in 0..n {
        if !ok[i] {
            continue;
        }
        let r = u(&mut s);
        if r < p_nan {
            xs[i] = f64::NAN;
        } else if r < p_nan + p_inf {
            xs[i] = if u(&mut s) < 0.5 { f64::INFINITY } else { f64::NEG_INFINITY };
        }
    }
    // A run of NaN (a sensor down) longer than most windows.
    if n > 0 && p_nan > 0.0 {
        let at = xorshift(&mut s) as usize % n;
        for i in at..(at + run).min(n) {
            if ok[i] {
                xs[i] = f64::NAN;
            }
        }
    }
    (xs, ok)
}

const NAN_AGGS: [AggKind; 11] =
    [AggKind::Sum, AggKind::Mean, AggKind::Count, AggKind::Var, AggKind::Std, AggKind::VarPop, AggKind::StdPop, AggKind::Geomean, AggKind::Max, AggKind::Min, AggKind::Range];

fn check_nan(xs: &[f64], ok: &[bool], window: usize, min_periods: Option<usize>, threads: usize, every: usize) -> Result<(), TestCaseError> {
    check_mp(xs, ok, window, min_periods, threads, &[DataType::Float64, DataType::Float32], every, &NAN_AGGS)
}

fn nan_density() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(0.001), Just(0.01), Just(0.1), Just(0.5), Just(1.0)]
}

/// A random walk of tenths (its sums' compensation is never 0) with
/// clusters of values near `big` (1e300, or 1e15: their sums round at
/// their scale) of both signs: the windows after a cluster has left hold
/// small sums again, which a compensation that carried the clusters'
/// rounding loses (the rows read 0, or the rounding's remains).
fn column_huge(n: usize, seed: u64, clusters: usize, big: f64, p_missing: f64) -> (Vec<f64>, Vec<bool>) {
    let mut s = seed | 1;
    let u = |s: &mut u64| (xorshift(s) >> 11) as f64 / (1u64 << 53) as f64;
    let mut walk = 0i64;
    let mut xs: Vec<f64> = (0..n).map(|_| { walk += (xorshift(&mut s) % 9) as i64 - 4; walk as f64 / 10.0 }).collect();
    let ok: Vec<bool> = (0..n).map(|_| u(&mut s) >= p_missing).collect();
    for _ in 0..clusters.min(n) {
        let at = xorshift(&mut s) as usize % n;
        let len = 1 + xorshift(&mut s) as usize % 8;
        for i in at..(at + len * 3).min(n) {
            if xorshift(&mut s) % 3 == 0 {
                let sign = if xorshift(&mut s) % 2 == 0 { 1.0 } else { -1.0 };
                xs[i] = sign * big * (1.0 + u(&mut s));
            }
        }
    }
    (xs, ok)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The per-row sums and means (every thread count, nulls or not) equal
    /// the exact sums to 1e-9 of the window's own largest value once huge
    /// values have left it (sum.rs `certify`): the 2026-11-29 defect.
    #[test]
    fn huge_values_leaving_windows_keep_the_sums(
        n in prop_oneof![1usize..2_000, 30_000usize..100_000],
        seed in any::<u64>(),
        clusters in 1usize..6,
        big in prop_oneof![Just(1e300), Just(1e15), Just(1e200)],
        p_missing in prop_oneof![Just(0.0), Just(0.01)],
        w in prop_oneof![1usize..16, 16usize..2_000, 2_000usize..20_000],
        threads in 1usize..4,
    ) {
        let (xs, ok) = column_huge(n, seed, clusters, big, p_missing);
        // (the oracle sums a window a sampled row: about 2M values a case)
        check(&xs, &ok, w, threads, &[DataType::Float64], (n * w.min(n) / 2_000_000).max(1), &[AggKind::Sum, AggKind::Mean])?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn nan_propagate_equals_the_oracle(
        n in 0usize..3_000,
        seed in any::<u64>(),
        p_nan in nan_density(),
        p_inf in prop_oneof![Just(0.0), Just(0.002), Just(0.05)],
        p_missing in prop_oneof![Just(0.0), Just(0.01), Just(0.5), Just(1.0)],
        run in prop_oneof![1usize..8, 50usize..600],
        w in prop_oneof![1usize..20, 20usize..400, 400usize..3_000],
        mp in prop::option::of(0usize..5),
        threads in 2usize..6,
    ) {
        let (xs, ok) = column_nan(n, seed, p_nan, p_inf, p_missing, run);
        let mp = mp.map(|m| m.min(w));
        check_nan(&xs, &ok, w, mp, threads, (n * w.min(n) / 300_000).max(1))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Long columns: the sum's groups of four segments and the variance's
    /// lane groups, jobs that follow a job with NaN (the scan first) and
    /// jobs without, threads cutting between them.
    #[test]
    fn long_nan_propagate_equals_the_oracle(
        n in 20_000usize..60_000,
        seed in any::<u64>(),
        p_nan in prop_oneof![Just(0.0001), Just(0.01), Just(0.1)],
        p_inf in prop_oneof![Just(0.0), Just(0.0005)],
        p_missing in prop_oneof![Just(0.0), Just(0.01)],
        run in prop_oneof![1usize..8, 500usize..20_000],
        w in prop_oneof![1usize..64, 64usize..5_000, 5_000usize..40_000],
        threads in 2usize..6,
    ) {
        let (xs, ok) = column_nan(n, seed, p_nan, p_inf, p_missing, run);
        check_nan(&xs, &ok, w, None, threads, (n * w.min(n) / 2_000_000).max(31))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// A sensor down: a few runs of NaN (`nan="propagate"`) and nothing
    /// else non-finite but for rare infinities, with and without nulls, so
    /// most jobs hold a NaN but most rows' windows none: the rows after a
    /// run (the first evicts its last NaN), jobs that start inside a run
    /// or end in one; windows short and long against the runs and jobs.
    #[test]
    fn nan_runs_propagate_equal_the_oracle(
        n in 100_000usize..300_000,
        seed in any::<u64>(),
        runs in 1usize..4,
        run in prop_oneof![1usize..64, 1_000usize..20_000],
        p_inf in prop_oneof![Just(0.0), Just(0.0), Just(0.00002)],
        p_missing in prop_oneof![Just(0.0), Just(0.01)],
        w in prop_oneof![1usize..64, 64usize..3_000, 3_000usize..40_000],
        threads in 1usize..4,
    ) {
        let (mut xs, ok) = column_nan(n, seed, 0.0, p_inf, p_missing, run);
        let mut s = seed.rotate_left(29) | 1;
        for _ in 0..runs {
            let at = xorshift(&mut s) as usize % n;
            for i in at..(at + run).min(n) {
                if ok[i] {
                    xs[i] = f64::NAN;
                }
            }
        }
        check_nan(&xs, &ok, w, None, threads, (n * w.min(n) / 2_000_000).max(61))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// `nan="skip"` sums, means, variances and stds mask their NaN job by
    /// job, maxima, minima and ranges chunk by chunk
    /// (`rolling_skip_nan_dyn`): on every thread
    /// count, the bits of the column with its NaN rows null run as nulls
    /// (value and validity, `min_periods` counting no NaN), and that
    /// equals the oracle. NaN of every density (a run longer than the
    /// window too, and sensors down for 8,300 rows or more, which the sums
    /// find past their first rows), with and without nulls, infinities,
    /// float64 and float32.
    #[test]
    fn nan_skip_kernels_equal_the_nulls_path(
        n in prop_oneof![0usize..3_000, 20_000usize..70_000, 90_000usize..120_000],
        seed in any::<u64>(),
        p_nan in nan_density(),
        p_inf in prop_oneof![Just(0.0), Just(0.002)],
        p_missing in prop_oneof![Just(0.0), Just(0.01), Just(0.5)],
        run in prop_oneof![1usize..8, 50usize..5_000, 8_300usize..12_000],
        w in prop_oneof![1usize..20, 20usize..400, 400usize..40_000],
        mp in prop::option::of(0usize..5),
        threads in 1usize..5,
    ) {
        let (xs, ok) = column_nan(n, seed, p_nan, p_inf, p_missing, run);
        let mp = mp.map(|m| m.min(w));
        for dt in [DataType::Float64, DataType::Float32] {
            let col = array(&dt, &xs, &ok);
            let nulled = slidewise_core::rolling::nan_to_null_dyn(col.as_ref()).unwrap_or_else(|| col.clone());
            let rows = cells(&nulled);
            for agg in [AggKind::Sum, AggKind::Mean, AggKind::Max, AggKind::Min, AggKind::Range, AggKind::Var, AggKind::Std, AggKind::StdPop] {
                let split = Split { threads: Some(threads), min_rows: 1 };
                let got = rolling_skip_nan_dyn(&col, w, agg, mp, Algorithm::Auto, Shape::default(), split).unwrap();
                let want = rolling_split(&nulled, w, agg, mp, Algorithm::Auto, Split { threads: Some(1), min_rows: 1 }).unwrap();
                prop_assert_eq!(got.len(), n);
                for i in 0..n {
                    prop_assert_eq!(bits(&got, i), bits(&want, i), "{} on {} window {} threads {} row {}", agg.name(), dt, w, threads, i);
                }
                for i in (0..n).step_by((n * w.min(n) / 300_000).max(1)) {
                    let (o, scale) = plain_at(&rows, w, agg, mp, i);
                    let g = val_at(&got, i);
                    prop_assert!(agrees(agg, &g, &o, scale), "{} on {} window {} row {}: got {:?}, want {:?}", agg.name(), dt, w, i, g, o);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 30, ..ProptestConfig::default() })]

    /// `rolling_many`'s shared passes (prefix sums, prefix moments, the
    /// max / min sparse table) read the values in place and mask the null
    /// slots as they load them (issue 36: no filled copy): the garbage in
    /// those slots (NaN, inf, -1e300) must not reach a window. Masks of
    /// every density, runs longer than the windows, small chunks and
    /// thread cuts forced; every window against the oracle.
    #[test]
    fn many_masks_equal_the_oracle(
        n in 1usize..2_500,
        seed in any::<u64>(),
        p in density(),
        runs in 0usize..4,
        run in prop_oneof![1usize..8, 50usize..600],
        ws in prop::collection::vec(prop_oneof![1usize..20, 20usize..400, 400usize..3_000], 2..6),
        mp in prop::option::of(0usize..4),
        chunk in prop::option::of(1usize..300),
        threads in prop::option::of(1usize..4),
    ) {
        use slidewise_core::rolling::{rolling_many_split, Tuning};
        let (xs, ok) = column(n, seed, p, runs, run, false);
        let mp = mp.map(|m| m.min(*ws.iter().min().unwrap()));
        for dt in [DataType::Float64, DataType::Float32, DataType::Int64] {
            let col = array(&dt, &xs, &ok);
            let rows = cells(&col);
            for agg in [AggKind::Sum, AggKind::Mean, AggKind::Var, AggKind::Std, AggKind::VarPop, AggKind::Max, AggKind::Min] {
                let got = rolling_many_split(&col, &ws, agg, mp, Algorithm::Auto, Tuning { chunk, threads }, usize::MAX, 2).unwrap();
                for (g, &w) in got.iter().zip(&ws) {
                    for i in (0..n).step_by((n * w.min(n) / 200_000).max(1)) {
                        let (o, scale) = plain_at(&rows, w, agg, mp, i);
                        let v = val_at(g, i);
                        prop_assert!(agrees(agg, &v, &o, scale), "{} on {} window {} of {:?} row {}: got {:?}, want {:?}", agg.name(), dt, w, ws, i, v, o);
                    }
                }
            }
        }
    }
}
