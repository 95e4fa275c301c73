//! Keyed per-row rolling (`rolling(..., keys=k)`): rows are grouped by key
//! once, each key's segment runs the unkeyed kernel (window capped to the
//! segment), and results are scattered back to input order, as pandas
//! `groupby(k).rolling(...)` re-aligned to the input.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray, UInt32Array};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, ScalarBuffer};

use crate::engine::{AggKind, DType, FromArrow, ToArrow};
use crate::fifo::Algorithm;
use crate::keys::{gather, gather_nulls, partition, KeyIndex, Partition};
use crate::engine::first_decrease;
use crate::rolling::shape::Shape;
use crate::{invalid, Error, Result};

/// Rows grouped by key, values gathered: the input of a keyed rolling.
struct Grouped {
    index: KeyIndex,
    ids: Vec<u32>,
    part: Partition,
    values: ArrayRef,
}

fn group_rows(keys: &dyn Array, values: &dyn Array) -> Result<Grouped> {
    if keys.len() != values.len() {
        return invalid!("keys have {} rows, values {}", keys.len(), values.len());
    }
    let dtype = DType::of(values.data_type())?;
    let mut index = KeyIndex::new();
    let ids = index.ids(keys)?;
    let part = partition(&ids, &mut Vec::new());
    let values: ArrayRef = crate::with_dtype!(dtype, |T| {
        let col = <T as FromArrow>::column(values)?;
        T::to_arrow(gather(col.values, &part.perm), gather_nulls(col.nulls, &part.perm))
    });
    Ok(Grouped { index, ids, part, values })
}

/// Run `f` on every key's segment of the grouped values and put the results
/// back in input row order.
fn per_segment(g: &Grouped, mut f: impl FnMut(&dyn Array, usize, usize) -> Result<ArrayRef>) -> Result<ArrayRef> {
    let mut out = per_segment_many(g, 1, |seg, lo, hi| Ok(vec![f(seg, lo, hi)?]))?;
    Ok(out.pop().expect("one output"))
}

/// [`per_segment`] for `f` returning `n_out` arrays per segment (one per
/// window of a `rolling_many`): each output put back in input row order
/// ([`PutBack`]: one scatter for short segments).
fn per_segment_many(
    g: &Grouped,
    n_out: usize,
    mut f: impl FnMut(&dyn Array, usize, usize) -> Result<Vec<ArrayRef>>,
) -> Result<Vec<ArrayRef>> {
    let segs = g.part.seg_key.len();
    if segs == 0 {
        return f(g.values.as_ref(), 0, 0);
    }
    let n = g.part.perm.len();
    let scatter = n / segs < GATHER_MIN_ROWS;
    let mut outs: Vec<PutBack> = Vec::with_capacity(n_out);
    for s in 0..segs {
        let (lo, hi) = (g.part.bounds[s], g.part.bounds[s + 1]);
        let res = f(&g.values.slice(lo, hi - lo), lo, hi)?;
        debug_assert_eq!(res.len(), n_out);
        if s == 0 {
            outs = res.iter().map(|a| PutBack::new(a.data_type(), n, segs, scatter)).collect();
        }
        // grouped row lo + k is input row perm[lo + k]
        let rows = &g.part.perm[lo..hi];
        for (o, a) in outs.iter_mut().zip(res) {
            o.put(a, rows)?;
        }
    }
    // Gathered outputs: grouped row p is input row perm[p]; the inverse
    // permutation, shared by all of them.
    let mut inv = None;
    if outs.iter().any(|o| matches!(o, PutBack::Gather { .. })) {
        let mut v = vec![0u32; n];
        for (p, &i) in g.part.perm.iter().enumerate() {
            v[i as usize] = p as u32;
        }
        inv = Some(UInt32Array::new(ScalarBuffer::from(v), None));
    }
    outs.into_iter().map(|o| o.finish(inv.as_ref())).collect()
}

/// Average segment length (rows per key) from which the segments are
/// concatenated and taken back to input order (two copies) rather than
/// scattered (one). Measured on 1M float64 rows (benches/
/// keyed_one_copy.py, DESIGN §3.4): with 100k keys (10-row segments) the
/// scatter is 2-3x concatenate-then-take (the concatenation of 100k small
/// arrays dominates); with 100 keys (10k-row segments) it was 1.6x slower
/// (a segment's writes land a cache line apart over the whole output,
/// where `take` reads at random and writes in order), and a one-copy
/// gather (`interleave` from the segments) was 1.5-2x slower than
/// concatenate-then-take at 100 to 10k keys.
const GATHER_MIN_ROWS: usize = 64;

/// One output of a keyed call put back in input row order. Short segments:
/// primitive results (every aggregation but collect, and the order
/// statistics) are scattered to their input rows as each segment arrives,
/// one copy, validity bits alongside (made only once a null is seen), and
/// the segment's array is dropped at once. Long segments, and any other
/// type (collect's lists): the segments are kept, concatenated and taken
/// back to input order (two copies, measured faster there).
enum PutBack {
    I32(Scatter<arrow_array::types::Int32Type>),
    I64(Scatter<Int64Type>),
    F32(Scatter<arrow_array::types::Float32Type>),
    F64(Scatter<arrow_array::types::Float64Type>),
    Gather { dtype: arrow_schema::DataType, parts: Vec<ArrayRef> },
}

