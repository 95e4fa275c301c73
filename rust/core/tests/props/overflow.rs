//! Float sums and means whose windows pass f64's range: the window whose
//! exact sum is beyond ±f64::MAX is ±inf, and every later window is its
//! own exact sum again (a compensated running sum alone turns the overflow
//! into inf - inf = NaN for good). Every path: the `auto` kernels, each
//! named algorithm, `rolling_many`'s shared pass, keyed and time windows.
//!
//! The oracle is integer arithmetic: values are small integers or
//! `k * 2^1000` (|k| < 2^24, so the largest are near f64::MAX), plus NaN
//! and ±inf. A window's exact sum is `K * 2^1000 + S`; with `K != 0` the
//! `S` (< 2^40) is far below its last place, so the rounded sum is
//! `K * 2^1000` (inf from |K| = 2^24 on), else `S`.

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_dyn, rolling_keyed_dyn, rolling_many_tuned, rolling_time_dyn, Shape, Tuning};
use std::sync::Arc;

use crate::common::{val_at, Val};

const UNIT: f64 = f64::from_bits((1000 + 1023) << 52); // 2^1000

#[derive(Clone, Copy, Debug)]
enum V {
    Small(i64),
    Big(i64),
    Nan,
    Inf(bool),
    Null,
}

impl V {
    fn f(self) -> Option<f64> {
        match self {
            V::Small(s) => Some(s as f64),
            V::Big(k) => Some(k as f64 * UNIT),
            V::Nan => Some(f64::NAN),
            V::Inf(p) => Some(if p { f64::INFINITY } else { f64::NEG_INFINITY }),
            V::Null => None,
        }
    }
}

fn v() -> impl Strategy<Value = V> {
    prop_oneof![
        6 => (-1000i64..1000).prop_map(V::Small),
        3 => prop_oneof![(1i64 << 22..1 << 24), (1i64..1 << 24)].prop_flat_map(|k| prop_oneof![Just(k), Just(-k)]).prop_map(V::Big),
        1 => Just(V::Nan),
        1 => any::<bool>().prop_map(V::Inf),
        1 => Just(V::Null),
    ]
}

