//! `rolling_many_dyn` (the shared sparse-table pass for max / min, the
//! per-window loop for the rest) equals `rolling_dyn` on each window alone,
//! bit for bit: validity, and at valid rows the exact bits (NaN, -0.0 / +0.0
//! placement), for every dtype, random windows (1, > len, duplicates), nulls,
//! min_periods, and forced small chunks and thread splits so chunk halos and
//! the prefix rows cross boundaries on small columns. max / min are also
//! checked bitwise against Recalc (the naive oracle). var / std (sample and
//! population) come from the shared prefix-moments pass: within the accuracy
//! contract of the single-window kernel and of a double-double two-pass
//! oracle, on hard data too (1e9 + noise, 1e8 / 1e-3 mixes, near-constant
//! runs), where the pass's error bound must send rows to the exact kernel.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use crate::common::{bits, exact_sum, typed_column, value, xorshift};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_dyn, rolling_many_split, rolling_many_tuned, Shape, Tuning};


fn same(got: &dyn Array, want: &dyn Array, what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.data_type(), want.data_type(), "{}", what);
    prop_assert_eq!(got.len(), want.len(), "{}", what);
    for i in 0..got.len() {
        prop_assert_eq!(bits(got, i), bits(want, i), "{} row {}", what, i);
    }
    Ok(())
}

/// Sums and means of float64 come from the shared prefix pass: equal to
/// the single-window kernel up to a few ulps (both are compensated: each is
/// within a rounding of the exact sum, plus eps^2 terms: 1e-18 absolute
/// where the exact sum is 0), same validity.
fn close(got: &dyn Array, want: &dyn Array, what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.data_type(), want.data_type(), "{}", what);
    prop_assert_eq!(got.len(), want.len(), "{}", what);
    let (g, w) = (got.as_primitive::<Float64Type>(), want.as_primitive::<Float64Type>());
    for i in 0..got.len() {
        prop_assert_eq!(g.is_null(i), w.is_null(i), "{} row {} validity", what, i);
        if g.is_valid(i) {
            let (a, b) = (g.value(i), w.value(i));
            prop_assert!(a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * b.abs() + 1e-18,
                "{} row {}: {} vs {}", what, i, a, b);
        }
    }
    Ok(())
}

fn windows() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![3 => 1usize..8, 4 => 1usize..200, 2 => 1usize..2000, 1 => 1usize..5000], 1..9)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Every window's output equals the window alone: bitwise for max /
    /// min / argmax and integer sums, within the shared passes' contract for
    /// float64 sums and var / std. Windows longer than `long` go through
    /// their own kernel, the rest through the shared pass (DESIGN §1.3): a
    /// low threshold mixes both on small columns, and a fewest-shared count
    /// above 2 sends a few short windows to their own kernels too
    /// (`usize::MAX` and 2: the defaults' route for these windows).
    #[test]
    fn many_equals_each_window_alone(
        xs in prop::collection::vec(value(true, 0.85), 0..2500),
        with_nulls in prop::bool::weighted(0.5),
        ws in windows(),
        long in prop_oneof![2 => Just(usize::MAX), 1 => 1usize..16, 1 => 16usize..3000],
        min_shared in prop_oneof![2 => Just(2usize), 1 => 2usize..10],
        mp_frac in prop::option::weighted(0.5, 0.0f64..=1.0),
        chunk in prop::option::of(1usize..300),
        threads in prop::option::of(1usize..4),
    ) {
        // min_periods must be <= every window (as rolling_many's checks).
        let wmin = *ws.iter().min().unwrap();
        let mp = mp_frac.map(|f| (f * wmin as f64) as usize);
        let tuning = Tuning { chunk, threads };
        for dt in [DataType::Float64, DataType::Float32, DataType::Int64, DataType::Int32] {
            let col = typed_column(&dt, &xs, with_nulls);
            for agg in [AggKind::Max, AggKind::Min, AggKind::Sum, AggKind::Mean, AggKind::ArgMax, AggKind::Std, AggKind::VarPop] {
                let got = rolling_many_split(&col, &ws, agg, mp, Algorithm::Auto, tuning, long, min_shared).unwrap();
                prop_assert_eq!(got.len(), ws.len());
                for (g, &w) in got.iter().zip(&ws) {
                    let what = format!("{} {dt} window {w} long {long} min_shared {min_shared} min_periods {mp:?} {tuning:?}", agg.name());
                    let alone = rolling_dyn(&col, w, agg, mp, Algorithm::Auto, Shape::default()).unwrap();
                    if matches!(agg, AggKind::Std | AggKind::VarPop) || (dt == DataType::Float64 && matches!(agg, AggKind::Sum | AggKind::Mean)) {
                        close(g, &alone, &what)?;
                    } else {
                        same(g, &alone, &what)?;
                    }
                    if matches!(agg, AggKind::Max | AggKind::Min) {
                        let naive = rolling_dyn(&col, w, agg, mp, Algorithm::Recalc, Shape::default()).unwrap();
                        same(g, &naive, &format!("{what} vs recalc"))?;
                    }
                }
            }
        }
    }
}

