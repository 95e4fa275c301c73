//! Sort-based median filtering: J. Suomela, "Median filtering is
//! equivalent to sorting", arXiv:1406.1717, 2014 (Section 3).
//!
//! The column is cut into blocks of `w` rows. Each block is sorted once
//! (O(w log w), cache-friendly), and its rows become the nodes of a doubly
//! linked list in sorted order, a node named by its sorted position, so
//! "is node x before the pointer" is an integer comparison. The window
//! ending at row `j` of block `B` is the tail of the previous block `A`
//! (rows after `j`) and the head of `B` (rows up to `j`): sliding one row
//! deletes one node from `A`'s list and re-inserts one into `B`'s. `B` is
//! "unwound" first (every node deleted from the last row to the first), so
//! each re-insertion is the O(1) undo of a deletion (Knuth's dancing links).
//!
//! Each list keeps a pointer and `s`, the number of present nodes before
//! it. The two pointers are kept so that the nodes before them are the `t`
//! smallest of the window and no node before one exceeds a node at or after
//! the other: the `t`-th smallest is then the smaller of the two pointed
//! keys. One deletion and one insertion move the pointers O(1) steps, so a
//! row costs O(1) amortised after the O(log w) sort (the paper's argument).
//!
//! Generalised here from the median to any position `t` (quantiles: the
//! `t`-th and `t + 1`-th smallest), to null rows (not nodes: the window
//! count, hence `t`, varies by at most one a row), and to Spark's NaN order
//! through the keys (`order::key`).

use arrow_array::ArrayRef;
use arrow_buffer::NullBuffer;

use super::order_stat::{finish, threads, unkey, Interpolation, QuantileAt};

const NONE: u32 = u32::MAX;
/// Peek past the last node / before the first: above and below every key
/// (`order::key` never gives 0 or `u64::MAX`).
const HI: u64 = u64::MAX;
const LO: u64 = 0;

/// One block: its sorted keys and the linked list over them.
#[derive(Default)]
struct Block {
    /// Sorted keys of the block's valid rows, then `HI` for the sentinel.
    keys: Vec<u64>,
    /// Local row -> node (sorted position), `NONE` for a null row.
    pos: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// The sentinel node (= number of nodes).
    m: u32,
    ptr: u32,
    /// Present nodes before `ptr`.
    s: u32,
}

impl Block {
    /// Sort the block's rows and link them all.
    fn init(&mut self, keys: &[u64], base: usize, nulls: Option<&NullBuffer>, sc: &mut Scratch) {
        let pairs = &mut sc.pairs;
        pairs.clear();
        match nulls {
            None => pairs.extend(keys.iter().enumerate().map(|(r, &k)| (k, r as u32))),
            Some(nb) => pairs.extend(keys.iter().enumerate().filter(|&(r, _)| nb.is_valid(base + r)).map(|(r, &k)| (k, r as u32))),
        }
        // ties in any order: a node is named by its sorted position only
        let in_place = sort_pairs(pairs, &mut sc.tmp, &mut sc.hist, &mut sc.bk, 0);
        let pairs = if in_place { &sc.pairs[..] } else { &sc.tmp[..sc.pairs.len()] };
        let m = pairs.len();
        self.keys.clear();
        self.keys.reserve(m + 1);
        self.pos.clear();
        self.pos.resize(keys.len(), NONE);
        for (p, &(k, r)) in pairs.iter().enumerate() {
            self.keys.push(k);
            self.pos[r as usize] = p as u32;
        }
        self.keys.push(HI);
        self.prev.clear();
        self.next.clear();
        self.prev.extend((0..=m as u32).map(|p| if p == 0 { m as u32 } else { p - 1 }));
        self.next.extend((0..=m as u32).map(|p| if p == m as u32 { 0 } else { p + 1 }));
        self.m = m as u32;
        self.ptr = 0;
        self.s = 0;
    }

    /// Delete every node, last row first: the list is empty and each node
    /// remembers its neighbours for [`Block::undelete`] in row order.
    fn unwind(&mut self) {
        for r in (0..self.pos.len()).rev() {
            let p = self.pos[r];
            if p != NONE {
                let (a, b) = (self.prev[p as usize], self.next[p as usize]);
                self.next[a as usize] = b;
                self.prev[b as usize] = a;
            }
        }
        self.ptr = self.m;
        self.s = 0;
    }

