//! Window shape (`closed`, `center`, `step`): `rolling_dyn` (the
//! padded fast kernels and the FIFO over frames) and the shaped time and
//! keyed paths equal the independent oracle (`common::plain_rows`) over the
//! window bounds written out here from pandas' definitions (rust/core/src/
//! rolling/shape.rs module docs), for every operation x dtype, with nulls,
//! NaN, ±inf and -0.0.

use std::sync::Arc;

use arrow_array::{Array, Int64Array};
use arrow_schema::DataType;
use crate::common::{agrees, cells, plain_rows, typed_column, val_at, value, Cell};
use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{rolling_keyed_dyn, rolling_dyn, rolling_time_dyn, Closed, Shape};

pub(crate) const CLOSED: [Closed; 4] = [Closed::Right, Closed::Left, Closed::Both, Closed::Neither];

/// pandas' FixedWindowIndexer, written out: `[start, end)` of row `i`.
pub(crate) fn count_bounds(n: usize, w: usize, closed: Closed, center: bool, i: usize) -> (usize, usize) {
    let off = if center { (w as i64 - 1) / 2 } else { 0 };
    let mut end = i as i64 + 1 + off;
    let mut start = end - w as i64;
    if closed.left() {
        start -= 1;
    }
    if !closed.right() {
        end -= 1;
    }
    let clip = |x: i64| x.clamp(0, n as i64) as usize;
    (clip(start), clip(end))
}

/// The time window of row `i` by its definition (no scanning): rows `j`
/// with the time conditions of the module docs.
pub(crate) fn time_rows(ts: &[i64], r: i64, closed: Closed, center: bool, i: usize) -> Vec<usize> {
    let (t, r) = (ts[i] as i128, r as i128);
    (0..ts.len())
        .filter(|&j| {
            let x = ts[j] as i128;
            if center {
                let lo = if closed.left() { 2 * x >= 2 * t - r } else { 2 * x > 2 * t - r };
                let hi = if closed.right() { 2 * x <= 2 * t + r } else { 2 * x < 2 * t + r };
                lo && hi
            } else {
                let lo = if closed.left() { x >= t - r } else { x > t - r };
                let hi = if closed.right() { j <= i } else { x < t };
                lo && hi && j <= i
            }
        })
        .collect()
}