/// A column long enough for the default chunking and the automatic thread
/// split (several chunks per thread), with NaN, -0.0 and nulls in some
/// chunks only.
#[test]
fn many_long_column_default_tuning() {
    let n = 300_000;
    let mut s = 0x9E3779B97F4A7C15u64;
    let mut xs: Vec<f64> = (0..n)
        .map(|_| ((xorshift(&mut s) >> 11) % 2001) as f64 - 1000.0)
        .collect();
    for i in (150_000..160_000).step_by(97) {
        xs[i] = f64::NAN;
    }
    for i in (200_000..210_000).step_by(13) {
        xs[i] = -0.0;
    }
    let ws = [1usize, 2, 3, 100, 4096, 32768, 40000, 1 << 20];
    for with_nulls in [false, true] {
        let nulls = with_nulls.then(|| NullBuffer::from((0..n).map(|i| i % 7 != 3 && !(100_000..140_000).contains(&i)).collect::<Vec<bool>>()));
        let col: ArrayRef = Arc::new(PrimitiveArray::<Float64Type>::new(ScalarBuffer::from(xs.clone()), nulls));
        for agg in [AggKind::Max, AggKind::Min] {
            for threads in [None, Some(1), Some(3)] {
                let got = rolling_many_tuned(&col, &ws, agg, Some(1), Algorithm::Auto, Tuning { chunk: None, threads }).unwrap();
                for (g, &w) in got.iter().zip(&ws) {
                    let alone = rolling_dyn(&col, w, agg, Some(1), Algorithm::Auto, Shape::default()).unwrap();
                    same(g, &alone, &format!("{} window {w} threads {threads:?}", agg.name())).unwrap();
                }
            }
        }
    }
}

