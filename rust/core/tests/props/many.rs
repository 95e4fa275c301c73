//! `rolling_many_dyn` (the shared sparse-table pass for max / min, the
//! per-window loop for the rest) equals `rolling_dyn` on each window alone,
//! bit for bit: validity, and at valid rows the exact bits (NaN, -0.0 / +0.0
//! placement), for every dtype, random windows (1, > len, duplicates), nulls,
//! min_periods, and forced small chunks and thread splits so chunk halos and
//! the prefix rows cross boundaries on small columns. max / min are also
//! checked bitwise against Recalc (the naive oracle).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use crate::common::{typed_column, value, xorshift};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_dyn, rolling_many_tuned, Shape, Tuning};

/// Bits of row `i` (`None` when null).
fn bits(a: &dyn Array, i: usize) -> Option<u64> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).to_bits(),
        DataType::Float32 => a.as_primitive::<Float32Type>().value(i).to_bits() as u64,
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i) as u64,
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i) as u32 as u64,
        other => panic!("unexpected output type {other}"),
    })
}

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

    #[test]
    fn many_equals_each_window_alone(
        xs in prop::collection::vec(value(true, 0.85), 0..2500),
        with_nulls in prop::bool::weighted(0.5),
        ws in windows(),
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
            for agg in [AggKind::Max, AggKind::Min, AggKind::Sum, AggKind::Mean, AggKind::ArgMax] {
                let got = rolling_many_tuned(&col, &ws, agg, mp, Algorithm::Auto, tuning).unwrap();
                prop_assert_eq!(got.len(), ws.len());
                for (g, &w) in got.iter().zip(&ws) {
                    let what = format!("{} {dt} window {w} min_periods {mp:?} {tuning:?}", agg.name());
                    let alone = rolling_dyn(&col, w, agg, mp, Algorithm::Auto, Shape::default()).unwrap();
                    if dt == DataType::Float64 && matches!(agg, AggKind::Sum | AggKind::Mean) {
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