fn want_at(rows: &[Option<Cell>], idx: impl Iterator<Item = usize>, agg: AggKind, mp: Option<usize>) -> (crate::common::Val, f64) {
    let r: Vec<(i64, Option<Cell>)> = idx.map(|j| (j as i64, rows[j])).collect();
    plain_rows(agg, &r, mp.unwrap_or(0) as u64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn count_shapes_equal_the_oracle(
        xs in prop::collection::vec(value(true, 0.85), 0..80),
        w in prop_oneof![3 => 1usize..6, 1 => 6usize..40],
        ci in 0usize..4,
        center in any::<bool>(),
        step in prop_oneof![2 => Just(1usize), 1 => 1usize..5, 1 => 10usize..60],
        mpf in prop::option::of(0.0f64..=1.0),
    ) {
        let closed = CLOSED[ci];
        let mp = mpf.map(|f| (f * w as f64) as usize);
        let shape = Shape { closed, center, step };
        for dt in [DataType::Float64, DataType::Int32] {
            let col = typed_column(&dt, &xs, true);
            let rows = cells(&col);
            let n = rows.len();
            for agg in AggKind::ALL {
                for algo in [Algorithm::Auto, Algorithm::TwoStacks] {
                    let got = rolling_dyn(&col, w, agg, mp, algo, shape).unwrap();
                    prop_assert_eq!(got.len(), n.div_ceil(step));
                    for (k, i) in (0..n).step_by(step).enumerate() {
                        let (s, e) = count_bounds(n, w, closed, center, i);
                        let (want, scale) = want_at(&rows, s..e.max(s), agg, mp);
                        let g = val_at(&got, k);
                        prop_assert!(agrees(agg, &g, &want, scale),
                            "{} {algo:?} {dt} w={w} {closed:?} center={center} step={step} mp={mp:?} row {i}: got {g:?}, want {want:?}",
                            agg.name());
                    }
                }
            }
        }
    }

    #[test]
    fn time_shapes_equal_the_oracle(
        rows_in in prop::collection::vec((prop_oneof![3 => 0i64..3, 1 => 3i64..9], value(true, 0.85)), 0..60),
        r in 1i64..8,
        ci in 0usize..4,
        center in any::<bool>(),
        mp in prop::option::of(0usize..4),
        base in prop_oneof![Just(-11i64), Just(0i64), Just(i64::MAX / 2)],
    ) {
        let closed = CLOSED[ci];
        let mut t = base;
        let ts: Vec<i64> = rows_in.iter().map(|(d, _)| { t += d; t }).collect();
        let xs: Vec<(f64, bool)> = rows_in.iter().map(|r| r.1).collect();
        let col = typed_column(&DataType::Float64, &xs, true);
        let cs = cells(&col);
        let tcol = Int64Array::from(ts.clone());
        let shape = Shape { closed, center, step: 1 };
        for agg in AggKind::ALL {
            let got = rolling_time_dyn(&col, &tcol, r, agg, mp, Algorithm::Auto, shape).unwrap();
            for i in 0..ts.len() {
                let (want, scale) = want_at(&cs, time_rows(&ts, r, closed, center, i).into_iter(), agg, mp);
                let g = val_at(&got, i);
                prop_assert!(agrees(agg, &g, &want, scale),
                    "{} r={r} {closed:?} center={center} mp={mp:?} row {i}: got {g:?}, want {want:?}", agg.name());
            }
        }
    }

    #[test]
    fn keyed_shapes_are_each_keys_rows_alone(
        xs in prop::collection::vec(value(true, 0.85), 0..60),
        keys in prop::collection::vec(0i64..3, 60),
        w in 1usize..6,
        ci in 0usize..4,
        center in any::<bool>(),
    ) {
        let closed = CLOSED[ci];
        let n = xs.len();
        let col = typed_column(&DataType::Float64, &xs, true);
        let cs = cells(&col);
        let ks = Arc::new(Int64Array::from(keys[..n].to_vec()));
        let shape = Shape { closed, center, step: 1 };
        for agg in [AggKind::Sum, AggKind::Max, AggKind::ArgMin, AggKind::First, AggKind::Last, AggKind::Std] {
            let got = rolling_keyed_dyn(ks.as_ref(), &col, w, agg, None, Algorithm::Auto, shape).unwrap();
            for key in 0..3 {
                let mine: Vec<usize> = (0..n).filter(|&i| keys[i] == key).collect();
                for (p, &i) in mine.iter().enumerate() {
                    let (s, e) = count_bounds(mine.len(), w, closed, center, p);
                    let (want, scale) = want_at(&cs, mine[s..e.max(s)].iter().copied(), agg, None);
                    let g = val_at(&got, i);
                    prop_assert!(agrees(agg, &g, &want, scale),
                        "{} key {key} w={w} {closed:?} center={center} row {i}: got {g:?}, want {want:?}", agg.name());
                }
            }
        }
    }
}

#[test]
fn step_is_refused_where_pandas_has_none() {
    let col = typed_column(&DataType::Float64, &[(1.0, true), (2.0, true)], true);
    let ts = Int64Array::from(vec![0, 1]);
    let keys = Int64Array::from(vec![0, 0]);
    let shape = Shape { step: 2, ..Shape::default() };
    assert!(rolling_time_dyn(&col, &ts, 1, AggKind::Sum, None, Algorithm::Auto, shape).is_err());
    assert!(rolling_keyed_dyn(&keys, &col, 1, AggKind::Sum, None, Algorithm::Auto, shape).is_err());
    let zero = Shape { step: 0, ..Shape::default() };
    assert!(rolling_dyn(&col, 1, AggKind::Sum, None, Algorithm::Auto, zero).is_err());
    assert!(Closed::parse("middle").is_err());
}
