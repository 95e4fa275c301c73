//! Rolling max / min / range: van Herk / Gil-Werman (the block kernel of
//! [`super::block`] with the combine a plain max) on the raw values.
//!
//! * Ties: every combine is `pick(older, newer)` and takes the newer only
//!   when strictly greater (`if b > a { b } else { a }`, one `maxsd` with
//!   the older operand second), so of rows tied at the extreme the earliest
//!   wins: -0.0 and +0.0 compare equal and the earliest one's sign is
//!   kept, as Spark's `greatest` fold (docs/DESIGN.md §5.3). The van Herk
//!   split keeps row order: suffix (older) on the left, prefix on the right.
//! * NaN is above every number. Raw float `>` ignores NaN, so a chunk of
//!   about 4096 rows holding a NaN (checked while it is in cache) runs the
//!   same kernel with a NaN-aware pick (two more compares); integers never
//!   do.
//! * The prefix scan of a block is written straight into the output; the
//!   suffix scan of the previous block runs backwards and combines into it
//!   in the same pass, so there is no temporary array and no branch per row.
//! * Compiled three times (portable, AVX2, AVX-512F) and picked at run time
//!   as the pane reductions ([`crate::ops::reduce::detected`]).
//! * Nulls: filled with the bottom (-inf, MIN) for max and the top (+inf,
//!   or NaN where the column holds a valid NaN; MAX) for min, which never
//!   beat a real value, and the output is masked where the window has no
//!   non-null row (or fewer than `min_periods`, [`super::out_nulls`]).

use arrow_array::ArrayRef;

use super::{filled, FastNum};
use crate::engine::{Column, ToArrow};
use crate::ops::reduce::{detected, Level};

/// max when `MAX`, else min, of the older `a` and the newer `b`, as a
/// branch-free select: `b` only when strictly better, so ties keep `a`.
/// With `NAN`, NaN counts as above every number.
#[inline(always)]
pub(super) fn pick<T: FastNum, const MAX: bool, const NAN: bool>(a: T, b: T) -> T {
    let wins = if MAX { b > a } else { b < a };
    let wins = if NAN { wins | T::nan_beats::<MAX>(a, b) } else { wins };
    if wins {
        b
    } else {
        a
    }
}

/// Running max of `x` (mapped by `f`) on top of `p`, written to `out`
/// (same length); returns the max of `p` and all of `x`.
///
/// Rows go in fours: the running max of the four is off the loop-carried
/// chain, which then has one select (4 cycles of latency) per four rows
/// instead of per row; the other selects are independent and run at two
/// per cycle.
#[inline(always)]
fn prefix_into<T: FastNum, const MAX: bool, const NAN: bool>(x: &[T], out: &mut [T], mut p: T) -> T {
    let mut oc = out.chunks_exact_mut(4);
    let mut xc = x.chunks_exact(4);
    for (o, v) in (&mut oc).zip(&mut xc) {
        let a = v[0];
        let ab = pick::<T, MAX, NAN>(a, v[1]);
        let abc = pick::<T, MAX, NAN>(ab, v[2]);
        let abcd = pick::<T, MAX, NAN>(abc, v[3]);
        o[0] = pick::<T, MAX, NAN>(p, a);
        o[1] = pick::<T, MAX, NAN>(p, ab);
        o[2] = pick::<T, MAX, NAN>(p, abc);
        p = pick::<T, MAX, NAN>(p, abcd);
        o[3] = p;
    }
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()) {
        p = pick::<T, MAX, NAN>(p, v);
        *o = p;
    }
    p
}

/// Backward scan: `out[k]` takes the max of itself, `mid`, and the suffix
/// `x[k..]` on top of `s` (the max of what lies after `x`); returns the
/// max of `s` and all of `x`. `mid` is a constant of the caller's (the
/// two-level kernel's whole sub-blocks; the bottom, a no-op, otherwise).
#[inline(always)]
fn suffix_into<T: FastNum, const MAX: bool, const NAN: bool>(x: &[T], out: &mut [T], mut s: T, mid: T) -> T {
    let mut oc = out.rchunks_exact_mut(4);
    let mut xc = x.rchunks_exact(4);
    for (o, v) in (&mut oc).zip(&mut xc) {
        let d = v[3];
        let cd = pick::<T, MAX, NAN>(v[2], d);
        let bcd = pick::<T, MAX, NAN>(v[1], cd);
        let abcd = pick::<T, MAX, NAN>(v[0], bcd);
        o[3] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(d, s), mid), o[3]);
        o[2] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(cd, s), mid), o[2]);
        o[1] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(bcd, s), mid), o[1]);
        s = pick::<T, MAX, NAN>(abcd, s);
        o[0] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(s, mid), o[0]);
    }
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()).rev() {
        s = pick::<T, MAX, NAN>(v, s);
        *o = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(s, mid), *o);
    }
    s
}

/// How a level runs the two scans of NaN-free rows: [`Scalar`] (the loops
/// above) or [`simd::Vector`] (float64 in vector lanes).
pub(super) trait Scan {
    fn prefix<T: FastNum, const MAX: bool>(x: &[T], out: &mut [T], p: T) -> T;
    fn suffix<T: FastNum, const MAX: bool>(x: &[T], out: &mut [T], s: T, mid: T) -> T;
}

/// The scalar scans, for every dtype and every CPU.
#[allow(dead_code)] // only non-x86-64 targets and tests name it
pub(super) struct Scalar;

