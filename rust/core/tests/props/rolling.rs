//! `rolling_dyn(.., Auto, default shape)` (the fast kernels) and `rolling_dyn(.., Recalc, ..)`
//! (the step-by-step fold) equal the independent oracle (`common::plain`, a
//! plain fold per window that shares no code with the operations) for every
//! operation x dtype, on random columns with nulls (NaN and inf under some
//! of them), NaN, ±inf, -0.0, ties and negatives, random windows and
//! min_periods; and long columns past every kernel's chunk size with NaN
//! and -0.0 in them. Floats compare as `common::agrees` says.
//!
//! Plus the exactness of the float sum kernel against exact window sums on
//! a long column mixing 1e8 and 1e-3 magnitudes.

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, Float64Array};
use arrow_schema::DataType;
use crate::common::{agrees, cells, plain_at, plain_rolling, typed_column, val_at, value, xorshift};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_dyn, Shape};

/// Columns of either mostly-valid or null-free rows, windows mostly up to
/// 300 with some larger than the column, min_periods anywhere in range.
fn case() -> impl Strategy<Value = (Vec<(f64, bool)>, bool, usize, Option<usize>)> {
    (
        prop::collection::vec(value(true, 0.85), 0..700),
        prop::bool::weighted(0.6),
        prop_oneof![6 => 1usize..40, 3 => 1usize..300, 1 => 1usize..1200],
        prop::option::weighted(0.6, 0.0f64..=1.0),
    )
        .prop_map(|(xs, with_nulls, w, mp)| (xs, with_nulls, w, mp.map(|f| (f * w as f64) as usize)))
}

