//! Every FIFO algorithm (Recalc included) x every operation x random
//! operation sequences (insert, evict, query, query_last, bulk insert/evict)
//! equals the independent oracle: the raw values of the window folded
//! plainly (`common::plain`), computed once per case. Floats compare as
//! `common::agrees` says, everything else exactly.
//!
//! `SLIDEWISE_ALGOS=flatfit,bint cargo test --test fifo_props` narrows the run.

use std::collections::VecDeque;

use crate::common::{agrees, every_op, plain_rows, value, Cell, Close, FromF64, PerOp, ToCell, ToVal, Val};
use proptest::prelude::*;
use slidewise_core::fifo::{build, build_lazy, Algorithm};
use slidewise_core::ops::*;
use slidewise_core::engine::AggKind;
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

/// What the oracle expects after each step: the answer of a query step (with
/// its window's scale), and the window's length after every step.
struct Expected {
    answers: Vec<Option<(Val, f64)>>,
    lens: Vec<usize>,
}

/// Replay `steps` on a plain queue of raw values and answer every query
/// with the independent oracle (`common::plain`), once per case.
fn expect<M: AggOp>(steps: &[Step]) -> Expected
where
    M::In: FromF64 + ToCell,
{
    let agg = AggKind::parse(M::NAME).unwrap();
    let mut q: VecDeque<(i64, Option<Cell>)> = VecDeque::new();
    let mut pos = 0i64;
    let mut push = |q: &mut VecDeque<_>, (x, ok): (f64, bool)| {
        pos += 1;
        q.push_back((pos, ok.then(|| M::In::from_f64(x).cell())));
    };
    let answer = |q: &VecDeque<(i64, Option<Cell>)>, k: usize| {
        let rows: Vec<(i64, Option<Cell>)> = q.iter().skip(q.len() - k.min(q.len())).copied().collect();
        plain_rows(agg, &rows, 0)
    };
    let (mut answers, mut lens) = (vec![], vec![]);
    for s in steps {
        let mut a = None;
        match s {
            Step::Insert(x, ok) => push(&mut q, (*x, *ok)),
            Step::Evict => {
                q.pop_front();
            }
            Step::Query => a = Some(answer(&q, q.len())),
            Step::QueryLast(k) => a = Some(answer(&q, *k)),
            Step::BulkInsert(vs) => vs.iter().for_each(|v| push(&mut q, *v)),
            Step::BulkEvict(n) => {
                q.drain(..(*n).min(q.len()));
            }
        }
        answers.push(a);
        lens.push(q.len());
    }
    answers.push(Some(answer(&q, q.len())));
    Expected { answers, lens }
}

impl PerOp for [Step] {
    /// Every algorithm (Recalc too) against the oracle over these steps.
    fn run<M>(&self) -> Result<(), TestCaseError>
    where
        M: AggOp,
        M::In: FromF64 + ToCell,
        M::Out: Close + ToVal,
    {
        let want = expect::<M>(self);
        let agg = AggKind::parse(M::NAME).unwrap();
        // Each algorithm as built for one stream and as built for one key
        // of a keyed stream (lazy, bound 5: sequences grow past it).
        for (algo, lazy) in algos().into_iter().flat_map(|a| [(a, false), (a, true)]) {
            if algo.check::<M>().is_err() {
                continue;
            }
            let mut got = if lazy { build_lazy::<M>(algo, 5) } else { build::<M>(algo, 8) }.unwrap();
            let mut pos = 0i64;
            let mut lift = |(x, ok): (f64, bool)| {
                pos += 1;
                if ok { M::lift(M::In::from_f64(x), pos) } else { M::lift_null(pos) }
            };
            let check = |i: usize, v: M::Agg, what: &dyn Fn() -> String| -> Result<(), TestCaseError> {
                let (w, scale) = want.answers[i].as_ref().unwrap();
                let g = M::lower(&v).val();
                prop_assert!(agrees(agg, &g, w, *scale), "{}: got {:?}, oracle {:?}", what(), g, w);
                Ok(())
            };
            for (i, s) in self.iter().enumerate() {
                let ctx = || format!("{} (lazy: {lazy}) on {} at step {i} ({s:?})", algo.name(), M::NAME);
                match s {
                    Step::Insert(x, ok) => got.insert(lift((*x, *ok))),
                    Step::Evict => got.evict(),
                    Step::Query => check(i, got.query(), &ctx)?,
                    Step::QueryLast(k) => check(i, got.query_last(*k), &ctx)?,
                    Step::BulkInsert(vs) => {
                        let ps: Vec<M::Agg> = vs.iter().map(|v| lift(*v)).collect();
                        got.bulk_insert(&ps);
                    }
                    Step::BulkEvict(n) => got.bulk_evict(*n),
                }
                prop_assert_eq!(want.lens[i], got.len(), "{}: len", ctx());
            }
            check(self.len(), got.query(), &|| format!("{} on {} at the end", algo.name(), M::NAME))?;
            prop_assert_eq!(got.contents().len(), got.len());
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