    // The row loop's accessors read and write the lists without bounds
    // checks (they were an eighth of its time): every node id stored in
    // `prev`, `next`, `ptr` and (when not `NONE`) `pos` is at most `m`, and
    // `keys`, `prev` and `next` have `m + 1` entries (`init`).
    #[inline(always)]
    fn link(v: &[u32], p: u32) -> u32 {
        debug_assert!((p as usize) < v.len());
        // SAFETY: p <= m < v.len() (above).
        unsafe { *v.get_unchecked(p as usize) }
    }

    #[inline(always)]
    fn set(v: &mut [u32], p: u32, x: u32) {
        debug_assert!((p as usize) < v.len());
        // SAFETY: p <= m < v.len() (above).
        unsafe { *v.get_unchecked_mut(p as usize) = x }
    }

    #[inline(always)]
    fn key(&self, p: u32) -> u64 {
        debug_assert!((p as usize) < self.keys.len());
        // SAFETY: p <= m < keys.len() (above).
        unsafe { *self.keys.get_unchecked(p as usize) }
    }

    // Whether a row's node lies before the pointer is a coin toss for a
    // median, so delete / undelete update the count and the pointer
    // without branches.
    #[inline(always)]
    fn delete(&mut self, p: u32) {
        let (a, b) = (Self::link(&self.prev, p), Self::link(&self.next, p));
        Self::set(&mut self.next, a, b);
        Self::set(&mut self.prev, b, a);
        self.s -= (p < self.ptr) as u32;
        self.ptr = if p == self.ptr { b } else { self.ptr };
    }

    #[inline(always)]
    fn undelete(&mut self, p: u32) {
        let (a, b) = (Self::link(&self.prev, p), Self::link(&self.next, p));
        Self::set(&mut self.next, a, p);
        Self::set(&mut self.prev, b, p);
        self.s += (p < self.ptr) as u32;
    }

    #[inline(always)]
    fn peek(&self) -> u64 {
        // keys[m] is HI
        self.key(self.ptr)
    }

    #[inline(always)]
    fn peek_prev(&self) -> u64 {
        if self.s == 0 {
            LO
        } else {
            self.key(Self::link(&self.prev, self.ptr))
        }
    }

    #[inline(always)]
    fn peek_next(&self) -> u64 {
        if self.ptr == self.m {
            HI
        } else {
            self.key(Self::link(&self.next, self.ptr))
        }
    }

    #[inline(always)]
    fn advance(&mut self) {
        debug_assert!(self.ptr != self.m);
        self.ptr = Self::link(&self.next, self.ptr);
        self.s += 1;
    }

    #[inline(always)]
    fn retreat(&mut self) {
        debug_assert!(self.s > 0);
        self.ptr = Self::link(&self.prev, self.ptr);
        self.s -= 1;
    }
}

/// Scratch of [`Block::init`], kept across blocks.
#[derive(Default)]
struct Scratch {
    pairs: Vec<(u64, u32)>,
    tmp: Vec<(u64, u32)>,
    hist: Vec<u32>,
    bk: Vec<u32>,
}

/// Buckets of [`sort_pairs`] holding more than this many pairs are sorted
/// on their own (recursively, then by comparison) before the final
/// insertion pass.
const BUCKET_MAX: usize = 32;

/// A key's value, without branches (`order::unkey`; NaN's key gives a NaN).
#[inline(always)]
fn value(k: u64) -> f64 {
    f64::from_bits(k ^ ((((k >> 63) as i64) - 1) as u64 | (1 << 63)))
}

/// Keys of -inf and +inf: the finite keys lie strictly between.
const NEG_INF: u64 = 0x000F_FFFF_FFFF_FFFF;
const POS_INF: u64 = 0xFFF0_0000_0000_0000;

