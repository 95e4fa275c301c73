//! Partial aggregation (FlatFIT paper §2.1): Panes, Pairs and Cutty slicing
//! of a shared plan give the same windows as the naive recomputation and as
//! each other, for random sets of queries (ranges with and without Pairs
//! fragments, slide > range), every algorithm, batch boundaries, nulls, NaN,
//! min_periods, flush, and a checkpoint restored mid-stream. Results compare
//! exactly (values are small integers, so float sums are exact under any
//! grouping), except var whose Chan merge rounds per grouping (1e-9).
//! Plus the paper's partials-per-window counts for each slicing.

use arrow_array::{Array, ArrayRef, Float64Array};
use crate::common::{agrees_row, count_query, f64_column, naive, nullable_values, run_stream, same_approx, stream_spec, Cols};
use proptest::prelude::*;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::partial::Slicing;
use slidewise_core::plan::{SharedPlan, Slide};
use slidewise_core::stream::count::CountSpec;
use slidewise_core::stream::{self, StreamSpec};

/// Exact equality except var/std (see the module comment).
fn same_exact(agg: AggKind, a: &dyn Array, b: &dyn Array) -> bool {
    if matches!(agg, AggKind::Var | AggKind::Std) {
        return same_approx(a, b);
    }
    if let (Some(x), Some(y)) = (a.as_any().downcast_ref::<Float64Array>(), b.as_any().downcast_ref::<Float64Array>()) {
        return x.len() == y.len()
            && (0..x.len()).all(|i| {
                x.is_valid(i) == y.is_valid(i)
                    && (!x.is_valid(i) || x.value(i).to_bits() == y.value(i).to_bits() || (x.value(i).is_nan() && y.value(i).is_nan()))
            });
    }
    a.to_data() == b.to_data()
}

type Windows = Vec<(Vec<i64>, Vec<i64>, Vec<ArrayRef>)>;

fn count_stream(specs: &[CountSpec], algo: Algorithm, slicing: Slicing) -> StreamSpec {
    let mut s = stream_spec(specs.iter().map(count_query).collect(), DType::F64, algo.name());
    s.slicing = slicing;
    s
}

/// Push `xs` in batches cut at `cuts`, optionally checkpoint-and-restore at
/// `restore_at` (into `algo2`, or recalc where `algo2` cannot run the
/// operation), flush; per query its windows.
#[allow(clippy::too_many_arguments)]
fn run(
    specs: &[CountSpec],
    slicing: Slicing,
    algo: Algorithm,
    algo2: Algorithm,
    xs: &[Option<f64>],
    cuts: &[usize],
    restore_at: Option<usize>,
) -> Option<Windows> {
    let spec = count_stream(specs, algo, slicing);
    stream::build(&spec).ok()?;
    let spec2 = match stream::build(&count_stream(specs, algo2, slicing)) {
        Ok(_) => count_stream(specs, algo2, slicing),
        Err(_) => count_stream(specs, Algorithm::Recalc, slicing),
    };
    // The batch that ends at `restore_at` (the first, among empty ones).
    let b = restore_at.and_then(|at| crate::common::batch_ranges(cuts, xs.len()).iter().position(|r| r.end == at));
    let v = f64_column(xs);
    let r = run_stream(&spec, Cols { values: &v, ts: None, keys: None }, cuts, b.map(|b| (b, &spec2))).unwrap();
    Some(
        r.windows
            .into_iter()
            .map(|w| (w.iter().map(|e| e.start).collect(), w.iter().map(|e| e.end).collect(), w.into_iter().map(|e| e.value).collect()))
            .collect(),
    )
}