fn check(xs: &[(f64, bool)], with_nulls: bool, window: usize, mp: Option<usize>) -> Result<(), TestCaseError> {
    for dt in [DataType::Float64, DataType::Float32, DataType::Int64, DataType::Int32] {
        let col = typed_column(&dt, xs, with_nulls);
        let rows = cells(&col);
        for agg in AggKind::ALL {
            // The independent oracle once per (case, dtype, agg); the fast
            // kernels (auto) and the step-by-step fold (recalc) against it.
            let want = plain_rolling(&rows, window, agg, mp);
            for algo in [Algorithm::Auto, Algorithm::Recalc] {
                let got = rolling_dyn(&col, window, agg, mp, algo, Shape::default()).unwrap();
                prop_assert_eq!(got.len(), want.len());
                for (i, (w, scale)) in want.iter().enumerate() {
                    let g = val_at(&got, i);
                    prop_assert!(
                        agrees(agg, &g, w, *scale),
                        "{} ({algo:?}) on {dt} window {window} min_periods {mp:?} row {i}: got {g:?}, want {w:?}",
                        agg.name()
                    );
                }
            }
            // Output types: as docs/DESIGN.md (sum of ints is int64, of floats float64, ...).
            let a = rolling_dyn(&col, window, agg, mp, Algorithm::Auto, Shape::default()).unwrap();
            let b = rolling_dyn(&col, window, agg, mp, Algorithm::Recalc, Shape::default()).unwrap();
            prop_assert_eq!(a.data_type(), b.data_type());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn auto_equals_recalc((xs, with_nulls, window, mp) in case()) {
        check(&xs, with_nulls, window, mp)?;
    }

    /// var / std on 1e9 + small noise: Chan merges keep the precision (the
    /// naive sum of squares would lose every digit: an error near
    /// ulp(1e18) = 128). Each merge rounds the means at 1e9, ulp(1e9) ~
    /// 1.2e-7, and multiplies that by the window's deviations, so the error
    /// is a few ulp(1e9) times the window's spread: about 1e-7 relative at
    /// a spread of ~1, but 1e-5 when a short window's values lie 0.012
    /// apart (CI found 1e9 + 0.587, 0.582, 0.575 in a window of 3 off by
    /// 1.04e-5 relative, 2.5e-10 absolute). Both algorithms must be that
    /// close to the exact variance of the inputs.
    #[test]
    fn variance_on_large_offsets(
        noise in prop::collection::vec(-1000i32..1000, 1..600),
        window in 2usize..200,
    ) {
        let xs: Vec<(f64, bool)> = noise.iter().map(|&e| (1e9 + e as f64 * 1e-3, true)).collect();
        let col = typed_column(&DataType::Float64, &xs, false);
        for algo in [Algorithm::Auto, Algorithm::Recalc] {
            let got = rolling_dyn(&col, window, AggKind::VarPop, None, algo, Shape::default()).unwrap();
            let got = got.as_primitive::<Float64Type>();
            for i in 0..xs.len() {
                // Exact-enough reference: two passes on the shifted values
                // (x - 1e9 is exact).
                let win: Vec<f64> = xs[(i + 1).saturating_sub(window)..=i].iter().map(|x| x.0 - 1e9).collect();
                let m = win.iter().sum::<f64>() / win.len() as f64;
                let exact = win.iter().map(|d| (d - m) * (d - m)).sum::<f64>() / win.len() as f64;
                let v = got.value(i);
                let spread = win.iter().fold(0.0f64, |a, d| a.max((d - m).abs()));
                let bound = 1e-5 * exact + 8.0 * 1.2e-7 * spread + 1e-12;
                prop_assert!((v - exact).abs() <= bound, "{algo:?} window {window} row {i}: {v} vs {exact}");
            }
        }
    }
}

/// Long columns (past the extreme kernels' ~4096-row NaN / -0.0 chunks and
/// their 16k-row sub-blocks) with NaN, -0.0, ±inf and nulls placed sparsely
/// or in runs, checked against the oracle at every row, or at 400 sampled
/// rows when the window is huge.
fn long_case() -> impl Strategy<Value = (usize, Vec<(usize, f64)>, bool, usize, u64)> {
    (
        4_100usize..20_000,
        prop::collection::vec((0usize..20_000, prop_oneof![Just(f64::NAN), Just(-0.0), Just(0.0), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]), 0..12),
        any::<bool>(),
        prop_oneof![3 => 1usize..64, 2 => 64usize..5000, 1 => 4_000usize..20_000],
        any::<u64>(),
    )
}

fn check_long(n: usize, specials: &[(usize, f64)], with_nulls: bool, window: usize, seed: u64) -> Result<(), TestCaseError> {
    let mut s = seed | 1;
    let mut xs: Vec<(f64, bool)> = (0..n)
        .map(|_| {
            let r = xorshift(&mut s);
            ((r % 2001) as f64 - 1000.0, !with_nulls || r % 13 != 0)
        })
        .collect();
    for &(at, v) in specials {
        // a run of 1-8 rows of the special value
        for i in at % n..(at % n + 1 + at % 8).min(n) {
            xs[i] = (v, true);
        }
    }
    let rows: Vec<usize> = if window <= 64 { (0..n).collect() } else { (0..if window > 50_000 { 60 } else { 400 }).map(|_| xorshift(&mut s) as usize % n).collect() };
    for dt in [DataType::Float64, DataType::Float32, DataType::Int64] {
        let col = typed_column(&dt, &xs, with_nulls);
        let cs = cells(&col);
        for agg in [AggKind::Max, AggKind::Min, AggKind::Range, AggKind::ArgMax, AggKind::ArgMin, AggKind::MaxCount, AggKind::Sum, AggKind::Mean, AggKind::Var] {
            let got = rolling_dyn(&col, window, agg, None, Algorithm::Auto, Shape::default()).unwrap();
            for &i in &rows {
                let (w, scale) = plain_at(&cs, window, agg, None, i);
                let g = val_at(&got, i);
                prop_assert!(agrees(agg, &g, &w, scale), "{} on {dt} n {n} window {window} row {i}: got {g:?}, want {w:?}", agg.name());
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn long_columns_with_nan_equal_the_oracle((n, specials, with_nulls, window, seed) in long_case()) {
        check_long(n, &specials, with_nulls, window, seed)?;
    }
}

/// Windows from 2^17 rows take the two-level max kernel: NaN and -0.0
/// there, at sampled rows.
#[test]
fn two_level_extreme_kernel_with_nan() {
    let n = (1 << 17) + 9_000;
    for (seed, specials) in [(3u64, vec![]), (5, vec![(140_000, f64::NAN)]), (7, vec![(70_000, -0.0), (10, f64::NAN)])] {
        check_long(n, &specials, seed == 5, 1 << 17, seed).unwrap();
    }
}

#[test]
fn edge_cases() {
    // Empty column, window 1, window larger than the column, all null.
    for xs in [vec![], vec![(1.0, true)], vec![(f64::NAN, false); 5], vec![(2.0, true), (f64::NAN, true), (-0.0, true)]] {
        for w in [1, 2, 3, 10] {
            for mp in [None, Some(0), Some(1), Some(w.min(2))] {
                check(&xs, true, w, mp).unwrap();
                check(&xs, false, w, mp).unwrap();
            }
        }
    }
}

/// Values `m / 2^20` with integer `m`: exact in f64, so exact window sums
/// are integer prefix-sum differences, rounded once to f64.
fn exactness(n: usize, windows: &[usize]) {
    let scale = (1u64 << 20) as f64;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || xorshift(&mut state);
    let ms: Vec<i64> = (0..n)
        .map(|_| {
            let r = next();
            let sign = if r & 1 == 0 { 1 } else { -1 };
            let mag = (r >> 11) as f64 / (1u64 << 53) as f64;
            let v = if r & 2 == 0 { mag * 1e8 } else { mag * 1e-3 };
            sign * (v * scale).round() as i64
        })
        .collect();
    let xs: Vec<f64> = ms.iter().map(|&m| m as f64 / scale).collect();
    let mut prefix = vec![0i128; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i] + ms[i] as i128;
    }
    let col = Float64Array::from(xs);
    for &w in windows {
        let got = rolling_dyn(&col, w, AggKind::Sum, None, Algorithm::Auto, Shape::default()).unwrap();
        let got = got.as_primitive::<Float64Type>();
        let mut worst = 0.0f64;
        for i in 0..n {
            let exact = (prefix[i + 1] - prefix[(i + 1).saturating_sub(w)]) as f64 / scale;
            let err = (got.value(i) - exact).abs() / exact.abs().max(f64::MIN_POSITIVE);
            worst = worst.max(err);
            assert!(err <= 1e-12, "window {w} row {i}: {} vs exact {exact}", got.value(i));
        }
        eprintln!("window {w}: worst relative error {worst:e}");
    }
}

#[test]
fn float_sum_is_exact_1m() {
    exactness(1_000_000, &[1, 16, 1000, 65_536]);
}

/// The same at 10M rows and a 1M window (slow under the test profile).
#[test]
#[ignore]
fn float_sum_is_exact_10m() {
    exactness(10_000_000, &[16, 1024, 65_536, 1_000_000]);
}

/// var / var_pop / std of int64 columns with nulls mixing values near
/// ±2^53 with small ones (the exact kernel shifts each block by a valid row;
/// a null's filler once swallowed the small values: var_pop of [i64::MAX,
/// null, null, 0, 1] gave 0), and of the same values null-free (the checked
/// fast path), against an exact oracle: `n^2 var_pop = n sum x^2 - (sum x)^2`
/// in i128 (|x| <= 2^53, windows <= 300 rows: no overflow).
fn exact_var_pop(win: &[i64]) -> f64 {
    let n = win.len() as i128;
    let s: i128 = win.iter().map(|&v| v as i128).sum();
    let q: i128 = win.iter().map(|&v| (v as i128) * (v as i128)).sum();
    ((n * q - s * s) as f64) / ((n * n) as f64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn var_with_nulls_and_huge_values_is_exact(
        xs in prop::collection::vec(
            (prop_oneof![3 => 0i64..20, 1 => (1i64 << 53) - 1000..=(1i64 << 53), 1 => -(1i64 << 53)..-(1i64 << 53) + 1000], prop::bool::weighted(0.7)),
            1..700,
        ),
        with_nulls in any::<bool>(),
        window in prop_oneof![1usize..20, 1usize..300],
    ) {
        let nulls = with_nulls.then(|| arrow_buffer::NullBuffer::from(xs.iter().map(|x| x.1).collect::<Vec<bool>>()));
        let col = arrow_array::Int64Array::new(xs.iter().map(|x| x.0).collect::<Vec<i64>>().into(), nulls);
        let valid = |i: usize| !with_nulls || xs[i].1;
        for (agg, ddof, root) in [(AggKind::VarPop, 0, false), (AggKind::Var, 1, false), (AggKind::Std, 1, true)] {
            let got = rolling_dyn(&col, window, agg, None, Algorithm::Auto, Shape::default()).unwrap();
            let got = got.as_primitive::<Float64Type>();
            for i in 0..xs.len() {
                let win: Vec<i64> = ((i + 1).saturating_sub(window)..=i).filter(|&r| valid(r)).map(|r| xs[r].0).collect();
                if win.len() <= ddof {
                    prop_assert!(got.is_null(i), "{} window {window} row {i}: want null", agg.name());
                    continue;
                }
                let n = win.len() as f64;
                let mut want = exact_var_pop(&win) * n / (n - ddof as f64);
                if root {
                    want = want.sqrt();
                }
                let g = got.value(i);
                prop_assert!((g - want).abs() <= 1e-12 * want, "{} window {window} row {i}: {g} vs {want} ({win:?})", agg.name());
            }
        }
    }
}
