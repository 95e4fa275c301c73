//! Run-time dispatch: from an aggregation name, an Arrow dtype and an
//! algorithm name to one monomorphised implementation. The cost is one
//! `match` (or one virtual call) per Arrow batch, never per element.
//!
//! Also the Arrow edges of the core: reading a column as a typed slice plus
//! its validity bitmap without copying, and building result arrays.

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ListArray, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use crate::{Error, Result};

/// The aggregation names of docs/DESIGN.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    Count,
    Sum,
    Min,
    Max,
    Mean,
    Geomean,
    MaxCount,
    MinCount,
    Var,
    Std,
    VarPop,
    StdPop,
    ArgMax,
    ArgMin,
    Collect,
    First,
    Last,
    FirstNonNull,
    LastNonNull,
    Range,
}

impl AggKind {
    pub const ALL: [AggKind; 20] = [
        AggKind::Count,
        AggKind::Sum,
        AggKind::Min,
        AggKind::Max,
        AggKind::Mean,
        AggKind::Geomean,
        AggKind::MaxCount,
        AggKind::MinCount,
        AggKind::Var,
        AggKind::Std,
        AggKind::VarPop,
        AggKind::StdPop,
        AggKind::ArgMax,
        AggKind::ArgMin,
        AggKind::Collect,
        AggKind::First,
        AggKind::Last,
        AggKind::FirstNonNull,
        AggKind::LastNonNull,
        AggKind::Range,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AggKind::Count => "count",
            AggKind::Sum => "sum",
            AggKind::Min => "min",
            AggKind::Max => "max",
            AggKind::Mean => "mean",
            AggKind::Geomean => "geomean",
            AggKind::MaxCount => "maxcount",
            AggKind::MinCount => "mincount",
            AggKind::Var => "var",
            AggKind::Std => "std",
            AggKind::VarPop => "var_pop",
            AggKind::StdPop => "std_pop",
            AggKind::ArgMax => "argmax",
            AggKind::ArgMin => "argmin",
            AggKind::Collect => "collect",
            AggKind::First => "first",
            AggKind::Last => "last",
            AggKind::FirstNonNull => "first_ignore_nulls",
            AggKind::LastNonNull => "last_ignore_nulls",
            AggKind::Range => "range",
        }
    }

    pub fn parse(s: &str) -> Result<AggKind> {
        AggKind::ALL.iter().copied().find(|a| a.name() == s).ok_or_else(|| {
            Error::Invalid(format!(
                "unknown agg '{s}'; expected one of {}",
                AggKind::ALL.map(|a| a.name()).join(", ")
            ))
        })
    }
}

/// Run `$body` with `$Op` bound to the operation type of `$agg` over the
/// element type `$T`.
#[macro_export]
macro_rules! with_op {
    ($agg:expr, $T:ty, |$Op:ident| $body:expr) => {{
        use $crate::engine::AggKind as K;
        use $crate::ops::*;
        match $agg {
            K::Count => { type $Op = Count<$T>; $body }
            K::Sum => { type $Op = Sum<$T>; $body }
            K::Min => { type $Op = Min<$T>; $body }
            K::Max => { type $Op = Max<$T>; $body }
            K::Mean => { type $Op = Mean<$T>; $body }
            K::Geomean => { type $Op = Geomean<$T>; $body }
            K::MaxCount => { type $Op = MaxCount<$T>; $body }
            K::MinCount => { type $Op = MinCount<$T>; $body }
            K::Var => { type $Op = Var<$T, true, false>; $body }
            K::Std => { type $Op = Var<$T, true, true>; $body }
            K::VarPop => { type $Op = Var<$T, false, false>; $body }
            K::StdPop => { type $Op = Var<$T, false, true>; $body }
            K::ArgMax => { type $Op = ArgMax<$T>; $body }
            K::ArgMin => { type $Op = ArgMin<$T>; $body }
            K::Collect => { type $Op = Collect<$T>; $body }
            K::First => { type $Op = First<$T>; $body }
            K::Last => { type $Op = Last<$T>; $body }
            K::FirstNonNull => { type $Op = FirstNonNull<$T>; $body }
            K::LastNonNull => { type $Op = LastNonNull<$T>; $body }
            K::Range => { type $Op = Range<$T>; $body }
        }
    }};
}