const VARS: [AggKind; 4] = [AggKind::Var, AggKind::Std, AggKind::VarPop, AggKind::StdPop];

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// var / std of every dtype against the single-window kernel (NaN, inf,
    /// -0.0, ties and constant runs among small integers, nulls).
    #[test]
    fn many_vars_equal_each_window_alone(
        xs in prop::collection::vec(value(true, 0.85), 0..2500),
        with_nulls in prop::bool::weighted(0.5),
        ws in windows(),
        mp_frac in prop::option::weighted(0.5, 0.0f64..=1.0),
        chunk in prop::option::of(1usize..300),
        threads in prop::option::of(1usize..4),
    ) {
        let wmin = *ws.iter().min().unwrap();
        let mp = mp_frac.map(|f| (f * wmin as f64) as usize);
        let tuning = Tuning { chunk, threads };
        for dt in [DataType::Float64, DataType::Float32, DataType::Int64, DataType::Int32] {
            let col = typed_column(&dt, &xs, with_nulls);
            for agg in VARS {
                let got = rolling_many_tuned(&col, &ws, agg, mp, Algorithm::Auto, tuning).unwrap();
                for (g, &w) in got.iter().zip(&ws) {
                    let what = format!("{} {dt} window {w} min_periods {mp:?} {tuning:?}", agg.name());
                    let alone = rolling_dyn(&col, w, agg, mp, Algorithm::Auto, Shape::default()).unwrap();
                    close(g, &alone, &what)?;
                }
            }
        }
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `M2` of `xs` (finite), two passes in double-double: the mean to about
/// u^2, then the squared deviations, each split exactly by FMA.
fn exact_m2(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let (mut s, mut c) = (0.0, 0.0);
    for &v in xs {
        let (t, e) = two_sum(s, v);
        s = t;
        c += e;
    }
    let mh = s / n;
    // s + c - n mh, exactly but for the last roundings.
    let ml = ((-mh).mul_add(n, s) + c) / n;
    let (mut s2, mut c2) = (0.0, 0.0);
    for &v in xs {
        let (dh, dl) = two_sum(v, -mh);
        let dl = dl - ml;
        let p = dh * dh;
        let pe = dh.mul_add(dh, -p) + 2.0 * dh * dl + dl * dl;
        let (t, e) = two_sum(s2, p);
        s2 = t;
        c2 += e + pe;
    }
    s2 + c2
}

/// Hard data for the bound: kind 0 1e9 + unit noise; 1 runs of 1e8-scale
/// values among 1e-3-scale ones; 2 near-constant (1 + a few ulps, with
/// exactly constant runs); 3 a random walk; 4 a random walk with NaN and
/// +-inf now and then; 5 values near 1e300 among 1e-3-scale ones (whose
/// squares overflow: for sums).
fn hard(kind: u8, n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed | 1;
    let mut u = move || (xorshift(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
    let mut walk = 0.0;
    (0..n)
        .map(|i| match kind {
            0 => 1e9 + u() - 0.5,
            1 => {
                if (i / 40) % 5 == 3 || u() < 0.02 {
                    1e8 * (1.0 + u())
                } else {
                    1e-3 * (1.0 + u())
                }
            }
            2 => {
                if (i / 25) % 3 == 1 {
                    1.0
                } else {
                    1.0 + (u() * 4.0).floor() * f64::EPSILON
                }
            }
            5 => {
                if u() < 0.03 {
                    1e300 * (1.0 + u())
                } else {
                    1e-3 * (u() - 0.5)
                }
            }
            _ => {
                walk += u() - 0.5;
                let r = u();
                if kind == 4 && r < 0.004 {
                    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][(r * 1000.0) as usize % 3]
                } else {
                    walk
                }
            }
        })
        .collect()
}

/// A hard case: kind (below `kinds`), rows, seed, share of nulls, windows,
/// chunk and threads.
#[allow(clippy::type_complexity)]
fn hard_cases(kinds: u8) -> impl Strategy<Value = (u8, usize, u64, f64, Vec<usize>, Option<usize>, Option<usize>)> {
    (0..kinds, 0usize..1200, any::<u64>(), prop_oneof![Just(0.0), 0.0f64..0.5], windows(), prop::option::of(1usize..400), prop::option::of(1usize..4))
}

/// [`hard`]'s values, which rows are valid, and the column (nulls where not).
fn hard_column(kind: u8, n: usize, seed: u64, null_frac: f64) -> (Vec<f64>, Vec<bool>, ArrayRef) {
    let xs = hard(kind, n, seed);
    let mut s = seed ^ 0x9E37_79B9_7F4A_7C15;
    let valid: Vec<bool> = (0..n).map(|_| (xorshift(&mut s) >> 11) as f64 / (1u64 << 53) as f64 >= null_frac).collect();
    let nulls = (null_frac > 0.0).then(|| NullBuffer::from(valid.clone()));
    let col: ArrayRef = Arc::new(PrimitiveArray::<Float64Type>::new(ScalarBuffer::from(xs.clone()), nulls));
    let valid = if null_frac > 0.0 { valid } else { vec![true; n] };
    (xs, valid, col)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// var / std against the naive oracle (each window's values recomputed
    /// in double-double) within 1e-12 relative, on data where a plain prefix
    /// or running sum loses far more: the error bound has to catch it.
    #[test]
    fn many_vars_match_the_oracle_on_hard_data((kind, n, seed, null_frac, ws, chunk, threads) in hard_cases(5)) {
        let (xs, valid, col) = hard_column(kind, n, seed, null_frac);
        let tuning = Tuning { chunk, threads };
        let outs: Vec<Vec<ArrayRef>> = VARS.iter().map(|&agg| rolling_many_tuned(&col, &ws, agg, None, Algorithm::Auto, tuning).unwrap()).collect();
        for (q, &w) in ws.iter().enumerate() {
            for i in 0..n {
                let vals: Vec<f64> = ((i + 1).saturating_sub(w)..=i).filter(|&r| valid[r]).map(|r| xs[r]).collect();
                let m2 = if vals.iter().all(|v| v.is_finite()) { exact_m2(&vals) } else { f64::NAN };
                for (k, agg) in VARS.iter().enumerate() {
                    let ddof = (k < 2) as usize;
                    let g = outs[k][q].as_primitive::<Float64Type>();
                    let what = format!("{} kind {kind} window {w} row {i} {tuning:?}", agg.name());
                    prop_assert_eq!(g.is_valid(i), vals.len() > ddof, "{} validity", what);
                    if vals.len() <= ddof {
                        continue;
                    }
                    let v = m2 / (vals.len() - ddof) as f64;
                    let want = if k % 2 == 1 { v.sqrt() } else { v };
                    let got = g.value(i);
                    prop_assert!((got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-12 * want.abs(),
                        "{}: {} vs {} (rel {:e})", what, got, want, (got - want).abs() / want.abs());
                }
            }
        }
    }
}

/// var / std on a long column with the default chunking and thread split:
/// a random walk with a stretch of 1e9 + noise, NaN and inf in a few
/// chunks, with and without nulls, windows from 1 to longer than the data.
#[test]
fn many_vars_long_column_default_tuning() {
    let n = 300_000;
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut walk = 0.0;
    let mut xs: Vec<f64> = (0..n)
        .map(|i| {
            walk += (xorshift(&mut s) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            if (50_000..60_000).contains(&i) { 1e9 + walk } else { walk }
        })
        .collect();
    for i in (150_000..160_000).step_by(997) {
        xs[i] = if i % 2 == 0 { f64::NAN } else { f64::INFINITY };
    }
    let ws = [1usize, 2, 3, 100, 4096, 32768, 40000, 1 << 20];
    for with_nulls in [false, true] {
        let nulls = with_nulls.then(|| NullBuffer::from((0..n).map(|i| i % 7 != 3 && !(100_000..140_000).contains(&i)).collect::<Vec<bool>>()));
        let col: ArrayRef = Arc::new(PrimitiveArray::<Float64Type>::new(ScalarBuffer::from(xs.clone()), nulls));
        for agg in [AggKind::Std, AggKind::VarPop] {
            for threads in [None, Some(1), Some(3)] {
                let got = rolling_many_tuned(&col, &ws, agg, Some(1), Algorithm::Auto, Tuning { chunk: None, threads }).unwrap();
                for (g, &w) in got.iter().zip(&ws) {
                    let alone = rolling_dyn(&col, w, agg, Some(1), Algorithm::Auto, Shape::default()).unwrap();
                    close(g, &alone, &format!("{} window {w} threads {threads:?} nulls {with_nulls}", agg.name())).unwrap();
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Float64 sums and means of the shared prefix pass against the exact
    /// sum of each window: within 2^-44 of it, or 2^-40 of the window's sum
    /// of |values|. On the hard data above, and on values near 1e300 among
    /// 1e-3-scale ones (kind 5): there the prefix's compensations carry the
    /// huge values' rounding, and the windows of small values after them
    /// read 0 unless they are summed again.
    #[test]
    fn many_sums_match_the_oracle_on_hard_data((kind, n, seed, null_frac, ws, chunk, threads) in hard_cases(6)) {
        let kind = if kind == 4 { 5 } else { kind }; // finite kinds: sums of NaN / inf take another kernel
        let (xs, valid, col) = hard_column(kind, n, seed, null_frac);
        let tuning = Tuning { chunk, threads };
        for agg in [AggKind::Sum, AggKind::Mean] {
            let outs = rolling_many_tuned(&col, &ws, agg, None, Algorithm::Auto, tuning).unwrap();
            for (q, &w) in ws.iter().enumerate() {
                let g = outs[q].as_primitive::<Float64Type>();
                for i in 0..n {
                    let vals: Vec<f64> = ((i + 1).saturating_sub(w)..=i).filter(|&r| valid[r]).map(|r| xs[r]).collect();
                    prop_assert_eq!(g.is_valid(i), !vals.is_empty(), "{} window {} row {} validity", agg.name(), w, i);
                    if vals.is_empty() {
                        continue;
                    }
                    let k = if agg == AggKind::Mean { vals.len() as f64 } else { 1.0 };
                    let want = exact_sum(vals.iter().copied()) / k;
                    let mag = vals.iter().map(|v| v.abs()).sum::<f64>() / k;
                    let got = g.value(i);
                    prop_assert!((got - want).abs() <= (-44f64).exp2() * want.abs() + (-40f64).exp2() * mag,
                        "{} kind {} window {} row {} {:?}: {} vs {}", agg.name(), kind, w, i, tuning, got, want);
                }
            }
        }
    }
}
