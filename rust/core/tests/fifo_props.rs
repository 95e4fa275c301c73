//! Every FIFO algorithm x every operation x random operation sequences
//! (insert, evict, query, query_last, bulk insert/evict) equals Recalc, the
//! naive recomputation. Floats compare within 1e-9 relative (NaN equals NaN),
//! everything else exactly.
//!
//! `SLIDEWISE_ALGOS=flatfit,bint cargo test --test fifo_props` narrows the run.

use proptest::prelude::*;
use slidewise_core::engine::AggKind;
use slidewise_core::fifo::{build, Algorithm};
use slidewise_core::ops::*;
use slidewise_core::AggOp;

#[derive(Clone, Debug)]
enum Step {
    Insert(f64, bool),
    Evict,
    Query,
    QueryLast(usize),
    BulkInsert(Vec<(f64, bool)>),
    BulkEvict(usize),
}

/// Values with ties, negatives, NaN, infinities and nulls (the bool).
fn value() -> impl Strategy<Value = (f64, bool)> {
    let v = prop_oneof![
        8 => (-20i32..20).prop_map(|x| x as f64),
        2 => -1e6f64..1e6,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(-0.0),
    ];
    (v, prop::bool::weighted(0.9))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => value().prop_map(|(x, ok)| Step::Insert(x, ok)),
        3 => Just(Step::Evict),
        3 => Just(Step::Query),
        2 => (0usize..40).prop_map(Step::QueryLast),
        1 => prop::collection::vec(value(), 0..40).prop_map(Step::BulkInsert),
        1 => (0usize..20).prop_map(Step::BulkEvict),
    ]
}

trait Close {
    fn close(&self, o: &Self) -> bool;
}
fn fclose(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
}
impl Close for f64 {
    fn close(&self, o: &f64) -> bool {
        fclose(*self, *o)
    }
}
impl Close for f32 {
    fn close(&self, o: &f32) -> bool {
        fclose(*self as f64, *o as f64)
    }
}
impl Close for i64 {
    fn close(&self, o: &i64) -> bool {
        self == o
    }
}
impl Close for i32 {
    fn close(&self, o: &i32) -> bool {
        self == o
    }
}
impl<T: Close> Close for Vec<T> {
    fn close(&self, o: &Vec<T>) -> bool {
        self.len() == o.len() && self.iter().zip(o).all(|(a, b)| a.close(b))
    }
}
impl<T: Close> Close for Option<T> {
    fn close(&self, o: &Option<T>) -> bool {
        match (self, o) {
            (None, None) => true,
            (Some(a), Some(b)) => a.close(b),
            _ => false,
        }
    }
}

/// Converts a generated value to the operation's input dtype.
trait FromF64: Copy {
    fn from_f64(x: f64) -> Self;
}
impl FromF64 for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
}
impl FromF64 for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
}
impl FromF64 for i64 {
    fn from_f64(x: f64) -> i64 {
        if x.is_finite() { x as i64 } else { 7 }
    }
}
impl FromF64 for i32 {
    fn from_f64(x: f64) -> i32 {
        if x.is_finite() { (x as i64 % 100_000) as i32 } else { -7 }
    }
}

fn algos() -> Vec<Algorithm> {
    match std::env::var("SLIDEWISE_ALGOS") {
        Ok(s) if !s.is_empty() => s.split(',').map(|a| Algorithm::parse(a.trim()).unwrap()).collect(),
        _ => Algorithm::ALL.to_vec(),
    }
}