impl Scan for Scalar {
    #[inline(always)]
    fn prefix<T: FastNum, const MAX: bool>(x: &[T], out: &mut [T], p: T) -> T {
        prefix_into::<T, MAX, false>(x, out, p)
    }
    #[inline(always)]
    fn suffix<T: FastNum, const MAX: bool>(x: &[T], out: &mut [T], s: T, mid: T) -> T {
        suffix_into::<T, MAX, false>(x, out, s, mid)
    }
}

/// The scans with float64 in vector lanes. The scalar scans carry the
/// running max from row to row, one select per four rows on the chain,
/// so wider vectors did not speed them up (issue 15: 2.7-4.6x bottleneck
/// on an Intel Xeon at every level). Here each vector of `N` rows is first
/// scanned inside the register (Hillis-Steele: log2 N shift-and-select
/// steps, off the chain), and the loop carries one broadcast select per
/// `N` rows. A select is `maxpd(newer, older)` (`minpd`): x86's max returns
/// its second operand on a tie, so the older row wins as in [`pick`]; the
/// select is associative on NaN-free values (the earliest of the extreme
/// rows), so the result is the scalar scans' bit for bit, -0.0 and +0.0
/// included. Rows with a NaN never come here (the caller runs the
/// NaN-aware scalar scans there); other dtypes run [`Scalar`]'s.
#[cfg(target_arch = "x86_64")]
pub(super) mod simd {
    use super::{FastNum, Scalar, Scan};
    use std::any::TypeId;
    use std::arch::x86_64::*;
    use std::marker::PhantomData;

    /// One vector of float64 lanes at a dispatch level (lane 0 the oldest
    /// row). Only called inside the wrapper compiled for that level.
    pub trait Lanes: Copy {
        const N: usize;
        unsafe fn load(p: *const f64) -> Self;
        unsafe fn store(self, p: *mut f64);
        unsafe fn splat(v: f64) -> Self;
        unsafe fn lane0(self) -> f64;
        /// `pick(older, newer)` lane-wise: the newer only when strictly
        /// better.
        unsafe fn pick<const MAX: bool>(older: Self, newer: Self) -> Self;
        /// Lane k: the pick of lanes 0..=k (`fill` the identity).
        unsafe fn scan_up<const MAX: bool>(self, fill: Self) -> Self;
        /// Lane k: the pick of lanes k..N.
        unsafe fn scan_down<const MAX: bool>(self, fill: Self) -> Self;
        /// The newest / oldest lane broadcast.
        unsafe fn last(self) -> Self;
        unsafe fn first(self) -> Self;
    }

    /// SSE2 (x86-64's baseline): two lanes.
    #[derive(Clone, Copy)]
    pub struct X(__m128d);
    /// AVX2: four lanes.
    #[derive(Clone, Copy)]
    pub struct Y(__m256d);
    /// AVX-512F: eight lanes.
    #[derive(Clone, Copy)]
    pub struct Z(__m512d);

    impl Lanes for X {
        const N: usize = 2;
        #[inline(always)]
        unsafe fn load(p: *const f64) -> Self {
            X(_mm_loadu_pd(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f64) {
            _mm_storeu_pd(p, self.0)
        }
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            X(_mm_set1_pd(v))
        }
        #[inline(always)]
        unsafe fn lane0(self) -> f64 {
            _mm_cvtsd_f64(self.0)
        }
        #[inline(always)]
        unsafe fn pick<const MAX: bool>(older: Self, newer: Self) -> Self {
            X(if MAX { _mm_max_pd(newer.0, older.0) } else { _mm_min_pd(newer.0, older.0) })
        }
        #[inline(always)]
        unsafe fn scan_up<const MAX: bool>(self, fill: Self) -> Self {
            // [fill, v0]
            Self::pick::<MAX>(X(_mm_shuffle_pd::<0b00>(fill.0, self.0)), self)
        }
        #[inline(always)]
        unsafe fn scan_down<const MAX: bool>(self, fill: Self) -> Self {
            // [v1, fill]
            Self::pick::<MAX>(self, X(_mm_shuffle_pd::<0b01>(self.0, fill.0)))
        }
        #[inline(always)]
        unsafe fn last(self) -> Self {
            X(_mm_unpackhi_pd(self.0, self.0))
        }
        #[inline(always)]
        unsafe fn first(self) -> Self {
            X(_mm_unpacklo_pd(self.0, self.0))
        }
    }

    impl Lanes for Y {
        const N: usize = 4;
        #[inline(always)]
        unsafe fn load(p: *const f64) -> Self {
            Y(_mm256_loadu_pd(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f64) {
            _mm256_storeu_pd(p, self.0)
        }
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            Y(_mm256_set1_pd(v))
        }
        #[inline(always)]
        unsafe fn lane0(self) -> f64 {
            _mm256_cvtsd_f64(self.0)
        }
        #[inline(always)]
        unsafe fn pick<const MAX: bool>(older: Self, newer: Self) -> Self {
            Y(if MAX { _mm256_max_pd(newer.0, older.0) } else { _mm256_min_pd(newer.0, older.0) })
        }
        #[inline(always)]
        unsafe fn scan_up<const MAX: bool>(self, fill: Self) -> Self {
            // [fill, v0, v1, v2], then [fill, fill, u0, u1].
            let up1 = _mm256_blend_pd::<0b0001>(_mm256_permute4x64_pd::<0b10_01_00_00>(self.0), fill.0);
            let v = Self::pick::<MAX>(Y(up1), self);
            Self::pick::<MAX>(Y(_mm256_permute2f128_pd::<0x02>(v.0, fill.0)), v)
        }
        #[inline(always)]
        unsafe fn scan_down<const MAX: bool>(self, fill: Self) -> Self {
            // [v1, v2, v3, fill], then [u2, u3, fill, fill].
            let down1 = _mm256_blend_pd::<0b1000>(_mm256_permute4x64_pd::<0b11_11_10_01>(self.0), fill.0);
            let v = Self::pick::<MAX>(self, Y(down1));
            Self::pick::<MAX>(v, Y(_mm256_permute2f128_pd::<0x21>(v.0, fill.0)))
        }
        #[inline(always)]
        unsafe fn last(self) -> Self {
            Y(_mm256_permute4x64_pd::<0xFF>(self.0))
        }
        #[inline(always)]
        unsafe fn first(self) -> Self {
            Y(_mm256_permute4x64_pd::<0x00>(self.0))
        }
    }

