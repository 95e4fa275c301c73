//! Rolling median / quantile / rank: every kernel (sorted buffer, Suomela's
//! median_sort, the Fenwick rank) equals the naive sort-per-window oracle
//! (`order::naive`) on random columns with many ties, nulls, NaN, ±inf and
//! -0.0, random windows (short and past the column), min_periods, q and
//! interpolation; and [`SortedWindow`]'s every operation equals a plain
//! sorted Vec.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, Int64Array};
use proptest::prelude::*;
use slidewise_core::rolling::order::{key, naive, quantile_of, rank_of, unkey, Interpolation, OrderKernel, OrderStat};
use slidewise_core::rolling::{
    rolling_many_order_dyn, rolling_order_dyn, rolling_order_keyed_dyn, rolling_order_time_dyn, rolling_order_time_keyed_dyn,
    Shape, SortedWindow,
};

use crate::shape::{count_bounds, time_rows, CLOSED};

/// Few distinct values (many ties), with NaN, ±inf, ±0.0 and nulls.
fn cell() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        12 => (-4i32..5).prop_map(|v| Some(v as f64)),
        3 => (-1000.0f64..1000.0).prop_map(Some),
        1 => Just(Some(f64::NAN)),
        1 => Just(Some(f64::INFINITY)),
        1 => Just(Some(f64::NEG_INFINITY)),
        1 => Just(Some(-0.0)),
        3 => Just(None),
    ]
}

/// The extremes of the double order, a cluster beside outliers, and nulls.
fn edge_cell() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        4 => (-3i32..4).prop_map(|v| Some(v as f64)),
        3 => (-1e3f64..1e3).prop_map(Some),
        3 => (0.0f64..1e-9).prop_map(|x| Some(5.0 + x)),
        1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0), Just(0.0)].prop_map(Some),
        1 => prop_oneof![Just(f64::from_bits(1)), Just(-f64::from_bits(3)), Just(f64::MIN_POSITIVE / 2.0), Just(f64::MAX), Just(f64::MIN)].prop_map(Some),
        2 => Just(None),
    ]
}

fn stat() -> impl Strategy<Value = OrderStat> {
    prop_oneof![
        Just(OrderStat::Median),
        Just(OrderStat::Rank),
        (prop_oneof![Just(0.0), Just(0.5), Just(1.0), Just(0.25), 0.0f64..=1.0], 0usize..5).prop_map(|(q, i)| {
            OrderStat::Quantile { q, interpolation: Interpolation::parse(Interpolation::NAMES[i]).unwrap() }
        }),
    ]
}

fn array(xs: &[Option<f64>]) -> ArrayRef {
    Arc::new(Float64Array::from(xs.to_vec()))
}

fn cells(a: &ArrayRef) -> Vec<Option<f64>> {
    let a = a.as_primitive::<Float64Type>();
    (0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))).collect()
}

fn same(got: &[Option<f64>], want: &[Option<f64>]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| match (g, w) {
            (Some(g), Some(w)) => g == w || (g.is_nan() && w.is_nan()),
            (None, None) => true,
            _ => false,
        })
}

