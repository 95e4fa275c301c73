//! Sorted buffer: the window's values kept as a sorted array of keys
//! (`order::key`), a row's arrival and the eviction of the row `w` back
//! done as one binary search each and one `memmove` of the keys between
//! them. O(w) per row but a few cache lines for short windows, where it
//! beats every O(log w) structure (polars' `rolling_median` and pandas'
//! small-window path use the same idea).
//!
//! `rolling()`'s null-free rows of windows up to 96 keys on AVX-512 keep
//! the whole sorted window in registers instead ([`steady_in_registers`]).
//!
//! [`SortedWindow`] is the push / evict / query structure: a count-window
//! stream holds one and pushes / evicts the values its FIFO says.

use arrow_array::ArrayRef;
use arrow_buffer::NullBuffer;

use super::order_stat::{finish, finish_nulls, key, quantile_of, rank_of, threads, unkey, Interpolation, OrderStat, QuantileAt};

/// Windows up to this many values replace by walking instead of memmove.
const SHIFT_MAX: usize = 48;

/// A multiset of doubles in Spark's order (NaN largest) with order-statistic
/// queries.
#[derive(Clone, Debug, Default)]
pub struct SortedWindow {
    keys: Vec<u64>,
}

impl SortedWindow {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(cap: usize) -> Self {
        SortedWindow { keys: Vec::with_capacity(cap) }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn clear(&mut self) {
        self.keys.clear();
    }

    /// Add a value.
    pub fn push(&mut self, x: f64) {
        self.push_key(key(x));
    }

    /// Remove one copy of `x`; false (and nothing removed) if absent.
    pub fn evict(&mut self, x: f64) -> bool {
        self.evict_key(key(x))
    }

    /// Remove one `old` and add `new` with a single shift of the keys
    /// between them; false (and nothing changed) if `old` is absent.
    pub fn replace(&mut self, old: f64, new: f64) -> bool {
        self.replace_key(key(old), key(new))
    }

    /// The `k`-th smallest (0-based), `k < len`.
    pub fn kth(&self, k: usize) -> f64 {
        unkey(self.keys[k])
    }

    /// Values below `x`, and equal to it.
    pub fn less_equal(&self, x: f64) -> (usize, usize) {
        self.less_equal_key(key(x))
    }

    /// Quantile `q` (pandas' interpolations); `None` when empty.
    pub fn quantile(&self, q: f64, interp: Interpolation) -> Option<f64> {
        (!self.is_empty()).then(|| quantile_of(self.len(), q, interp, |k| self.kth(k)))
    }

    /// `bottleneck.move_rank` of `x` (a value in the window); `None` when
    /// empty.
    pub fn rank(&self, x: f64) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        let (less, equal) = self.less_equal(x);
        Some(rank_of(less, equal.max(1), self.len()))
    }

    /// The answer of `stat` for a window whose newest row holds `last`
    /// (rank reads it; `None` there: null).
    pub fn answer(&self, stat: OrderStat, last: Option<f64>) -> Option<f64> {
        match stat.quantile() {
            Some((q, i)) => self.quantile(q, i),
            None => self.rank(last?),
        }
    }

    #[inline(always)]
    fn lower_bound(&self, k: u64) -> usize {
        self.keys.partition_point(|&x| x < k)
    }

    #[inline(always)]
    pub(crate) fn push_key(&mut self, k: u64) {
        let j = self.lower_bound(k);
        self.keys.insert(j, k);
    }

    #[inline(always)]
    pub(crate) fn evict_key(&mut self, k: u64) -> bool {
        let i = self.lower_bound(k);
        if i < self.keys.len() && self.keys[i] == k {
            self.keys.remove(i);
            true
        } else {
            false
        }
    }

    #[inline(always)]
    pub(crate) fn replace_key(&mut self, old: u64, new: u64) -> bool {
        let i = self.lower_bound(old);
        if i >= self.keys.len() || self.keys[i] != old {
            return false;
        }
        if self.keys.len() <= SHIFT_MAX {
            // Short window: walk `new` from `old`'s slot to its place, one
            // compare and move a step (insertion sort's inner loop); no
            // second search, no memmove call.
            let keys = &mut self.keys[..];
            let mut j = i;
            if new > old {
                while j + 1 < keys.len() && keys[j + 1] < new {
                    keys[j] = keys[j + 1];
                    j += 1;
                }
            } else {
                while j > 0 && keys[j - 1] > new {
                    keys[j] = keys[j - 1];
                    j -= 1;
                }
            }
            keys[j] = new;
            return true;
        }
        let j = self.lower_bound(new);
        if j <= i {
            // new <= old: keys [j, i) move up one, new lands at j
            self.keys.copy_within(j..i, j + 1);
            self.keys[j] = new;
        } else {
            // new > old: keys (i, j) move down one, new lands at j - 1
            self.keys.copy_within(i + 1..j, i);
            self.keys[j - 1] = new;
        }
        true
    }

