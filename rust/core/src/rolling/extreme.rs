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
//!   same kernel with its NaN rows masked like nulls, then sets the rows
//!   whose window holds one ([`nan_chunk`]); integers never do.
//! * The prefix scan of a block is written straight into the output; the
//!   suffix scan of the previous block runs backwards and combines into it
//!   in the same pass, so there is no temporary array and no branch per row.
//! * Compiled three times (portable, AVX2, AVX-512F) and picked at run time
//!   as the pane reductions ([`crate::ops::reduce::detected`]).
//! * Nulls: the kernels are generic over where validity comes from
//!   ([`super::valid`]); a missing row reads as the identity (-inf / MIN
//!   for max; for min +inf / MAX, NaN in the NaN-aware scans, where +inf
//!   would beat a real NaN), masked as it is loaded (a vector blend under
//!   the validity bits), so no filled copy is made and clean columns
//!   ([`All`]) run the unmasked code. The output is masked where the
//!   window has no valid row (or fewer than `min_periods`,
//!   [`super::out_nulls`]). A null slot may hold anything (NaN from
//!   pandas), so the NaN check of a chunk looks at valid rows only.

use arrow_array::ArrayRef;

use super::valid::{bits_at, in_window, low_ones, nan_bits, word_at, All, Bitmap, NoSink, Sink, Valid, Words};
use super::FastNum;
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

/// `v` where bit 0 of `b` (its row's validity) is set, else the filler
/// `id`; a constant `b` (every row valid, [`All`]) folds it away.
#[inline(always)]
fn keep<T: Copy>(v: T, b: u64, id: T) -> T {
    if b & 1 != 0 {
        v
    } else {
        id
    }
}

/// The pick of `id` and the valid rows of `x` (row `r` on).
#[inline(always)]
fn fold_valid<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, id: T) -> T {
    let mut a = id;
    for (k, xs) in x.chunks(8).enumerate() {
        let b = va.bits(r + 8 * k);
        for (j, &v) in xs.iter().enumerate() {
            a = pick::<T, MAX, false>(a, keep(v, b >> j, id));
        }
    }
    a
}

/// Whether a valid row of `x` (row `r` on) is NaN. Null slots may hold
/// anything (pandas' NaN), and must not send a chunk to the NaN-aware
/// scans: the raw check first (vectorised), the rows' bits only after it.
#[inline(always)]
fn has_nan<T: FastNum, V: Valid>(x: &[T], va: V, r: usize) -> bool {
    let raw = T::has_nan(x);
    if !raw || V::ALL {
        return raw;
    }
    // 32 rows a validity read (Bitmap gives 57 bits)
    x.chunks(32).enumerate().any(|(k, xs)| nan_bits(xs) & va.bits(r + 32 * k) & low_ones(xs.len()) != 0)
}

/// Running max of `x` (row `r` on; missing rows read as `id`) on top of
/// `p`, written to `out` (same length); returns the max of `p` and all of
/// `x`.
///
/// Rows go in fours: the running max of the four is off the loop-carried
/// chain, which then has one select (4 cycles of latency) per four rows
/// instead of per row; the other selects are independent and run at two
/// per cycle.
#[inline(always)]
fn prefix_into<T: FastNum, V: Valid, const MAX: bool, const NAN: bool>(x: &[T], va: V, r: usize, out: &mut [T], mut p: T, id: T) -> T {
    let mut oc = out.chunks_exact_mut(4);
    let mut xc = x.chunks_exact(4);
    let mut k = r;
    for (o, v) in (&mut oc).zip(&mut xc) {
        let b = va.bits(k);
        k += 4;
        let a = keep(v[0], b, id);
        let ab = pick::<T, MAX, NAN>(a, keep(v[1], b >> 1, id));
        let abc = pick::<T, MAX, NAN>(ab, keep(v[2], b >> 2, id));
        let abcd = pick::<T, MAX, NAN>(abc, keep(v[3], b >> 3, id));
        o[0] = pick::<T, MAX, NAN>(p, a);
        o[1] = pick::<T, MAX, NAN>(p, ab);
        o[2] = pick::<T, MAX, NAN>(p, abc);
        p = pick::<T, MAX, NAN>(p, abcd);
        o[3] = p;
    }
    let b = va.bits(k);
    for (j, (o, &v)) in oc.into_remainder().iter_mut().zip(xc.remainder()).enumerate() {
        p = pick::<T, MAX, NAN>(p, keep(v, b >> j, id));
        *o = p;
    }
    p
}

/// Backward scan: `out[k]` takes the max of itself, `mid`, and the suffix
/// `x[k..]` (row `r` on; missing rows read as `id`) on top of `s` (the max
/// of what lies after `x`); returns the max of `s` and all of `x`. `mid`
/// is a constant of the caller's (the two-level kernel's whole
/// sub-blocks; the bottom, a no-op, otherwise).
#[inline(always)]
fn suffix_into<T: FastNum, V: Valid, const MAX: bool, const NAN: bool>(x: &[T], va: V, r: usize, out: &mut [T], mut s: T, mid: T, id: T) -> T {
    let mut oc = out.rchunks_exact_mut(4);
    let mut xc = x.rchunks_exact(4);
    // the row of the chunk's first value
    let mut k = r + x.len();
    for (o, v) in (&mut oc).zip(&mut xc) {
        k -= 4;
        let b = va.bits(k);
        let d = keep(v[3], b >> 3, id);
        let cd = pick::<T, MAX, NAN>(keep(v[2], b >> 2, id), d);
        let bcd = pick::<T, MAX, NAN>(keep(v[1], b >> 1, id), cd);
        let abcd = pick::<T, MAX, NAN>(keep(v[0], b, id), bcd);
        o[3] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(d, s), mid), o[3]);
        o[2] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(cd, s), mid), o[2]);
        o[1] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(bcd, s), mid), o[1]);
        s = pick::<T, MAX, NAN>(abcd, s);
        o[0] = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(s, mid), o[0]);
    }
    let b = va.bits(r);
    for (j, (o, &v)) in oc.into_remainder().iter_mut().zip(xc.remainder()).enumerate().rev() {
        s = pick::<T, MAX, NAN>(keep(v, b >> j, id), s);
        *o = pick::<T, MAX, NAN>(pick::<T, MAX, NAN>(s, mid), *o);
    }
    s
}