/// The input dtypes slidewise aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    I32,
    I64,
    F32,
    F64,
}

impl DType {
    pub fn of(dt: &DataType) -> Result<DType> {
        Ok(match dt {
            DataType::Int32 => DType::I32,
            DataType::Int64 => DType::I64,
            DataType::Float32 => DType::F32,
            DataType::Float64 => DType::F64,
            other => {
                return Err(Error::Type(format!(
                    "unsupported value dtype {other}; slidewise aggregates int32, int64, float32 and float64 columns \
                     (cast other types first)"
                )))
            }
        })
    }

    pub fn parse(s: &str) -> Result<DType> {
        Ok(match s {
            "int32" | "i32" => DType::I32,
            "int64" | "i64" => DType::I64,
            // "float" and "double" are pyarrow's names (str(pa.float32())).
            "float32" | "f32" | "float" => DType::F32,
            "float64" | "f64" | "double" => DType::F64,
            _ => {
                return Err(Error::Type(format!(
                    "unsupported dtype '{s}'; expected int32, int64, float32 or float64"
                )))
            }
        })
    }

    /// The dtype the generic machinery (streams, the FIFO algorithms, the
    /// block kernel) computes in: int32 and float32 values widen exactly to
    /// int64 and float64, so each operation's state and loops are compiled
    /// for two dtypes instead of four (half the extension's code). Every
    /// operation gives the same answer on the widened values: sums, moments
    /// and ranges already accumulate in int64 / float64, and max, min,
    /// first, last and collect return input values, narrowed back exactly
    /// by [`narrow`]. The per-row kernels of `rolling` (sum, mean, max, min,
    /// count) stay compiled per input dtype: they are the hot loops.
    pub fn wide(self) -> DType {
        match self {
            DType::I32 | DType::I64 => DType::I64,
            DType::F32 | DType::F64 => DType::F64,
        }
    }

    pub fn arrow_type(self) -> DataType {
        match self {
            DType::I32 => DataType::Int32,
            DType::I64 => DataType::Int64,
            DType::F32 => DataType::Float32,
            DType::F64 => DataType::Float64,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
}

/// `values` converted to its wide dtype ([`DType::wide`]), or `None` when it
/// already is (use it as it is: no copy).
pub fn widen(values: &dyn Array) -> Result<Option<ArrayRef>> {
    use arrow_array::cast::AsArray;
    Ok(match values.data_type() {
        DataType::Int32 => Some(Arc::new(values.as_primitive::<Int32Type>().unary::<_, Int64Type>(|x| x as i64))),
        DataType::Float32 => Some(Arc::new(values.as_primitive::<Float32Type>().unary::<_, Float64Type>(|x| x as f64))),
        _ => {
            DType::of(values.data_type())?;
            None
        }
    })
}

/// The Arrow type of `agg`'s result over `dtype` values.
pub fn out_type(agg: AggKind, dtype: DType) -> DataType {
    crate::with_dtype!(dtype, |T| crate::with_op!(agg, T, |Op| <<Op as crate::monoid::AggOp>::Out as ToArrow>::data_type()))
}

/// A result computed over widened values ([`widen`]) as the type `want`
/// the operation gives over the input's own dtype: int64 / float64 values
/// (or list items) that came from int32 / float32 inputs convert back
/// exactly. Any other result is returned as it is.
pub fn narrow(out: ArrayRef, want: &DataType) -> ArrayRef {
    use arrow_array::cast::AsArray;
    match (out.data_type(), want) {
        (DataType::Int64, DataType::Int32) => {
            Arc::new(out.as_primitive::<Int64Type>().unary::<_, Int32Type>(|x| x as i32))
        }
        (DataType::Float64, DataType::Float32) => {
            Arc::new(out.as_primitive::<Float64Type>().unary::<_, Float32Type>(|x| x as f32))
        }
        (DataType::List(_), DataType::List(item)) if out.data_type() != want => {
            let l = out.as_list::<i32>();
            let values = narrow(l.values().clone(), item.data_type());
            Arc::new(ListArray::new(item.clone(), l.offsets().clone(), values, l.nulls().cloned()))
        }
        _ => out,
    }
}

/// [`with_dtype!`] for a wide dtype ([`DType::wide`]): compiles `$body`
/// for i64 and f64 only.
#[macro_export]
macro_rules! with_wide_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {{
        use $crate::engine::DType as D;
        match $dtype {
            D::I64 => { type $T = i64; $body }
            D::F64 => { type $T = f64; $body }
            D::I32 | D::F32 => unreachable!("not a wide dtype"),
        }
    }};
}

/// Run `$body` with `$T` bound to the Rust element type of `$dtype`.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {{
        use $crate::engine::DType as D;
        match $dtype {
            D::I32 => { type $T = i32; $body }
            D::I64 => { type $T = i64; $body }
            D::F32 => { type $T = f32; $body }
            D::F64 => { type $T = f64; $body }
        }
    }};
}