    #[inline(always)]
    pub(crate) fn less_equal_key(&self, k: u64) -> (usize, usize) {
        let lo = self.lower_bound(k);
        let hi = lo + self.keys[lo..].partition_point(|&x| x <= k);
        (lo, hi - lo)
    }
}

/// Sentinels of [`Padded`]: below / above every key (`order::key` never
/// gives 0 or `u64::MAX`).
const LO: u64 = 0;
const HI: u64 = u64::MAX;

/// The window of [`rolling`] as a sorted array between sentinels,
/// `[LO, k_0 .. k_{n-1}, HI]`, and a second buffer of the same shape: a
/// row's replacement writes the whole new array into the other buffer in
/// one branch-free pass (below), then the two swap. Both buffers have a
/// fixed length, [`SLACK`] slots past the largest window, so the AVX-512
/// pass runs whole vectors of 8 slots (reading and writing past `HI`, then
/// restoring it) with no tail loop and nothing resized a row.
struct Padded {
    a: Vec<u64>,
    b: Vec<u64>,
    n: usize,
}

/// Slots past `[LO, keys, HI]`: a pass of whole 8-key vectors reads up to 8
/// slots past the last key.
const SLACK: usize = 8;

impl Padded {
    fn with_capacity(cap: usize) -> Self {
        let mut a = vec![HI; cap + 2 + SLACK];
        a[0] = LO;
        Padded { b: a.clone(), a, n: 0 }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.n
    }

    #[inline(always)]
    fn keys(&self) -> &[u64] {
        &self.a[1..self.n + 1]
    }

    #[inline(always)]
    fn kth(&self, k: usize) -> u64 {
        self.a[1 + k]
    }

    /// Hold exactly `keys` (any order): after a run of steady rows kept in
    /// registers, which leave this buffer behind.
    fn set(&mut self, keys: &[u64]) {
        let n = keys.len();
        self.a[1..n + 1].copy_from_slice(keys);
        self.a[1..n + 1].sort_unstable();
        self.a[n + 1] = HI;
        self.n = n;
    }

    /// Insert `k` (warm-up and null rows only: one search and memmove;
    /// fewer than `cap` keys held).
    #[inline(always)]
    fn push(&mut self, k: u64) {
        let (j, n) = (1 + self.keys().partition_point(|&x| x < k), self.n);
        // keys from j and the HI sentinel move up one
        self.a.copy_within(j..n + 2, j + 1);
        self.a[j] = k;
        self.n += 1;
    }

    /// Remove one `k`, which is present.
    #[inline(always)]
    fn evict(&mut self, k: u64) {
        let (i, n) = (1 + self.keys().partition_point(|&x| x < k), self.n);
        debug_assert_eq!(self.a[i], k);
        self.a.copy_within(i + 1..n + 2, i);
        self.n -= 1;
    }