const AGGS: [AggKind; 12] = [
    AggKind::Max,
    AggKind::Min,
    AggKind::Sum,
    AggKind::Count,
    AggKind::Mean,
    AggKind::ArgMax,
    AggKind::First,
    AggKind::Last,
    AggKind::FirstNonNull,
    AggKind::LastNonNull,
    AggKind::Collect,
    AggKind::Var,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_slicing_equals_naive_and_pairs(
        xs in nullable_values(),
        qs in prop::collection::vec((1u64..50, 1u64..12), 1..5),
        mut cuts in prop::collection::vec(0usize..400, 0..5),
        algo in prop::sample::select(Algorithm::ALL.to_vec()),
        algo2 in prop::sample::select(Algorithm::ALL.to_vec()),
        agg in prop::sample::select(AGGS.to_vec()),
        min_periods in 0u64..3,
        restore in prop::option::of(0usize..5),
    ) {
        cuts.sort();
        let rmin = qs.iter().map(|q| q.0).min().unwrap();
        let specs: Vec<CountSpec> =
            qs.iter().map(|&(range, slide)| CountSpec { agg, range, slide, min_periods: min_periods.min(rmin) }).collect();
        let restore_at = restore.and_then(|i| cuts.get(i).copied()).map(|c| c.min(xs.len()));
        let Some(pairs) = run(&specs, Slicing::Pairs, algo, algo2, &xs, &cuts, None) else { return Ok(()) };
        for slicing in Slicing::ALL {
            let got = run(&specs, slicing, algo, algo2, &xs, &cuts, restore_at).unwrap();
            for (q, spec) in specs.iter().enumerate() {
                let (nst, nen, nvals) = naive(spec, &xs, true);
                let what = format!("{} {:?} q{q} r{} s{} {}", slicing.name(), agg, spec.range, spec.slide, algo.name());
                prop_assert_eq!(&got[q].0, &nst, "{}", what);
                prop_assert_eq!(&got[q].1, &nen, "{}", what);
                prop_assert_eq!(got[q].2.len(), nvals.len(), "{}", what);
                for (i, (a, b)) in got[q].2.iter().zip(&nvals).enumerate() {
                    prop_assert!(agrees_row(agg, a.as_ref(), b), "{} window {}: {:?} vs naive {:?}", what, i, a, b);
                }
                for (i, (a, b)) in got[q].2.iter().zip(&pairs[q].2).enumerate() {
                    prop_assert!(same_exact(agg, a.as_ref(), b.as_ref()), "{} window {}: {:?} vs pairs {:?}", what, i, a, b);
                }
            }
        }
    }
}

/// Partials per window (FlatFIT §2.1): Panes range/gcd, Pairs
/// 2 floor(range/slide) + 1, Cutty floor(range/slide) + 1.
#[test]
fn partials_per_window_as_the_paper() {
    for (r, s) in [(5u64, 3u64), (10, 4), (7, 2), (9, 3), (1000, 7), (3, 5)] {
        let q = [Slide::count(r, s)];
        let k = |sl: Slicing| SharedPlan::build_with(&q, sl).unwrap().w_size as u64;
        let g = slidewise_core::plan::gcd(r, s);
        assert_eq!(k(Slicing::Panes), r / g, "panes r{r} s{s}");
        assert_eq!(k(Slicing::Pairs), if r % s == 0 { r / s } else { 2 * (r / s) + 1 }, "pairs r{r} s{s}");
        // Cutty: floor(range/slide) closed slices, plus the open one when the
        // window ends mid-slice.
        assert_eq!(k(Slicing::Cutty), if r % s == 0 { r / s } else { r / s + 1 }, "cutty r{r} s{s}");
    }
    // Cutty cuts only at window starts: one partial per slide.
    let p = SharedPlan::build_with(&[Slide::count(5, 3)], Slicing::Cutty).unwrap();
    assert_eq!(p.edges, vec![1, 3]);
    assert_eq!(p.cut, vec![true, false]);
    assert_eq!(Slicing::parse("cutty").unwrap(), Slicing::Cutty);
    assert!(Slicing::parse("slices").unwrap_err().to_string().contains("pairs, panes, cutty"));
}

#[test]
fn single_query_build_is_pairs() {
    // A stream's partial aggregation is Pairs unless asked otherwise.
    let spec = CountSpec { agg: AggKind::Sum, range: 5, slide: 3, min_periods: 0 };
    let s = stream_spec(vec![count_query(&spec)], DType::F64, Algorithm::TwoStacks.name());
    assert_eq!(s.slicing, Slicing::Pairs);
    assert!(stream::build(&s).is_ok());
}

mod simd {
    use proptest::prelude::*;
    use slidewise_core::monoid::{AggOp, Monoid};
    use slidewise_core::ops::arith::{FSum, SumAcc};
    use slidewise_core::ops::{Max, Min, Num, Sum};
    use slidewise_core::ops::reduce::{available, Level, PaneReduce};