/// The exact sum (or mean) of `xs`, rounded; `None` for no values.
fn exact(xs: &[V], mean: bool) -> Option<f64> {
    let (mut k, mut s, mut n, mut nan, mut pinf, mut ninf) = (0i64, 0i64, 0, false, false, false);
    for x in xs {
        match *x {
            V::Small(v) => s += v,
            V::Big(v) => k += v,
            V::Nan => nan = true,
            V::Inf(p) => {
                pinf |= p;
                ninf |= !p
            }
            V::Null => continue,
        }
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let sum = if nan || (pinf && ninf) {
        f64::NAN
    } else if pinf {
        f64::INFINITY
    } else if ninf {
        f64::NEG_INFINITY
    } else if k == 0 {
        s as f64
    } else {
        // |k| < 2^53 here: exact; the product is exact or overflows.
        k as f64 * UNIT
    };
    Some(if mean { sum / n as f64 } else { sum })
}

fn same(got: &Val, want: Option<f64>) -> bool {
    match (got, want) {
        (Val::Null, None) => true,
        (Val::F(g), Some(w)) => (g.is_nan() && w.is_nan()) || g == &w || (w.is_finite() && (g - w).abs() <= 1e-15 * w.abs()),
        _ => false,
    }
}

fn column(xs: &[V]) -> ArrayRef {
    Arc::new(xs.iter().map(|x| x.f()).collect::<Float64Array>())
}

fn check_rows(what: &str, got: &dyn Array, want: impl Fn(usize) -> Option<f64>) -> Result<(), TestCaseError> {
    for i in 0..got.len() {
        let g = val_at(got, i);
        prop_assert!(same(&g, want(i)), "{what} row {i}: got {g:?}, want {:?}", want(i));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Count windows: `auto`, every named algorithm, `rolling_many`
    /// (chunked and threaded), and keyed.
    #[test]
    fn sums_past_the_float_range(
        xs in prop::collection::vec(v(), 1..300),
        finite in any::<bool>(),
        window in 1usize..40,
        keys in prop::collection::vec(0i64..3, 300),
    ) {
        // Half the columns finite: `rolling_many`'s shared pass takes only those.
        let xs: Vec<V> = xs.into_iter().map(|x| if finite && matches!(x, V::Nan | V::Inf(_)) { V::Small(7) } else { x }).collect();
        let col = column(&xs);
        for (agg, mean) in [(AggKind::Sum, false), (AggKind::Mean, true)] {
            let want = |i: usize| exact(&xs[(i + 1).saturating_sub(window)..=i], mean);
            for algo in std::iter::once(Algorithm::Auto).chain(Algorithm::ALL) {
                let got = rolling_dyn(col.as_ref(), window, agg, None, algo, Shape::default()).unwrap();
                check_rows(&format!("{} {algo:?} window {window}", agg.name()), got.as_ref(), want)?;
            }
            let ws = [window, 1, window + 3, 2 * window];
            for tuning in [Tuning::default(), Tuning { chunk: Some(7), threads: Some(3) }] {
                let got = rolling_many_tuned(col.as_ref(), &ws, agg, None, Algorithm::Auto, tuning).unwrap();
                for (g, &w) in got.iter().zip(&ws) {
                    check_rows(&format!("rolling_many {} window {w} {tuning:?}", agg.name()), g.as_ref(), |i| {
                        exact(&xs[(i + 1).saturating_sub(w)..=i], mean)
                    })?;
                }
            }
            let ks: Int64Array = keys[..xs.len()].iter().copied().collect();
            let got = rolling_keyed_dyn(&ks, col.as_ref(), window, agg, None, Algorithm::Auto, Shape::default()).unwrap();
            check_rows(&format!("keyed {} window {window}", agg.name()), got.as_ref(), |i| {
                let mine: Vec<V> = (0..=i).filter(|&j| keys[j] == keys[i]).map(|j| xs[j]).collect();
                exact(&mine[mine.len().saturating_sub(window)..], mean)
            })?;
        }
    }

    /// Time windows (ties in time, gaps), `auto` and every named algorithm.
    #[test]
    fn time_sums_past_the_float_range(xs in prop::collection::vec((v(), 0i64..3), 1..200), span in 1i64..12) {
        let vals: Vec<V> = xs.iter().map(|x| x.0).collect();
        let ts: Vec<i64> = xs.iter().scan(0i64, |t, x| { *t += x.1; Some(*t) }).collect();
        let col = column(&vals);
        let tcol = Int64Array::from(ts.clone());
        for (agg, mean) in [(AggKind::Sum, false), (AggKind::Mean, true)] {
            for algo in std::iter::once(Algorithm::Auto).chain(Algorithm::ALL) {
                let got = rolling_time_dyn(col.as_ref(), &tcol, span, agg, None, algo, Shape::default()).unwrap();
                check_rows(&format!("time {} {algo:?} span {span}", agg.name()), got.as_ref(), |i| {
                    let mine: Vec<V> = (0..=i).filter(|&j| ts[j] > ts[i] - span).map(|j| vals[j]).collect();
                    exact(&mine, mean)
                })?;
            }
        }
    }
}

/// The reported case, and a column past the kernels' segments: one
/// overflowing pair must not turn the rest of its segment into NaN.
#[test]
fn overflow_is_one_window_wide() {
    let xs = [1e308, 1e308, 1.0, 1.0, 1.0];
    let got = rolling_dyn(&Float64Array::from(xs.to_vec()), 2, AggKind::Sum, None, Algorithm::Auto, Shape::default()).unwrap();
    let got: Vec<f64> = got.as_any().downcast_ref::<Float64Array>().unwrap().values().to_vec();
    assert_eq!(got, vec![1e308, f64::INFINITY, 1e308, 2.0, 2.0]);

    let n = 3_000_000;
    let mut x = vec![1.0; n];
    x[1_000_000] = f64::MAX;
    x[1_000_001] = f64::MAX;
    x[2_000_000] = -f64::MAX;
    x[2_000_002] = -1e308;
    let col = Float64Array::from(x.clone());
    for algo in [Algorithm::Auto, Algorithm::Soe, Algorithm::TwoStacks] {
        let got = rolling_dyn(&col, 3, AggKind::Sum, None, algo, Shape::default()).unwrap();
        let got = got.as_any().downcast_ref::<Float64Array>().unwrap();
        for i in 0..n {
            let w = &x[i.saturating_sub(2)..=i];
            let big = w.iter().filter(|v| v.abs() > 2.0).count();
            let want = match (i, big) {
                (_, 0) => w.len() as f64,
                (1_000_001 | 1_000_002, 2) => f64::INFINITY,
                (2_000_002, 2) => f64::NEG_INFINITY,
                _ => w.iter().sum(),
            };
            assert_eq!(got.value(i), want, "{algo:?} row {i}");
        }
    }
}