struct Scatter<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    valid: Option<BooleanBufferBuilder>,
}

impl<T: ArrowPrimitiveType> Scatter<T> {
    fn new(n: usize) -> Self {
        Scatter { values: vec![T::Native::default(); n], valid: None }
    }

    fn put(&mut self, a: &dyn Array, rows: &[u32]) {
        let a = a.as_primitive::<T>();
        for (&r, &v) in rows.iter().zip(a.values().iter()) {
            self.values[r as usize] = v;
        }
        if let Some(nb) = a.nulls().filter(|nb| nb.null_count() > 0) {
            let n = self.values.len();
            let valid = self.valid.get_or_insert_with(|| {
                let mut b = BooleanBufferBuilder::new(n);
                b.append_n(n, true);
                b
            });
            for (k, &r) in rows.iter().enumerate() {
                if nb.is_null(k) {
                    valid.set_bit(r as usize, false);
                }
            }
        }
    }

    fn finish(self) -> ArrayRef {
        let nulls = self.valid.map(|mut b| NullBuffer::new(b.finish()));
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(self.values), nulls))
    }
}

impl PutBack {
    fn new(dtype: &arrow_schema::DataType, n: usize, segs: usize, scatter: bool) -> PutBack {
        use arrow_schema::DataType as D;
        match dtype {
            D::Int32 if scatter => PutBack::I32(Scatter::new(n)),
            D::Int64 if scatter => PutBack::I64(Scatter::new(n)),
            D::Float32 if scatter => PutBack::F32(Scatter::new(n)),
            D::Float64 if scatter => PutBack::F64(Scatter::new(n)),
            d => PutBack::Gather { dtype: d.clone(), parts: Vec::with_capacity(segs) },
        }
    }

    /// The next segment's result `a`, whose row `k` belongs at input row
    /// `rows[k]`.
    fn put(&mut self, a: ArrayRef, rows: &[u32]) -> Result<()> {
        debug_assert_eq!(a.len(), rows.len());
        match self {
            PutBack::I32(s) => s.put(a.as_ref(), rows),
            PutBack::I64(s) => s.put(a.as_ref(), rows),
            PutBack::F32(s) => s.put(a.as_ref(), rows),
            PutBack::F64(s) => s.put(a.as_ref(), rows),
            PutBack::Gather { dtype, parts } => {
                if a.data_type() != dtype {
                    return invalid!("keyed segments gave {} and {}", dtype, a.data_type());
                }
                parts.push(a);
            }
        }
        Ok(())
    }

    /// `inv[i]`: the grouped row of input row `i` (gathered outputs).
    fn finish(self, inv: Option<&UInt32Array>) -> Result<ArrayRef> {
        Ok(match self {
            PutBack::I32(s) => s.finish(),
            PutBack::I64(s) => s.finish(),
            PutBack::F32(s) => s.finish(),
            PutBack::F64(s) => s.finish(),
            PutBack::Gather { mut parts, .. } => {
                let grouped = if parts.len() == 1 {
                    parts.pop().expect("one part")
                } else {
                    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                    arrow_select::concat::concat(&refs).map_err(|e| Error::Invalid(e.to_string()))?
                };
                let inv = inv.expect("inverse permutation made for gathered outputs");
                arrow_select::take::take(grouped.as_ref(), inv, None).map_err(|e| Error::Invalid(e.to_string()))?
            }
        })
    }
}

/// Per-row rolling within each key: row `i` aggregates the last `window`
/// rows of its key up to and including `i` (pandas
/// `groupby(k).rolling(window)`, re-aligned to the input rows), with
/// pandas' `closed=` / `center=` within each key; pandas has no `step` on
/// groupby rolling, so `step` must be 1.
pub fn rolling_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    window: usize,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    crate::rolling::check_window(window, min_periods)?;
    check_no_step(shape)?;
    let g = group_rows(keys, values)?;
    per_segment(&g, |seg, lo, _| {
        let out = crate::rolling::rolling_dyn(seg, window, agg, min_periods, algo, shape)?;
        Ok(input_rows(&g, agg, out, lo))
    })
}

fn check_no_step(shape: Shape) -> Result<()> {
    if shape.step != 1 {
        return invalid!("step is not supported with keys (pandas' groupby().rolling has no step), got step={}", shape.step);
    }
    Ok(())
}

/// [`rolling_keyed_dyn`] for median / quantile / rank (`windows`: one
/// array per window, as `rolling_many`), `closed=` / `center=` within each
/// key; `step` must be 1.
pub fn rolling_order_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    windows: &[usize],
    stat: crate::rolling::OrderStat,
    min_periods: Option<usize>,
    kernel: crate::rolling::OrderKernel,
    shape: Shape,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        crate::rolling::check_window(w, min_periods)?;
    }
    check_no_step(shape)?;
    let g = group_rows(keys, values)?;
    per_segment_many(&g, windows.len(), |seg, _, _| {
        crate::rolling::rolling_many_order_dyn(seg, windows, stat, min_periods, kernel, shape)
    })
}