/// An event-time column as int64 values: `n` rows, none null (every row
/// needs a time; the error names the first null one).
pub fn event_times(ts: &dyn Array, n: usize) -> Result<&[i64]> {
    let t = i64::column(ts)?;
    if t.len() != n {
        return Err(Error::Invalid(format!("time column has {} rows, value column {n}", t.len())));
    }
    if let Some(nb) = t.nulls {
        if let Some(i) = (0..n).find(|&i| nb.is_null(i)) {
            return Err(Error::Invalid(format!("timestamp of row {i} is null; every row needs an event time")));
        }
    }
    Ok(t.values)
}

/// First `i` with `ts[i]` below the time before it (`last` before `ts[0]`).
pub fn first_decrease(ts: &[i64], last: Option<i64>) -> Option<(usize, i64)> {
    let mut prev = match last {
        Some(l) => l,
        None => *ts.first()?,
    };
    for (i, &t) in ts.iter().enumerate() {
        if t < prev {
            return Some((i, prev));
        }
        prev = t;
    }
    None
}

/// The error for a row whose time is below the time before it (within its
/// key, when `key` names one).
pub fn time_order_error(row: usize, key: Option<String>, t: i64, prev: i64) -> Error {
    let (within, which) = match key {
        Some(k) => (" within each key", format!(" (key {k})")),
        None => ("", String::new()),
    };
    Error::Invalid(format!(
        "timestamps must be non-decreasing{within}: row {row}{which} has time {t}, after {prev}; \
         sort the rows by time, or use a stream with lateness for out-of-order data"
    ))
}

/// A borrowed column: its values and its validity, no copy.
pub struct Column<'a, T> {
    pub values: &'a [T],
    /// `None`: no nulls.
    pub nulls: Option<&'a NullBuffer>,
}

impl<'a, T> Column<'a, T> {
    #[inline(always)]
    pub fn is_valid(&self, i: usize) -> bool {
        self.nulls.map_or(true, |n| n.is_valid(i))
    }
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// Row `i` lifted (`pos`: its position or argument), or `None` for a
    /// null row the operation skips (every operation but the positional
    /// `first` / `last`, see [`AggOp::NULL_IS_ROW`]).
    #[inline(always)]
    pub fn lift<M: crate::monoid::AggOp<In = T>>(&self, i: usize, pos: i64) -> Option<M::Agg>
    where
        T: Copy,
    {
        if self.is_valid(i) {
            Some(M::lift(self.values[i], pos))
        } else if M::NULL_IS_ROW {
            Some(M::lift_null(pos))
        } else {
            None
        }
    }
}

