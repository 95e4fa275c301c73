//! FlatFIT as the paper has it (SSDBM'17): a ring of exactly the capacity
//! hint that grows and shrinks, the max-multi-query (ranges 1..n at every
//! slide, smallest first) costing one combine per query (§4.1: n - 1 per
//! slide), and checkpoints: `contents()` restored into a fresh structure
//! answers every later query as the raw window does. For a selective
//! operation FlatFIT returns suffix aggregates rather than the raw partials,
//! so the restore is checked by its answers, not by equality of contents.

use std::collections::VecDeque;
use std::cell::Cell;

use proptest::prelude::*;
use slidewise_core::fifo::{FifoAggregator, FlatFit, New};
use slidewise_core::ops::{Max, Min};
use slidewise_core::{AggOp, Monoid};

thread_local! {
    /// Combines done on this thread (each test runs on its own thread).
    static COMBINES: Cell<usize> = const { Cell::new(0) };
}

/// Non-commutative, non-selective: the run of positions (first, last, count,
/// in order) a partial covers; a misordered or lost combine shows.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span(u64, u64, u64, bool);

struct Spans;
impl Monoid for Spans {
    type Agg = Span;
    const NAME: &'static str = "spans";
    const COMMUTATIVE: bool = false;
    fn identity() -> Span {
        Span(0, 0, 0, true)
    }
    fn combine(a: &Span, b: &Span) -> Span {
        COMBINES.with(|c| c.set(c.get() + 1));
        if a.2 == 0 {
            return *b;
        }
        if b.2 == 0 {
            return *a;
        }
        Span(a.0, b.1, a.2 + b.2, a.3 && b.3 && a.1 + 1 == b.0)
    }
}

#[derive(Clone, Debug)]
enum Step {
    Insert(f64),
    Evict,
    Query,
    QueryLast(usize),
    /// The max-multi-query: every range 1..=len, smallest first.
    AllRanges,
    BulkEvict(usize),
    /// Replace the structure by one restored from `contents()`, built with
    /// this capacity hint.
    Restore(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (-100i32..100).prop_map(|x| Step::Insert(x as f64 / 4.0)),
        4 => Just(Step::Evict),
        2 => Just(Step::Query),
        2 => (0usize..40).prop_map(Step::QueryLast),
        1 => Just(Step::AllRanges),
        1 => (0usize..12).prop_map(Step::BulkEvict),
        1 => (0usize..9).prop_map(Step::Restore),
    ]
}

/// Replay `steps` on FlatFIT (built with capacity hint `cap`) and on a plain
/// queue folded from scratch; every answer must be equal.
fn replay<M: Monoid>(steps: &[Step], cap: usize, lift: impl Fn(f64, u64) -> M::Agg) -> Result<(), TestCaseError>
where
    M::Agg: PartialEq,
{
    let fold = |q: &VecDeque<M::Agg>, k: usize| {
        q.iter().skip(q.len() - k.min(q.len())).fold(M::identity(), |a, b| M::combine(&a, b))
    };
    let mut a = FlatFit::<M>::new_with_capacity(cap).unwrap();
    let mut q: VecDeque<M::Agg> = VecDeque::new();
    let mut pos = 0u64;
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Insert(x) => {
                let v = lift(*x, pos);
                pos += 1;
                a.insert(v.clone());
                q.push_back(v);
            }
            Step::Evict => {
                a.evict();
                q.pop_front();
            }
            Step::Query => prop_assert_eq!(a.query(), fold(&q, q.len()), "step {}", i),
            Step::QueryLast(k) => prop_assert_eq!(a.query_last(*k), fold(&q, *k), "step {} k {}", i, k),
            Step::AllRanges => {
                for k in 1..=q.len() {
                    prop_assert_eq!(a.query_last(k), fold(&q, k), "step {} range {}", i, k);
                }
            }
            Step::BulkEvict(n) => {
                a.bulk_evict(*n);
                for _ in 0..(*n).min(q.len()) {
                    q.pop_front();
                }
            }
            Step::Restore(c) => {
                let saved = a.contents();
                prop_assert_eq!(saved.len(), q.len());
                if !M::SELECTIVE {
                    prop_assert!(saved.iter().eq(q.iter()), "step {}: contents are the raw partials", i);
                }
                a = FlatFit::<M>::new_with_capacity(*c).unwrap();
                for v in saved {
                    a.insert(v);
                }
            }
        }
        prop_assert_eq!(a.len(), q.len());
    }
    prop_assert_eq!(a.query(), fold(&q, q.len()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn flatfit_max_equals_a_plain_fold(steps in prop::collection::vec(step(), 0..250), cap in 0usize..20) {
        replay::<Max<f64>>(&steps, cap, |x, p| <Max<f64> as AggOp>::lift(x, p as i64))?;
    }

    #[test]
    fn flatfit_min_i64_equals_a_plain_fold(steps in prop::collection::vec(step(), 0..250), cap in 0usize..20) {
        replay::<Min<i64>>(&steps, cap, |x, p| <Min<i64> as AggOp>::lift(x as i64, p as i64))?;
    }

    #[test]
    fn flatfit_non_commutative_equals_a_plain_fold(steps in prop::collection::vec(step(), 0..250), cap in 0usize..20) {
        replay::<Spans>(&steps, cap, |_, p| Span(p, p, 1, true))?;
    }
}

/// §4.1: with every range 1..n asked at each slide, smallest first, FlatFIT
/// answers each range in one combine but range 1 (none): n - 1 per slide,
/// at sizes that are not powers of two too. The answers are checked as well.
#[test]
fn flatfit_max_multi_query_costs_n_minus_one_per_slide() {
    for n in [5u64, 100, 257, 1000] {
        let mut a = FlatFit::<Spans>::new_with_capacity(n as usize).unwrap();
        for p in 0..n {
            a.insert(Span(p, p, 1, true));
        }
        // The first slide pays the initial wReset.
        let mut hi = n;
        let mut slide = |a: &mut FlatFit<Spans>| {
            a.evict();
            a.insert(Span(hi, hi, 1, true));
            for k in 1..=n {
                assert_eq!(a.query_last(k as usize), Span(hi + 1 - k, hi, k, true), "n {n} k {k}");
            }
            hi += 1;
        };
        slide(&mut a);
        let before = COMBINES.with(Cell::get);
        let slides = 3 * n + 1;
        for _ in 0..slides {
            slide(&mut a);
        }
        let per = (COMBINES.with(Cell::get) - before) as f64 / slides as f64;
        assert!(per <= (n - 1) as f64, "n {n}: {per} combines per slide, want n - 1 = {}", n - 1);
    }
}