#[inline(always)]
fn insertion_sort(v: &mut [(u64, u32)]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1].0 > x.0 {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Sort (key, row) pairs by key: a distribution sort on the values. Each
/// pair goes to bucket `floor((x - lo) * scale)` of about `2n` buckets
/// spread evenly over the block's finite range `[lo, hi]` (capped at the
/// last bucket, where +inf and NaN land; -inf lands in the first), one
/// histogram pass and one scatter, then one insertion pass over the whole
/// array orders the keys (`order::key`: NaN above +inf, -0.0 one key with
/// +0.0), so the result is that of a comparison sort whatever the buckets.
/// The buckets only make that pass cheap (about half a pair a bucket): the
/// bucket is a monotone function of the key (IEEE subtraction and
/// multiplication by a positive number round monotonically, `f64::min`
/// returns the cap for NaN), so only pairs of one bucket are out of order.
/// Crowded buckets (skewed values, outliers) are sorted first on their own,
/// recursing twice with their own range, then by comparison; a block whose
/// finite range is empty or overflows is sorted by comparison. Measured on
/// a 2M-row random walk's blocks (thread CPU time, 1 thread, Intel Xeon):
/// 19.7 / 16.8 / 19.0 ns a pair at w = 1K / 10K / 100K, against
/// `sort_unstable`'s 22.7 / 25.3 / 29.0 and an LSD radix sort on the key
/// bits that vary (some 58 bits here: 8 passes of 8 bits) at
/// 27.1 / 24.3 / 33.6.
///
/// Returns whether the sorted pairs are in `v`; if not, they are in
/// `tmp[..n]`, where the scatter put them (the caller reads them there
/// rather than pay a copy back).
fn sort_pairs(v: &mut [(u64, u32)], tmp: &mut Vec<(u64, u32)>, hist: &mut Vec<u32>, bk: &mut Vec<u32>, depth: u32) -> bool {
    let n = v.len();
    if n <= BUCKET_MAX {
        insertion_sort(v);
        return true;
    }
    let (mut kl, mut kh) = (u64::MAX, 0u64);
    for p in v.iter() {
        kl = kl.min(if p.0 > NEG_INF { p.0 } else { u64::MAX });
        kh = kh.max(if p.0 < POS_INF { p.0 } else { 0 });
    }
    let (lo, hi) = (value(kl), value(kh));
    let nb = (2 * n).next_power_of_two().min(1 << 17);
    let scale = nb as f64 / (hi - lo);
    if depth > 2 || !(scale > 0.0 && scale.is_finite()) {
        v.sort_unstable_by_key(|p| p.0);
        return true;
    }
    let top = (nb - 1) as f64;
    // Each pair's bucket computed once, for the histogram and the scatter.
    bk.clear();
    bk.extend(v.iter().map(|p| ((value(p.0) - lo) * scale).min(top) as u32));
    hist.clear();
    hist.resize(nb + 1, 0);
    for &b in bk.iter() {
        hist[b as usize + 1] += 1;
    }
    let (mut sum, mut most) = (0, 0);
    for c in hist.iter_mut() {
        most = most.max(*c);
        sum += *c;
        *c = sum;
    }
    // hist[b]: where bucket b starts
    // Scratch kept across blocks: only grown, never cleared.
    if tmp.len() < n {
        tmp.resize(n, (0, 0));
    }
    let out = &mut tmp[..n];
    for (&p, &b) in v.iter().zip(bk.iter()) {
        let c = &mut hist[b as usize];
        out[*c as usize] = p;
        *c += 1;
    }
    // hist[b]: where bucket b ends
    if most as usize > BUCKET_MAX {
        let (mut t2, mut h2, mut b2) = (Vec::new(), Vec::new(), Vec::new());
        let mut s = 0;
        for &e in &hist[..nb] {
            let e = e as usize;
            if e - s > BUCKET_MAX && !sort_pairs(&mut out[s..e], &mut t2, &mut h2, &mut b2, depth + 1) {
                out[s..e].copy_from_slice(&t2[..e - s]);
            }
            s = e;
        }
    }
    insertion_sort(out);
    false
}

/// Move the pointers until the nodes before them are the `t` smallest of
/// the window (`t` < the window's count). Branchy: a version picking both
/// pointers' moves from the four keys around them without branches (only
/// the loop's exit a branch) measured 0.80-0.88x this: the four loads a step
/// cost more than the mispredictions.
#[inline(always)]
fn balance(a: &mut Block, b: &mut Block, t: u32) {
    loop {
        let s = a.s + b.s;
        if s < t {
            if a.peek() <= b.peek() {
                a.advance()
            } else {
                b.advance()
            }
        } else if s > t {
            if a.peek_prev() >= b.peek_prev() {
                a.retreat()
            } else {
                b.retreat()
            }
        } else if a.peek_prev() > b.peek() {
            a.retreat();
            b.advance();
        } else if b.peek_prev() > a.peek() {
            b.retreat();
            a.advance();
        } else {
            return;
        }
    }
}

/// Rolling quantile `q` (median: 0.5, midpoint) of a column of keys; `need
/// >= 1` values make a row valid.
///
/// The windows of block `B` read only blocks `B - 1` and `B`, so runs of
/// blocks are independent: long columns are split over threads at block
/// boundaries ([`threads`]), each run sorting the block before it once.
pub(crate) fn rolling_quantile(keys: Keys, n: usize, nulls: Option<&NullBuffer>, window: usize, need: usize, q: f64, interp: Interpolation) -> ArrayRef {
    rolling_quantile_on(keys, n, nulls, window, need, q, interp, threads(n))
}

/// Where the kernel reads a block's keys.
#[derive(Clone, Copy)]
pub(crate) enum Keys<'a> {
    /// The column's keys, converted before (several windows read them).
    Column(&'a [u64]),
    /// `fill(r0, out)` converts rows `r0..r0 + out.len()` into `out`, a
    /// block at a time as the kernel sorts it, so a single window never
    /// writes out the column's keys (`order.rs`).
    Fill(&'a (dyn Fn(usize, &mut [u64]) + Sync)),
}

impl<'a> Keys<'a> {
    /// Rows `r0..r1`'s keys: the column's, or converted into `scratch`.
    fn rows<'b>(self, r0: usize, r1: usize, scratch: &'b mut Vec<u64>) -> &'b [u64]
    where
        'a: 'b,
    {
        match self {
            Keys::Column(k) => &k[r0..r1],
            Keys::Fill(f) => {
                scratch.resize(r1 - r0, 0);
                f(r0, scratch);
                scratch
            }
        }
    }
}

/// [`rolling_quantile`] over the `n` rows on (at most) `threads` threads.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rolling_quantile_on(
    keys: Keys,
    n: usize,
    nulls: Option<&NullBuffer>,
    window: usize,
    need: usize,
    q: f64,
    interp: Interpolation,
    threads: usize,
) -> ArrayRef {
    let w = window.max(1);
    let mut out = super::buffer::<f64>(n);
    let mut valid = vec![true; n];
    // Cuts at block boundaries only: a run starts by sorting the block
    // before it.
    let cs = super::cuts(n, threads.clamp(1, n.div_ceil(w).max(1)), |r| Some(r / w * w));
    super::par_ranges((&mut out[..], &mut valid[..]), &cs, |r0, r1, (o, v)| {
        blocks_run(keys, n, nulls, w, need, q, interp, r0 / w, r1.div_ceil(w), o, v)
    });
    let all_valid = valid.iter().all(|&v| v);
    finish(out, (!all_valid).then_some(valid))
}

