//! Complexity checks for FlatFAT, B-Int and FlatFIT with a monoid that counts
//! its combines, plus order checks with a non-commutative monoid.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use slidewise_core::codec::Codec;
use slidewise_core::fifo::{BInt, FifoAggregator, FlatFat, FlatFit, New};
use slidewise_core::{Monoid, Result};

static COMBINES: AtomicUsize = AtomicUsize::new(0);
/// The counter is global: tests that read it run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A non-commutative monoid: the (first, last, count, in order) of a run of
/// positions, so a misordered or lost combine shows in the answer. Trees may
/// combine unrelated slots they never report (FlatFAT's inverted buffer), so
/// a misordered combine is marked, not a panic. Every combine bumps
/// `COMBINES`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span(u64, u64, u64, bool);

impl Codec for Span {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
        self.2.encode(out);
        self.3.encode(out);
    }
    fn decode(inp: &mut &[u8]) -> Result<Self> {
        Ok(Span(u64::decode(inp)?, u64::decode(inp)?, u64::decode(inp)?, bool::decode(inp)?))
    }
}

struct Counted;
impl Monoid for Counted {
    type Agg = Span;
    const NAME: &'static str = "counted";
    const COMMUTATIVE: bool = false;
    fn identity() -> Span {
        Span(0, 0, 0, true)
    }
    fn combine(a: &Span, b: &Span) -> Span {
        COMBINES.fetch_add(1, Ordering::Relaxed);
        if a.2 == 0 {
            return *b;
        }
        if b.2 == 0 {
            return *a;
        }
        Span(a.0, b.1, a.2 + b.2, a.3 && b.3 && a.1 + 1 == b.0)
    }
}

fn one(p: u64) -> Span {
    Span(p, p, 1, true)
}

fn expect(first: u64, last: u64) -> Span {
    Span(first, last, last + 1 - first, true)
}

fn combines() -> usize {
    COMBINES.swap(0, Ordering::Relaxed)
}

/// Steady sliding window of `n`, slide 1: evict + insert + query per step.
/// Returns the mean number of combines per step over `steps` steps.
fn steady<A: FifoAggregator<Counted> + New>(n: u64, steps: u64) -> f64 {
    let mut a = A::new_with_capacity(n as usize).unwrap();
    for p in 0..n {
        a.insert(one(p));
    }
    assert_eq!(a.query(), expect(0, n - 1));
    combines();
    for p in n..n + steps {
        a.evict();
        a.insert(one(p));
        assert_eq!(a.query(), expect(p + 1 - n, p));
    }
    combines() as f64 / steps as f64
}

#[test]
fn flatfat_step_is_logarithmic() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for k in 4..=16u32 {
        let n = 1u64 << k;
        let per = steady::<FlatFat<Counted>>(n, 4 * n);
        // Two leaf-to-root paths (evict, insert) over 2n leaves at most
        // and a prefix + suffix query: about 4 log2 n.
        let bound = 4.0 * (k + 1) as f64 + 2.0;
        eprintln!("flatfat n=2^{k}: {per:.2} combines/step");
        assert!(per <= bound, "FlatFAT n=2^{k}: {per} combines per step > {bound}");
        assert!(per >= k as f64, "FlatFAT n=2^{k}: {per} combines per step, fewer than log n?");
    }
    // Insert + query alone (no eviction): one path plus at most two.
    let mut a = FlatFat::<Counted>::new_with_capacity(1 << 16).unwrap();
    for p in 0..1u64 << 16 {
        a.insert(one(p));
    }
    combines();
    for _ in 0..1000 {
        a.query();
    }
    assert_eq!(combines(), 0, "a non-inverted FlatFAT query is the root");
}

#[test]
fn flatfit_step_is_amortised_constant() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for k in 4..=16u32 {
        let n = 1u64 << k;
        let per = steady::<FlatFit<Counted>>(n, 4 * n + 3);
        eprintln!("flatfit n=2^{k}: {per:.3} combines/step");
        // §4.1: 3(n - 1) combines per period of n + 1 slides.
        assert!(per <= 3.0, "FlatFIT n=2^{k}: {per} combines per step");
    }
    // Windows that are not powers of two behave the same.
    for n in [5u64, 17, 1000, 3001] {
        let per = steady::<FlatFit<Counted>>(n, 3 * n);
        assert!(per <= 3.0, "FlatFIT n={n}: {per} combines per step");
    }
}