    impl Z {
        /// Lane k: lane k - (8 - S) (fill below).
        #[inline(always)]
        unsafe fn up<const S: i32>(self, fill: Self) -> Self {
            // alignr(a, b, S): lane k of the 16-lane [b, a] from lane k + S.
            Z(_mm512_castsi512_pd(_mm512_alignr_epi64::<S>(_mm512_castpd_si512(self.0), _mm512_castpd_si512(fill.0))))
        }
        /// Lane k: lane k + S (fill from 8 - S up).
        #[inline(always)]
        unsafe fn down<const S: i32>(self, fill: Self) -> Self {
            Z(_mm512_castsi512_pd(_mm512_alignr_epi64::<S>(_mm512_castpd_si512(fill.0), _mm512_castpd_si512(self.0))))
        }
    }

    impl Lanes for Z {
        const N: usize = 8;
        #[inline(always)]
        unsafe fn load(p: *const f64) -> Self {
            Z(_mm512_loadu_pd(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f64) {
            _mm512_storeu_pd(p, self.0)
        }
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            Z(_mm512_set1_pd(v))
        }
        #[inline(always)]
        unsafe fn lane0(self) -> f64 {
            _mm512_cvtsd_f64(self.0)
        }
        #[inline(always)]
        unsafe fn pick<const MAX: bool>(older: Self, newer: Self) -> Self {
            Z(if MAX { _mm512_max_pd(newer.0, older.0) } else { _mm512_min_pd(newer.0, older.0) })
        }
        #[inline(always)]
        unsafe fn scan_up<const MAX: bool>(self, fill: Self) -> Self {
            // Shifts by 1, 2, 4 lanes: alignr by 7, 6, 4.
            let v = Self::pick::<MAX>(self.up::<7>(fill), self);
            let v = Self::pick::<MAX>(v.up::<6>(fill), v);
            Self::pick::<MAX>(v.up::<4>(fill), v)
        }
        #[inline(always)]
        unsafe fn scan_down<const MAX: bool>(self, fill: Self) -> Self {
            let v = Self::pick::<MAX>(self, self.down::<1>(fill));
            let v = Self::pick::<MAX>(v, v.down::<2>(fill));
            Self::pick::<MAX>(v, v.down::<4>(fill))
        }
        #[inline(always)]
        unsafe fn last(self) -> Self {
            Z(_mm512_permutexvar_pd(_mm512_set1_epi64(7), self.0))
        }
        #[inline(always)]
        unsafe fn first(self) -> Self {
            Z(_mm512_broadcastsd_pd(_mm512_castpd512_pd128(self.0)))
        }
    }

    /// The vector scans at level `L` (float64 only; the other dtypes take
    /// the scalar ones).
    pub struct Vector<L>(PhantomData<L>);

    #[inline(always)]
    fn as_f64<T: FastNum>(x: &[T]) -> Option<&[f64]> {
        // SAFETY: T is f64 (same type, so same layout).
        (TypeId::of::<T>() == TypeId::of::<f64>()).then(|| unsafe { std::slice::from_raw_parts(x.as_ptr().cast(), x.len()) })
    }

    #[inline(always)]
    fn as_f64_mut<T: FastNum>(x: &mut [T]) -> Option<&mut [f64]> {
        // SAFETY: as above.
        (TypeId::of::<T>() == TypeId::of::<f64>()).then(|| unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast(), x.len()) })
    }

    /// Between `T` and f64; only called where `T` is f64.
    #[inline(always)]
    fn cast<A: Copy, B: Copy>(v: A) -> B {
        debug_assert_eq!(std::mem::size_of::<A>(), std::mem::size_of::<B>());
        // SAFETY: A and B are both f64 where this is called.
        unsafe { std::mem::transmute_copy(&v) }
    }

    impl<L: Lanes> Scan for Vector<L> {
        #[inline(always)]
        fn prefix<T: FastNum, const MAX: bool>(x: &[T], out: &mut [T], p: T) -> T {
            match (as_f64(x), as_f64_mut(out)) {
                (Some(x), Some(out)) => cast(unsafe { prefix::<L, MAX>(x, out, cast(p)) }),
                _ => Scalar::prefix::<T, MAX>(x, out, p),
            }
        }
        #[inline(always)]
        fn suffix<T: FastNum, const MAX: bool>(x: &[T], out: &mut [T], s: T, mid: T) -> T {
            match (as_f64(x), as_f64_mut(out)) {
                (Some(x), Some(out)) => cast(unsafe { suffix::<L, MAX>(x, out, cast(s), cast(mid)) }),
                _ => Scalar::suffix::<T, MAX>(x, out, s, mid),
            }
        }
    }

