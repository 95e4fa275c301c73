//! collect, first, last: order-sensitive (not commutative). collect is
//! invertible by position: removing the oldest partial drops exactly its
//! length from the front, so repeated values are never confused.

use std::marker::PhantomData;

use super::Num;
use crate::monoid::{AggOp, Monoid};

/// The window's non-null values, oldest first (Spark `collect_list`; an
/// empty window gives an empty list, not null).
pub struct Collect<T>(PhantomData<T>);
impl<T: Num> Monoid for Collect<T> {
    type Agg = Vec<T>;
    const NAME: &'static str = "collect";
    const COMMUTATIVE: bool = false;
    const INVERTIBLE: bool = true;
    fn identity() -> Vec<T> {
        Vec::new()
    }
    fn combine(a: &Vec<T>, b: &Vec<T>) -> Vec<T> {
        let mut r = Vec::with_capacity(a.len() + b.len());
        r.extend_from_slice(a);
        r.extend_from_slice(b);
        r
    }
    fn combine_into(acc: &mut Vec<T>, b: &Vec<T>) {
        acc.extend_from_slice(b);
    }
    fn inverse(acc: &Vec<T>, old: &Vec<T>) -> Vec<T> {
        acc[old.len().min(acc.len())..].to_vec()
    }
}
impl<T: Num> AggOp for Collect<T> {
    type In = T;
    type Out = Vec<T>;
    fn lift(x: T, _: i64) -> Vec<T> {
        vec![x]
    }
    fn lower(a: &Vec<T>) -> Option<Vec<T>> {
        Some(a.clone())
    }
}

/// Spark's `first(v)` (`ignorenulls=False`, its default): the value of the
/// window's oldest row, null when that row's value is null. A partial is
/// `None` for no rows and `Some(None)` for a null row: a null row is an input
/// here ([`AggOp::NULL_IS_ROW`]), not skipped as for every other operation.
pub struct First<T>(PhantomData<T>);
/// Spark's `last(v)`: the value of the window's newest row, null or not.
pub struct Last<T>(PhantomData<T>);
/// Spark's `first(v, ignorenulls=True)`: the oldest non-null value.
pub struct FirstNonNull<T>(PhantomData<T>);
/// Spark's `last(v, ignorenulls=True)`: the newest non-null value.
pub struct LastNonNull<T>(PhantomData<T>);

/// One of the four: `$agg` is the partial, `$oldest` whether the older side
/// wins, `$row` whether a null row counts.
macro_rules! positional {
    ($name:ident, $label:expr, $agg:ty, $oldest:expr, $row:expr, $lift:expr, $lower:expr, $bits:expr) => {
        impl<T: Num> Monoid for $name<T> {
            type Agg = Option<$agg>;
            const NAME: &'static str = $label;
            const SELECTIVE: bool = true;
            const COMMUTATIVE: bool = false;
            #[inline(always)]
            fn identity() -> Option<$agg> {
                None
            }
            #[inline(always)]
            fn same(a: &Option<$agg>, b: &Option<$agg>) -> bool {
                // bit for bit: -0.0 and 0.0 are different partials (`==`
                // called them the same, and SlideSide kept the older zero)
                a.map($bits) == b.map($bits)
            }
            #[inline(always)]
            fn combine(a: &Option<$agg>, b: &Option<$agg>) -> Option<$agg> {
                let (keep, other) = if $oldest { (a, b) } else { (b, a) };
                if keep.is_some() { *keep } else { *other }
            }
        }
        impl<T: Num> AggOp for $name<T> {
            type In = T;
            type Out = T;
            const NULL_IS_ROW: bool = $row;
            #[inline(always)]
            fn lift(x: T, _: i64) -> Option<$agg> {
                Some($lift(x))
            }
            #[inline(always)]
            fn lift_null(_: i64) -> Option<$agg> {
                if $row { Some(Default::default()) } else { None }
            }
            #[inline(always)]
            fn lower(a: &Option<$agg>) -> Option<T> {
                $lower(*a)
            }
        }
    };
}

positional!(First, "first", Option<T>, true, true, Some, Option::flatten, |v: Option<T>| v.map(T::exact_key));
positional!(Last, "last", Option<T>, false, true, Some, Option::flatten, |v: Option<T>| v.map(T::exact_key));
positional!(FirstNonNull, "first_ignore_nulls", T, true, false, std::convert::identity, std::convert::identity, T::exact_key);
positional!(LastNonNull, "last_ignore_nulls", T, false, false, std::convert::identity, std::convert::identity, T::exact_key);