/// argmax / argmin report row positions: within a key's segment they count
/// from the segment; map them to the input row index.
fn input_rows(g: &Grouped, agg: AggKind, out: ArrayRef, lo: usize) -> ArrayRef {
    if !matches!(agg, AggKind::ArgMax | AggKind::ArgMin) {
        return out;
    }
    let Some(a) = out.as_any().downcast_ref::<PrimitiveArray<Int64Type>>() else {
        return out;
    };
    let vals: Vec<i64> = a.values().iter().map(|&p| g.part.perm[lo + p.max(0) as usize] as i64).collect();
    Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(vals), a.nulls().cloned()))
}


/// Many windows and aggregations at once, keyed: one array per
/// (aggregation, window), aggregation-major (`aggs[0]` over every window,
/// then `aggs[1]`, ...). The rows are grouped once for all of them (the
/// grouping, not the kernels, is most of a keyed call's cost on short
/// segments); each key's segment runs [`crate::rolling::rolling_many_dyn`]
/// per aggregation (the shared max / min pass, windows capped to the
/// segment), as an unkeyed `rolling_many` over that key's rows alone would.
pub fn rolling_many_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    windows: &[usize],
    aggs: &[AggKind],
    min_periods: Option<usize>,
    algo: Algorithm,
) -> Result<Vec<ArrayRef>> {
    for &w in windows {
        crate::rolling::check_window(w, min_periods)?;
    }
    if aggs.is_empty() {
        return invalid!("rolling_many needs at least one aggregation");
    }
    let g = group_rows(keys, values)?;
    per_segment_many(&g, windows.len() * aggs.len(), |seg, lo, _| {
        let mut outs = Vec::with_capacity(windows.len() * aggs.len());
        for &agg in aggs {
            let got = crate::rolling::rolling_many_dyn(seg, windows, agg, min_periods, algo)?;
            outs.extend(got.into_iter().map(|o| input_rows(&g, agg, o, lo)));
        }
        Ok(outs)
    })
}

/// Per-row time rolling within each key (pandas
/// `groupby(k).rolling("5s", on=ts)`): row `i` aggregates the rows `j` of its
/// key with `ts[j] > ts[i] - range`, up to and including `i`, or as
/// `closed=` / `center=` say; `step` must be 1. Times must be non-null and
/// non-decreasing within each key (keys may interleave).
#[allow(clippy::too_many_arguments)]
pub fn rolling_time_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    agg: AggKind,
    min_periods: Option<usize>,
    algo: Algorithm,
    shape: Shape,
) -> Result<ArrayRef> {
    check_no_step(shape)?;
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    let g = group_rows(keys, values)?;
    let ts_arr = times_per_key(&g, ts, values.len())?;
    per_segment(&g, |seg, lo, hi| {
        let out = crate::rolling::time::rolling_time_dyn(seg, &ts_arr.slice(lo, hi - lo), range, agg, min_periods, algo, shape)?;
        Ok(input_rows(&g, agg, out, lo))
    })
}

/// The time column gathered into key segments (as the values), each
/// segment's times checked non-decreasing: the error names the first
/// offending row in input order, over all keys.
fn times_per_key(g: &Grouped, ts: &dyn Array, n: usize) -> Result<PrimitiveArray<Int64Type>> {
    let times = crate::engine::event_times(ts, n)?;
    let tsg = gather(times, &g.part.perm);
    let mut worst: Option<(usize, usize, i64)> = None;
    for s in 0..g.part.seg_key.len() {
        let (lo, hi) = (g.part.bounds[s], g.part.bounds[s + 1]);
        if let Some((j, prev)) = first_decrease(&tsg[lo..hi], None) {
            let row = g.part.perm[lo + j] as usize;
            if worst.is_none_or(|w| row < w.0) {
                worst = Some((row, lo + j, prev));
            }
        }
    }
    if let Some((row, p, prev)) = worst {
        return Err(crate::engine::time_order_error(row, Some(g.index.describe(g.ids[row])), tsg[p], prev));
    }
    Ok(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(tsg), None))
}

/// [`crate::rolling::order::rolling_order_time_dyn`] within each key
/// (`closed=` / `center=` too; `step` must be 1).
pub fn rolling_order_time_keyed_dyn(
    keys: &dyn Array,
    values: &dyn Array,
    ts: &dyn Array,
    range: i64,
    stat: crate::rolling::OrderStat,
    min_periods: Option<usize>,
    shape: Shape,
) -> Result<ArrayRef> {
    check_no_step(shape)?;
    if range <= 0 {
        return invalid!("time window must be positive, got {range}");
    }
    let g = group_rows(keys, values)?;
    let ts_arr = times_per_key(&g, ts, values.len())?;
    per_segment(&g, |seg, lo, hi| {
        crate::rolling::order::rolling_order_time_dyn(seg, &ts_arr.slice(lo, hi - lo), range, stat, min_periods, shape)
    })
}

