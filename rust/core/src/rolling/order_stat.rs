//! What a rolling order statistic is, apart from how it is computed: the
//! statistic (median / quantile / rank, `q`, `interpolation`), the value
//! order as `u64` keys (Spark's double order), and the quantile and rank
//! formulas every kernel reads. A leaf: the kernels (`sorted_buffer`,
//! `median_sort`, `fenwick_rank`) and their dispatcher `order` import it,
//! and it imports none of them (semantics in docs/DESIGN.md §5.10).

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array};
use arrow_buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};

use crate::{invalid, Result};

/// pandas' `interpolation=` of `rolling(...).quantile(q, interpolation)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    Linear,
    Lower,
    Higher,
    Midpoint,
    Nearest,
}

impl Interpolation {
    pub const NAMES: [&'static str; 5] = ["linear", "lower", "higher", "midpoint", "nearest"];

    pub fn parse(s: &str) -> Result<Interpolation> {
        Ok(match s {
            "linear" => Interpolation::Linear,
            "lower" => Interpolation::Lower,
            "higher" => Interpolation::Higher,
            "midpoint" => Interpolation::Midpoint,
            "nearest" => Interpolation::Nearest,
            _ => return invalid!("interpolation must be one of {:?}, got {s:?}", Self::NAMES),
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// One rolling order statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OrderStat {
    Median,
    Quantile { q: f64, interpolation: Interpolation },
    Rank,
}

impl OrderStat {
    pub const NAMES: [&'static str; 3] = ["median", "quantile", "rank"];

    /// `None` when `agg` is not an order statistic (and neither keyword is
    /// given); errors for a missing / out-of-range `q`, an unknown
    /// interpolation, or either keyword on another aggregation.
    pub fn parse(agg: &str, q: Option<f64>, interpolation: Option<&str>) -> Result<Option<OrderStat>> {
        let stat = match agg {
            "median" => OrderStat::Median,
            "rank" => OrderStat::Rank,
            "quantile" => {
                let Some(q) = q else {
                    return invalid!("quantile needs q (a number in [0, 1])");
                };
                if !(0.0..=1.0).contains(&q) {
                    return invalid!("q must be in [0, 1], got {q}");
                }
                let interpolation = Interpolation::parse(interpolation.unwrap_or("linear"))?;
                return Ok(Some(OrderStat::Quantile { q, interpolation }));
            }
            _ => {
                if q.is_some() || interpolation.is_some() {
                    return invalid!("q and interpolation apply to agg=\"quantile\" only, not {agg:?}");
                }
                return Ok(None);
            }
        };
        if q.is_some() || interpolation.is_some() {
            return invalid!("q and interpolation apply to agg=\"quantile\" only, not {agg:?}");
        }
        Ok(Some(stat))
    }

    pub fn name(&self) -> &'static str {
        match self {
            OrderStat::Median => "median",
            OrderStat::Quantile { .. } => "quantile",
            OrderStat::Rank => "rank",
        }
    }

    /// The (q, interpolation) a median or quantile reads; `None` for rank.
    pub fn quantile(&self) -> Option<(f64, Interpolation)> {
        match *self {
            OrderStat::Median => Some((0.5, Interpolation::Midpoint)),
            OrderStat::Quantile { q, interpolation } => Some((q, interpolation)),
            OrderStat::Rank => None,
        }
    }
}

const SIGN: u64 = 1 << 63;
/// Key of NaN: above every number. `u64::MAX` and 0 stay free as the
/// sentinels of [`super::median_sort`].
pub const NAN_KEY: u64 = u64::MAX - 1;

/// Order-preserving key: `key(a) < key(b)` iff `a < b` in Spark's double
/// order (NaN largest, all NaNs equal, -0.0 == 0.0).
#[inline(always)]
pub fn key(x: f64) -> u64 {
    if x != x {
        return NAN_KEY;
    }
    // -0.0 and +0.0 are one key (+0.0's); `x + 0.0` maps -0.0 to +0.0.
    let b = (x + 0.0).to_bits();
    if b & SIGN != 0 {
        !b
    } else {
        b | SIGN
    }
}

/// The value of a key.
#[inline(always)]
pub fn unkey(k: u64) -> f64 {
    if k == NAN_KEY {
        f64::NAN
    } else if k & SIGN != 0 {
        f64::from_bits(k & !SIGN)
    } else {
        f64::from_bits(!k)
    }
}

/// The value at position `q * (n - 1)` of a sorted window of `n >= 1`
/// values read through `kth`, as pandas' `roll_quantile` computes it.
#[inline(always)]
pub fn quantile_of(n: usize, q: f64, interp: Interpolation, kth: impl Fn(usize) -> f64) -> f64 {
    QuantileAt::new(n, q).read(interp, kth)
}

/// Where [`quantile_of`] reads in a window of `n` values, computed once:
/// the kernels' full windows all have the same count, so the float
/// arithmetic of the position leaves the row loop (same operations, so
/// the same bits).
#[derive(Clone, Copy, Debug)]
pub struct QuantileAt {
    /// `floor(q * (n - 1))`, the lower neighbour.
    pub idx: usize,
    /// `q * (n - 1) - idx`; 0 reads `idx` alone (also for `n == 1`).
    frac: f64,
}

impl QuantileAt {
    #[inline(always)]
    pub fn new(n: usize, q: f64) -> Self {
        if n == 1 {
            return QuantileAt { idx: 0, frac: 0.0 };
        }
        let f = q * (n - 1) as f64;
        let idx = f as usize;
        QuantileAt { idx, frac: f - idx as f64 }
    }

    /// The quantile from the window's sorted values read through `kth`
    /// (`idx` and, when `frac != 0`, `idx + 1`).
    #[inline(always)]
    pub fn read(self, interp: Interpolation, kth: impl Fn(usize) -> f64) -> f64 {
        let (idx, frac) = (self.idx, self.frac);
        if frac == 0.0 {
            return kth(idx);
        }
        match interp {
            Interpolation::Linear => {
                let (lo, hi) = (kth(idx), kth(idx + 1));
                // Equal neighbours are the answer (Spark's percentile does the
                // same); pandas' formula alone gives NaN for two equal infinities.
                if lo == hi {
                    lo
                } else {
                    lo + (hi - lo) * frac
                }
            }
            Interpolation::Lower => kth(idx),
            Interpolation::Higher => kth(idx + 1),
            Interpolation::Midpoint => (kth(idx) + kth(idx + 1)) / 2.0,
            Interpolation::Nearest => {
                if frac == 0.5 {
                    kth(if idx % 2 == 0 { idx } else { idx + 1 })
                } else if frac < 0.5 {
                    kth(idx)
                } else {
                    kth(idx + 1)
                }
            }
        }
    }
}

/// Where a quantile reads: the position `idx` and whether `idx + 1` is read
/// too (for kernels that fetch the two neighbours at once).
#[inline(always)]
pub fn quantile_pos(n: usize, q: f64) -> usize {
    if n <= 1 {
        0
    } else {
        (q * (n - 1) as f64) as usize
    }
}

/// bottleneck's `move_rank` from the counts: `less` values below the row's
/// own, `equal` equal to it (itself included), `n` in the window.
#[inline(always)]
pub fn rank_of(less: usize, equal: usize, n: usize) -> f64 {
    if n == 1 {
        return 0.0;
    }
    let r = (2 * less + equal - 1) as f64 / 2.0 / (n - 1) as f64;
    2.0 * (r - 0.5)
}

/// A float64 result with its validity.
pub(crate) fn finish(vals: Vec<f64>, valid: Option<Vec<bool>>) -> ArrayRef {
    finish_nulls(vals, valid.map(|v| NullBuffer::new(BooleanBuffer::from(v))))
}

/// [`finish`] with the validity as a bitmap already.
pub(crate) fn finish_nulls(vals: Vec<f64>, nulls: Option<NullBuffer>) -> ArrayRef {
    Arc::new(Float64Array::new(ScalarBuffer::from(vals), nulls.filter(|n| n.null_count() > 0)))
}

/// Columns of at least this many rows are split over threads by the
/// kernels (a Spark task's batch of a few thousand rows stays on its
/// thread).
pub(crate) const THREAD_MIN_ROWS: usize = 1 << 18;

/// Threads for a column of `n` rows: 1 below [`THREAD_MIN_ROWS`], else
/// [`super::thread_cap`].
pub(crate) fn threads(n: usize) -> usize {
    if n < THREAD_MIN_ROWS {
        return 1;
    }
    super::thread_cap()
}
