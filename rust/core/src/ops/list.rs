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

/// The oldest non-null value.
pub struct First<T>(PhantomData<T>);
impl<T: Num> Monoid for First<T> {
    type Agg = Option<T>;
    const NAME: &'static str = "first";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = false;
    #[inline(always)]
    fn identity() -> Option<T> {
        None
    }
    #[inline(always)]
    fn same(a: &Option<T>, b: &Option<T>) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &Option<T>, b: &Option<T>) -> Option<T> {
        if a.is_some() { *a } else { *b }
    }
}
impl<T: Num> AggOp for First<T> {
    type In = T;
    type Out = T;
    #[inline(always)]
    fn lift(x: T, _: i64) -> Option<T> {
        Some(x)
    }
    #[inline(always)]
    fn lower(a: &Option<T>) -> Option<T> {
        *a
    }
}

/// The newest non-null value.
pub struct Last<T>(PhantomData<T>);
impl<T: Num> Monoid for Last<T> {
    type Agg = Option<T>;
    const NAME: &'static str = "last";
    const SELECTIVE: bool = true;
    const COMMUTATIVE: bool = false;
    #[inline(always)]
    fn identity() -> Option<T> {
        None
    }
    #[inline(always)]
    fn same(a: &Option<T>, b: &Option<T>) -> bool {
        a == b
    }
    #[inline(always)]
    fn combine(a: &Option<T>, b: &Option<T>) -> Option<T> {
        if b.is_some() { *b } else { *a }
    }
}
impl<T: Num> AggOp for Last<T> {
    type In = T;
    type Out = T;
    #[inline(always)]
    fn lift(x: T, _: i64) -> Option<T> {
        Some(x)
    }
    #[inline(always)]
    fn lower(a: &Option<T>) -> Option<T> {
        *a
    }
}