    /// Remove one `old` (present) and insert `new`, without a search or a
    /// data-dependent branch: with `p` the first position of `old`, the
    /// array without it is `c[i] = a[i]` before `p` and `a[i + 1]` from `p`
    /// on, and inserting `new` into a sorted `c` gives
    /// `min(max(c[i - 1], new), c[i])` at every `i` (sentinels at both
    /// ends). `i < p` is `a[i] < old` (sorted), so each output slot reads
    /// three neighbours and two comparisons. O(w) work a row, as a memmove,
    /// but no mispredicted search or shift-walk branch, which is what short
    /// windows pay for. `AVX512`: the caller runs on a CPU with AVX-512F
    /// (8 slots a step, unsigned 64-bit min / max and compare to a mask);
    /// otherwise a loop the compiler vectorises as it can.
    #[inline(always)]
    fn replace<const AVX512: bool>(&mut self, old: u64, new: u64) {
        let n = self.n;
        #[cfg(target_arch = "x86_64")]
        if AVX512 {
            // SAFETY: `AVX512` is only set on CPUs with AVX-512F (`rows_run`).
            unsafe { replace_avx512(&self.a, &mut self.b, n, old, new) };
            self.b[n + 1] = HI;
            std::mem::swap(&mut self.a, &mut self.b);
            return;
        }
        let a = &self.a[..];
        let (a0, a1, a2) = (&a[..n], &a[1..n + 1], &a[2..n + 2]);
        for (((o, &x0), &x1), &x2) in self.b[1..n + 1].iter_mut().zip(a0).zip(a1).zip(a2) {
            let lo = if x0 < old { x0 } else { x1 };
            let hi = if x1 < old { x1 } else { x2 };
            *o = lo.max(new).min(hi);
        }
        self.b[n + 1] = HI;
        std::mem::swap(&mut self.a, &mut self.b);
    }

    #[inline(always)]
    fn less_equal(&self, k: u64) -> (usize, usize) {
        let keys = self.keys();
        let lo = keys.partition_point(|&x| x < k);
        let hi = lo + keys[lo..].partition_point(|&x| x <= k);
        (lo, hi - lo)
    }
}

/// [`Padded::replace`]'s pass, 8 slots a step: slots `1..=8 * ceil(n / 8)`
/// of `b` from `a` (the slots past `n` get garbage; the caller rewrites
/// `b[n + 1]`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn replace_avx512(a: &[u64], b: &mut [u64], n: usize, old: u64, new: u64) {
    use std::arch::x86_64::*;
    let steps = n.div_ceil(8);
    // reads reach a[8 * steps + 1], writes b[8 * steps]: within the slack
    assert!(8 * steps + 2 <= a.len() && 8 * steps + 1 <= b.len());
    let (ap, bp) = (a.as_ptr(), b.as_mut_ptr());
    let (oldv, newv) = (_mm512_set1_epi64(old as i64), _mm512_set1_epi64(new as i64));
    for s in 0..steps {
        let i = 1 + 8 * s;
        // SAFETY: i - 1 + 8 + 1 <= 8 * steps + 2 <= a.len(), i + 8 <= b.len() (assert above).
        unsafe {
            let x0 = _mm512_loadu_si512(ap.add(i - 1) as *const _);
            let x1 = _mm512_loadu_si512(ap.add(i) as *const _);
            let x2 = _mm512_loadu_si512(ap.add(i + 1) as *const _);
            let lo = _mm512_mask_blend_epi64(_mm512_cmplt_epu64_mask(x0, oldv), x1, x0);
            let hi = _mm512_mask_blend_epi64(_mm512_cmplt_epu64_mask(x1, oldv), x2, x1);
            _mm512_storeu_si512(bp.add(i) as *mut _, _mm512_min_epu64(_mm512_max_epu64(lo, newv), hi));
        }
    }
}

/// `$f::<V>` for the fewest vectors of 8 keys (1-4, 6, 8 or 12) that hold
/// `$window` keys.
macro_rules! registers_for {
    ($window:expr, $f:ident) => {
        match $window.div_ceil(8) {
            1 => $f::<1>,
            2 => $f::<2>,
            3 => $f::<3>,
            4 => $f::<4>,
            5 | 6 => $f::<6>,
            7 | 8 => $f::<8>,
            _ => $f::<12>,
        }
    };
}

/// Windows up to this many keys run the steady rows with the sorted window
/// in registers ([`steady_in_registers`]).
const IN_REGISTERS_MAX: usize = 96;

/// What a steady row reads from its window.
#[derive(Clone, Copy)]
enum Read {
    Quantile(QuantileAt, Interpolation),
    /// The new value's rank (`rank_of`): counts of the keys below and equal
    /// to it, two compares and popcounts a vector.
    Rank,
}