/// How a level runs the two scans of NaN-free rows: [`Scalar`] (the loops
/// above) or [`simd::Vector`] (float64 in vector lanes).
pub(super) trait Scan {
    fn prefix<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, out: &mut [T], p: T) -> T;
    fn suffix<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, out: &mut [T], s: T, mid: T) -> T;
}

/// The identity of max / min on NaN-free rows, and what a missing row
/// reads as there.
#[inline(always)]
fn ident<T: FastNum, const MAX: bool>() -> T {
    if MAX {
        T::LOWEST
    } else {
        T::HIGHEST
    }
}

/// The scalar scans, for every dtype and every CPU.
#[allow(dead_code)] // only non-x86-64 targets and tests name it
pub(super) struct Scalar;

impl Scan for Scalar {
    #[inline(always)]
    fn prefix<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, out: &mut [T], p: T) -> T {
        prefix_into::<T, V, MAX, false>(x, va, r, out, p, ident::<T, MAX>())
    }
    #[inline(always)]
    fn suffix<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, out: &mut [T], s: T, mid: T) -> T {
        suffix_into::<T, V, MAX, false>(x, va, r, out, s, mid, ident::<T, MAX>())
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
    use super::{FastNum, Scalar, Scan, Valid};
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
        /// Lane k from `self` where bit k of `b` is set (the row is
        /// valid), else from `fill`.
        unsafe fn keep(self, b: u64, fill: Self) -> Self;
    }

    /// SSE2 has no variable blend: lane masks of two bits, looked up.
    static MASK2: [[u64; 2]; 4] = [[0, 0], [u64::MAX, 0], [0, u64::MAX], [u64::MAX, u64::MAX]];

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
        #[inline(always)]
        unsafe fn keep(self, b: u64, fill: Self) -> Self {
            let m = _mm_loadu_pd(MASK2[(b & 3) as usize].as_ptr().cast());
            X(_mm_or_pd(_mm_and_pd(m, self.0), _mm_andnot_pd(m, fill.0)))
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
        #[inline(always)]
        unsafe fn keep(self, b: u64, fill: Self) -> Self {
            // lane k all ones where bit k is set
            let sel = _mm256_set_epi64x(8, 4, 2, 1);
            let m = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(b as i64), sel), sel);
            Y(_mm256_blendv_pd(fill.0, self.0, _mm256_castsi256_pd(m)))
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
        #[inline(always)]
        unsafe fn keep(self, b: u64, fill: Self) -> Self {
            Z(_mm512_mask_blend_pd(b as __mmask8, fill.0, self.0))
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
        fn prefix<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, out: &mut [T], p: T) -> T {
            match (as_f64(x), as_f64_mut(out)) {
                (Some(x), Some(out)) => cast(unsafe { prefix::<L, V, MAX>(x, va, r, out, cast(p)) }),
                _ => Scalar::prefix::<T, V, MAX>(x, va, r, out, p),
            }
        }
        #[inline(always)]
        fn suffix<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, r: usize, out: &mut [T], s: T, mid: T) -> T {
            match (as_f64(x), as_f64_mut(out)) {
                (Some(x), Some(out)) => cast(unsafe { suffix::<L, V, MAX>(x, va, r, out, cast(s), cast(mid)) }),
                _ => Scalar::suffix::<T, V, MAX>(x, va, r, out, s, mid),
            }
        }
    }

    /// Vectors of rows `r + i..` (missing ones as `fill`), their validity
    /// read from `va` once per 56 rows (a read gives 57), not once a
    /// vector: the read and its bounds cost as much as the masked vector's
    /// own scan (issue 36: max with 1% nulls at windows of 2^16, one
    /// thread, 0.70x of clean; 0.75x so). Forward ([`Lanes::N`] rows on
    /// from each `i`) or back.
    struct Masked<V> {
        va: V,
        r: usize,
        /// Bit 0: row `r + base`.
        base: usize,
        w: u64,
        left: usize,
    }

    impl<V: Valid> Masked<V> {
        #[inline(always)]
        fn new(va: V, r: usize) -> Self {
            Masked { va, r, base: 0, w: 0, left: 0 }
        }

        /// Rows `r + i..r + i + N`; `i` steps by `N`, up (`UP`) or down.
        #[inline(always)]
        unsafe fn load<L: Lanes, const UP: bool>(&mut self, x: &[f64], i: usize, fill: L) -> L {
            let v = L::load(x.as_ptr().add(i));
            if V::ALL {
                return v;
            }
            if self.left == 0 {
                // 56 rows from `i` up, or ending at `i + N` down.
                self.base = if UP { i } else { (i + L::N).saturating_sub(56) };
                self.w = self.va.bits(self.r + self.base);
                self.left = 56 / L::N;
            }
            self.left -= 1;
            v.keep(self.w >> (i - self.base), fill)
        }
    }

    /// [`super::prefix_into`] a vector at a time; same contract (missing
    /// rows read as the identity, the fill).
    #[inline(always)]
    unsafe fn prefix<L: Lanes, V: Valid, const MAX: bool>(x: &[f64], va: V, r: usize, out: &mut [f64], p: f64) -> f64 {
        let n = x.len().min(out.len());
        let id = if MAX { f64::NEG_INFINITY } else { f64::INFINITY };
        let fill = L::splat(id);
        let mut pv = L::splat(p);
        let mut rows = Masked::new(va, r);
        let mut i = 0;
        while i + L::N <= n {
            let v = rows.load::<L, true>(x, i, fill).scan_up::<MAX>(fill);
            L::pick::<MAX>(pv, v).store(out.as_mut_ptr().add(i));
            // The chain: one select per vector (the broadcast is off it).
            pv = L::pick::<MAX>(pv, v.last());
            i += L::N;
        }
        let mut p = pv.lane0();
        // fewer than N rows left: one validity read
        let b = va.bits(r + i);
        for k in i..n {
            p = super::pick::<f64, MAX, false>(p, super::keep(x[k], b >> (k - i), id));
            out[k] = p;
        }
        p
    }

    /// [`super::suffix_into`] a vector at a time, from the end; same
    /// contract and the same selects in the same order per row.
    #[inline(always)]
    unsafe fn suffix<L: Lanes, V: Valid, const MAX: bool>(x: &[f64], va: V, r: usize, out: &mut [f64], s: f64, mid: f64) -> f64 {
        let n = x.len().min(out.len());
        let id = if MAX { f64::NEG_INFINITY } else { f64::INFINITY };
        let fill = L::splat(id);
        let midv = L::splat(mid);
        let mut sv = L::splat(s);
        let mut rows = Masked::new(va, r);
        let mut i = n;
        while i >= L::N {
            i -= L::N;
            let v = rows.load::<L, false>(x, i, fill).scan_down::<MAX>(fill);
            let u = L::pick::<MAX>(L::pick::<MAX>(v, sv), midv);
            let o = L::load(out.as_ptr().add(i));
            L::pick::<MAX>(u, o).store(out.as_mut_ptr().add(i));
            sv = L::pick::<MAX>(v.first(), sv);
        }
        let mut s = sv.lane0();
        let b = va.bits(r);
        for k in (0..i).rev() {
            s = super::pick::<f64, MAX, false>(super::keep(x[k], b >> k, id), s);
            out[k] = super::pick::<f64, MAX, false>(super::pick::<f64, MAX, false>(s, mid), out[k]);
        }
        s
    }
}