/// Blocks `b0..b1` of the column; `out` / `valid` hold their rows.
#[allow(clippy::too_many_arguments)]
fn blocks_run(
    keys: Keys,
    n: usize,
    nulls: Option<&NullBuffer>,
    w: usize,
    need: usize,
    q: f64,
    interp: Interpolation,
    b0: usize,
    b1: usize,
    out: &mut [f64],
    valid: &mut [bool],
) {
    let base = b0 * w;
    let (mut a, mut b) = (Block::default(), Block::default());
    let mut sc = Scratch::default();
    // A block's keys, when converted block by block.
    let mut kb = Vec::new();
    // The block before the first: empty for the column's first block (its
    // windows have nothing before them), else sorted and fully linked.
    if b0 == 0 {
        b.init(&[], 0, None, &mut sc);
    } else {
        let s = base - w;
        b.init(keys.rows(s, base, &mut kb), s, nulls, &mut sc);
    }
    // At a block boundary the window is the whole previous block.
    let mut count = b.m as usize;
    let (mut at, mut at_n) = (QuantileAt::new(1, q), 1);
    for start in (base..(b1 * w).min(n)).step_by(w) {
        let end = (start + w).min(n);
        std::mem::swap(&mut a, &mut b);
        b.init(keys.rows(start, end, &mut kb), start, nulls, &mut sc);
        b.unwind();
        let has_prev = start > 0;
        for j in 0..end - start {
            if has_prev {
                let p = a.pos[j];
                if p != NONE {
                    a.delete(p);
                    count -= 1;
                }
            }
            let p = b.pos[j];
            if p != NONE {
                b.undelete(p);
                count += 1;
            }
            let i = start + j - base;
            if count < need {
                valid[i] = false;
                continue;
            }
            // The position's float arithmetic was a quarter of the row
            // loop; the count changes only at nulls and in the first block.
            if count != at_n {
                (at, at_n) = (QuantileAt::new(count, q), count);
            }
            let t = at.idx;
            balance(&mut a, &mut b, t as u32);
            let (pa, pb) = (a.peek(), b.peek());
            let first = pa.min(pb);
            let second = || {
                if pa <= pb {
                    a.peek_next().min(pb)
                } else {
                    b.peek_next().min(pa)
                }
            };
            out[i] = at.read(interp, |k| unkey(if k == t { first } else { second() }));
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    use arrow_array::Array;
    use arrow_buffer::{BooleanBuffer, NullBuffer};
    use proptest::prelude::*;

    use super::*;
    use crate::rolling::order::{key, naive, OrderStat};

    /// Values that reach every path of [`sort_pairs`]: NaN (two payloads),
    /// ±inf, ±0.0, subnormals, ±MAX (a finite range that overflows), a
    /// dense cluster beside outliers (crowded buckets, the recursion), ties.
    fn edge() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => (-3i32..4).prop_map(|v| v as f64),
            3 => -1e3f64..1e3,
            3 => (0.0f64..1e-9).prop_map(|x| 5.0 + x),
            1 => prop_oneof![Just(f64::NAN), Just(f64::from_bits(0xFFF8_0000_0000_0001))],
            1 => prop_oneof![Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0), Just(0.0)],
            1 => prop_oneof![Just(f64::from_bits(1)), Just(-f64::from_bits(3)), Just(f64::MIN_POSITIVE / 2.0), Just(f64::MIN_POSITIVE)],
            1 => prop_oneof![Just(f64::MAX), Just(f64::MIN), Just(1e300), Just(-1e300)],
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The distribution sort orders (key, row) pairs as a comparison
        /// sort of the keys, keeping every pair.
        #[test]
        fn sort_pairs_equals_comparison_sort(xs in prop::collection::vec(edge(), 0..700), only_finite in any::<bool>()) {
            let xs: Vec<f64> = xs.into_iter().filter(|x| !only_finite || x.is_finite()).collect();
            let mut v: Vec<(u64, u32)> = xs.iter().enumerate().map(|(r, &x)| (key(x), r as u32)).collect();
            let mut want = v.clone();
            want.sort_unstable();
            let mut tmp = Vec::new();
            if !sort_pairs(&mut v, &mut tmp, &mut Vec::new(), &mut Vec::new(), 0) {
                tmp.truncate(v.len());
                v = tmp;
            }
            prop_assert!(v.windows(2).all(|p| p[0].0 <= p[1].0), "not sorted: {:?}", v);
            v.sort_unstable_by_key(|p| (p.0, p.1));
            prop_assert_eq!(v, want);
        }

        /// Split over 2-5 threads at block boundaries: each run equals the
        /// naive sort of every window (so equals the 1-thread run).
        #[test]
        fn threaded_equals_naive(
            xs in prop::collection::vec(prop_oneof![8 => (-5i32..6).prop_map(|v| Some(v as f64)), 1 => Just(Some(f64::NAN)), 2 => Just(None)], 0..600),
            w in prop_oneof![1usize..8, 1usize..200],
            threads in 2usize..6,
            mp in 0usize..4,
            qi in 0usize..5,
        ) {
            let keys: Vec<u64> = xs.iter().map(|x| key(x.unwrap_or(0.0))).collect();
            let nulls = NullBuffer::new(BooleanBuffer::from(xs.iter().map(|x| x.is_some()).collect::<Vec<_>>()));
            let (q, interp) = [(0.5, Interpolation::Midpoint), (0.9, Interpolation::Linear), (0.0, Interpolation::Lower), (1.0, Interpolation::Higher), (0.3, Interpolation::Nearest)][qi];
            let got = rolling_quantile_on(Keys::Column(&keys), keys.len(), Some(&nulls), w, mp.max(1), q, interp, threads);
            let got = got.as_primitive::<Float64Type>();
            let want = naive(&xs, w, OrderStat::Quantile { q, interpolation: interp }, mp);
            prop_assert_eq!(got.len(), want.len());
            for (i, want) in want.iter().enumerate() {
                let g = got.is_valid(i).then(|| got.value(i));
                prop_assert!(match (g, want) { (Some(g), Some(w)) => g == *w || (g.is_nan() && w.is_nan()), (None, None) => true, _ => false }, "row {} got {:?} want {:?}", i, g, want);
            }
        }
    }
}