/// The steady rows (no nulls, every window `n = sorted.len()` keys) with
/// the sorted window in `V` vectors of 8 keys (`n <= 8 V`), a row a
/// [`slide_registers`], reading what `read` says.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn steady_in_registers<const V: usize>(
    sorted: &[u64],
    news: &[u64],
    olds: &[u64],
    read: Read,
    out: &mut [f64],
) {
    let n = sorted.len();
    let idx = match read {
        Read::Quantile(at, _) => at.idx,
        Read::Rank => 0,
    };
    assert!(n >= 1 && n <= 8 * V && idx < n && news.len() == olds.len() && out.len() == news.len());
    let mut v = load_registers::<V>(sorted);
    for ((o, &new), &old) in out.iter_mut().zip(news).zip(olds) {
        slide_registers(&mut v, old, new);
        *o = match read {
            Read::Quantile(at, interp) => read_registers(&v, at, interp, n),
            Read::Rank => rank_registers(&v, new, n),
        };
    }
}

/// The sorted `keys` in `V` vectors of 8, `HI` past them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn load_registers<const V: usize>(keys: &[u64]) -> [std::arch::x86_64::__m512i; V] {
    use std::arch::x86_64::*;
    let mut buf = [[HI; 8]; V];
    for (i, &k) in keys.iter().enumerate() {
        buf[i / 8][i % 8] = k;
    }
    // SAFETY: each `buf[j]` is 8 u64, 64 bytes.
    std::array::from_fn(|j| unsafe { _mm512_loadu_si512(buf[j].as_ptr() as *const _) })
}

/// One row: remove one `old` (a key held, or `HI`: the first slot past
/// the keys) and insert `new` by [`Padded::replace`]'s min / max formula,
/// its neighbours taken by lane shifts (`valignq`) instead of loads. The
/// memory pass reads, one row later, the slots its stores just wrote at an
/// offset of one key, so every such load straddles two stores and misses
/// store-to-load forwarding; here a row is a chain of a shift, a compare,
/// a blend and a min / max per vector. Lanes past the keys start as `HI`
/// and stay so: there `x1` is `HI` and `x0` is `HI` or the largest key,
/// which is not below `old`, so `lo` is `HI`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn slide_registers<const V: usize>(v: &mut [std::arch::x86_64::__m512i; V], old: u64, new: u64) {
    use std::arch::x86_64::*;
    let (lo_v, hi_v) = (_mm512_set1_epi64(LO as i64), _mm512_set1_epi64(HI as i64));
    let (oldv, newv) = (_mm512_set1_epi64(old as i64), _mm512_set1_epi64(new as i64));
    let prev = *v;
    for j in 0..V {
        let x1 = prev[j];
        // slots 8j - 1 .. 8j + 7 and 8j + 1 .. 8j + 9
        let x0 = _mm512_alignr_epi64(x1, if j == 0 { lo_v } else { prev[j - 1] }, 7);
        let x2 = _mm512_alignr_epi64(if j + 1 == V { hi_v } else { prev[j + 1] }, x1, 1);
        let lo = _mm512_mask_blend_epi64(_mm512_cmplt_epu64_mask(x0, oldv), x1, x0);
        let hi = _mm512_mask_blend_epi64(_mm512_cmplt_epu64_mask(x1, oldv), x2, x1);
        v[j] = _mm512_min_epu64(_mm512_max_epu64(lo, newv), hi);
    }
}

/// The quantile `at` of the `n` keys in `v`: the (one or two) keys it
/// reads taken out of the registers by [`key_at`]. Inlined into the
/// AVX-512 loops, which is where its intrinsics compile (as a call of its
/// own it was a quarter of the masked median's time). Safety: AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn read_registers<const V: usize>(v: &[std::arch::x86_64::__m512i; V], at: QuantileAt, interp: Interpolation, n: usize) -> f64 {
    let (lo, hi) = (key_at(v, at.idx), key_at(v, (at.idx + 1).min(n - 1)));
    at.read(interp, |k| unkey(if k == at.idx { lo } else { hi }))
}

/// Key `k` of the vectors: its lane moved to lane 0 by a permute, not a
/// store of the vector and a load of the key (on an Intel Xeon that load
/// waited on the store every row: half of a one-thread median's time at
/// window 10). Safety: AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn key_at<const V: usize>(v: &[std::arch::x86_64::__m512i; V], k: usize) -> u64 {
    use std::arch::x86_64::*;
    let mut x = v[0];
    for (j, &vj) in v.iter().enumerate().skip(1) {
        if k / 8 == j {
            x = vj;
        }
    }
    _mm_cvtsi128_si64(_mm512_castsi512_si128(_mm512_permutexvar_epi64(_mm512_set1_epi64((k % 8) as i64), x))) as u64
}