/// One block `[start, end)` (`end - start <= window`, `start` a multiple of
/// `window`); `out[k]` is row `start + k`.
#[inline(always)]
fn van_herk<T: FastNum, V: Valid, S: Scan, const MAX: bool>(x: &[T], va: V, out: &mut [T], start: usize, end: usize, window: usize, id: T) {
    S::prefix::<T, V, MAX>(&x[start..end], va, start, out, id);
    if start == 0 {
        return;
    }
    // Row i = j + window - 1 takes the suffix from j to the end of the
    // previous block; rows past `end` (a short last block) only accumulate.
    let lo = start + 1 - window;
    let mid = (end + 1 - window).min(start);
    let mut s = id;
    for (k, &v) in x[mid..start].iter().enumerate().rev() {
        s = pick::<T, MAX, false>(keep(v, va.bits(mid + k), id), s);
    }
    S::suffix::<T, V, MAX>(&x[lo..mid], va, lo, &mut out[..mid - lo], s, id);
}

/// [`van_herk`], unmasked where the block and the window before it have no
/// missing row: with 1% missing most blocks of short windows have none,
/// and the unmasked scans are faster (checked 57 rows a read, stopping at
/// the first missing one, so a dense mask costs one read a block).
#[inline(always)]
fn block<T: FastNum, V: Valid, S: Scan, const MAX: bool>(x: &[T], va: V, out: &mut [T], start: usize, end: usize, window: usize, id: T) {
    if !V::ALL && all_valid(va, (start + 1).saturating_sub(window), end) {
        van_herk::<T, All, S, MAX>(x, All, out, start, end, window, id);
    } else {
        van_herk::<T, V, S, MAX>(x, va, out, start, end, window, id);
    }
}

