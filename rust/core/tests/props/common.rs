//! Generators, oracles and comparisons shared by the property tests
//! (`mod common;` in each test file). Not every test file uses every item.

#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, Int64Array, LargeStringArray, PrimitiveArray, StringArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use proptest::prelude::*;
use proptest::strategy::Union;
use slidewise_core::engine::AggKind;
use slidewise_core::ops::*;
use slidewise_core::stream::count::CountSpec;
use slidewise_core::stream::time::TimeSpec;
use slidewise_core::stream::{self, Batch, Counts, QuerySpec, Stream, StreamSpec, Window};
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
        M::In: FromF64 + ToCell,
        M::Out: Close + ToVal;
}

/// `p.run::<M>()` for the operation type `M` over `T` of every `AggKind`.
pub fn every_op<T, P: PerOp + ?Sized>(p: &P) -> Result<(), TestCaseError>
where
    T: Num + FromF64 + arith::LiftSum + Close + ToCell,
    T::Wide: Close + ToCell,
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
            AggKind::FirstNonNull => p.run::<FirstNonNull<T>>()?,
            AggKind::LastNonNull => p.run::<LastNonNull<T>>()?,
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

/// The naive answer for every window of a count-window query: the
/// independent oracle ([`plain`]) over exactly the rows the window covers,
/// null where fewer than `min_periods` of them are non-null; with the
/// window's scale for [`agrees`].
pub fn naive(spec: &CountSpec, xs: &[Option<f64>], flush: bool) -> (Vec<i64>, Vec<i64>, Vec<(Val, f64)>) {
    let (r, s) = (spec.range as usize, spec.slide as usize);
    let n = xs.len();
    let mut ends: Vec<(usize, usize)> = (1..=n / s).map(|k| (k * s, k * s)).collect();
    if flush && n % s != 0 && ((n / s + 1) * s).saturating_sub(r) < n {
        ends.push(((n / s + 1) * s, n));
    }
    let (mut st, mut en, mut vals) = (vec![], vec![], vec![]);
    for (edge, end) in ends {
        let start = edge.saturating_sub(r);
        let rows: Vec<(i64, Option<Cell>)> = (start.min(end)..end).map(|j| (j as i64, xs[j].map(Cell::F))).collect();
        st.push(start as i64);
        en.push(end as i64);
        vals.push(plain_rows(spec.agg, &rows, spec.min_periods));
    }
    (st, en, vals)
}

/// Row 0 of a one-row result agrees with the oracle's `(value, scale)`.
pub fn agrees_row(agg: AggKind, got: &dyn Array, want: &(Val, f64)) -> bool {
    agrees(agg, &val_at(got, 0), &want.0, want.1)
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

// ---------------------------------------------------------------------------
// The independent oracle: every aggregation as a plain fold over the raw
// values of one window, written from docs/DESIGN.md's definitions. It uses none of
// the operations' lift / combine / lower, so a bug in an operation's own
// definition (NaN order, the variance merge, a tie rule) shows against it.

/// One input value as the column holds it: floats widened to f64 (exact for
/// f32), integers to i64 (exact).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    F(f64),
    I(i64),
}

impl Cell {
    fn f(self) -> f64 {
        match self {
            Cell::F(x) => x,
            Cell::I(x) => x as f64,
        }
    }
}

/// An expected or computed result: null, a float, an integer or a list.
#[derive(Clone, Debug)]
pub enum Val {
    Null,
    F(f64),
    I(i64),
    L(Vec<Val>),
}

/// Typed inputs as [`Cell`]s.
pub trait ToCell: Copy {
    fn cell(self) -> Cell;
}
impl ToCell for f64 {
    fn cell(self) -> Cell {
        Cell::F(self)
    }
}
impl ToCell for f32 {
    fn cell(self) -> Cell {
        Cell::F(self as f64)
    }
}
impl ToCell for i64 {
    fn cell(self) -> Cell {
        Cell::I(self)
    }
}
impl ToCell for i32 {
    fn cell(self) -> Cell {
        Cell::I(self as i64)
    }
}

