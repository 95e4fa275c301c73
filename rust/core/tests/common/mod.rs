//! Generators, oracles and comparisons shared by the property tests
//! (`mod common;` in each test file). Not every test file uses every item.

#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, PrimitiveArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use proptest::prelude::*;
use proptest::strategy::Union;
use slidewise_core::engine::{AggKind, DType};
use slidewise_core::fifo::Algorithm;
use slidewise_core::ops::*;
use slidewise_core::rolling::rolling_dyn;
use slidewise_core::window::{build, CountSpec};
use slidewise_core::AggOp;

// ---------------------------------------------------------------------------
// Generated values, float comparison, every operation type

/// Values with ties (small integers), negatives, NaN, ±inf and -0.0, plus
/// +0.0 when `plus_zero`; the bool (valid, else null) is true with
/// probability `p_valid`.
pub fn value(plus_zero: bool, p_valid: f64) -> impl Strategy<Value = (f64, bool)> {
    let mut v: Vec<(u32, BoxedStrategy<f64>)> = vec![
        (8, (-20i32..20).prop_map(|x| x as f64).boxed()),
        (2, (-1e6f64..1e6).boxed()),
        (1, Just(f64::NAN).boxed()),
        (1, Just(f64::INFINITY).boxed()),
        (1, Just(f64::NEG_INFINITY).boxed()),
        (1, Just(-0.0).boxed()),
    ];
    if plus_zero {
        v.push((1, Just(0.0).boxed()));
    }
    (Union::new_weighted(v), prop::bool::weighted(p_valid))
}

/// Both NaN, equal, or within 1e-9 relative of the larger magnitude, that
/// magnitude taken as at least `floor`.
pub fn near(a: f64, b: f64, floor: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(floor)
}

/// Floats compare with `near` (floor 1e-300), everything else exactly.
pub trait Close {
    fn close(&self, o: &Self) -> bool;
}
impl Close for f64 {
    fn close(&self, o: &f64) -> bool {
        near(*self, *o, 1e-300)
    }
}
impl Close for f32 {
    fn close(&self, o: &f32) -> bool {
        near(*self as f64, *o as f64, 1e-300)
    }
}
impl Close for i64 {
    fn close(&self, o: &i64) -> bool {
        self == o
    }
}
impl Close for i32 {
    fn close(&self, o: &i32) -> bool {
        self == o
    }
}
impl<T: Close> Close for Vec<T> {
    fn close(&self, o: &Vec<T>) -> bool {
        self.len() == o.len() && self.iter().zip(o).all(|(a, b)| a.close(b))
    }
}
impl<T: Close> Close for Option<T> {
    fn close(&self, o: &Option<T>) -> bool {
        match (self, o) {
            (None, None) => true,
            (Some(a), Some(b)) => a.close(b),
            _ => false,
        }
    }
}

/// Converts a generated value to the operation's input dtype.
pub trait FromF64: Copy {
    fn from_f64(x: f64) -> Self;
}
impl FromF64 for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
}
impl FromF64 for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
}
impl FromF64 for i64 {
    fn from_f64(x: f64) -> i64 {
        if x.is_finite() { x as i64 } else { 7 }
    }
}
impl FromF64 for i32 {
    fn from_f64(x: f64) -> i32 {
        if x.is_finite() { (x as i64 % 100_000) as i32 } else { -7 }
    }
}

/// A property of one operation type `M`, run for each by `every_op`.
pub trait PerOp {
    fn run<M>(&self) -> Result<(), TestCaseError>
    where
        M: AggOp,
        M::In: FromF64,
        M::Out: Close;
}