fn run<M>(steps: &[Step]) -> Result<(), TestCaseError>
where
    M: AggOp,
    M::In: FromF64,
    M::Out: Close,
{
    for algo in algos() {
        if algo.check::<M>().is_err() {
            continue;
        }
        let mut oracle = build::<M>(Algorithm::Recalc, 8).unwrap();
        let mut got = build::<M>(algo, 8).unwrap();
        let mut pos = 0i64;
        let mut lift = |(x, ok): (f64, bool)| {
            pos += 1;
            if ok { M::lift(M::In::from_f64(x), pos) } else { M::identity() }
        };
        for (i, s) in steps.iter().enumerate() {
            let ctx = || format!("{} on {} at step {i} ({s:?})", algo.name(), M::NAME);
            match s {
                Step::Insert(x, ok) => {
                    let p = lift((*x, *ok));
                    oracle.insert(p.clone());
                    got.insert(p);
                }
                Step::Evict => {
                    oracle.evict();
                    got.evict();
                }
                Step::Query => {
                    let (a, b) = (M::lower(&oracle.query()), M::lower(&got.query()));
                    prop_assert!(a.close(&b), "{}: recalc {:?} vs {:?}", ctx(), a, b);
                }
                Step::QueryLast(k) => {
                    let (a, b) = (M::lower(&oracle.query_last(*k)), M::lower(&got.query_last(*k)));
                    prop_assert!(a.close(&b), "{}: recalc {:?} vs {:?}", ctx(), a, b);
                }
                Step::BulkInsert(vs) => {
                    let ps: Vec<M::Agg> = vs.iter().map(|v| lift(*v)).collect();
                    oracle.bulk_insert(&ps);
                    got.bulk_insert(&ps);
                }
                Step::BulkEvict(n) => {
                    oracle.bulk_evict(*n);
                    got.bulk_evict(*n);
                }
            }
            prop_assert_eq!(oracle.len(), got.len(), "{}: len", ctx());
        }
        let (a, b) = (M::lower(&oracle.query()), M::lower(&got.query()));
        prop_assert!(a.close(&b), "{} on {} at the end: recalc {:?} vs {:?}", algo.name(), M::NAME, a, b);
        let (ca, cb) = (oracle.contents(), got.contents());
        prop_assert_eq!(ca.len(), cb.len());
    }
    Ok(())
}

fn all_ops<T>(steps: &[Step]) -> Result<(), TestCaseError>
where
    T: Num + FromF64 + arith::LiftSum + Close,
    T::Wide: Close,
{
    for agg in AggKind::ALL {
        match agg {
            AggKind::Count => run::<Count<T>>(steps)?,
            AggKind::Sum => run::<Sum<T>>(steps)?,
            AggKind::Min => run::<Min<T>>(steps)?,
            AggKind::Max => run::<Max<T>>(steps)?,
            AggKind::Mean => run::<Mean<T>>(steps)?,
            AggKind::Geomean => run::<Geomean<T>>(steps)?,
            AggKind::MaxCount => run::<MaxCount<T>>(steps)?,
            AggKind::MinCount => run::<MinCount<T>>(steps)?,
            AggKind::Var => run::<Var<T, true, false>>(steps)?,
            AggKind::Std => run::<Var<T, true, true>>(steps)?,
            AggKind::VarPop => run::<Var<T, false, false>>(steps)?,
            AggKind::StdPop => run::<Var<T, false, true>>(steps)?,
            AggKind::ArgMax => run::<ArgMax<T>>(steps)?,
            AggKind::ArgMin => run::<ArgMin<T>>(steps)?,
            AggKind::Collect => run::<Collect<T>>(steps)?,
            AggKind::First => run::<First<T>>(steps)?,
            AggKind::Last => run::<Last<T>>(steps)?,
            AggKind::Range => run::<Range<T>>(steps)?,
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_algorithm_equals_recalc_f64(steps in prop::collection::vec(step(), 0..300)) {
        all_ops::<f64>(&steps)?;
    }

    #[test]
    fn every_algorithm_equals_recalc_f32(steps in prop::collection::vec(step(), 0..120)) {
        all_ops::<f32>(&steps)?;
    }

    #[test]
    fn every_algorithm_equals_recalc_i64(steps in prop::collection::vec(step(), 0..120)) {
        all_ops::<i64>(&steps)?;
    }

    #[test]
    fn every_algorithm_equals_recalc_i32(steps in prop::collection::vec(step(), 0..120)) {
        all_ops::<i32>(&steps)?;
    }

    /// Long steady-state windows (the shape rolling() produces): insert,
    /// evict once full, query; sizes up to a few thousand.
    #[test]
    fn steady_sliding_windows(
        window in 1usize..3000,
        xs in prop::collection::vec(value(), 0..6000),
    ) {
        let mut steps = Vec::with_capacity(xs.len() * 3);
        for (i, (x, ok)) in xs.into_iter().enumerate() {
            if i >= window { steps.push(Step::Evict); }
            steps.push(Step::Insert(x, ok));
            steps.push(Step::Query);
            if i % 7 == 0 { steps.push(Step::QueryLast(window / 2 + 1)); }
        }
        run::<Max<f64>>(&steps)?;
        run::<Sum<f64>>(&steps)?;
        run::<ArgMin<f64>>(&steps)?;
        run::<Var<f64, true, false>>(&steps)?;
    }
}