/// Typed outputs as [`Val`]s.
pub trait ToVal {
    fn val(&self) -> Val;
}
impl<T: ToCell> ToVal for T {
    fn val(&self) -> Val {
        match self.cell() {
            Cell::F(x) => Val::F(x),
            Cell::I(x) => Val::I(x),
        }
    }
}
impl<T: ToCell> ToVal for Vec<T> {
    fn val(&self) -> Val {
        Val::L(self.iter().map(|x| x.val()).collect())
    }
}
impl ToVal for Cell {
    fn val(&self) -> Val {
        match *self {
            Cell::F(x) => Val::F(x),
            Cell::I(x) => Val::I(x),
        }
    }
}
impl<T: ToVal> ToVal for Option<T> {
    fn val(&self) -> Val {
        self.as_ref().map_or(Val::Null, |x| x.val())
    }
}

/// Row `i` of an Arrow result.
pub fn val_at(a: &dyn Array, i: usize) -> Val {
    use arrow_array::cast::AsArray;
    if a.is_null(i) {
        return Val::Null;
    }
    match a.data_type() {
        DataType::Float64 => Val::F(a.as_primitive::<Float64Type>().value(i)),
        DataType::Float32 => Val::F(a.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Int64 => Val::I(a.as_primitive::<Int64Type>().value(i)),
        DataType::Int32 => Val::I(a.as_primitive::<Int32Type>().value(i) as i64),
        DataType::List(_) => {
            let l = a.as_list::<i32>().value(i);
            Val::L((0..l.len()).map(|k| val_at(l.as_ref(), k)).collect())
        }
        other => panic!("unexpected result type {other}"),
    }
}

/// A column's rows as cells, `None` where null.
pub fn cells(a: &dyn Array) -> Vec<Option<Cell>> {
    (0..a.len())
        .map(|i| match val_at(a, i) {
            Val::Null => None,
            Val::F(x) => Some(Cell::F(x)),
            Val::I(x) => Some(Cell::I(x)),
            Val::L(_) => panic!("list input"),
        })
        .collect()
}

/// Exact sum of finite floats (Shewchuk's partials, as Python's
/// `math.fsum`), IEEE for NaN and infinities.
pub fn exact_sum(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut partials, mut special) = (Vec::<f64>::new(), 0.0f64);
    for mut x in xs {
        if !x.is_finite() {
            special += x; // NaN, inf, inf + -inf = NaN
            continue;
        }
        let mut i = 0;
        for k in 0..partials.len() {
            let mut y = partials[k];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        partials.push(x);
    }
    if special != 0.0 || special.is_nan() {
        return special;
    }
    // Sum from the top, as fsum does, then fix the half-way rounding case.
    let mut hi = 0.0;
    while let Some(x) = partials.pop() {
        let y = hi;
        hi = x + y;
        let lo = y - (hi - x);
        if lo != 0.0 {
            if let Some(&next) = partials.last() {
                if (lo < 0.0 && next < 0.0) || (lo > 0.0 && next > 0.0) {
                    let y2 = lo * 2.0;
                    let x2 = hi + y2;
                    if y2 == x2 - hi {
                        hi = x2;
                    }
                }
            }
            break;
        }
    }
    hi
}

/// Where a value stands in slidewise's total order: NaN above every number,
/// -0.0 equal to 0.0 (docs/DESIGN.md, "Nulls and NaN").
fn order_key(c: Cell) -> (u8, f64, i64) {
    match c {
        Cell::F(x) if x.is_nan() => (1, 0.0, 0),
        Cell::F(x) => (0, if x == 0.0 { 0.0 } else { x }, 0),
        Cell::I(x) => (0, 0.0, x),
    }
}
fn order_cmp(a: Cell, b: Cell) -> std::cmp::Ordering {
    let (x, y) = (order_key(a), order_key(b));
    x.0.cmp(&y.0).then(x.1.partial_cmp(&y.1).unwrap()).then(x.2.cmp(&y.2))
}

/// The answer of `agg` over every row of one window, oldest first, each
/// with its row position and its value (`None`: null), and the window's
/// scale for [`agrees`]: null when fewer than `min_periods` values are
/// non-null. `first` / `last` take the first / last row even when its value
/// is null (Spark's default); every other operation skips null rows.
pub fn plain_rows(agg: AggKind, rows: &[(i64, Option<Cell>)], min_periods: u64) -> (Val, f64) {
    let vals: Vec<(i64, Cell)> = rows.iter().filter_map(|&(p, c)| c.map(|c| (p, c))).collect();
    let v = if (vals.len() as u64) < min_periods {
        Val::Null
    } else {
        match (agg, rows.first(), rows.last()) {
            (AggKind::First | AggKind::Last, None, _) => Val::Null,
            (AggKind::First, Some(r), _) | (AggKind::Last, _, Some(r)) => r.1.map_or(Val::Null, |c| ToVal::val(&c)),
            _ => plain(agg, &vals),
        }
    };
    (v, scale(&vals))
}

/// The answer of `agg` over the non-null rows `rows` of one window, oldest
/// first, each with its row position (`first` / `last`: of the non-null
/// rows, Spark's `ignorenulls=True`).
pub fn plain(agg: AggKind, rows: &[(i64, Cell)]) -> Val {
    use std::cmp::Ordering::*;
    let n = rows.len();
    let float = rows.iter().any(|r| matches!(r.1, Cell::F(_)));
    match agg {
        AggKind::Count => return Val::I(n as i64),
        AggKind::Collect => return Val::L(rows.iter().map(|r| ToVal::val(&r.1)).collect()),
        _ if n == 0 => return Val::Null,
        _ => {}
    }
    let fs = || rows.iter().map(|r| r.1.f());
    // The oldest row whose value is the extreme (ties: the oldest).
    let best = |want: std::cmp::Ordering| {
        let mut b = rows[0];
        for &r in &rows[1..] {
            if order_cmp(r.1, b.1) == want {
                b = r;
            }
        }
        b
    };
    match agg {
        AggKind::Sum if float => Val::F(exact_sum(fs())),
        AggKind::Sum => Val::I(rows.iter().fold(0i64, |s, r| if let Cell::I(x) = r.1 { s.wrapping_add(x) } else { s })),
        AggKind::Mean if float => Val::F(exact_sum(fs()) / n as f64),
        AggKind::Mean => Val::F(rows.iter().map(|r| if let Cell::I(x) = r.1 { x as i128 } else { 0 }).sum::<i128>() as f64 / n as f64),
        AggKind::Geomean => Val::F((exact_sum(fs().map(f64::ln)) / n as f64).exp()),
        AggKind::Max => ToVal::val(&best(Greater).1),
        AggKind::Min => ToVal::val(&best(Less).1),
        AggKind::ArgMax => Val::I(best(Greater).0),
        AggKind::ArgMin => Val::I(best(Less).0),
        AggKind::MaxCount | AggKind::MinCount => {
            let b = best(if agg == AggKind::MaxCount { Greater } else { Less }).1;
            Val::I(rows.iter().filter(|r| order_cmp(r.1, b) == Equal).count() as i64)
        }
        AggKind::Range => match (best(Greater).1, best(Less).1) {
            (Cell::I(hi), Cell::I(lo)) => Val::I(hi.wrapping_sub(lo)),
            (hi, lo) => Val::F(hi.f() - lo.f()),
        },
        AggKind::Var | AggKind::Std | AggKind::VarPop | AggKind::StdPop => {
            let ddof = matches!(agg, AggKind::Var | AggKind::Std) as usize;
            if n <= ddof {
                return Val::Null;
            }
            if fs().any(|x| !x.is_finite()) {
                return Val::F(f64::NAN);
            }
            let m = exact_sum(fs()) / n as f64;
            let v = exact_sum(fs().map(|x| (x - m) * (x - m))) / (n - ddof) as f64;
            Val::F(if matches!(agg, AggKind::Std | AggKind::StdPop) { v.sqrt() } else { v })
        }
        AggKind::First | AggKind::FirstNonNull => ToVal::val(&rows[0].1),
        AggKind::Last | AggKind::LastNonNull => ToVal::val(&rows[n - 1].1),
        AggKind::Count | AggKind::Collect => unreachable!(),
    }
}

/// The largest magnitude among finite values of a window: the scale that
/// float results of sums and moments are compared at.
pub fn scale(rows: &[(i64, Cell)]) -> f64 {
    rows.iter().map(|r| r.1.f().abs()).filter(|x| x.is_finite()).fold(0.0, f64::max)
}

/// `got` agrees with the oracle's `want` for `agg` over a window of values of
/// magnitude up to `scale`: integers and lists exactly, floats to 1e-9
/// relative (NaN equals NaN, -0.0 equals 0.0), where sums and means also
/// allow 1e-9 x scale and variances 1e-9 x scale² (cancellation). max and
/// min bit for bit (all NaNs equal): the oracle keeps the earliest tied
/// row, so a zero's sign is that row's (docs/DESIGN.md §5.3).
pub fn agrees(agg: AggKind, got: &Val, want: &Val, scale: f64) -> bool {
    if matches!(agg, AggKind::Max | AggKind::Min) {
        if let (Val::F(g), Val::F(w)) = (got, want) {
            return (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        }
    }
    let floor = match agg {
        AggKind::Sum | AggKind::Mean | AggKind::Range => scale,
        AggKind::Var | AggKind::VarPop => scale * scale,
        _ => 0.0,
    };
    let rel = if agg == AggKind::Geomean { 1e-6 } else { 1e-9 };
    if let (AggKind::Std | AggKind::StdPop, Val::F(g), Val::F(w)) = (agg, got, want) {
        // A std's error is the square root of its variance's: compare squares.
        return go(&Val::F(g * g), &Val::F(w * w), scale * scale, rel);
    }
    fn go(g: &Val, w: &Val, floor: f64, rel: f64) -> bool {
        match (g, w) {
            (Val::Null, Val::Null) => true,
            (Val::I(a), Val::I(b)) => a == b,
            (Val::F(a), Val::F(b)) => {
                (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rel * a.abs().max(b.abs()).max(floor)
            }
            (Val::L(a), Val::L(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| go(x, y, 0.0, rel)),
            _ => false,
        }
    }
    go(got, want, floor, rel)
}

/// The oracle's answer at row `i` of a per-row rolling window over `col`
/// (`window` rows ending at the row, at least `min_periods` non-null rows),
/// with the window's scale.
pub fn plain_at(col: &[Option<Cell>], window: usize, agg: AggKind, min_periods: Option<usize>, i: usize) -> (Val, f64) {
    let lo = (i + 1).saturating_sub(window);
    let rows: Vec<(i64, Option<Cell>)> = (lo..=i).map(|j| (j as i64, col[j])).collect();
    plain_rows(agg, &rows, min_periods.unwrap_or(0) as u64)
}

/// [`plain_at`] for every row.
pub fn plain_rolling(col: &[Option<Cell>], window: usize, agg: AggKind, min_periods: Option<usize>) -> Vec<(Val, f64)> {
    (0..col.len()).map(|i| plain_at(col, window, agg, min_periods, i)).collect()
}

// ---------------------------------------------------------------------------
// Streams through the spine (`slidewise_core::stream`)

/// A count-window query.
pub fn count_query(s: &CountSpec) -> QuerySpec {
    QuerySpec { agg: s.agg, window: Window::Count { range: s.range, slide: s.slide }, min_periods: s.min_periods, arg: None }
}

/// A time-window query.
pub fn time_query(s: &TimeSpec) -> QuerySpec {
    QuerySpec { agg: s.agg, window: Window::Time { range: s.range, slide: s.slide }, min_periods: s.min_periods, arg: None }
}

/// A stream of `queries` over `dtype` running `algorithm`, every other
/// option at its default (in order, unkeyed, Pairs).
pub fn stream_spec(queries: Vec<QuerySpec>, dtype: slidewise_core::engine::DType, algorithm: &str) -> StreamSpec {
    let mut s = StreamSpec::new(queries, dtype);
    s.algorithm = algorithm.to_string();
    s
}

/// Row `i` of a key column as text (int32, int64, string, large string).
pub fn key_text(a: &dyn Array, i: usize) -> String {
    let any = a.as_any();
    if let Some(x) = any.downcast_ref::<Int64Array>() {
        x.value(i).to_string()
    } else if let Some(x) = any.downcast_ref::<Int32Array>() {
        x.value(i).to_string()
    } else if let Some(x) = any.downcast_ref::<StringArray>() {
        x.value(i).to_string()
    } else if let Some(x) = any.downcast_ref::<LargeStringArray>() {
        x.value(i).to_string()
    } else {
        panic!("unexpected key type {}", a.data_type())
    }
}

/// One emitted window: its key (keyed streams), bounds, value (a 1-row
/// array) and the batch that emitted it (the flush is batch `batches`).
#[derive(Clone, Debug)]
pub struct Emitted {
    pub key: Option<String>,
    pub start: i64,
    pub end: i64,
    pub value: ArrayRef,
    pub batch: usize,
}

/// Everything a stream gave back over a run.
#[derive(Debug)]
pub struct Run {
    /// Per query, its windows in emission order.
    pub windows: Vec<Vec<Emitted>>,
    /// Late rows in arrival order: key, time, value.
    pub late: Vec<(Option<String>, i64, Val)>,
    pub counts: Counts,
    /// The watermark after each push.
    pub watermarks: Vec<Option<i64>>,
    /// Number of batches pushed (the flush's batch index).
    pub batches: usize,
}

/// The input columns of a run.
#[derive(Clone, Copy)]
pub struct Cols<'a> {
    pub values: &'a ArrayRef,
    pub ts: Option<&'a ArrayRef>,
    pub keys: Option<&'a ArrayRef>,
}

/// Append the windows of one push or flush.
pub fn take_windows(into: &mut [Vec<Emitted>], res: Vec<stream::QueryWindows>, batch: usize) {
    assert_eq!(into.len(), res.len(), "one result per query");
    for (q, w) in res.into_iter().enumerate() {
        assert_eq!(w.start.len(), w.end.len());
        assert_eq!(w.start.len(), w.values.len());
        if let Some(k) = &w.keys {
            assert_eq!(k.len(), w.start.len());
        }
        for i in 0..w.start.len() {
            into[q].push(Emitted {
                key: w.keys.as_ref().map(|k| key_text(k.as_ref(), i)),
                start: w.start[i],
                end: w.end[i],
                value: w.values.slice(i, 1),
                batch,
            });
        }
    }
}

/// The late rows a stream handed back.
pub fn take_late(s: &mut Box<dyn Stream>, into: &mut Vec<(Option<String>, i64, Val)>) {
    let l = s.take_late();
    let ts = l.ts.as_any().downcast_ref::<Int64Array>().expect("late times are int64");
    assert_eq!(ts.len(), l.values.len());
    for i in 0..ts.len() {
        into.push((l.keys.as_ref().map(|k| key_text(k.as_ref(), i)), ts.value(i), val_at(l.values.as_ref(), i)));
    }
}

/// Push `cols` cut at `cuts` ([`batch_ranges`]) into a new stream of
/// `spec`, then flush. With `restore = Some((b, spec2))` the stream is saved
/// after batch `b` and replaced by its restore under `spec2`. The first
/// error (building, pushing, restoring) is returned.
pub fn run_stream(
    spec: &StreamSpec,
    cols: Cols<'_>,
    cuts: &[usize],
    restore: Option<(usize, &StreamSpec)>,
) -> slidewise_core::Result<Run> {
    let mut s = stream::build(spec)?;
    let n = cols.values.len();
    let mut windows: Vec<Vec<Emitted>> = vec![Vec::new(); spec.queries.len()];
    let mut late = Vec::new();
    let mut watermarks = Vec::new();
    let ranges = batch_ranges(cuts, n);
    for (b, r) in ranges.iter().enumerate() {
        let (lo, len) = (r.start, r.end - r.start);
        let v = cols.values.slice(lo, len);
        let t = cols.ts.map(|t| t.slice(lo, len));
        let k = cols.keys.map(|k| k.slice(lo, len));
        let mut batch = Batch::new(v.as_ref());
        batch.time = t.as_deref();
        batch.keys = k.as_deref();
        let res = s.push(&batch)?;
        take_windows(&mut windows, res, b);
        watermarks.push(s.watermark());
        if b % 2 == 1 {
            take_late(&mut s, &mut late);
        }
        if let Some((at, spec2)) = restore {
            if at == b {
                let bytes = s.save();
                s = stream::restore(spec2, &bytes)?;
            }
        }
    }
    let res = s.flush()?;
    take_windows(&mut windows, res, ranges.len());
    take_late(&mut s, &mut late);
    let counts = s.counts();
    assert_eq!(counts.rows_in, counts.on_time + counts.late, "rows in = on time + late");
    Ok(Run { windows, late, counts, watermarks, batches: ranges.len() })
}

/// Bits of row `i` of a float or integer column (`None` when null): equal
/// bits, equal answers, NaN payloads and the zero's sign included.
pub fn bits(a: &dyn Array, i: usize) -> Option<u64> {
    use arrow_array::cast::AsArray;
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).to_bits(),
        DataType::Float32 => a.as_primitive::<Float32Type>().value(i).to_bits() as u64,
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i) as u64,
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i) as u32 as u64,
        other => panic!("unexpected output type {other}"),
    })
}