    /// [`super::prefix_into`] a vector at a time; same contract.
    #[inline(always)]
    unsafe fn prefix<L: Lanes, const MAX: bool>(x: &[f64], out: &mut [f64], p: f64) -> f64 {
        let n = x.len().min(out.len());
        let fill = L::splat(if MAX { f64::NEG_INFINITY } else { f64::INFINITY });
        let mut pv = L::splat(p);
        let mut i = 0;
        while i + L::N <= n {
            let v = L::load(x.as_ptr().add(i)).scan_up::<MAX>(fill);
            L::pick::<MAX>(pv, v).store(out.as_mut_ptr().add(i));
            // The chain: one select per vector (the broadcast is off it).
            pv = L::pick::<MAX>(pv, v.last());
            i += L::N;
        }
        let mut p = pv.lane0();
        for k in i..n {
            p = super::pick::<f64, MAX, false>(p, x[k]);
            out[k] = p;
        }
        p
    }

    /// [`super::suffix_into`] a vector at a time, from the end; same
    /// contract and the same selects in the same order per row.
    #[inline(always)]
    unsafe fn suffix<L: Lanes, const MAX: bool>(x: &[f64], out: &mut [f64], s: f64, mid: f64) -> f64 {
        let n = x.len().min(out.len());
        let fill = L::splat(if MAX { f64::NEG_INFINITY } else { f64::INFINITY });
        let midv = L::splat(mid);
        let mut sv = L::splat(s);
        let mut i = n;
        while i >= L::N {
            i -= L::N;
            let v = L::load(x.as_ptr().add(i)).scan_down::<MAX>(fill);
            let r = L::pick::<MAX>(L::pick::<MAX>(v, sv), midv);
            let o = L::load(out.as_ptr().add(i));
            L::pick::<MAX>(r, o).store(out.as_mut_ptr().add(i));
            sv = L::pick::<MAX>(v.first(), sv);
        }
        let mut s = sv.lane0();
        for k in (0..i).rev() {
            s = super::pick::<f64, MAX, false>(x[k], s);
            out[k] = super::pick::<f64, MAX, false>(super::pick::<f64, MAX, false>(s, mid), out[k]);
        }
        s
    }
}

/// One block `[start, end)` (`end - start <= window`, `start` a multiple of
/// `window`); `out[k]` is row `start + k`.
#[inline(always)]
fn van_herk<T: FastNum, S: Scan, const MAX: bool, const NAN: bool>(x: &[T], out: &mut [T], start: usize, end: usize, window: usize, id: T) {
    if NAN {
        prefix_into::<T, MAX, NAN>(&x[start..end], out, id);
    } else {
        S::prefix::<T, MAX>(&x[start..end], out, id);
    }
    if start == 0 {
        return;
    }
    // Row i = j + window - 1 takes the suffix from j to the end of the
    // previous block; rows past `end` (a short last block) only accumulate.
    let lo = start + 1 - window;
    let mid = (end + 1 - window).min(start);
    let mut s = id;
    for &v in x[mid..start].iter().rev() {
        s = pick::<T, MAX, NAN>(v, s);
    }
    if NAN {
        suffix_into::<T, MAX, NAN>(&x[lo..mid], &mut out[..mid - lo], s, id);
    } else {
        S::suffix::<T, MAX>(&x[lo..mid], &mut out[..mid - lo], s, id);
    }
}

/// Sub-block of the two-level kernel: 16k rows (128 KB of f64), so the
/// rows being combined stay in L2.
const SUB: usize = 1 << 14;
/// Windows from here on take the two-level kernel: a van Herk block of
/// the window itself no longer fits in L2, and its suffix pass would
/// re-read the block and its output from memory.
const TWO_LEVEL_FROM: usize = 1 << 16;

/// Rolling max / min for windows of at least `4 * sub` rows, on raw values
/// (false, with `out` partly written, at the first sub-block holding a NaN
/// : the caller then takes the per-chunk path).
///
/// The rows are cut into sub-blocks of `sub` rows. The window `[j, i]` is a
/// suffix of sub-block `a` (of `j`), the whole sub-blocks between (their
/// maxima `m`, a few dozen), and a prefix of sub-block `b` (of `i`). The
/// prefixes are written a sub-block at a time; then, for each sub-block
/// `a`, one backward scan over it combines its suffixes into the outputs
/// `window - 1` rows on, which were written moments earlier and are still
/// in L2. Each input row is read twice and each output row written once
/// from memory (the one-level kernel also re-reads and re-writes the
/// output).
#[inline(always)]
fn extreme_two_level<T: FastNum, S: Scan, const MAX: bool>(x: &[T], window: usize, sub: usize, out: &mut [T]) -> bool {
    debug_assert!(sub >= 1 && window >= 4 * sub);
    let n = x.len();
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let mut m: Vec<T> = Vec::with_capacity(n.div_ceil(sub));
    if n < window {
        return prefixes::<T, S, MAX>(x, window, sub, &mut m, out, n);
    }
    // j: the first row of a full window; its output row is j + window - 1.
    let last_j = n - window;
    for a in 0..=last_j / sub {
        let (jlo, jend) = (a * sub, (a + 1) * sub);
        let jhi = jend.min(last_j + 1);
        // Output rows jlo+window-1 .. jhi+window-1 lie in sub-blocks b1
        // and (from row i_split) b1 + 1.
        let b1 = (jlo + window - 1) / sub;
        let j_split = ((b1 + 1) * sub + 1 - window).min(jhi);
        if !prefixes::<T, S, MAX>(x, window, sub, &mut m, out, jhi + window - 1) {
            return false;
        }
        let mid1 = fold::<T, MAX>(&m[a + 1..b1], id);
        let mid2 = if j_split < jhi { pick::<T, MAX, false>(mid1, m[b1]) } else { mid1 };
        // Sub-block a is whole (j <= n - window < n - sub); rows past last_j
        // only accumulate.
        let s = fold::<T, MAX>(&x[jhi..jend], id);
        let w1 = window - 1;
        let s = S::suffix::<T, MAX>(&x[j_split..jhi], &mut out[j_split + w1..jhi + w1], s, mid2);
        S::suffix::<T, MAX>(&x[jlo..j_split], &mut out[jlo + w1..j_split + w1], s, mid1);
    }
    true
}

/// Prefixes of every sub-block up to row `upto` (their maxima pushed to
/// `m`); rows before `window - 1` (partial windows) also take the
/// sub-blocks before. False at a sub-block holding a NaN. A function, not a
/// closure, so it inlines into each level's wrapper with its features.
#[inline(always)]
fn prefixes<T: FastNum, S: Scan, const MAX: bool>(x: &[T], window: usize, sub: usize, m: &mut Vec<T>, out: &mut [T], upto: usize) -> bool {
    let n = x.len();
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    while m.len() * sub < upto.min(n) {
        let (r0, r1) = (m.len() * sub, ((m.len() + 1) * sub).min(n));
        if T::has_nan(&x[r0..r1]) {
            return false;
        }
        m.push(S::prefix::<T, MAX>(&x[r0..r1], &mut out[r0..r1], id));
        if r0 + 1 < window {
            let before = fold::<T, MAX>(&m[..m.len() - 1], id);
            for o in &mut out[r0..r1.min(window - 1)] {
                *o = pick::<T, MAX, false>(before, *o);
            }
        }
    }
    true
}

#[inline(always)]
fn fold<T: FastNum, const MAX: bool>(xs: &[T], id: T) -> T {
    xs.iter().fold(id, |a, &v| pick::<T, MAX, false>(a, v))
}

/// Rolling max (`MAX`) or min of a plain slice, no nulls.
#[allow(dead_code)] // tests; `rolling()` splits ([`extreme_values_split`])
pub(super) fn extreme_values<T: FastNum, const MAX: bool>(x: &[T], window: usize) -> Vec<T> {
    extreme_values_at::<T, MAX>(detected(), x, window)
}

/// [`extreme_values`] with the rows split over up to `threads` threads.
/// Any cut gives the same bits: each row is a selection, the earliest of
/// the window's extreme rows (NaN the top), however the window is split
/// into blocks. The cuts are at least a window in (a range's first block
/// reads the window before it) and, for the two-level kernel, on its
/// sub-blocks.
pub(super) fn extreme_values_split<T: FastNum, const MAX: bool>(x: &[T], window: usize, threads: usize) -> Vec<T> {
    let level = detected();
    let n = x.len();
    // every row written by its range (not zeroed first: `buffer_to_fill`)
    let mut out = super::buffer_to_fill::<T>(n);
    let unit = if window >= TWO_LEVEL_FROM { SUB } else { 8 };
    let cs = super::cuts(n, threads, |r| Some(r / unit * unit).filter(|&c| c >= window));
    super::par_ranges(&mut out[..], &cs, |r0, r1, o| extreme_rows_at::<T, MAX>(level, x, window, r0, r1, o));
    super::assert_filled(&out);
    out
}

/// Rows `[r0, r1)` of [`extreme_values_at`] into `out` (those rows only);
/// `r0` is 0 or at least `window`.
pub(super) fn extreme_rows_at<T: FastNum, const MAX: bool>(level: Level, x: &[T], window: usize, r0: usize, r1: usize, out: &mut [T]) {
    assert!((r0 == 0 || r0 >= window) && r0 <= r1 && r1 <= x.len() && out.len() == r1 - r0);
    match level {
        // SAFETY: a level runs only when `detected()` found the CPU
        // feature.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if detected() == Level::Avx512 => unsafe { rows_avx512::<T, MAX>(x, window, r0, r1, out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 | Level::Avx512 if detected() != Level::Portable => unsafe { rows_avx2::<T, MAX>(x, window, r0, r1, out) },
        #[cfg(target_arch = "x86_64")]
        _ => kernel_rows::<T, simd::Vector<simd::X>, MAX>(x, window, r0, r1, out),
        #[cfg(not(target_arch = "x86_64"))]
        _ => kernel_rows::<T, Scalar, MAX>(x, window, r0, r1, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2<T: FastNum, const MAX: bool>(x: &[T], window: usize, r0: usize, r1: usize, out: &mut [T]) {
    kernel_rows::<T, simd::Vector<simd::Y>, MAX>(x, window, r0, r1, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512<T: FastNum, const MAX: bool>(x: &[T], window: usize, r0: usize, r1: usize, out: &mut [T]) {
    kernel_rows::<T, simd::Vector<simd::Z>, MAX>(x, window, r0, r1, out)
}

/// [`kernel`] for rows `[r0, r1)`: from row 0 it is the kernel on the
/// rows up to `r1` (a row reads no later row); else van Herk blocks of a
/// window from `r0` (or the two-level kernel's sub-blocks, `r0` on one).
#[inline(always)]
fn kernel_rows<T: FastNum, S: Scan, const MAX: bool>(x: &[T], window: usize, r0: usize, r1: usize, out: &mut [T]) {
    if r0 == 0 {
        return kernel::<T, S, MAX>(&x[..r1], window, out);
    }
    if window >= TWO_LEVEL_FROM && r0 % SUB == 0 && two_level_rows::<T, S, MAX>(x, window, SUB, r0, r1, out) {
        return;
    }
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let id_nan = if MAX { T::LOWEST } else { T::TOP };
    // As `kernel`: NaN checked per chunk of whole blocks, a block also
    // reads the one before it (the first: the window before `r0`).
    let chunk = window * (4096 / window).max(1);
    let mut prev_nan = T::has_nan(&x[r0 - window..r0]);
    let mut c0 = r0;
    while c0 < r1 {
        let c1 = (c0 + chunk).min(r1);
        let nan = T::has_nan(&x[c0..c1]);
        let mut start = c0;
        while start < c1 {
            // A block of at most a window, so the window of each of its
            // rows is a suffix of the rows before it and a prefix of it.
            let end = (start + window).min(r1);
            let o = &mut out[start - r0..end - r0];
            if nan || (start == c0 && prev_nan) {
                van_herk::<T, S, MAX, true>(x, o, start, end, window, id_nan);
            } else {
                van_herk::<T, S, MAX, false>(x, o, start, end, window, id);
            }
            start = end;
        }
        prev_nan = nan;
        c0 = c1;
    }
}

/// [`extreme_two_level`] for rows `[r0, r1)` (`r0 >= window`, on a
/// sub-block): the sub-blocks before `r0` that windows reach are folded to
/// their maxima (their prefixes are not our rows), the others as there.
#[inline(always)]
fn two_level_rows<T: FastNum, S: Scan, const MAX: bool>(x: &[T], window: usize, sub: usize, r0: usize, r1: usize, out: &mut [T]) -> bool {
    debug_assert!(sub >= 1 && window >= 4 * sub && r0 >= window && r0 % sub == 0 && r1 <= x.len());
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let first_j = r0 + 1 - window;
    let last_j = r1 - window;
    let a0 = first_j / sub;
    // m[b - a0]: the maximum of sub-block b.
    let mut m: Vec<T> = Vec::with_capacity(r1.div_ceil(sub) - a0);
    for b in a0..r0 / sub {
        let xs = &x[b * sub..(b + 1) * sub];
        if T::has_nan(xs) {
            return false;
        }
        m.push(fold::<T, MAX>(xs, id));
    }
    let mut done = r0;
    for a in a0..=last_j / sub {
        let jend = (a + 1) * sub;
        let (jlo, jhi) = ((a * sub).max(first_j), jend.min(last_j + 1));
        let b1 = (jlo + window - 1) / sub;
        let j_split = ((b1 + 1) * sub + 1 - window).min(jhi);
        let upto = (jhi + window - 1).min(r1);
        while done < upto {
            let e = (done + sub).min(r1);
            if T::has_nan(&x[done..e]) {
                return false;
            }
            m.push(S::prefix::<T, MAX>(&x[done..e], &mut out[done - r0..e - r0], id));
            done = e;
        }
        let mid1 = fold::<T, MAX>(&m[a + 1 - a0..b1 - a0], id);
        let mid2 = if j_split < jhi { pick::<T, MAX, false>(mid1, m[b1 - a0]) } else { mid1 };
        let s = fold::<T, MAX>(&x[jhi..jend], id);
        let w1 = window - 1;
        let s = S::suffix::<T, MAX>(&x[j_split..jhi], &mut out[j_split + w1 - r0..jhi + w1 - r0], s, mid2);
        S::suffix::<T, MAX>(&x[jlo..j_split], &mut out[jlo + w1 - r0..j_split + w1 - r0], s, mid1);
    }
    true
}

/// [`extreme_values`] compiled for `level` (capped to what the CPU has):
/// tests run every level, benchmarks compare them.
pub fn extreme_values_at<T: FastNum, const MAX: bool>(level: Level, x: &[T], window: usize) -> Vec<T> {
    let mut out = super::buffer_to_fill::<T>(x.len());
    match level {
        // SAFETY: a level runs only when `detected()` found the CPU
        // feature.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if detected() == Level::Avx512 => unsafe { kernel_avx512::<T, MAX>(x, window, &mut out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 | Level::Avx512 if detected() != Level::Portable => unsafe { kernel_avx2::<T, MAX>(x, window, &mut out) },
        // x86-64's baseline has SSE2: two lanes.
        #[cfg(target_arch = "x86_64")]
        _ => kernel::<T, simd::Vector<simd::X>, MAX>(x, window, &mut out),
        #[cfg(not(target_arch = "x86_64"))]
        _ => kernel::<T, Scalar, MAX>(x, window, &mut out),
    }
    super::assert_filled(&out);
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2<T: FastNum, const MAX: bool>(x: &[T], window: usize, out: &mut [T]) {
    kernel::<T, simd::Vector<simd::Y>, MAX>(x, window, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512<T: FastNum, const MAX: bool>(x: &[T], window: usize, out: &mut [T]) {
    kernel::<T, simd::Vector<simd::Z>, MAX>(x, window, out)
}

/// The single source of every level (inlined into each wrapper).
#[inline(always)]
fn kernel<T: FastNum, S: Scan, const MAX: bool>(x: &[T], window: usize, out: &mut [T]) {
    let n = x.len();
    if window >= TWO_LEVEL_FROM && extreme_two_level::<T, S, MAX>(x, window, SUB, out) {
        return;
    }
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    // Chunks for the NaN check: whole blocks, about 4096 rows.
    let chunk = window * (4096 / window).max(1);
    let mut prev_nan = false;
    let mut c0 = 0;
    while c0 < n {
        let c1 = (c0 + chunk).min(n);
        let nan = T::has_nan(&x[c0..c1]);
        let mut start = c0;
        while start < c1 {
            let end = (start + window).min(n);
            // A block reads itself and the block before it, which lies in
            // the previous chunk only for the first block of this one.
            if nan || (start == c0 && prev_nan) {
                // The identity must not beat a NaN: min starts from the top.
                let id_nan = if MAX { T::LOWEST } else { T::TOP };
                van_herk::<T, S, MAX, true>(x, &mut out[start..end], start, end, window, id_nan);
            } else {
                van_herk::<T, S, MAX, false>(x, &mut out[start..end], start, end, window, id);
            }
            start = end;
        }
        prev_nan = nan;
        c0 = c1;
    }
}

fn extreme_of<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, threads: usize) -> Vec<T> {
    match col.nulls {
        None => extreme_values_split::<T, MAX>(col.values, window, threads),
        Some(_) => {
            // A null slot must never beat a value: the bottom for max; for
            // min +inf, unless a valid NaN (the top of the order) is there
            // for it to beat. NaN fillers in every chunk would send the
            // whole column to the NaN-aware scans (issue 36: min with 1%
            // nulls ran at a fifth of max's speed).
            let mut x = filled(col, if MAX { T::LOWEST } else { T::HIGHEST });
            if !MAX && T::has_nan(&x) {
                x = filled(col, T::TOP);
            }
            extreme_values_split::<T, MAX>(&x, window, threads)
        }
    }
}

pub(super) fn rolling_extreme<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, min_periods: usize, threads: usize) -> ArrayRef {
    let out = extreme_of::<T, MAX>(col, window, threads);
    let nulls = super::out_nulls(col.nulls, col.len(), window, min_periods.max(1));
    T::to_arrow(out, nulls)
}

/// range = max - min, from the two kernels above.
pub(super) fn rolling_range<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, threads: usize) -> ArrayRef {
    let hi = extreme_of::<T, true>(col, window, threads);
    let lo = extreme_of::<T, false>(col, window, threads);
    let out: Vec<T::Wide> = hi.iter().zip(&lo).map(|(&a, &b)| T::range(a, b)).collect();
    let nulls = super::out_nulls(col.nulls, col.len(), window, min_periods.max(1));
    <T::Wide as ToArrow>::to_arrow(out, nulls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rolling max / min by a monotonic deque: O(n), independent of blocks.
    fn deque<const MAX: bool>(x: &[f64], w: usize) -> Vec<f64> {
        let mut q = std::collections::VecDeque::new();
        let mut out = Vec::with_capacity(x.len());
        for (i, &v) in x.iter().enumerate() {
            while q.back().is_some_and(|&j: &usize| if MAX { x[j] <= v } else { x[j] >= v }) {
                q.pop_back();
            }
            q.push_back(i);
            if q[0] + w <= i {
                q.pop_front();
            }
            out.push(x[q[0]]);
        }
        out
    }

    fn data(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) % 1000) as f64 - 500.0 // ties on purpose
            })
            .collect()
    }

    type Two = fn(&[f64], usize, usize) -> Vec<f64>;

    fn two<S: Scan, const MAX: bool>(x: &[f64], w: usize, sub: usize) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        assert!(extreme_two_level::<f64, S, MAX>(x, w, sub, &mut out));
        out
    }

    /// The two-level kernel with each scan this CPU can run (the vector
    /// ones outside their level's wrapper: same results, slower code).
    fn for_each_scan(mut f: impl FnMut(&str, Two, Two)) {
        f("scalar", two::<Scalar, true>, two::<Scalar, false>);
        #[cfg(target_arch = "x86_64")]
        {
            use crate::ops::reduce::available;
            f("sse2", two::<simd::Vector<simd::X>, true>, two::<simd::Vector<simd::X>, false>);
            if available().contains(&Level::Avx2) {
                f("avx2", two::<simd::Vector<simd::Y>, true>, two::<simd::Vector<simd::Y>, false>);
            }
            if available().contains(&Level::Avx512) {
                f("avx512", two::<simd::Vector<simd::Z>, true>, two::<simd::Vector<simd::Z>, false>);
            }
        }
    }

    #[test]
    fn two_level_equals_deque_on_small_sub_blocks() {
        for (seed, n) in [(1, 0), (2, 1), (3, 37), (4, 200), (5, 203)] {
            let x = data(n, seed);
            for sub in [1, 2, 3, 4, 7, 9, 17] {
                for w in 4 * sub..n + 6 {
                    let (hi, lo) = (deque::<true>(&x, w), deque::<false>(&x, w));
                    for_each_scan(|name, max_of, min_of| {
                        assert_eq!(max_of(&x, w, sub), hi, "{name} max n={n} sub={sub} w={w}");
                        assert_eq!(min_of(&x, w, sub), lo, "{name} min n={n} sub={sub} w={w}");
                    });
                }
            }
        }
    }

    #[test]
    fn large_windows_take_two_levels_and_fall_back_on_nan() {
        let n = TWO_LEVEL_FROM + 5 * SUB + 123;
        let mut x = data(n, 9);
        for w in [TWO_LEVEL_FROM, TWO_LEVEL_FROM + SUB / 3, n - 1, n + 10] {
            assert_eq!(extreme_values::<f64, true>(&x, w), deque::<true>(&x, w), "w={w}");
        }
        // A NaN (the largest in the key order) two sub-blocks in: the
        // two-level pass gives up and the per-chunk path handles it.
        let w = TWO_LEVEL_FROM;
        x[2 * SUB + 5] = f64::NAN;
        let out = extreme_values::<f64, true>(&x, w);
        for (i, o) in out.iter().enumerate() {
            let has_nan = i >= 2 * SUB + 5 && i < 2 * SUB + 5 + w;
            assert_eq!(o.is_nan(), has_nan, "row {i}");
        }
    }

    /// Earliest-of-ties rolling max / min by a monotonic deque (pops only
    /// strictly worse rows, so the front is the earliest extreme).
    fn earliest<const MAX: bool>(x: &[f64], w: usize) -> Vec<f64> {
        let mut q = std::collections::VecDeque::new();
        let mut out = Vec::with_capacity(x.len());
        for (i, &v) in x.iter().enumerate() {
            while q.back().is_some_and(|&j: &usize| if MAX { x[j] < v } else { x[j] > v }) {
                q.pop_back();
            }
            q.push_back(i);
            if q[0] + w <= i {
                q.pop_front();
            }
            out.push(x[q[0]]);
        }
        out
    }

    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![3 => Just(-0.0), 3 => Just(0.0), 6 => (-3i32..4).prop_map(|v| v as f64), 1 => Just(f64::INFINITY), 1 => Just(f64::NEG_INFINITY)]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Every level (scalar and vector scans, several 4096-row chunks,
        /// windows not a multiple of any vector width) equals the deque bit
        /// for bit: the earliest of tied rows, so the zero's sign, wins.
        #[test]
        fn every_level_bit_for_bit(x in prop::collection::vec(value(), 0..9000), w in prop_oneof![1usize..40, 1usize..9100]) {
            for level in crate::ops::reduce::available() {
                let (hi, lo) = (extreme_values_at::<f64, true>(level, &x, w), extreme_values_at::<f64, false>(level, &x, w));
                let (want_hi, want_lo) = (earliest::<true>(&x, w), earliest::<false>(&x, w));
                for i in 0..x.len() {
                    prop_assert_eq!(hi[i].to_bits(), want_hi[i].to_bits(), "max {:?} w={} row {}", level, w, i);
                    prop_assert_eq!(lo[i].to_bits(), want_lo[i].to_bits(), "min {:?} w={} row {}", level, w, i);
                }
            }
        }

        /// Rows `[r0, r1)` alone (one-level from any `r0 >= window`, the
        /// two-level kernel from a sub-block) equal those rows of the whole
        /// column, bit for bit: what the thread split relies on.
        #[test]
        fn rows_bit_for_bit(x in prop::collection::vec(value(), 1..500), sub in 1usize..20, extra in 0usize..200, a in 0usize..500, b in 0usize..500, nan in prop::option::of(0usize..500)) {
            let mut x = x;
            if let Some(k) = nan {
                let k = k % x.len();
                x[k] = f64::NAN;
            }
            let n = x.len();
            let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            for w in [1 + extra % 9, 4 * sub + extra] {
                let (hi, lo) = (earliest::<true>(&x, w), earliest::<false>(&x, w));
                let (hi, lo) = if x.iter().any(|v| v.is_nan()) {
                    (extreme_values_at::<f64, true>(Level::Portable, &x, w), extreme_values_at::<f64, false>(Level::Portable, &x, w))
                } else {
                    (hi, lo)
                };
                let r0 = if w < n { w + a % (n - w) } else { 0 };
                let r1 = r0 + b % (n - r0 + 1);
                for level in crate::ops::reduce::available() {
                    let mut o = vec![0.0; r1 - r0];
                    extreme_rows_at::<f64, true>(level, &x, w, r0, r1, &mut o);
                    prop_assert_eq!(bits(&o), bits(&hi[r0..r1]), "max {:?} w={} rows {}..{}", level, w, r0, r1);
                    extreme_rows_at::<f64, false>(level, &x, w, r0, r1, &mut o);
                    prop_assert_eq!(bits(&o), bits(&lo[r0..r1]), "min {:?} w={} rows {}..{}", level, w, r0, r1);
                }
                // The two-level form on small sub-blocks (NaN-free only).
                let r0 = (r0 / sub * sub).max(w.div_ceil(sub) * sub);
                if w >= 4 * sub && r0 < n && !x.iter().any(|v| v.is_nan()) {
                    let r1 = r0 + b % (n - r0 + 1);
                    let mut o = vec![0.0; r1 - r0];
                    prop_assert!(two_level_rows::<f64, Scalar, true>(&x, w, sub, r0, r1, &mut o));
                    prop_assert_eq!(bits(&o), bits(&hi[r0..r1]), "two-level max w={} sub={} rows {}..{}", w, sub, r0, r1);
                    prop_assert!(two_level_rows::<f64, Scalar, false>(&x, w, sub, r0, r1, &mut o));
                    prop_assert_eq!(bits(&o), bits(&lo[r0..r1]), "two-level min w={} sub={} rows {}..{}", w, sub, r0, r1);
                }
            }
        }

        /// The two-level kernel with every scan on small sub-blocks, bit
        /// for bit.
        #[test]
        fn two_level_bit_for_bit(x in prop::collection::vec(value(), 0..400), sub in 1usize..40, extra in 0usize..400) {
            let w = 4 * sub + extra;
            let (want_hi, want_lo) = (earliest::<true>(&x, w), earliest::<false>(&x, w));
            let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
            let (want_hi, want_lo) = (bits(want_hi), bits(want_lo));
            let mut bad = None;
            for_each_scan(|name, max_of, min_of| {
                if bits(max_of(&x, w, sub)) != want_hi || bits(min_of(&x, w, sub)) != want_lo {
                    bad = Some(name.to_string());
                }
            });
            prop_assert!(bad.is_none(), "{:?} w={} sub={}", bad, w, sub);
        }
    }
}