fn kernels(stat: OrderStat) -> Vec<OrderKernel> {
    match stat {
        OrderStat::Rank => vec![OrderKernel::Auto, OrderKernel::SortedBuffer, OrderKernel::FenwickRank],
        _ => vec![OrderKernel::Auto, OrderKernel::SortedBuffer, OrderKernel::MedianSort],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Half the columns without nulls: those take the kernels' null-free
    /// row loops (the sorted buffer's fixed-count replacement from row
    /// `window` on), which a column drawn with nulls almost never reaches.
    #[test]
    fn kernels_equal_naive(
        xs in prop::collection::vec(cell(), 0..400),
        no_nulls in any::<bool>(),
        w in prop_oneof![6 => 1usize..12, 3 => 1usize..80, 1 => 1usize..500],
        mpf in prop::option::of(0.0f64..=1.0),
        stat in stat(),
    ) {
        let xs: Vec<_> = if no_nulls { xs.into_iter().map(|c| c.or(Some(2.0))).collect() } else { xs };
        let mp = mpf.map(|f| (f * w as f64) as usize);
        let want = naive(&xs, w, stat, mp.unwrap_or(0));
        for k in kernels(stat) {
            let got = cells(&rolling_order_dyn(array(&xs).as_ref(), w, stat, mp, k, Shape::default()).unwrap());
            prop_assert!(same(&got, &want), "{:?} w={} mp={:?} {:?}\n got {:?}\nwant {:?}", k, w, mp, stat, got, want);
        }
    }

    /// Time windows `(t - range, t]` (ties in time, keyed or not) against a
    /// sort of each row's window.
    #[test]
    fn time_windows_equal_naive(
        rows in prop::collection::vec((cell(), 0i64..4, 0i32..3), 0..200),
        range in prop_oneof![1i64..4, 1i64..40, Just(i64::MAX)],
        mp in prop::option::of(0usize..4),
        stat in stat(),
        keyed in any::<bool>(),
    ) {
        let xs: Vec<Option<f64>> = rows.iter().map(|r| r.0).collect();
        let ts: Vec<i64> = rows.iter().scan(-5i64, |t, r| { *t += r.1; Some(*t) }).collect();
        let ks: Vec<i32> = rows.iter().map(|r| if keyed { r.2 } else { 0 }).collect();
        let want: Vec<Option<f64>> = (0..xs.len()).map(|i| {
            let win = (0..=i).filter(|&j| ks[j] == ks[i] && ts[j] > ts[i].saturating_sub(range));
            naive_window(&win.map(|j| xs[j]).collect::<Vec<_>>(), stat, mp.unwrap_or(0))
        }).collect();
        let (v, t): (ArrayRef, ArrayRef) = (array(&xs), Arc::new(Int64Array::from(ts.clone())));
        let got = if keyed {
            let k: ArrayRef = Arc::new(Int32Array::from(ks.clone()));
            rolling_order_time_keyed_dyn(k.as_ref(), v.as_ref(), t.as_ref(), range, stat, mp, Shape::default()).unwrap()
        } else {
            rolling_order_time_dyn(v.as_ref(), t.as_ref(), range, stat, mp, Shape::default()).unwrap()
        };
        let got = cells(&got);
        prop_assert!(same(&got, &want), "range={} mp={:?} {:?}\n got {:?}\nwant {:?}", range, mp, stat, got, want);
    }

    /// Long windows over long columns: blocks of median_sort past the first.
    #[test]
    fn median_sort_long(
        xs in prop::collection::vec(cell(), 500..3000),
        w in 100usize..700,
        stat in stat(),
    ) {
        let want = naive(&xs, w, stat, 0);
        let k = if stat == OrderStat::Rank { OrderKernel::FenwickRank } else { OrderKernel::MedianSort };
        let got = cells(&rolling_order_dyn(array(&xs).as_ref(), w, stat, None, k, Shape::default()).unwrap());
        prop_assert!(same(&got, &want));
    }

    /// Every operation of the stream structure against a sorted Vec.
    #[test]
    fn sorted_window_ops(ops in prop::collection::vec((0u8..6, cell(), 0.0f64..=1.0, 0usize..5), 0..300)) {
        let mut sw = SortedWindow::new();
        let mut model: Vec<f64> = Vec::new();
        let key = slidewise_core::rolling::order::key;
        let sort = |m: &mut Vec<f64>| m.sort_by_key(|&x| key(x));
        for (op, v, q, i) in ops {
            let x = v.unwrap_or(1.0);
            match op {
                0 | 1 => { sw.push(x); model.push(x); sort(&mut model); }
                2 => {
                    let at = model.iter().position(|&y| key(y) == key(x));
                    prop_assert_eq!(sw.evict(x), at.is_some());
                    if let Some(at) = at { model.remove(at); }
                }
                3 => {
                    // replace a present value (or a missing one: no change)
                    let old = if model.is_empty() { x } else { model[(q * (model.len() - 1) as f64) as usize] };
                    let at = model.iter().position(|&y| key(y) == key(old));
                    prop_assert_eq!(sw.replace(old, x), at.is_some());
                    if let Some(at) = at { model.remove(at); model.push(x); sort(&mut model); }
                }
                4 => {
                    let interp = Interpolation::parse(Interpolation::NAMES[i]).unwrap();
                    let want = naive(&model.iter().map(|&v| Some(v)).collect::<Vec<_>>(), model.len().max(1), OrderStat::Quantile { q, interpolation: interp }, 0).last().copied().flatten();
                    let got = sw.quantile(q, interp);
                    prop_assert!(same(&[got], &[want]));
                }
                _ => {
                    let less = model.iter().filter(|&&y| key(y) < key(x)).count();
                    let eq = model.iter().filter(|&&y| key(y) == key(x)).count();
                    prop_assert_eq!(sw.less_equal(x), (less, eq));
                    if !model.is_empty() {
                        let k = (q * (model.len() - 1) as f64) as usize;
                        prop_assert_eq!(key(sw.kth(k)), key(model[k]));
                    }
                }
            }
            prop_assert_eq!(sw.len(), model.len());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `closed=` / `center=` / `step=` on count windows, every kernel,
    /// keyed or not (`step` 1 with keys), against sorting each row's
    /// frame, the frame written out from pandas' FixedWindowIndexer; rank
    /// ranks the frame's last row, as pandas.
    #[test]
    fn count_shapes_equal_sorting_each_frame(
        xs in prop::collection::vec(cell(), 0..300),
        w in prop_oneof![6 => 1usize..12, 3 => 1usize..80, 1 => 150usize..400],
        ci in 0usize..4,
        center in any::<bool>(),
        step in prop_oneof![2 => Just(1usize), 1 => 1usize..5, 1 => 10usize..120],
        mpf in prop::option::of(0.0f64..=1.0),
        stat in stat(),
        keyed in any::<bool>(),
    ) {
        let (closed, n) = (CLOSED[ci], xs.len());
        let mp = mpf.map(|f| (f * w as f64) as usize);
        let step = if keyed { 1 } else { step };
        let shape = Shape { closed, center, step };
        let ks: Vec<i32> = (0..n).map(|i| if keyed { (i * 7 % 3) as i32 } else { 0 }).collect();
        let want: Vec<Option<f64>> = (0..n).step_by(step).map(|i| {
            let mine: Vec<usize> = (0..n).filter(|&j| ks[j] == ks[i]).collect();
            let p = mine.iter().position(|&j| j == i).unwrap();
            let (s, e) = count_bounds(mine.len(), w, closed, center, p);
            naive_window(&mine[s..e.max(s)].iter().map(|&j| xs[j]).collect::<Vec<_>>(), stat, mp.unwrap_or(0))
        }).collect();
        for k in kernels(stat) {
            let got = if keyed {
                let ka: ArrayRef = Arc::new(Int32Array::from(ks.clone()));
                rolling_order_keyed_dyn(ka.as_ref(), array(&xs).as_ref(), &[w], stat, mp, k, shape).unwrap().remove(0)
            } else {
                rolling_order_dyn(array(&xs).as_ref(), w, stat, mp, k, shape).unwrap()
            };
            let got = cells(&got);
            prop_assert!(same(&got, &want), "{:?} w={} {:?} mp={:?} {:?}\n got {:?}\nwant {:?}", k, w, shape, mp, stat, got, want);
        }
    }

    /// `closed=` / `center=` on time windows, keyed or not, against sorting
    /// each row's frame (pandas' VariableWindowIndexer written out).
    #[test]
    fn time_shapes_equal_sorting_each_frame(
        rows in prop::collection::vec((cell(), prop_oneof![3 => 0i64..3, 1 => 3i64..9], 0i32..3), 0..150),
        range in prop_oneof![1i64..8, 1i64..40],
        ci in 0usize..4,
        center in any::<bool>(),
        mp in prop::option::of(0usize..4),
        stat in stat(),
        keyed in any::<bool>(),
    ) {
        let closed = CLOSED[ci];
        let xs: Vec<Option<f64>> = rows.iter().map(|r| r.0).collect();
        let ts: Vec<i64> = rows.iter().scan(-5i64, |t, r| { *t += r.1; Some(*t) }).collect();
        let ks: Vec<i32> = rows.iter().map(|r| if keyed { r.2 } else { 0 }).collect();
        let want: Vec<Option<f64>> = (0..xs.len()).map(|i| {
            let mine: Vec<usize> = (0..xs.len()).filter(|&j| ks[j] == ks[i]).collect();
            let kts: Vec<i64> = mine.iter().map(|&j| ts[j]).collect();
            let p = mine.iter().position(|&j| j == i).unwrap();
            let win = time_rows(&kts, range, closed, center, p);
            naive_window(&win.iter().map(|&q| xs[mine[q]]).collect::<Vec<_>>(), stat, mp.unwrap_or(0))
        }).collect();
        let shape = Shape { closed, center, step: 1 };
        let (v, t): (ArrayRef, ArrayRef) = (array(&xs), Arc::new(Int64Array::from(ts.clone())));
        let got = if keyed {
            let k: ArrayRef = Arc::new(Int32Array::from(ks.clone()));
            rolling_order_time_keyed_dyn(k.as_ref(), v.as_ref(), t.as_ref(), range, stat, mp, shape).unwrap()
        } else {
            rolling_order_time_dyn(v.as_ref(), t.as_ref(), range, stat, mp, shape).unwrap()
        };
        let got = cells(&got);
        prop_assert!(same(&got, &want), "range={} {:?} mp={:?} {:?}\n got {:?}\nwant {:?}", range, shape, mp, stat, got, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Suomela's blocks long enough for the distribution sort of a block
    /// (over 32 values) on the values that reach its every path: NaN, ±inf,
    /// ±0.0, subnormals, ±MAX (a range that overflows), a dense cluster
    /// beside outliers (crowded buckets), ties, nulls.
    #[test]
    fn median_sort_edge_values(
        xs in prop::collection::vec(edge_cell(), 100..1200),
        w in 33usize..300,
        stat in stat().prop_filter("median / quantile", |s| *s != OrderStat::Rank),
    ) {
        let want = naive(&xs, w, stat, 0);
        let got = cells(&rolling_order_dyn(array(&xs).as_ref(), w, stat, None, OrderKernel::MedianSort, Shape::default()).unwrap());
        prop_assert!(same(&got, &want), "w={} {:?}\n got {:?}\nwant {:?}", w, stat, got, want);
    }
}

#[test]
fn order_step_is_refused_where_pandas_has_none() {
    let (v, t): (ArrayRef, ArrayRef) = (array(&[Some(1.0), Some(2.0)]), Arc::new(Int64Array::from(vec![0, 1])));
    let k: ArrayRef = Arc::new(Int32Array::from(vec![0, 0]));
    let two = Shape { step: 2, ..Shape::default() };
    assert!(rolling_order_time_dyn(v.as_ref(), t.as_ref(), 3, OrderStat::Median, None, two).is_err());
    assert!(rolling_order_time_keyed_dyn(k.as_ref(), v.as_ref(), t.as_ref(), 3, OrderStat::Median, None, two).is_err());
    assert!(rolling_order_keyed_dyn(k.as_ref(), v.as_ref(), &[2], OrderStat::Median, None, OrderKernel::Auto, two).is_err());
    let zero = Shape { step: 0, ..Shape::default() };
    assert!(rolling_order_dyn(v.as_ref(), 2, OrderStat::Median, None, OrderKernel::Auto, zero).is_err());
}

/// One window's statistic by sorting; its last row is the row ranked.
fn naive_window(win: &[Option<f64>], stat: OrderStat, mp: usize) -> Option<f64> {
    let mut ks: Vec<u64> = win.iter().flatten().map(|&x| key(x)).collect();
    if ks.len() < mp.max(1) {
        return None;
    }
    ks.sort_unstable();
    match stat.quantile() {
        Some((q, i)) => Some(quantile_of(ks.len(), q, i, |k| unkey(ks[k]))),
        None => {
            let me = key((*win.last()?)?);
            let less = ks.iter().filter(|&&k| k < me).count();
            Some(rank_of(less, ks.iter().filter(|&&k| k == me).count(), ks.len()))
        }
    }
}

#[test]
fn time_window_errors() {
    let (v, t): (ArrayRef, ArrayRef) = (array(&[Some(1.0), Some(2.0)]), Arc::new(Int64Array::from(vec![5, 4])));
    let e = rolling_order_time_dyn(v.as_ref(), t.as_ref(), 3, OrderStat::Median, None, Shape::default()).unwrap_err().to_string();
    assert!(e.contains("row 1"), "{e}");
    assert!(rolling_order_time_dyn(v.as_ref(), t.as_ref(), 0, OrderStat::Median, None, Shape::default()).is_err());
}

#[test]
fn many_and_keyed_equal_single() {
    let xs: Vec<Option<f64>> = (0..500).map(|i| if i % 7 == 3 { None } else { Some(((i * 37) % 11) as f64) }).collect();
    let ks: ArrayRef = Arc::new(Int32Array::from((0..500).map(|i| (i * 13 % 3) as i32).collect::<Vec<_>>()));
    let ws = [2usize, 4, 9, 250, 1000];
    for stat in [OrderStat::Median, OrderStat::Rank, OrderStat::Quantile { q: 0.3, interpolation: Interpolation::Nearest }] {
        let many = rolling_many_order_dyn(array(&xs).as_ref(), &ws, stat, Some(2), OrderKernel::Auto, Shape::default()).unwrap();
        let keyed = rolling_order_keyed_dyn(ks.as_ref(), array(&xs).as_ref(), &ws, stat, Some(2), OrderKernel::Auto, Shape::default()).unwrap();
        for (j, &w) in ws.iter().enumerate() {
            assert!(same(&cells(&many[j]), &naive(&xs, w, stat, 2)));
            // keyed: each key's rows alone
            let got = cells(&keyed[j]);
            for key in 0..3 {
                let rows: Vec<usize> = (0..500).filter(|i| (i * 13 % 3) as i32 == key).collect();
                let sub: Vec<Option<f64>> = rows.iter().map(|&i| xs[i]).collect();
                let want = naive(&sub, w, stat, 2);
                let got_k: Vec<Option<f64>> = rows.iter().map(|&i| got[i]).collect();
                assert!(same(&got_k, &want), "{stat:?} w={w} key={key}");
            }
        }
    }
}

#[test]
fn errors() {
    assert!(OrderStat::parse("quantile", None, None).is_err());
    assert!(OrderStat::parse("quantile", Some(1.5), None).is_err());
    assert!(OrderStat::parse("quantile", Some(f64::NAN), None).is_err());
    assert!(OrderStat::parse("quantile", Some(0.5), Some("cubic")).is_err());
    assert!(OrderStat::parse("median", Some(0.5), None).is_err());
    assert!(OrderStat::parse("sum", None, Some("linear")).is_err());
    assert_eq!(OrderStat::parse("sum", None, None).unwrap(), None);
    assert!(rolling_order_dyn(array(&[Some(1.0)]).as_ref(), 0, OrderStat::Median, None, OrderKernel::Auto, Shape::default()).is_err());
    assert!(rolling_order_dyn(array(&[Some(1.0)]).as_ref(), 2, OrderStat::Median, Some(3), OrderKernel::Auto, Shape::default()).is_err());
}

/// Short keys' time windows run batched, each key's times moved past the
/// one before; with `range = i64::MAX` the moved times leave `i64`, so the
/// batch must fall back to one call per key rather than overflow (a case
/// `time_windows_equal_naive` found once in ~1,200).
#[test]
fn keyed_time_windows_of_the_whole_range() {
    let v: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.0, 3.0]));
    let t: ArrayRef = Arc::new(Int64Array::from(vec![0i64, 0, 1]));
    let k: ArrayRef = Arc::new(Int32Array::from(vec![0, 1, 1]));
    let got = rolling_order_time_keyed_dyn(k.as_ref(), v.as_ref(), t.as_ref(), i64::MAX, OrderStat::Median, None, Shape::default()).unwrap();
    assert_eq!(cells(&got), vec![Some(1.0), Some(2.0), Some(2.5)]);
}