/// The rank of `new` among the `n` keys in `v` (`rank_of`): lanes at `HI`
/// are neither below nor equal to a key.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn rank_registers<const V: usize>(v: &[std::arch::x86_64::__m512i; V], new: u64, n: usize) -> f64 {
    use std::arch::x86_64::*;
    let newv = _mm512_set1_epi64(new as i64);
    let (mut less, mut equal) = (0, 0);
    for &x in v {
        less += _mm512_cmplt_epu64_mask(x, newv).count_ones() as usize;
        equal += _mm512_cmpeq_epu64_mask(x, newv).count_ones() as usize;
    }
    rank_of(less, equal, n)
}

/// Rows `[r0, r1)` of a column with nulls, the window (`sorted`: its keys
/// before `r0`, sorted) in `V` vectors of 8 keys (`window <= 8 V`): the
/// steady rows' formula with no branch on the nulls. A null row to drop is
/// an `old` of `HI` and a null row to add a `new` of `HI`: removing the
/// first `HI` (the slot past the last key) and inserting `new` is a push,
/// removing `old` and inserting `HI` (into the padding) an eviction, both
/// an identity. The count, and with it the quantile's position, varies by
/// row (a table of positions per count). At 10% nulls a 10-row window has
/// no null-free stretch to run as steady rows: row by row it ran at half
/// its clean speed (issue 36).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn nulls_in_registers<const V: usize>(
    sorted: &[u64],
    keys: &[u64],
    nulls: &NullBuffer,
    window: usize,
    need: usize,
    stat: OrderStat,
    r0: usize,
    out: &mut [f64],
) {
    let mut c = sorted.len();
    assert!(c <= window && window <= 8 * V && r0 + out.len() <= keys.len());
    let mut v = load_registers::<V>(sorted);
    let quantile = stat.quantile();
    let at: Vec<QuantileAt> = (0..=window).map(|n| QuantileAt::new(n.max(1), quantile.map_or(0.0, |(q, _)| q))).collect();
    for (o, out) in out.iter_mut().enumerate() {
        let i = r0 + o;
        let add = nulls.is_valid(i);
        let drop = i >= window && nulls.is_valid(i - window);
        let old = if drop { keys[i - window] } else { HI };
        let new = if add { keys[i] } else { HI };
        c = c + add as usize - drop as usize;
        slide_registers(&mut v, old, new);
        // The rows [`rolling_on`]'s validity keeps (rank: the row's own
        // value's, so a null row has none); the others are not written.
        if c >= need && (add || quantile.is_some()) {
            *out = match quantile {
                Some((_, interp)) => read_registers(&v, at[c], interp, c),
                None => rank_registers(&v, new, c),
            };
        }
    }
}

/// The per-row loop over a column of keys; `need >= 1` values make a row
/// valid (and rank's row its own value). Long columns are split over
/// threads ([`threads`]), each range first pushing the `window` rows
/// before it.
pub fn rolling(keys: &[u64], nulls: Option<&NullBuffer>, window: usize, need: usize, stat: OrderStat) -> ArrayRef {
    rolling_on(keys, nulls, window, need, stat, threads(keys.len()))
}

/// [`rolling`] on (at most) `threads` threads.
pub(crate) fn rolling_on(
    keys: &[u64],
    nulls: Option<&NullBuffer>,
    window: usize,
    need: usize,
    stat: OrderStat,
    threads: usize,
) -> ArrayRef {
    let n = keys.len();
    let mut out = super::buffer::<f64>(n);
    let threads = threads.clamp(1, n.max(1));
    let cs = super::cuts(n, threads, Some);
    super::par_ranges(&mut out[..], &cs, |r0, r1, o| rows_run(keys, nulls, window, need, stat, r0, r1, o));
    // The validity from the bitmap, 64 rows a word, not a flag a row
    // packed after (a tenth of the masked median's time at window 10):
    // `need` values in the window, and for rank the row's own.
    let mut valid = super::out_nulls(nulls, n, window, need);
    if stat.quantile().is_none() {
        valid = NullBuffer::union(valid.as_ref(), nulls);
    }
    finish_nulls(out, valid)
}