/// `p.run::<M>()` for the operation type `M` over `T` of every `AggKind`.
pub fn every_op<T, P: PerOp + ?Sized>(p: &P) -> Result<(), TestCaseError>
where
    T: Num + FromF64 + arith::LiftSum + Close,
    T::Wide: Close,
{
    for agg in AggKind::ALL {
        match agg {
            AggKind::Count => p.run::<Count<T>>()?,
            AggKind::Sum => p.run::<Sum<T>>()?,
            AggKind::Min => p.run::<Min<T>>()?,
            AggKind::Max => p.run::<Max<T>>()?,
            AggKind::Mean => p.run::<Mean<T>>()?,
            AggKind::Geomean => p.run::<Geomean<T>>()?,
            AggKind::MaxCount => p.run::<MaxCount<T>>()?,
            AggKind::MinCount => p.run::<MinCount<T>>()?,
            AggKind::Var => p.run::<Var<T, true, false>>()?,
            AggKind::Std => p.run::<Var<T, true, true>>()?,
            AggKind::VarPop => p.run::<Var<T, false, false>>()?,
            AggKind::StdPop => p.run::<Var<T, false, true>>()?,
            AggKind::ArgMax => p.run::<ArgMax<T>>()?,
            AggKind::ArgMin => p.run::<ArgMin<T>>()?,
            AggKind::Collect => p.run::<Collect<T>>()?,
            AggKind::First => p.run::<First<T>>()?,
            AggKind::Last => p.run::<Last<T>>()?,
            AggKind::Range => p.run::<Range<T>>()?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Streams and columns

/// One xorshift64 step (13, 7, 17): the new state.
pub fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// The row ranges a stream of `n` rows is pushed in when cut at `cuts`
/// (ascending; cuts past `n` clamp to it): consecutive, covering `0..n`,
/// empty batches included, the last one ending at `n`.
pub fn batch_ranges(cuts: &[usize], n: usize) -> Vec<std::ops::Range<usize>> {
    let mut prev = 0;
    cuts.iter()
        .chain(std::iter::once(&n))
        .map(|&c| {
            let c = c.clamp(prev, n);
            let r = prev..c;
            prev = c;
            r
        })
        .collect()
}

/// A column of the given dtype from `value`s; null slots (when `with_nulls`)
/// keep their (garbage) value. Integers: non-finite becomes 7, i32 wraps
/// modulo 100000.
pub fn typed_column(dt: &DataType, xs: &[(f64, bool)], with_nulls: bool) -> ArrayRef {
    let nulls = with_nulls.then(|| NullBuffer::from(xs.iter().map(|x| x.1).collect::<Vec<bool>>()));
    fn int(x: f64, m: i64) -> i64 {
        if x.is_finite() { x as i64 % m } else { 7 }
    }
    match dt {
        DataType::Float64 => Arc::new(PrimitiveArray::<Float64Type>::new(
            ScalarBuffer::from(xs.iter().map(|x| x.0).collect::<Vec<f64>>()),
            nulls,
        )),
        DataType::Float32 => Arc::new(PrimitiveArray::<Float32Type>::new(
            ScalarBuffer::from(xs.iter().map(|x| x.0 as f32).collect::<Vec<f32>>()),
            nulls,
        )),
        DataType::Int64 => Arc::new(PrimitiveArray::<Int64Type>::new(
            ScalarBuffer::from(xs.iter().map(|x| int(x.0, i64::MAX)).collect::<Vec<i64>>()),
            nulls,
        )),
        DataType::Int32 => Arc::new(PrimitiveArray::<Int32Type>::new(
            ScalarBuffer::from(xs.iter().map(|x| int(x.0, 100_000) as i32).collect::<Vec<i32>>()),
            nulls,
        )),
        _ => unreachable!(),
    }
}

// ---------------------------------------------------------------------------
// Count windows: input columns and the naive oracle

pub fn f64_column(xs: &[Option<f64>]) -> ArrayRef {
    Arc::new(Float64Array::from(xs.to_vec()))
}

/// Small integers (ties), NaN and nulls; up to 400 rows.
pub fn nullable_values() -> impl Strategy<Value = Vec<Option<f64>>> {
    prop::collection::vec(
        prop_oneof![
            10 => (-50i32..50).prop_map(|x| Some(x as f64)),
            1 => Just(Some(f64::NAN)),
            1 => Just(None),
        ],
        0..400,
    )
}

/// The naive answer for every window: fold exactly the rows it covers with
/// `rolling_dyn` semantics, by running a fresh stream over just those rows
/// with range = slide = their count (one partial, no Pairs involved).
pub fn naive(spec: &CountSpec, xs: &[Option<f64>], flush: bool) -> (Vec<i64>, Vec<i64>, Vec<ArrayRef>) {
    let (r, s) = (spec.range as usize, spec.slide as usize);
    let n = xs.len();
    let mut ends: Vec<(usize, usize)> = (1..=n / s).map(|k| (k * s, k * s)).collect();
    if flush && n % s != 0 && ((n / s + 1) * s).saturating_sub(r) < n {
        ends.push(((n / s + 1) * s, n));
    }
    let (mut st, mut en, mut vals) = (vec![], vec![], vec![]);
    for (edge, end) in ends {
        let start = edge.saturating_sub(r);
        let rows = &xs[start.min(end)..end];
        // Recalc over exactly these rows, through the independent per-row
        // path: the last row of a rolling window as long as the slice.
        let v = if rows.is_empty() {
            let mut w = build(&CountSpec { range: 1, slide: 1, ..spec.clone() }, DType::F64, Algorithm::Recalc).unwrap();
            w.flush().unwrap();
            let b = w.push(&f64_column(&[None]), None);
            assert!(b.is_err());
            unreachable!("windows always cover at least one row")
        } else {
            let mp = (spec.min_periods > 0).then_some(spec.min_periods as usize);
            let w = rows.len().max(spec.min_periods as usize);
            let out = rolling_dyn(f64_column(rows).as_ref(), w, spec.agg, mp, Algorithm::Recalc).unwrap();
            let last = out.slice(rows.len() - 1, 1);
            if spec.agg == AggKind::ArgMax {
                // rolling reports positions within the slice
                let a = last.as_any().downcast_ref::<Int64Array>().unwrap();
                Arc::new(a.iter().map(|x| x.map(|p| p + start as i64)).collect::<Int64Array>()) as ArrayRef
            } else {
                last
            }
        };
        st.push(start as i64);
        en.push(end as i64);
        vals.push(v);
    }
    (st, en, vals)
}

/// Float64 arrays row by row with `near` (floor 0), nulls matching; any
/// other type exactly.
pub fn same_approx(a: &dyn Array, b: &dyn Array) -> bool {
    if let (Some(x), Some(y)) = (a.as_any().downcast_ref::<Float64Array>(), b.as_any().downcast_ref::<Float64Array>()) {
        return x.len() == y.len()
            && (0..x.len()).all(|i| match (x.is_valid(i), y.is_valid(i)) {
                (false, false) => true,
                (true, true) => near(x.value(i), y.value(i), 0.0),
                _ => false,
            });
    }
    a.to_data() == b.to_data()
}