/// Whether rows `[a, b)` are all valid.
#[inline(always)]
fn all_valid<V: Valid>(va: V, a: usize, b: usize) -> bool {
    let mut r = a;
    while r < b {
        let k = (b - r).min(57);
        if va.bits(r) & low_ones(k) != low_ones(k) {
            return false;
        }
        r += k;
    }
    true
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
fn extreme_two_level<T: FastNum, V: Valid, S: Scan, const MAX: bool>(x: &[T], va: V, window: usize, sub: usize, out: &mut [T]) -> bool {
    debug_assert!(sub >= 1 && window >= 4 * sub);
    let n = x.len();
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let mut m: Vec<T> = Vec::with_capacity(n.div_ceil(sub));
    if n < window {
        return prefixes::<T, V, S, MAX>(x, va, window, sub, &mut m, out, n);
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
        if !prefixes::<T, V, S, MAX>(x, va, window, sub, &mut m, out, jhi + window - 1) {
            return false;
        }
        let mid1 = fold::<T, MAX>(&m[a + 1..b1], id);
        let mid2 = if j_split < jhi { pick::<T, MAX, false>(mid1, m[b1]) } else { mid1 };
        // Sub-block a is whole (j <= n - window < n - sub); rows past last_j
        // only accumulate.
        let s = fold_valid::<T, V, MAX>(&x[jhi..jend], va, jhi, id);
        let w1 = window - 1;
        let s = S::suffix::<T, V, MAX>(&x[j_split..jhi], va, j_split, &mut out[j_split + w1..jhi + w1], s, mid2);
        S::suffix::<T, V, MAX>(&x[jlo..j_split], va, jlo, &mut out[jlo + w1..j_split + w1], s, mid1);
    }
    true
}

/// Prefixes of every sub-block up to row `upto` (their maxima pushed to
/// `m`); rows before `window - 1` (partial windows) also take the
/// sub-blocks before. False at a sub-block holding a NaN. A function, not a
/// closure, so it inlines into each level's wrapper with its features.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn prefixes<T: FastNum, V: Valid, S: Scan, const MAX: bool>(x: &[T], va: V, window: usize, sub: usize, m: &mut Vec<T>, out: &mut [T], upto: usize) -> bool {
    let n = x.len();
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    while m.len() * sub < upto.min(n) {
        let (r0, r1) = (m.len() * sub, ((m.len() + 1) * sub).min(n));
        if has_nan(&x[r0..r1], va, r0) {
            return false;
        }
        m.push(S::prefix::<T, V, MAX>(&x[r0..r1], va, r0, &mut out[r0..r1], id));
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
pub(super) fn extreme_values_split<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, window: usize, threads: usize) -> Vec<T> {
    let level = detected();
    let n = x.len();
    // every row written by its range (not zeroed first: `buffer_to_fill`)
    let mut out = super::buffer_to_fill::<T>(n);
    let unit = if window >= TWO_LEVEL_FROM { SUB } else { 8 };
    let cs = super::cuts(n, threads, |r| Some(r / unit * unit).filter(|&c| c >= window));
    super::par_ranges(&mut out[..], &cs, |r0, r1, o| extreme_rows_at::<T, V, MAX>(level, x, va, window, r0, r1, o));
    super::assert_filled(&out);
    out
}

/// Rows `[r0, r1)` of [`extreme_values_at`] into `out` (those rows only);
/// `r0` is 0 or at least `window`.
pub(super) fn extreme_rows_at<T: FastNum, V: Valid, const MAX: bool>(level: Level, x: &[T], va: V, window: usize, r0: usize, r1: usize, out: &mut [T]) {
    extreme_rows_sink::<T, V, NoSink, MAX>(level, x, va, NoSink, window, r0, r1, out)
}

/// [`extreme_rows_at`] putting the rows' validity in `sink` (`nan="skip"`:
/// [`Sink::SKIP`], the NaN rows missing as nulls).
#[allow(clippy::too_many_arguments)]
fn extreme_rows_sink<T: FastNum, V: Valid, K: Sink, const MAX: bool>(level: Level, x: &[T], va: V, sink: K, window: usize, r0: usize, r1: usize, out: &mut [T]) {
    assert!((r0 == 0 || r0 >= window) && r0 <= r1 && r1 <= x.len() && out.len() == r1 - r0);
    match level {
        // SAFETY: a level runs only when `detected()` found the CPU
        // feature.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if detected() == Level::Avx512 => unsafe { rows_avx512::<T, V, K, MAX>(x, va, sink, window, r0, r1, out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 | Level::Avx512 if detected() != Level::Portable => unsafe { rows_avx2::<T, V, K, MAX>(x, va, sink, window, r0, r1, out) },
        #[cfg(target_arch = "x86_64")]
        _ => kernel_rows::<T, V, K, simd::Vector<simd::X>, MAX>(x, va, sink, window, r0, r1, out),
        #[cfg(not(target_arch = "x86_64"))]
        _ => kernel_rows::<T, V, K, Scalar, MAX>(x, va, sink, window, r0, r1, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2<T: FastNum, V: Valid, K: Sink, const MAX: bool>(x: &[T], va: V, sink: K, window: usize, r0: usize, r1: usize, out: &mut [T]) {
    kernel_rows::<T, V, K, simd::Vector<simd::Y>, MAX>(x, va, sink, window, r0, r1, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512<T: FastNum, V: Valid, K: Sink, const MAX: bool>(x: &[T], va: V, sink: K, window: usize, r0: usize, r1: usize, out: &mut [T]) {
    kernel_rows::<T, V, K, simd::Vector<simd::Z>, MAX>(x, va, sink, window, r0, r1, out)
}

/// [`kernel`] for rows `[r0, r1)`: from row 0 it is the kernel on the
/// rows up to `r1` (a row reads no later row); else van Herk blocks of a
/// window from `r0` (or the two-level kernel's sub-blocks, `r0` on one).
/// `nan="skip"` ([`Sink::SKIP`]) takes the chunks, which build the masks.
#[inline(always)]
fn kernel_rows<T: FastNum, V: Valid, K: Sink, S: Scan, const MAX: bool>(x: &[T], va: V, sink: K, window: usize, r0: usize, r1: usize, out: &mut [T]) {
    if K::SKIP {
        let prev_nan = r0 > 0 && has_nan(&x[r0 - window..r0], va, r0 - window);
        return chunks::<T, V, K, S, MAX>(x, va, sink, window, r0, r1, prev_nan, out);
    }
    if r0 == 0 {
        return kernel::<T, V, S, MAX>(&x[..r1], va, window, out);
    }
    if window >= TWO_LEVEL_FROM && r0 % SUB == 0 && two_level_rows::<T, V, S, MAX>(x, va, window, SUB, r0, r1, out) {
        return;
    }
    // As `kernel`: NaN checked per chunk of whole blocks, a block also
    // reads the one before it (the first: the window before `r0`).
    let prev_nan = has_nan(&x[r0 - window..r0], va, r0 - window);
    chunks::<T, V, K, S, MAX>(x, va, sink, window, r0, r1, prev_nan, out);
}

/// Rows `[r0, r1)` into `out` (those rows; `r0` 0 or at least a window
/// in) in chunks of whole blocks (about 4096 rows), each checked for a
/// valid NaN while in cache: a chunk holding one (or whose first block
/// reads one from the block before, `prev_nan` for the first chunk) goes
/// to [`nan_chunk`]. Each chunk puts its rows' validity in `sink`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunks<T: FastNum, V: Valid, K: Sink, S: Scan, const MAX: bool>(x: &[T], va: V, sink: K, window: usize, r0: usize, r1: usize, mut prev_nan: bool, out: &mut [T]) {
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let chunk = window * (4096 / window).max(1);
    let mut c0 = r0;
    while c0 < r1 {
        let c1 = (c0 + chunk).min(r1);
        let nan = has_nan(&x[c0..c1], va, c0);
        let mut start = c0;
        if nan || prev_nan {
            // Only the first block reads the chunk before.
            start = if nan { c1 } else { (c0 + window).min(c1) };
            nan_chunk::<T, V, K, S, MAX>(x, va, sink, window, c0, start, &mut out[c0 - r0..start - r0]);
        }
        sink.put(va, start, c1);
        while start < c1 {
            // A block of at most a window, so the window of each of its
            // rows is a suffix of the rows before it and a prefix of it.
            let end = (start + window).min(c1);
            block::<T, V, S, MAX>(x, va, &mut out[start - r0..end - r0], start, end, window, id);
            start = end;
        }
        prev_nan = nan;
        c0 = c1;
    }
}

/// Rows `[c0, c1)` (whole blocks of a window from `c0`, into `out`, those
/// rows) where they or the block before hold a valid NaN: the same
/// kernel on the valid rows that are not NaN (a local mask built a
/// 64-row word at a time, as nulls are read), then NaN (the top) where
/// the window holds one (max), or where it holds one and no number (min:
/// NaN is above every number). A block of max whose every row's window
/// holds a NaN is not computed at all. (Issue 36: the NaN-aware pick on
/// every row of such a chunk ran max at a third of its clean speed.)
/// `nan="skip"` ([`Sink::SKIP`]): the NaN rows stay missing, as nulls,
/// and the mask goes to `sink`.
#[inline(always)]
fn nan_chunk<T: FastNum, V: Valid, K: Sink, S: Scan, const MAX: bool>(x: &[T], va: V, sink: K, window: usize, c0: usize, c1: usize, out: &mut [T]) {
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let lo = c0.saturating_sub(window);
    let len = c1 - lo;
    let nw = len.div_ceil(64);
    let (mut nan, mut num, mut ok) = (Vec::with_capacity(nw), Vec::with_capacity(nw), Vec::with_capacity(8 * nw));
    for (q, c) in x[lo..c1].chunks(64).enumerate() {
        let r = lo + 64 * q;
        let v = word_at(va, r, c.len());
        let a = nan_bits(c) & v;
        nan.push(a);
        num.push(v & !a);
        ok.extend_from_slice(&(v & !a).to_le_bytes());
    }
    let has_nan = if K::SKIP { Vec::new() } else { in_window(&nan, len, window) };
    let has_num = if MAX || K::SKIP { Vec::new() } else { in_window(&num, len, window) };
    // Rows `[a, b)`'s NaN results (bits from row `a`, 64 at a time).
    let bad = |i: usize, n: usize| -> u64 {
        let b = bits_at(&has_nan, i - lo) & low_ones(n);
        if MAX {
            b
        } else {
            b & !bits_at(&has_num, i - lo)
        }
    };
    let fin = Bitmap::local(&ok, lo);
    let mut start = c0;
    while start < c1 {
        let end = (start + window).min(c1);
        let o = &mut out[start - c0..end - c0];
        if K::SKIP {
            block::<T, Bitmap, S, MAX>(x, fin, o, start, end, window, id);
            start = end;
            continue;
        }
        let all_bad = MAX && (start..end).step_by(64).all(|i| bad(i, (end - i).min(64)) == low_ones((end - i).min(64)));
        if all_bad {
            o.fill(T::TOP);
        } else {
            block::<T, Bitmap, S, MAX>(x, fin, o, start, end, window, id);
            let mut i = start;
            while i < end {
                let n = (end - i).min(64);
                let mut w = bad(i, n);
                while w != 0 {
                    o[i - start + w.trailing_zeros() as usize] = T::TOP;
                    w &= w - 1;
                }
                i += n;
            }
        }
        start = end;
    }
    sink.put(fin, c0, c1);
}

/// [`extreme_two_level`] for rows `[r0, r1)` (`r0 >= window`, on a
/// sub-block): the sub-blocks before `r0` that windows reach are folded to
/// their maxima (their prefixes are not our rows), the others as there.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn two_level_rows<T: FastNum, V: Valid, S: Scan, const MAX: bool>(x: &[T], va: V, window: usize, sub: usize, r0: usize, r1: usize, out: &mut [T]) -> bool {
    debug_assert!(sub >= 1 && window >= 4 * sub && r0 >= window && r0 % sub == 0 && r1 <= x.len());
    let id = if MAX { T::LOWEST } else { T::HIGHEST };
    let first_j = r0 + 1 - window;
    let last_j = r1 - window;
    let a0 = first_j / sub;
    // m[b - a0]: the maximum of sub-block b.
    let mut m: Vec<T> = Vec::with_capacity(r1.div_ceil(sub) - a0);
    for b in a0..r0 / sub {
        let xs = &x[b * sub..(b + 1) * sub];
        if has_nan(xs, va, b * sub) {
            return false;
        }
        m.push(fold_valid::<T, V, MAX>(xs, va, b * sub, id));
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
            if has_nan(&x[done..e], va, done) {
                return false;
            }
            m.push(S::prefix::<T, V, MAX>(&x[done..e], va, done, &mut out[done - r0..e - r0], id));
            done = e;
        }
        let mid1 = fold::<T, MAX>(&m[a + 1 - a0..b1 - a0], id);
        let mid2 = if j_split < jhi { pick::<T, MAX, false>(mid1, m[b1 - a0]) } else { mid1 };
        let s = fold_valid::<T, V, MAX>(&x[jhi..jend], va, jhi, id);
        let w1 = window - 1;
        let s = S::suffix::<T, V, MAX>(&x[j_split..jhi], va, j_split, &mut out[j_split + w1 - r0..jhi + w1 - r0], s, mid2);
        S::suffix::<T, V, MAX>(&x[jlo..j_split], va, jlo, &mut out[jlo + w1 - r0..j_split + w1 - r0], s, mid1);
    }
    true
}

/// [`extreme_values`] compiled for `level` (capped to what the CPU has):
/// tests run every level, benchmarks compare them.
pub fn extreme_values_at<T: FastNum, const MAX: bool>(level: Level, x: &[T], window: usize) -> Vec<T> {
    extreme_valid_at::<T, All, MAX>(level, x, All, window)
}

/// [`extreme_values_at`] of the valid rows (`va`), where a window has one
/// (else a filler: the row is masked).
pub(super) fn extreme_valid_at<T: FastNum, V: Valid, const MAX: bool>(level: Level, x: &[T], va: V, window: usize) -> Vec<T> {
    let mut out = super::buffer_to_fill::<T>(x.len());
    match level {
        // SAFETY: a level runs only when `detected()` found the CPU
        // feature.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if detected() == Level::Avx512 => unsafe { kernel_avx512::<T, V, MAX>(x, va, window, &mut out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 | Level::Avx512 if detected() != Level::Portable => unsafe { kernel_avx2::<T, V, MAX>(x, va, window, &mut out) },
        // x86-64's baseline has SSE2: two lanes.
        #[cfg(target_arch = "x86_64")]
        _ => kernel::<T, V, simd::Vector<simd::X>, MAX>(x, va, window, &mut out),
        #[cfg(not(target_arch = "x86_64"))]
        _ => kernel::<T, V, Scalar, MAX>(x, va, window, &mut out),
    }
    super::assert_filled(&out);
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, window: usize, out: &mut [T]) {
    kernel::<T, V, simd::Vector<simd::Y>, MAX>(x, va, window, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512<T: FastNum, V: Valid, const MAX: bool>(x: &[T], va: V, window: usize, out: &mut [T]) {
    kernel::<T, V, simd::Vector<simd::Z>, MAX>(x, va, window, out)
}

/// The single source of every level (inlined into each wrapper).
#[inline(always)]
fn kernel<T: FastNum, V: Valid, S: Scan, const MAX: bool>(x: &[T], va: V, window: usize, out: &mut [T]) {
    let n = x.len();
    if window >= TWO_LEVEL_FROM && extreme_two_level::<T, V, S, MAX>(x, va, window, SUB, out) {
        return;
    }
    chunks::<T, V, NoSink, S, MAX>(x, va, NoSink, window, 0, n, false, out);
}

fn extreme_of<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, threads: usize) -> Vec<T> {
    // The validity read in the kernel (issue 36: a filled copy first cost
    // min and max a third of their speed with 1% nulls).
    match col.nulls {
        None => extreme_values_split::<T, All, MAX>(col.values, All, window, threads),
        Some(nb) => extreme_values_split::<T, Bitmap, MAX>(col.values, Bitmap::new(nb), window, threads),
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
    range_of::<T>(&hi, &lo, super::out_nulls(col.nulls, col.len(), window, min_periods.max(1)))
}

/// The output column of a range: each row's max minus its min.
fn range_of<T: FastNum>(hi: &[T], lo: &[T], nulls: Option<arrow_buffer::NullBuffer>) -> ArrayRef {
    let out: Vec<T::Wide> = hi.iter().zip(lo).map(|(&a, &b)| T::range(a, b)).collect();
    <T::Wide as ToArrow>::to_arrow(out, nulls)
}

/// `nan="skip"` max (`MAX`) or min of a float column: its NaN rows
/// missing, as its null rows are, without a NaN-to-null pass over the
/// column first (issue 36: that pass read the column from memory once
/// more). Every chunk is checked for NaN while in cache as before; one
/// holding one runs masked by its own mask ([`nan_chunk`]), which it puts
/// in the column's validity, from which the output's is derived. The
/// chunks and masks of the nulls path: the same bits. Long windows too
/// (the two-level kernel stops at the first NaN anyway): with 1% NaN at
/// window 2^16 it took 0.69x the time of the pass and the nulls path.
/// The chunks' NaN checks are the nulls path's own, so a column without
/// NaN pays only for its validity words (no search for a first NaN, as
/// the sums make).
pub(super) fn rolling_extreme_skip<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, min_periods: usize, threads: usize) -> ArrayRef {
    let (out, nb) = extreme_skip_split::<T, MAX>(col, window, threads);
    T::to_arrow(out, super::out_nulls(nb.as_ref(), col.len(), window, min_periods.max(1)))
}

/// `nan="skip"` range: [`rolling_extreme_skip`]'s max and min.
pub(super) fn rolling_range_skip<T: FastNum>(col: &Column<T>, window: usize, min_periods: usize, threads: usize) -> ArrayRef {
    let (hi, nb) = extreme_skip_split::<T, true>(col, window, threads);
    let (lo, _) = extreme_skip_split::<T, false>(col, window, threads);
    range_of::<T>(&hi, &lo, super::out_nulls(nb.as_ref(), col.len(), window, min_periods.max(1)))
}

/// [`extreme_values_split`] with `nan="skip"`: the values and the
/// validity its output derives from ([`Words::validity`]).
fn extreme_skip_split<T: FastNum, const MAX: bool>(col: &Column<T>, window: usize, threads: usize) -> (Vec<T>, Option<arrow_buffer::NullBuffer>) {
    let (x, n) = (col.values, col.len());
    let level = detected();
    let words = Words::zeroed(n);
    let sink = Words(&words, false);
    let mut out = super::buffer_to_fill::<T>(n);
    let cs = super::cuts(n, threads, |r| Some(r / 8 * 8).filter(|&c| c >= window));
    match col.nulls {
        None => super::par_ranges(&mut out[..], &cs, |r0, r1, o| extreme_rows_sink::<T, All, Words, MAX>(level, x, All, sink, window, r0, r1, o)),
        Some(nb) => {
            let va = Bitmap::new(nb);
            super::par_ranges(&mut out[..], &cs, |r0, r1, o| extreme_rows_sink::<T, Bitmap, Words, MAX>(level, x, va, sink, window, r0, r1, o))
        }
    }
    super::assert_filled(&out);
    (out, Words::validity(words, n, col.nulls))
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
        assert!(extreme_two_level::<f64, All, S, MAX>(x, All, w, sub, &mut out));
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
    use arrow_buffer::NullBuffer;

    /// `x` with rows missing at random (`p`) and a run of `run` missing
    /// rows, garbage in their slots; one valid NaN at `nan` if given.
    fn masked(mut x: Vec<f64>, p: f64, run: usize, seed: u64, nan: Option<prop::sample::Index>) -> (Vec<f64>, Vec<bool>) {
        let n = x.len();
        let mut s = seed | 1;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut ok: Vec<bool> = (0..n).map(|_| ((next() >> 11) as f64 / (1u64 << 53) as f64) >= p).collect();
        if n > 0 {
            let at = next() as usize % n;
            ok[at..(at + run).min(n)].iter_mut().for_each(|o| *o = false);
        }
        if let (Some(k), true) = (nan, n > 0) {
            let k = k.index(n);
            x[k] = f64::NAN;
            ok[k] = true;
        }
        for i in 0..n {
            if !ok[i] {
                x[i] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 7.5][(next() % 4) as usize];
            }
        }
        (x, ok)
    }

    /// Rolling max / min of the valid rows by a monotonic deque (NaN above
    /// every number, earliest of ties); None where the window has no
    /// valid row.
    fn valid_deque<const MAX: bool>(x: &[f64], ok: &[bool], w: usize) -> Vec<Option<f64>> {
        let better = |v: f64, u: f64| if MAX { v > u || (v.is_nan() && !u.is_nan()) } else { v < u || (u.is_nan() && !v.is_nan()) };
        let mut q = std::collections::VecDeque::new();
        let mut out = Vec::with_capacity(x.len());
        for i in 0..x.len() {
            if ok[i] {
                while q.back().is_some_and(|&j: &usize| better(x[i], x[j])) {
                    q.pop_back();
                }
                q.push_back(i);
            }
            while q.front().is_some_and(|&j| j + w <= i) {
                q.pop_front();
            }
            out.push(q.front().map(|&j| x[j]));
        }
        out
    }

    /// The masked two-level kernel, whole (from row 0) and from row `r0`,
    /// for max (k = 0) and min (k = 1), with every scan this CPU runs;
    /// None where it gave up.
    fn for_each_masked_scan(x: &[f64], nb: &NullBuffer, w: usize, sub: usize, r0: usize, mut f: impl FnMut(&str, usize, Option<Vec<f64>>, Option<Vec<f64>>)) {
        fn run<S: Scan, const MAX: bool>(x: &[f64], nb: &NullBuffer, w: usize, sub: usize, r0: usize) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
            let mut out = vec![0.0; x.len()];
            let all = extreme_two_level::<f64, Bitmap, S, MAX>(x, Bitmap::new(nb), w, sub, &mut out).then_some(out);
            let rows = (r0 < x.len()).then(|| {
                let mut o = vec![0.0; x.len() - r0];
                two_level_rows::<f64, Bitmap, S, MAX>(x, Bitmap::new(nb), w, sub, r0, x.len(), &mut o).then_some(o)
            });
            (all, rows.flatten())
        }
        let mut each = |name: &str, hi: (Option<Vec<f64>>, Option<Vec<f64>>), lo: (Option<Vec<f64>>, Option<Vec<f64>>)| {
            f(name, 0, hi.0, hi.1);
            f(name, 1, lo.0, lo.1);
        };
        each("scalar", run::<Scalar, true>(x, nb, w, sub, r0), run::<Scalar, false>(x, nb, w, sub, r0));
        #[cfg(target_arch = "x86_64")]
        {
            use crate::ops::reduce::available;
            use simd::{Vector, X, Y, Z};
            each("sse2", run::<Vector<X>, true>(x, nb, w, sub, r0), run::<Vector<X>, false>(x, nb, w, sub, r0));
            if available().contains(&Level::Avx2) {
                // the vector code outside its level's wrapper: the same
                // results, slower code
                each("avx2", run::<Vector<Y>, true>(x, nb, w, sub, r0), run::<Vector<Y>, false>(x, nb, w, sub, r0));
            }
            if available().contains(&Level::Avx512) {
                each("avx512", run::<Vector<Z>, true>(x, nb, w, sub, r0), run::<Vector<Z>, false>(x, nb, w, sub, r0));
            }
        }
    }


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
                    extreme_rows_at::<f64, All, true>(level, &x, All, w, r0, r1, &mut o);
                    prop_assert_eq!(bits(&o), bits(&hi[r0..r1]), "max {:?} w={} rows {}..{}", level, w, r0, r1);
                    extreme_rows_at::<f64, All, false>(level, &x, All, w, r0, r1, &mut o);
                    prop_assert_eq!(bits(&o), bits(&lo[r0..r1]), "min {:?} w={} rows {}..{}", level, w, r0, r1);
                }
                // The two-level form on small sub-blocks (NaN-free only).
                let r0 = (r0 / sub * sub).max(w.div_ceil(sub) * sub);
                if w >= 4 * sub && r0 < n && !x.iter().any(|v| v.is_nan()) {
                    let r1 = r0 + b % (n - r0 + 1);
                    let mut o = vec![0.0; r1 - r0];
                    prop_assert!(two_level_rows::<f64, All, Scalar, true>(&x, All, w, sub, r0, r1, &mut o));
                    prop_assert_eq!(bits(&o), bits(&hi[r0..r1]), "two-level max w={} sub={} rows {}..{}", w, sub, r0, r1);
                    prop_assert!(two_level_rows::<f64, All, Scalar, false>(&x, All, w, sub, r0, r1, &mut o));
                    prop_assert_eq!(bits(&o), bits(&lo[r0..r1]), "two-level min w={} sub={} rows {}..{}", w, sub, r0, r1);
                }
            }
        }

        /// Missing rows (any density, runs longer than the window, garbage
        /// in their slots: NaN, +-inf, 7.5), valid NaN or not: every level,
        /// rows from any `r0`, equal the deque on the valid rows bit for bit
        /// where the window holds one. Fails if a scan drops the mask.
        #[test]
        fn masked_bit_for_bit(
            x in prop::collection::vec(value(), 0..9000),
            p in prop_oneof![Just(0.0), Just(0.01), Just(0.5), Just(1.0), 0.0f64..1.0],
            run in prop_oneof![Just(0usize), 1usize..20_000],
            w in prop_oneof![1usize..40, 1usize..9100],
            nan in prop::option::of(any::<prop::sample::Index>()),
            seed in any::<u64>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let (x, ok) = masked(x, p, run, seed, nan);
            let nb = NullBuffer::from(ok.clone());
            let (hi, lo) = (valid_deque::<true>(&x, &ok, w), valid_deque::<false>(&x, &ok, w));
            let n = x.len();
            let r0 = if w < n { w + cut.index(n - w) } else { 0 };
            for level in crate::ops::reduce::available() {
                let got = [extreme_valid_at::<f64, Bitmap, true>(level, &x, Bitmap::new(&nb), w), extreme_valid_at::<f64, Bitmap, false>(level, &x, Bitmap::new(&nb), w)];
                let mut rows = [vec![0.0; n - r0], vec![0.0; n - r0]];
                extreme_rows_at::<f64, Bitmap, true>(level, &x, Bitmap::new(&nb), w, r0, n, &mut rows[0]);
                extreme_rows_at::<f64, Bitmap, false>(level, &x, Bitmap::new(&nb), w, r0, n, &mut rows[1]);
                for (k, want) in [&hi, &lo].into_iter().enumerate() {
                    for i in 0..n {
                        if let Some(v) = want[i] {
                            prop_assert_eq!(got[k][i].to_bits(), v.to_bits(), "{} {:?} w={} row {}", ["max", "min"][k], level, w, i);
                        }
                    }
                    for i in r0..n {
                        if want[i].is_some() {
                            prop_assert_eq!(rows[k][i - r0].to_bits(), got[k][i].to_bits(), "{} rows from {} {:?} w={} row {}", ["max", "min"][k], r0, level, w, i);
                        }
                    }
                }
            }
        }

        /// The two-level kernel (every scan, small sub-blocks, from row 0 and
        /// from a sub-block) with missing rows: NaN in null slots must not
        /// make it give up, and its values equal the deque's.
        #[test]
        fn masked_two_level_bit_for_bit(
            x in prop::collection::vec(value(), 0..600),
            p in prop_oneof![Just(0.0), Just(0.01), Just(0.5), Just(1.0), 0.0f64..1.0],
            run in prop_oneof![Just(0usize), 1usize..700],
            sub in 1usize..40,
            extra in 0usize..400,
            seed in any::<u64>(),
        ) {
            let (x, ok) = masked(x, p, run, seed, None);
            let nb = NullBuffer::from(ok.clone());
            let w = 4 * sub + extra;
            let want = [valid_deque::<true>(&x, &ok, w), valid_deque::<false>(&x, &ok, w)];
            let n = x.len();
            let r0 = w.div_ceil(sub) * sub;
            let mut bad = None;
            for_each_masked_scan(&x, &nb, w, sub, r0, |name, k, got, rows| {
                let ok_all = (0..n).all(|i| want[k][i].is_none_or(|v| got.as_ref().is_some_and(|g| g[i].to_bits() == v.to_bits())));
                let ok_rows = r0 >= n || (r0..n).all(|i| want[k][i].is_none_or(|v| rows.as_ref().is_some_and(|g| g[i - r0].to_bits() == v.to_bits())));
                if !ok_all || !ok_rows {
                    bad = Some(format!("{name} {}", ["max", "min"][k]));
                }
            });
            prop_assert!(bad.is_none(), "{:?} w={} sub={} n={}", bad, w, sub, n);
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