/// Rows `r0..r1` (`out` holds them; a row [`rolling_on`]'s validity drops
/// may be left unwritten). Compiled twice, the AVX-512
/// copy picked at run time (the replacement loop is where the width pays).
#[allow(clippy::too_many_arguments)]
fn rows_run(
    keys: &[u64],
    nulls: Option<&NullBuffer>,
    window: usize,
    need: usize,
    stat: OrderStat,
    r0: usize,
    r1: usize,
    out: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    if crate::ops::reduce::detected() == crate::ops::reduce::Level::Avx512 {
        // SAFETY: the CPU has AVX-512F (`detected`).
        return unsafe { rows_avx512(keys, nulls, window, need, stat, r0, r1, out) };
    }
    rows_body::<false>(keys, nulls, window, need, stat, r0, r1, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn rows_avx512(
    keys: &[u64],
    nulls: Option<&NullBuffer>,
    window: usize,
    need: usize,
    stat: OrderStat,
    r0: usize,
    r1: usize,
    out: &mut [f64],
) {
    rows_body::<true>(keys, nulls, window, need, stat, r0, r1, out)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_body<const AVX512: bool>(
    keys: &[u64],
    nulls: Option<&NullBuffer>,
    window: usize,
    need: usize,
    stat: OrderStat,
    r0: usize,
    r1: usize,
    out: &mut [f64],
) {
    let mut win = Padded::with_capacity(window + 1);
    let ok = |i: usize| nulls.map_or(true, |nb| nb.is_valid(i));
    // Before row r0 the window holds rows [r0 - window, r0).
    for i in r0.saturating_sub(window)..r0 {
        if ok(i) {
            win.push(keys[i]);
        }
    }
    let out = &mut out[..r1 - r0];
    #[cfg(target_arch = "x86_64")]
    if let (true, Some(nb)) = (AVX512 && window <= IN_REGISTERS_MAX, nulls) {
        // SAFETY: `AVX512` is only set on CPUs with AVX-512F (`rows_run`).
        unsafe {
            let f = registers_for!(window, nulls_in_registers);
            f(win.keys(), keys, nb, window, need, stat, r0, out);
        }
        return;
    }
    // Without nulls every row from `window` on holds exactly `window`
    // values: a replacement and a read at a fixed position, no per-row
    // null test, count or quantile arithmetic (the loop after this one).
    let steady = match (nulls, stat.quantile()) {
        (None, Some(_)) => r0.max(window).min(r1),
        // rank's steady rows: in registers only
        (None, None) if AVX512 && window <= IN_REGISTERS_MAX => r0.max(window).min(r1),
        _ => r1,
    };
    // With nulls, quantiles (windows past the registers, or no AVX-512): a
    // stretch of rows whose windows hold no null (every window `window`
    // values) runs as the steady rows below: at 1% nulls most rows of a
    // short window (issue 36: the median ran at 0.6x its clean speed row
    // by row). `bad`: the latest
    // null row seen; `next_try`: no stretch starts before it (the scan for
    // the stretch's end is not repeated row by row).
    let stretches = nulls.is_some() && stat.quantile().is_some() && window >= need;
    let mut bad = (r0.saturating_sub(window)..r0).rev().find(|&i| !ok(i));
    let mut next_try = r0;
    let mut i = r0;
    while i < steady {
        if stretches && i >= next_try && i >= window && bad.is_none_or(|z| z + window < i) {
            let end = (i..r1).find(|&j| !ok(j)).unwrap_or(r1);
            if end - i >= MIN_STRETCH {
                let o = &mut out[i - r0..end - r0];
                if steady_rows::<AVX512>(&mut win, keys, window, stat, i, end, o) {
                    win.set(&keys[end - window..end]);
                }
                i = end;
                continue;
            }
            next_try = end;
        }
        let (add, drop) = (ok(i), i >= window && ok(i - window));
        if !add {
            bad = Some(i);
        }
        match (drop, add) {
            (true, true) => win.replace::<AVX512>(keys[i - window], keys[i]),
            (true, false) => win.evict(keys[i - window]),
            (false, true) => win.push(keys[i]),
            (false, false) => {}
        }
        let (c, o, row) = (win.len(), i - r0, i);
        i += 1;
        if c < need {
            continue;
        }
        out[o] = match stat.quantile() {
            Some((q, interp)) => quantile_of(c, q, interp, |k| unkey(win.kth(k))),
            None => {
                if !add {
                    continue;
                }
                let (less, equal) = win.less_equal(keys[row]);
                rank_of(less, equal, c)
            }
        };
    }
    if steady < r1 {
        if window < need {
            return;
        }
        let out = &mut out[steady - r0..];
        steady_rows::<AVX512>(&mut win, keys, window, stat, steady, r1, out);
    }
}

/// Shortest stretch of null-free windows worth leaving the row-by-row loop
/// for (entering the registers costs about a row).
const MIN_STRETCH: usize = 8;

/// Rows `[s, e)` whose windows each hold `window` values (no null in rows
/// `[s - window, e)`), `win` holding rows `[s - window, s)`, into `out`.
/// True when `win` was left behind (the rows ran in registers), else it
/// holds rows `[e - window, e)`.
#[inline(always)]
fn steady_rows<const AVX512: bool>(win: &mut Padded, keys: &[u64], window: usize, stat: OrderStat, s: usize, e: usize, out: &mut [f64]) -> bool {
    let read = match stat.quantile() {
        Some((q, interp)) => Read::Quantile(QuantileAt::new(window, q), interp),
        None => Read::Rank,
    };
    let (news, olds) = (&keys[s..e], &keys[s - window..e - window]);
    #[cfg(target_arch = "x86_64")]
    if AVX512 && window <= IN_REGISTERS_MAX {
        // SAFETY: `AVX512` is only set on CPUs with AVX-512F (`rows_run`).
        unsafe {
            let f = registers_for!(window, steady_in_registers);
            f(win.keys(), news, olds, read, out);
        }
        return true;
    }
    let Read::Quantile(at, interp) = read else {
        unreachable!("rank's rows are steady only in registers")
    };
    for ((o, &new), &old) in out.iter_mut().zip(news).zip(olds) {
        win.replace::<AVX512>(old, new);
        *o = at.read(interp, |k| unkey(win.kth(k)));
    }
    false
}

/// [`rolling`] over windows of any length: row `i` reads rows
/// `[starts[i], i]`, `starts` non-decreasing (time windows). Each row is
/// pushed once and evicted once, so O(w) a row as above.
pub fn rolling_bounds(keys: &[u64], nulls: Option<&NullBuffer>, starts: &[usize], need: usize, stat: OrderStat) -> ArrayRef {
    let n = keys.len();
    let mut win = SortedWindow::new();
    let mut out = super::buffer::<f64>(n);
    let mut valid = vec![true; n];
    let ok = |i: usize| nulls.map_or(true, |nb| nb.is_valid(i));
    let mut lo = 0;
    for i in 0..n {
        if ok(i) {
            win.push_key(keys[i]);
        }
        while lo < starts[i] {
            if ok(lo) {
                win.evict_key(keys[lo]);
            }
            lo += 1;
        }
        let c = win.len();
        let last = ok(i).then(|| unkey(keys[i]));
        match (c >= need).then(|| win.answer(stat, last)).flatten() {
            Some(v) => out[i] = v,
            None => valid[i] = false,
        }
    }
    let all_valid = valid.iter().all(|&v| v);
    finish(out, (!all_valid).then_some(valid))
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    use arrow_array::Array;
    use arrow_buffer::{BooleanBuffer, NullBuffer};
    use proptest::prelude::*;

    use super::*;
    use crate::rolling::order::naive;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Columns without nulls, every window up to 100 (the register
        /// kernel's every vector count and the memory pass past it), any
        /// `q` and interpolation, and rank: equal to the naive sort of
        /// every window.
        #[test]
        fn steady_rows_equal_naive(
            xs in prop::collection::vec(prop_oneof![
                6 => (-4i32..5).prop_map(|v| v as f64),
                3 => -1e3f64..1e3,
                1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0)],
            ], 0..500),
            w in 1usize..100,
            q in 0.0f64..=1.0,
            ii in 0usize..6,
        ) {
            let xs: Vec<Option<f64>> = xs.into_iter().map(Some).collect();
            let keys: Vec<u64> = xs.iter().map(|x| key(x.unwrap())).collect();
            let interpolation = [Interpolation::Linear, Interpolation::Lower, Interpolation::Higher, Interpolation::Midpoint, Interpolation::Nearest][ii % 5];
            let stat = if ii == 5 { OrderStat::Rank } else { OrderStat::Quantile { q, interpolation } };
            let got = rolling_on(&keys, None, w, 1, stat, 1);
            let got = got.as_primitive::<Float64Type>();
            let want = naive(&xs, w, stat, 1);
            for (i, want) in want.iter().enumerate() {
                let (g, w) = (got.value(i), want.unwrap());
                prop_assert!(g == w || (g.is_nan() && w.is_nan()), "row {} got {} want {}", i, g, w);
            }
        }

        /// Sparse nulls (stretches of null-free windows run in registers
        /// between them), a null's key garbage (1e300, above every value):
        /// equal to the naive sort of every window's values, on 1-4 threads.
        #[test]
        fn sparse_nulls_equal_naive(
            xs in prop::collection::vec(prop_oneof![40 => (-5i32..6).prop_map(|v| Some(v as f64)), 1 => Just(Some(f64::NAN))], 0..2000),
            p in prop_oneof![Just(0.003), Just(0.01), Just(0.05), Just(0.3)],
            w in prop_oneof![1usize..12, 1usize..100],
            threads in 1usize..5,
            mp in 0usize..4,
            si in 0usize..4,
            seed in any::<u64>(),
        ) {
            let mut st = seed | 1;
            let xs: Vec<Option<f64>> = xs.into_iter().map(|x| {
                st ^= st << 13;
                st ^= st >> 7;
                st ^= st << 17;
                x.filter(|_| (st >> 11) as f64 / (1u64 << 53) as f64 >= p)
            }).collect();
            let keys: Vec<u64> = xs.iter().map(|x| key(x.unwrap_or(1e300))).collect();
            let nulls = NullBuffer::new(BooleanBuffer::from(xs.iter().map(|x| x.is_some()).collect::<Vec<_>>()));
            let stat = [OrderStat::Median, OrderStat::Rank, OrderStat::Quantile { q: 0.9, interpolation: Interpolation::Linear }, OrderStat::Quantile { q: 0.3, interpolation: Interpolation::Nearest }][si];
            let got = rolling_on(&keys, Some(&nulls), w, mp.max(1), stat, threads);
            let got = got.as_primitive::<Float64Type>();
            let want = naive(&xs, w, stat, mp);
            for (i, want) in want.iter().enumerate() {
                let g = got.is_valid(i).then(|| got.value(i));
                prop_assert!(match (g, want) { (Some(g), Some(w)) => g == *w || (g.is_nan() && w.is_nan()), (None, None) => true, _ => false }, "row {} got {:?} want {:?}", i, g, want);
            }
        }

        /// Rows split over 2-5 threads (each range warming up on the rows
        /// before it): equal to the naive sort of every window.
        #[test]
        fn threaded_equals_naive(
            xs in prop::collection::vec(prop_oneof![8 => (-5i32..6).prop_map(|v| Some(v as f64)), 1 => Just(Some(f64::NAN)), 2 => Just(None)], 0..400),
            w in prop_oneof![1usize..8, 1usize..100],
            threads in 2usize..6,
            mp in 0usize..4,
            si in 0usize..4,
            no_nulls in any::<bool>(),
        ) {
            // without nulls the rows from `window` on take the fixed-count loop
            let xs: Vec<Option<f64>> = if no_nulls { xs.iter().map(|x| x.or(Some(1.0))).collect() } else { xs };
            let keys: Vec<u64> = xs.iter().map(|x| key(x.unwrap_or(0.0))).collect();
            let nulls = NullBuffer::new(BooleanBuffer::from(xs.iter().map(|x| x.is_some()).collect::<Vec<_>>()));
            let nulls = (!no_nulls).then_some(nulls);
            let stat = [OrderStat::Median, OrderStat::Rank, OrderStat::Quantile { q: 0.9, interpolation: Interpolation::Linear }, OrderStat::Quantile { q: 0.3, interpolation: Interpolation::Nearest }][si];
            let got = rolling_on(&keys, nulls.as_ref(), w, mp.max(1), stat, threads);
            let got = got.as_primitive::<Float64Type>();
            let want = naive(&xs, w, stat, mp);
            prop_assert_eq!(got.len(), want.len());
            for (i, want) in want.iter().enumerate() {
                let g = got.is_valid(i).then(|| got.value(i));
                prop_assert!(match (g, want) { (Some(g), Some(w)) => g == *w || (g.is_nan() && w.is_nan()), (None, None) => true, _ => false }, "row {} got {:?} want {:?}", i, g, want);
            }
        }
    }
}
