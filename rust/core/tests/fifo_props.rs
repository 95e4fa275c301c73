//! Every FIFO algorithm x every operation x random operation sequences
//! (insert, evict, query, query_last, bulk insert/evict) equals Recalc, the
//! naive recomputation. Floats compare within 1e-9 relative (NaN equals NaN),
//! everything else exactly.
//!
//! `SLIDEWISE_ALGOS=flatfit,bint cargo test --test fifo_props` narrows the run.

mod common;

use common::{every_op, value, Close, FromF64, PerOp};
use proptest::prelude::*;
use slidewise_core::fifo::{build, build_lazy, Algorithm};
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

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => value(false, 0.9).prop_map(|(x, ok)| Step::Insert(x, ok)),
        3 => Just(Step::Evict),
        3 => Just(Step::Query),
        2 => (0usize..40).prop_map(Step::QueryLast),
        1 => prop::collection::vec(value(false, 0.9), 0..40).prop_map(Step::BulkInsert),
        1 => (0usize..20).prop_map(Step::BulkEvict),
    ]
}

fn algos() -> Vec<Algorithm> {
    match std::env::var("SLIDEWISE_ALGOS") {
        Ok(s) if !s.is_empty() => s.split(',').map(|a| Algorithm::parse(a.trim()).unwrap()).collect(),
        _ => Algorithm::ALL.to_vec(),
    }
}

impl PerOp for [Step] {
    /// Every algorithm against Recalc over these steps.
    fn run<M>(&self) -> Result<(), TestCaseError>
    where
        M: AggOp,
        M::In: FromF64,
        M::Out: Close,
    {
        // Each algorithm as built for one stream and as built for one key
        // of a keyed stream (lazy, bound 5: sequences grow past it).
        for (algo, lazy) in algos().into_iter().flat_map(|a| [(a, false), (a, true)]) {
            if algo.check::<M>().is_err() {
                continue;
            }
            let mut oracle = build::<M>(Algorithm::Recalc, 8).unwrap();
            let mut got = if lazy { build_lazy::<M>(algo, 5) } else { build::<M>(algo, 8) }.unwrap();
            let mut pos = 0i64;
            let mut lift = |(x, ok): (f64, bool)| {
                pos += 1;
                if ok { M::lift(M::In::from_f64(x), pos) } else { M::identity() }
            };
            for (i, s) in self.iter().enumerate() {
                let ctx = || format!("{} (lazy: {lazy}) on {} at step {i} ({s:?})", algo.name(), M::NAME);
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
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_algorithm_equals_recalc_f64(steps in prop::collection::vec(step(), 0..300)) {
        every_op::<f64, _>(&steps[..])?;
    }

    #[test]
    fn every_algorithm_equals_recalc_f32(steps in prop::collection::vec(step(), 0..120)) {
        every_op::<f32, _>(&steps[..])?;
    }

    #[test]
    fn every_algorithm_equals_recalc_i64(steps in prop::collection::vec(step(), 0..120)) {
        every_op::<i64, _>(&steps[..])?;
    }

    #[test]
    fn every_algorithm_equals_recalc_i32(steps in prop::collection::vec(step(), 0..120)) {
        every_op::<i32, _>(&steps[..])?;
    }

    /// Long steady-state windows (the shape rolling() produces): insert,
    /// evict once full, query; sizes up to a few thousand.
    #[test]
    fn steady_sliding_windows(
        window in 1usize..3000,
        xs in prop::collection::vec(value(false, 0.9), 0..6000),
    ) {
        let mut steps = Vec::with_capacity(xs.len() * 3);
        for (i, (x, ok)) in xs.into_iter().enumerate() {
            if i >= window { steps.push(Step::Evict); }
            steps.push(Step::Insert(x, ok));
            steps.push(Step::Query);
            if i % 7 == 0 { steps.push(Step::QueryLast(window / 2 + 1)); }
        }
        steps.run::<Max<f64>>()?;
        steps.run::<Sum<f64>>()?;
        steps.run::<ArgMin<f64>>()?;
        steps.run::<Var<f64, true, false>>()?;
    }
}