    fn fold<M: AggOp>(xs: &[M::In]) -> M::Agg {
        let mut acc = M::identity();
        for &x in xs {
            M::combine_into(&mut acc, &M::lift(x, 0));
        }
        acc
    }

    fn fbits(a: &FSum) -> (u64, u64, i64, u32, u32, u32) {
        (a.s.to_bits(), a.c.to_bits(), a.n, a.nan, a.pinf, a.ninf)
    }

    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => (-1000i32..1000).prop_map(|x| x as f64 / 8.0),
            3 => -1e12f64..1e12,
            1 => Just(f64::NAN),
            1 => Just(-f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(-0.0),
            1 => Just(0.0),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Every available level gives the portable result bit for bit; min /
        /// max equal the row-by-row fold of the operations exactly, sums equal
        /// it in value (counts of NaN / inf included).
        #[test]
        fn every_level_equals_portable_and_the_ops(
            xs in prop::collection::vec(float(), 0..200),
            ints in prop::collection::vec(any::<i64>(), 0..200),
        ) {
            let f32s: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
            let i32s: Vec<i32> = ints.iter().map(|&x| x as i32).collect();
            for level in available() {
                prop_assert_eq!(f64::max_key(level, &xs), f64::max_key(Level::Portable, &xs), "{}", level.name());
                prop_assert_eq!(f64::min_key(level, &xs), f64::min_key(Level::Portable, &xs), "{}", level.name());
                prop_assert_eq!(fbits(&f64::sum(level, &xs)), fbits(&f64::sum(Level::Portable, &xs)), "{}", level.name());
                prop_assert_eq!(f32::max_key(level, &f32s), f32::max_key(Level::Portable, &f32s));
                prop_assert_eq!(f32::min_key(level, &f32s), f32::min_key(Level::Portable, &f32s));
                prop_assert_eq!(fbits(&f32::sum(level, &f32s)), fbits(&f32::sum(Level::Portable, &f32s)));
                prop_assert_eq!(i64::max_key(level, &ints), i64::max_key(Level::Portable, &ints));
                prop_assert_eq!(i64::min_key(level, &ints), i64::min_key(Level::Portable, &ints));
                prop_assert_eq!(i64::sum(level, &ints), i64::sum(Level::Portable, &ints));
                prop_assert_eq!(i32::sum(level, &i32s), i32::sum(Level::Portable, &i32s));
                prop_assert_eq!(i32::max_key(level, &i32s), i32::max_key(Level::Portable, &i32s));
            }
            prop_assert_eq!(f64::pane_max(&xs), fold::<Max<f64>>(&xs));
            prop_assert_eq!(f64::pane_min(&xs), fold::<Min<f64>>(&xs));
            prop_assert_eq!(f32::pane_max(&f32s), fold::<Max<f32>>(&f32s));
            prop_assert_eq!(i64::pane_max(&ints), fold::<Max<i64>>(&ints));
            prop_assert_eq!(i32::pane_min(&i32s), fold::<Min<i32>>(&i32s));
            prop_assert_eq!(i64::pane_sum(&ints), fold::<Sum<i64>>(&ints));
            let (a, b) = (f64::pane_sum(&xs), fold::<Sum<f64>>(&xs));
            let (va, vb) = (a.as_f64(), b.as_f64());
            prop_assert_eq!((a.n, a.nan, a.pinf, a.ninf), (b.n, b.nan, b.pinf, b.ninf));
            // Both compensated; they may differ by a rounding of the terms' scale.
            let scale: f64 = xs.iter().filter(|x| x.is_finite()).map(|x| x.abs()).sum::<f64>().max(1.0);
            prop_assert!((va.is_nan() && vb.is_nan()) || va == vb || (va - vb).abs() <= 1e-14 * scale,
                "{} vs {}", va, vb);
        }
    }

    #[test]
    fn reports_the_levels() {
        let l = available();
        assert_eq!(l[0], Level::Portable);
        eprintln!("pane reduction levels on this CPU: {:?}", l);
    }

    // Monoid in scope for M::identity.
    #[allow(dead_code)]
    fn _uses<M: Monoid>() {}
}