#[test]
fn bint_step_is_logarithmic() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for k in 4..=16u32 {
        let n = 1u64 << k;
        let per = steady::<BInt<Counted>>(n, 2 * n);
        let bound = 2.0 * (k + 1) as f64 + 2.0;
        eprintln!("bint n=2^{k}: {per:.2} combines/step");
        assert!(per <= bound, "B-Int n=2^{k}: {per} combines per step > {bound}");
    }
}

/// query_last from every k on every algorithm, across resizes and wraps.
fn query_last_all<A: FifoAggregator<Counted> + New>() {
    let mut a = A::new_with_capacity(4).unwrap();
    let (mut lo, mut hi) = (0u64, 0u64);
    for round in 0..400u64 {
        // Grow for a while, then shrink, so the ring resizes both ways.
        let ins = if (round / 50) % 2 == 0 { 3 } else { 1 };
        let ev = if (round / 50) % 2 == 0 { 1 } else { 3 };
        for _ in 0..ins {
            a.insert(one(hi));
            hi += 1;
        }
        for _ in 0..ev {
            if lo < hi {
                a.evict();
                lo += 1;
            }
        }
        assert_eq!(a.len() as u64, hi - lo);
        for k in [1usize, 2, 3, 7, (hi - lo) as usize / 2, (hi - lo) as usize, 1000] {
            let k = k.min((hi - lo) as usize);
            let got = a.query_last(k);
            if k == 0 {
                assert_eq!(got, Counted::identity());
            } else {
                assert_eq!(got, expect(hi - k as u64, hi - 1), "k={k} round={round}");
            }
        }
        if lo < hi {
            assert_eq!(a.query(), expect(lo, hi - 1));
        }
        let c = a.contents();
        assert_eq!(c, (lo..hi).map(one).collect::<Vec<_>>());
    }
}

#[test]
fn query_last_and_contents_in_order() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    query_last_all::<FlatFat<Counted>>();
    query_last_all::<BInt<Counted>>();
    query_last_all::<FlatFit<Counted>>();
}

/// Multi-query (Algorithm 1 with several ranges): FlatFIT answering a whole
/// window and a half window each slide still costs O(1) amortised per query.
#[test]
fn flatfit_multi_query_is_cheap() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1u64 << 12;
    let mut a = FlatFit::<Counted>::new_with_capacity(n as usize).unwrap();
    for p in 0..n {
        a.insert(one(p));
    }
    combines();
    let steps = 4 * n;
    for p in n..n + steps {
        a.evict();
        a.insert(one(p));
        assert_eq!(a.query(), expect(p + 1 - n, p));
        assert_eq!(a.query_last(n as usize / 2), expect(p + 1 - n / 2, p));
        assert_eq!(a.query_last(3), expect(p - 2, p));
    }
    let per = combines() as f64 / steps as f64;
    eprintln!("flatfit 3 queries/slide n=2^12: {per:.3} combines/slide");
    assert!(per <= 9.0, "FlatFIT three queries per slide: {per} combines per slide");
}

#[test]
fn empty_windows() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    fn check<A: FifoAggregator<Counted> + New>() {
        let mut a = A::new_with_capacity(0).unwrap();
        a.evict();
        assert_eq!(a.len(), 0);
        assert_eq!(a.query(), Counted::identity());
        assert_eq!(a.query_last(3), Counted::identity());
        a.insert(one(0));
        a.evict();
        a.evict();
        assert_eq!(a.query(), Counted::identity());
        assert!(a.contents().is_empty());
        a.bulk_evict(5);
        a.bulk_insert(&[one(1), one(2), one(3)]);
        assert_eq!(a.query(), expect(1, 3));
    }
    check::<FlatFat<Counted>>();
    check::<BInt<Counted>>();
    check::<FlatFit<Counted>>();
}
