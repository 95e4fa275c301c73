//! Memory of keyed streams follows the live state: a key allocates nothing
//! until it has rows, and the heap bytes per key grow with the window, not
//! with a fixed capacity. Measured with a counting global allocator, so
//! this file holds one test (tests of one binary share the allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array};
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::{Algorithm, TwoStacks};
use slidewise_core::ops::arith::Sum;
use slidewise_core::ops::order::Max;
use slidewise_core::partial::Slicing;
use slidewise_core::stream::count::{CountPlan, CountSpec, SharedWindow};
use slidewise_core::stream::op::WindowOp;
use slidewise_core::stream::{self, Batch, QuerySpec, StreamSpec, Window};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            LIVE.fetch_add(l.size() as isize, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size() as isize, Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        let q = System.realloc(p, l, size);
        if !q.is_null() {
            LIVE.fetch_add(size as isize - l.size() as isize, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// Just under a power of two, so the states Vec has little slack.
const KEYS: usize = 16_000;

/// A keyed stream of the one query `q`.
fn keyed(q: QuerySpec, algo: Algorithm) -> StreamSpec {
    let mut s = StreamSpec::new(vec![q], DType::F64);
    s.algorithm = algo.name().to_string();
    s.keyed = true;
    s
}

/// Heap bytes per key held by a keyed `agg` stream of one count window
/// (`range`, slide 1) after every key got `rows` rows, fed as the memory
/// benchmark does (all keys, then all keys again).
fn count_bytes_per_key(agg: AggKind, range: u64, rows: usize, algo: Algorithm) -> f64 {
    let before = LIVE.load(Relaxed);
    let q = QuerySpec { agg, window: Window::Count { range, slide: 1 }, min_periods: 0, arg: None };
    let mut op = stream::build(&keyed(q, algo)).unwrap();
    for r in 0..rows {
        let keys = Int64Array::from_iter_values(0..KEYS as i64);
        let vals = Float64Array::from_iter_values((0..KEYS).map(|k| (k + r) as f64));
        let mut b = Batch::new(&vals);
        b.keys = Some(&keys);
        drop(op.push(&b).unwrap());
    }
    let per_key = (LIVE.load(Relaxed) - before) as f64 / KEYS as f64;
    drop(op);
    per_key
}

fn time_bytes_per_key(range: i64, rows: usize) -> f64 {
    let before = LIVE.load(Relaxed);
    let q = QuerySpec { agg: AggKind::Sum, window: Window::Time { range, slide: 1 }, min_periods: 0, arg: None };
    let mut op = stream::build(&keyed(q, Algorithm::Auto)).unwrap();
    for r in 0..rows {
        let keys = Int64Array::from_iter_values(0..KEYS as i64);
        let vals = Float64Array::from_iter_values((0..KEYS).map(|k| k as f64));
        let ts = Int64Array::from_iter_values(std::iter::repeat_n(r as i64, KEYS));
        let mut b = Batch::new(&vals);
        b.keys = Some(&keys);
        b.time = Some(&ts);
        drop(op.push(&b).unwrap());
    }
    let per_key = (LIVE.load(Relaxed) - before) as f64 / KEYS as f64;
    drop(op);
    per_key
}

#[test]
fn keyed_state_memory_follows_the_live_state() {
    // A fresh key's state allocates nothing.
    let plan = CountPlan::new(&[CountSpec { agg: AggKind::Max, range: 1000, slide: 1, min_periods: 0 }], Slicing::Pairs).unwrap();
    let proto = SharedWindow::<Max<f64>, TwoStacks<Max<f64>>>::lazy(Arc::clone(&plan)).unwrap();
    let mut fresh = Vec::with_capacity(100);
    let before = LIVE.load(Relaxed);
    for _ in 0..100 {
        fresh.push(proto.fresh().unwrap());
    }
    assert_eq!(LIVE.load(Relaxed) - before, 0, "fresh key states must not allocate");
    drop(fresh);

    // Heap bytes per key: the key index (~40 bytes), the inline state and
    // the window's partials (a float sum partial is 40 bytes).
    let part = std::mem::size_of::<<Sum<f64> as slidewise_core::Monoid>::Agg>() as f64;
    let w2 = count_bytes_per_key(AggKind::Sum, 2, 4, Algorithm::Auto);
    let w10 = count_bytes_per_key(AggKind::Sum, 10, 20, Algorithm::Auto);
    let w100 = count_bytes_per_key(AggKind::Sum, 100, 200, Algorithm::Auto);
    eprintln!("sum bytes/key: window 2 {w2:.0}, 10 {w10:.0}, 100 {w100:.0}");
    // A key of window 10 holds 11 partials at most: no fixed capacity, no
    // slack beyond the inline state and its share of the index.
    assert!(w10 < 11.0 * part + 400.0, "window 10: {w10:.0} bytes/key");
    assert!(w2 < 3.0 * part + 400.0, "window 2: {w2:.0} bytes/key");
    // Growth follows the window: 90 more partials cost about 90 partials.
    let d = w100 - w10;
    assert!(d >= 85.0 * part && d <= 135.0 * part, "window 10 -> 100 grew {d:.0} bytes/key");

    // Non-invertible (TwoStacks per key): bounded by its three windows' worth.
    let m10 = count_bytes_per_key(AggKind::Max, 10, 20, Algorithm::Auto);
    let m100 = count_bytes_per_key(AggKind::Max, 100, 200, Algorithm::Auto);
    eprintln!("max bytes/key: window 10 {m10:.0}, 100 {m100:.0}");
    assert!(m10 < 3.0 * 11.0 * 8.0 + 400.0, "max window 10: {m10:.0} bytes/key");
    assert!(m100 - m10 >= 90.0 * 8.0, "max window 10 -> 100 grew {:.0} bytes/key", m100 - m10);

    // Time windows: a range of 10 slides, rows at every slide.
    let t10 = time_bytes_per_key(10, 20);
    eprintln!("time sum bytes/key: range 10 {t10:.0}");
    assert!(t10 < 11.0 * (part + 16.0) + 400.0, "time window 10: {t10:.0} bytes/key");
}