/// Element types that can be borrowed from an Arrow array.
pub trait FromArrow: Sized {
    fn column(a: &dyn Array) -> Result<Column<'_, Self>>;
}

macro_rules! from_arrow {
    ($t:ty, $arrow:ty) => {
        impl FromArrow for $t {
            fn column(a: &dyn Array) -> Result<Column<'_, $t>> {
                let p = a.as_any().downcast_ref::<PrimitiveArray<$arrow>>().ok_or_else(|| {
                    Error::Type(format!("expected a {} column, got {}", stringify!($t), a.data_type()))
                })?;
                let nulls = p.nulls().filter(|n| n.null_count() > 0);
                Ok(Column { values: p.values().as_ref(), nulls })
            }
        }
    };
}
from_arrow!(i32, Int32Type);
from_arrow!(i64, Int64Type);
from_arrow!(f32, Float32Type);
from_arrow!(f64, Float64Type);

/// Output element types, and how a column of them becomes an Arrow array.
pub trait ToArrow: Clone + Send + Sync + 'static {
    fn data_type() -> DataType;
    /// Build from values and an optional validity.
    fn to_arrow(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef;
    /// A placeholder for a null slot.
    fn null_value() -> Self;
}

macro_rules! to_arrow_prim {
    ($t:ty, $arrow:ty, $dt:expr) => {
        impl ToArrow for $t {
            fn data_type() -> DataType {
                $dt
            }
            fn to_arrow(values: Vec<$t>, nulls: Option<NullBuffer>) -> ArrayRef {
                let nulls = nulls.filter(|n| n.null_count() > 0);
                Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(values), nulls))
            }
            fn null_value() -> $t {
                <$t>::default()
            }
        }
    };
}
to_arrow_prim!(i32, Int32Type, DataType::Int32);
to_arrow_prim!(i64, Int64Type, DataType::Int64);
to_arrow_prim!(f32, Float32Type, DataType::Float32);
to_arrow_prim!(f64, Float64Type, DataType::Float64);

impl<T: ToArrow + Copy> ToArrow for Vec<T> {
    fn data_type() -> DataType {
        DataType::List(Arc::new(Field::new("item", T::data_type(), true)))
    }
    fn to_arrow(values: Vec<Vec<T>>, nulls: Option<NullBuffer>) -> ArrayRef {
        let offsets = OffsetBuffer::from_lengths(values.iter().map(|v| v.len()));
        let flat: Vec<T> = values.into_iter().flatten().collect();
        let child = T::to_arrow(flat, None);
        let nulls = nulls.filter(|n| n.null_count() > 0);
        Arc::new(ListArray::new(Arc::new(Field::new("item", T::data_type(), true)), offsets, child, nulls))
    }
    fn null_value() -> Vec<T> {
        Vec::new()
    }
}

/// Collects `Option<Out>` results into an Arrow array.
pub struct OutBuilder<O: ToArrow> {
    values: Vec<O>,
    valid: BooleanBufferBuilder,
    nulls: usize,
}

impl<O: ToArrow> OutBuilder<O> {
    pub fn with_capacity(n: usize) -> Self {
        OutBuilder { values: Vec::with_capacity(n), valid: BooleanBufferBuilder::new(n), nulls: 0 }
    }
    #[inline(always)]
    pub fn push(&mut self, v: Option<O>) {
        match v {
            Some(v) => {
                self.values.push(v);
                self.valid.append(true);
            }
            None => {
                self.values.push(O::null_value());
                self.valid.append(false);
                self.nulls += 1;
            }
        }
    }
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    pub fn finish(mut self) -> ArrayRef {
        let nulls = (self.nulls > 0).then(|| NullBuffer::new(self.valid.finish()));
        O::to_arrow(self.values, nulls)
    }
}
