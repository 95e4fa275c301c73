//! slidewise._slidewise: thin PyO3 bindings of slidewise-core.
//!
//! Nothing here aggregates: this file converts Arrow arrays in and out
//! (zero-copy through the Arrow PyCapsule interface), maps core errors to
//! Python exceptions, and releases the GIL while the core computes. The
//! Python package (python/slidewise) normalises inputs and validates
//! arguments first; the checks here are a second line so that no bad call
//! can reach a Rust panic.

mod keyed;
mod many;

use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, Int64Array};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::PyArray;

use slidewise_core::engine::{AggKind, DType, FromArrow};
use slidewise_core::fifo::{Algorithm, FifoAggregator};
use slidewise_core::monoid::AggOp;
use slidewise_core::partial::Slicing;
use slidewise_core::time_window::{self, TimeSpec, TimeWindowOp};
use slidewise_core::window::{self, CountSpec, SharedWindowOp, WindowBatch};
use slidewise_core::Error;

mod late;
mod optimizer;

/// Core errors become Python exceptions carrying the core's message: a dtype
/// problem is a `TypeError`, everything else a `ValueError`.
fn py_err(e: Error) -> PyErr {
    match e {
        Error::Type(_) => PyTypeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

fn core<T>(r: slidewise_core::Result<T>) -> PyResult<T> {
    r.map_err(py_err)
}

fn parse_algo(s: &str) -> PyResult<Algorithm> {
    core(Algorithm::parse(s))
}

fn to_pyarrow<'py>(py: Python<'py>, a: ArrayRef) -> PyResult<Bound<'py, PyAny>> {
    // pyarrow.array() imports through __arrow_c_array__: no copy.
    let pa_array = py.import(pyo3::intern!(py, "pyarrow"))?.getattr(pyo3::intern!(py, "array"))?;
    pa_array.call1((PyArray::from_array_ref(a),))
}

fn nonneg(what: &str, v: i64) -> PyResult<u64> {
    u64::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} must be >= 0, got {v}")))
}

// ---------------------------------------------------------------------------
// rolling

/// Per-row rolling aggregate of an int32/int64/float32/float64 array.
#[pyfunction]
#[pyo3(signature = (values, window, agg, min_periods=None, algorithm="auto"))]
fn rolling<'py>(
    py: Python<'py>,
    values: PyArray,
    window: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> PyResult<Bound<'py, PyAny>> {
    if window <= 0 {
        return Err(PyValueError::new_err(format!("window must be a positive number of rows, got {window}")));
    }
    let mp = min_periods.map(|m| nonneg("min_periods", m)).transpose()?;
    let agg = core(AggKind::parse(agg))?;
    let algo = parse_algo(algorithm)?;
    if let Some(m) = mp {
        if m > window as u64 {
            return Err(PyValueError::new_err(format!("min_periods ({m}) must be <= window ({window})")));
        }
    }
    let arr = values.array().clone();
    let n = arr.len();
    // A window longer than the data is the whole prefix: cap it so no
    // algorithm sizes its buffers from an arbitrary user number.
    let w = (window as u64).min(n.max(1) as u64) as usize;
    let mp = mp.map(|m| m as usize);
    let out = py.detach(|| match mp {
        // Never enough values: all null, of the type the aggregate has.
        Some(m) if m > w => slidewise_core::rolling::rolling_dyn(arr.slice(0, 0).as_ref(), w, agg, None, algo)
            .map(|empty| arrow_array::new_null_array(empty.data_type(), n)),
        _ => slidewise_core::rolling::rolling_dyn(arr.as_ref(), w, agg, mp, algo),
    });
    to_pyarrow(py, core(out)?)
}

// ---------------------------------------------------------------------------
// count-window streams

const STREAM_FORMAT: u8 = 1;

type Spec = (String, i64, i64, Option<i64>);

fn count_spec(s: &Spec) -> PyResult<CountSpec> {
    let (agg, range, slide, mp) = s;
    if *range <= 0 {
        return Err(PyValueError::new_err(format!("range must be a positive number of rows, got {range}")));
    }
    if *slide <= 0 {
        return Err(PyValueError::new_err(format!("slide must be a positive number of rows, got {slide}")));
    }
    let spec = CountSpec {
        agg: core(AggKind::parse(agg))?,
        range: *range as u64,
        slide: *slide as u64,
        min_periods: mp.map(|m| nonneg("min_periods", m)).transpose()?.unwrap_or(0),
    };
    core(spec.check())?;
    Ok(spec)
}

/// The state of several count-window queries over one value column. Queries
/// of one group (same aggregation, same argument column) share one plan:
/// partials cut once at the union of their edges, one final aggregator
/// (FlatFIT paper §2.3); each group is fed the same batch.
#[pyclass(module = "slidewise._slidewise", frozen)]
struct CountStream {
    state: Mutex<Groups>,
}

struct Groups {
    ops: Vec<Box<dyn SharedWindowOp>>,
    /// Query indices of each group, in the group's order.
    members: Vec<Vec<usize>>,
    n_queries: usize,
}

/// Group queries by the caller's group ids (default: by aggregation).
fn grouping(specs: &[CountSpec], groups: Option<Vec<usize>>) -> PyResult<Vec<Vec<usize>>> {
    let ids: Vec<usize> = match groups {
        Some(g) if g.len() == specs.len() => g,
        Some(g) => return Err(PyValueError::new_err(format!("groups has {} entries for {} queries", g.len(), specs.len()))),
        None => specs.iter().map(|s| s.agg as usize).collect(),
    };
    let mut order: Vec<usize> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (q, id) in ids.iter().enumerate() {
        match order.iter().position(|g| g == id) {
            Some(at) => members[at].push(q),
            None => {
                order.push(*id);
                members.push(vec![q]);
            }
        }
    }
    Ok(members)
}

impl CountStream {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Groups>> {
        self.state.lock().map_err(|_| PyRuntimeError::new_err("slidewise stream state is poisoned"))
    }

    fn build(
        specs: Vec<Spec>,
        dtype: &str,
        algorithm: &str,
        groups: Option<Vec<usize>>,
        partial: &str,
        mut saved: Option<&[u8]>,
    ) -> PyResult<Self> {
        let dtype = core(DType::parse(dtype))?;
        let algo = parse_algo(algorithm)?;
        let slicing = core(Slicing::parse(partial))?;
        let specs = specs.iter().map(count_spec).collect::<PyResult<Vec<_>>>()?;
        let members = grouping(&specs, groups)?;
        let mut ops = Vec::with_capacity(members.len());
        for m in &members {
            let g: Vec<CountSpec> = m.iter().map(|&q| specs[q].clone()).collect();
            ops.push(match saved.as_mut() {
                None => core(window::build_shared_with(&g, dtype, algo, slicing))?,
                Some(inp) => core(window::load_shared_with(&g, dtype, algo, slicing, inp))?,
            });
        }
        if saved.is_some_and(|rest| !rest.is_empty()) {
            return Err(PyValueError::new_err(Error::Corrupt("trailing bytes".into()).to_string()));
        }
        Ok(CountStream { state: Mutex::new(Groups { ops, members, n_queries: specs.len() }) })
    }
}

type Triple<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// Per-group results back into query order, as pyarrow arrays.
fn batches_to_py<'py>(py: Python<'py>, g: &Groups, per_group: Vec<Vec<WindowBatch>>) -> PyResult<Vec<Triple<'py>>> {
    let mut slots: Vec<Option<WindowBatch>> = (0..g.n_queries).map(|_| None).collect();
    for (m, bs) in g.members.iter().zip(per_group) {
        for (&q, b) in m.iter().zip(bs) {
            slots[q] = Some(b);
        }
    }
    slots
        .into_iter()
        .map(|b| {
            let b = b.expect("every query belongs to a group");
            Ok((
                to_pyarrow(py, Arc::new(Int64Array::from(b.start)))?,
                to_pyarrow(py, Arc::new(Int64Array::from(b.end)))?,
                to_pyarrow(py, b.values)?,
            ))
        })
        .collect()
}

#[pymethods]
impl CountStream {
    /// `specs`: one (agg, range, slide, min_periods) per query; `groups`:
    /// an optional group id per query (queries of one group share a plan
    /// and must have the same aggregation and argument column).
    #[new]
    #[pyo3(signature = (specs, dtype, algorithm, groups=None, partial="pairs"))]
    fn new(specs: Vec<Spec>, dtype: &str, algorithm: &str, groups: Option<Vec<usize>>, partial: &str) -> PyResult<Self> {
        Self::build(specs, dtype, algorithm, groups, partial, None)
    }

    /// Restore a stream from `save()`'s bytes; specs, dtype, algorithm and
    /// groups must be the ones it was built with.
    #[staticmethod]
    #[pyo3(signature = (specs, dtype, algorithm, state, groups=None, partial="pairs"))]
    fn load(
        specs: Vec<Spec>,
        dtype: &str,
        algorithm: &str,
        state: &[u8],
        groups: Option<Vec<usize>>,
        partial: &str,
    ) -> PyResult<Self> {
        let corrupt = |m: &str| PyValueError::new_err(Error::Corrupt(m.into()).to_string());
        if state.first() != Some(&STREAM_FORMAT) {
            return Err(corrupt("unknown checkpoint format"));
        }
        Self::build(specs, dtype, algorithm, groups, partial, Some(&state[1..]))
    }

    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let g = self.lock()?;
        let mut out = vec![STREAM_FORMAT];
        for op in g.ops.iter() {
            op.save(&mut out);
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Feed one batch. `args`: per query, None or an int64 array (no nulls)
    /// of argument values for argmax/argmin (one group shares one argument
    /// column). Returns, per query, the windows this batch completed as
    /// (window_start, window_end, value) arrays.
    #[pyo3(signature = (values, args=None))]
    fn push<'py>(&self, py: Python<'py>, values: PyArray, args: Option<Vec<Option<PyArray>>>) -> PyResult<Vec<Triple<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut Groups = &mut guard;
        let arr = values.array().clone();
        let args: Vec<Option<ArrayRef>> = match args {
            None => vec![None; g.n_queries],
            Some(a) if a.len() == g.n_queries => a.into_iter().map(|x| x.map(|p| p.array().clone())).collect(),
            Some(a) => return Err(PyValueError::new_err(format!("args has {} entries for {} queries", a.len(), g.n_queries))),
        };
        // Borrow each group's argument column as &[i64] before leaving the GIL.
        let mut arg_slices: Vec<Option<&[i64]>> = Vec::with_capacity(g.ops.len());
        for m in &g.members {
            arg_slices.push(match &args[m[0]] {
                None => None,
                Some(a) => {
                    let col = core(<i64 as FromArrow>::column(a.as_ref()))?;
                    if col.nulls.is_some() {
                        return Err(PyValueError::new_err("argument column must not hold nulls"));
                    }
                    if col.len() != arr.len() {
                        return Err(PyValueError::new_err(format!(
                            "argument column has {} rows, value column {}",
                            col.len(),
                            arr.len()
                        )));
                    }
                    Some(col.values)
                }
            });
        }
        let ops = &mut g.ops;
        let res = py.detach(|| {
            ops.iter_mut()
                .zip(&arg_slices)
                .map(|(op, a)| op.push(arr.as_ref(), *a))
                .collect::<slidewise_core::Result<Vec<_>>>()
        });
        let res = core(res)?;
        batches_to_py(py, g, res)
    }

    /// End of stream: each query's last, partial window (if any).
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Vec<Triple<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut Groups = &mut guard;
        let ops = &mut g.ops;
        let res = py.detach(|| ops.iter_mut().map(|op| op.flush()).collect::<slidewise_core::Result<Vec<_>>>());
        let res = core(res)?;
        batches_to_py(py, g, res)
    }

    fn rows_seen(&self) -> PyResult<u64> {
        Ok(self.lock()?.ops.first().map_or(0, |op| op.rows_seen()))
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.n_queries)
    }

    /// Number of shared plans (groups) this stream runs.
    fn plans(&self) -> PyResult<usize> {
        Ok(self.lock()?.ops.len())
    }
}

// ---------------------------------------------------------------------------
// time windows (non-decreasing event time)

/// Per-row time rolling: row i aggregates rows j <= i with
/// ts[j] > ts[i] - range (pandas `rolling("5s")`). `ts`: int64, in the
/// unit `range` is given in.
#[pyfunction]
#[pyo3(signature = (values, ts, range, agg, min_periods=None, algorithm="auto"))]
fn rolling_time<'py>(
    py: Python<'py>,
    values: PyArray,
    ts: PyArray,
    range: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mp = min_periods.map(|m| nonneg("min_periods", m)).transpose()?.map(|m| m as usize);
    let agg = core(AggKind::parse(agg))?;
    let algo = parse_algo(algorithm)?;
    let (arr, ts) = (values.array().clone(), ts.array().clone());
    let out = py.detach(|| time_window::rolling_time_dyn(arr.as_ref(), ts.as_ref(), range, agg, mp, algo));
    to_pyarrow(py, core(out)?)
}

type TimeSpecTuple = (String, i64, i64, Option<i64>);

/// Spark-style time-window queries over one value column and one int64
/// event-time column; queries with the same group id share one plan.
#[pyclass(module = "slidewise._slidewise", frozen)]
struct TimeStream {
    state: Mutex<TimeGroups>,
}

struct TimeGroups {
    ops: Vec<Box<dyn TimeWindowOp>>,
    members: Vec<Vec<usize>>,
    n_queries: usize,
}

impl TimeStream {
    fn build(specs: Vec<TimeSpecTuple>, dtype: &str, algorithm: &str, groups: Option<Vec<usize>>, mut saved: Option<&[u8]>) -> PyResult<Self> {
        let dtype = core(DType::parse(dtype))?;
        let algo = parse_algo(algorithm)?;
        let specs = specs
            .iter()
            .map(|(agg, range, slide, mp)| {
                Ok(TimeSpec {
                    agg: core(AggKind::parse(agg))?,
                    range: *range,
                    slide: *slide,
                    min_periods: mp.map(|m| nonneg("min_periods", m)).transpose()?.unwrap_or(0),
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let as_count: Vec<CountSpec> =
            specs.iter().map(|s| CountSpec { agg: s.agg, range: 1, slide: 1, min_periods: 0 }).collect();
        let members = grouping(&as_count, groups)?;
        let mut ops = Vec::with_capacity(members.len());
        for m in &members {
            let g: Vec<TimeSpec> = m.iter().map(|&q| specs[q].clone()).collect();
            ops.push(match saved.as_mut() {
                None => core(time_window::build_time(&g, dtype, algo))?,
                Some(inp) => core(time_window::load_time(&g, dtype, algo, inp))?,
            });
        }
        if saved.is_some_and(|rest| !rest.is_empty()) {
            return Err(PyValueError::new_err(Error::Corrupt("trailing bytes".into()).to_string()));
        }
        Ok(TimeStream { state: Mutex::new(TimeGroups { ops, members, n_queries: specs.len() }) })
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, TimeGroups>> {
        self.state.lock().map_err(|_| PyRuntimeError::new_err("slidewise stream state is poisoned"))
    }

    fn results<'py>(py: Python<'py>, g: &TimeGroups, per_group: Vec<Vec<WindowBatch>>) -> PyResult<Vec<Triple<'py>>> {
        let as_groups = Groups { ops: Vec::new(), members: g.members.clone(), n_queries: g.n_queries };
        batches_to_py(py, &as_groups, per_group)
    }
}

#[pymethods]
impl TimeStream {
    /// `specs`: (agg, range, slide, min_periods) per query, range and slide
    /// in the event-time column's unit.
    #[new]
    #[pyo3(signature = (specs, dtype, algorithm, groups=None))]
    fn new(specs: Vec<TimeSpecTuple>, dtype: &str, algorithm: &str, groups: Option<Vec<usize>>) -> PyResult<Self> {
        Self::build(specs, dtype, algorithm, groups, None)
    }

    #[staticmethod]
    #[pyo3(signature = (specs, dtype, algorithm, state, groups=None))]
    fn load(specs: Vec<TimeSpecTuple>, dtype: &str, algorithm: &str, state: &[u8], groups: Option<Vec<usize>>) -> PyResult<Self> {
        if state.first() != Some(&TIME_STREAM_FORMAT) {
            return Err(PyValueError::new_err(Error::Corrupt("unknown checkpoint format".into()).to_string()));
        }
        Self::build(specs, dtype, algorithm, groups, Some(&state[1..]))
    }

    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let g = self.lock()?;
        let mut out = vec![TIME_STREAM_FORMAT];
        for op in g.ops.iter() {
            op.save(&mut out);
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Feed one batch: values and their int64 event times (non-decreasing,
    /// also across batches). Returns, per query, the windows whose end time
    /// this batch passed, as (window_start, window_end, value) arrays.
    fn push<'py>(&self, py: Python<'py>, values: PyArray, ts: PyArray) -> PyResult<Vec<Triple<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut TimeGroups = &mut guard;
        let (arr, ts) = (values.array().clone(), ts.array().clone());
        let ops = &mut g.ops;
        let res = py.detach(|| {
            ops.iter_mut().map(|op| op.push(arr.as_ref(), ts.as_ref())).collect::<slidewise_core::Result<Vec<_>>>()
        });
        let res = core(res)?;
        Self::results(py, g, res)
    }

    /// End of stream: every window still holding rows.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Vec<Triple<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut TimeGroups = &mut guard;
        let ops = &mut g.ops;
        let res = py.detach(|| ops.iter_mut().map(|op| op.flush()).collect::<slidewise_core::Result<Vec<_>>>());
        let res = core(res)?;
        Self::results(py, g, res)
    }

    fn plans(&self) -> PyResult<usize> {
        Ok(self.lock()?.ops.len())
    }
}

const TIME_STREAM_FORMAT: u8 = 17;

// ---------------------------------------------------------------------------
// raw FIFO aggregators

/// Input dtypes readable from one Python number.
trait PyIn: Sized {
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self>;
}
macro_rules! py_in {
    ($($t:ty),*) => {$(
        impl PyIn for $t {
            fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
                if v.is_instance_of::<pyo3::types::PyBool>() || v.is_instance_of::<pyo3::types::PyString>() {
                    return Err(PyTypeError::new_err(format!(
                        "expected a number for a {} aggregator, got {}", stringify!($t), v.get_type().name()?
                    )));
                }
                v.extract::<$t>().map_err(|e| {
                    if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(v.py()) {
                        PyValueError::new_err(format!("{} does not fit in {}", v, stringify!($t)))
                    } else {
                        e
                    }
                })
            }
        }
    )*};
}
py_in!(i32, i64, f32, f64);

/// Output types that become one Python object.
trait PyOut {
    fn to_py(&self, py: Python<'_>) -> PyResult<Py<PyAny>>;
}
macro_rules! py_out {
    ($($t:ty),*) => {$(
        impl PyOut for $t {
            fn to_py(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                Ok(self.into_pyobject(py)?.into_any().unbind())
            }
        }
    )*};
}
py_out!(i32, i64, f32, f64);
impl<T: PyOut> PyOut for Vec<T> {
    fn to_py(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let items = self.iter().map(|x| x.to_py(py)).collect::<PyResult<Vec<_>>>()?;
        Ok(pyo3::types::PyList::new(py, items)?.into_any().unbind())
    }
}

/// The object-safe face of one `FifoAggregator<M>`: Python values in and out.
trait Raw: Send {
    fn insert(&mut self, v: &Bound<'_, PyAny>, pos: Option<i64>) -> PyResult<()>;
    fn insert_many(&mut self, py: Python<'_>, values: &dyn Array) -> PyResult<()>;
    fn evict(&mut self, n: usize);
    fn query(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>>;
    fn query_last(&mut self, py: Python<'_>, k: usize) -> PyResult<Py<PyAny>>;
    fn len(&self) -> usize;
}

struct RawOf<M: AggOp> {
    agg: Box<dyn FifoAggregator<M>>,
    /// Position given to the next insert without an explicit one.
    next_pos: i64,
}

fn lowered<M: AggOp>(py: Python<'_>, a: &M::Agg) -> PyResult<Py<PyAny>>
where
    M::Out: PyOut,
{
    match M::lower(a) {
        Some(v) => v.to_py(py),
        None => Ok(py.None()),
    }
}

impl<M> Raw for RawOf<M>
where
    M: AggOp,
    M::In: PyIn + FromArrow,
    M::Out: PyOut,
{
    fn insert(&mut self, v: &Bound<'_, PyAny>, pos: Option<i64>) -> PyResult<()> {
        let pos = pos.unwrap_or(self.next_pos);
        // None is a null row: it occupies a slot and contributes nothing.
        let p = if v.is_none() { M::identity() } else { M::lift(M::In::from_py(v)?, pos) };
        self.agg.insert(p);
        self.next_pos = pos + 1;
        Ok(())
    }

    fn insert_many(&mut self, py: Python<'_>, values: &dyn Array) -> PyResult<()> {
        let col = core(<M::In as FromArrow>::column(values))?;
        let start = self.next_pos;
        let agg = &mut self.agg;
        py.detach(|| {
            let parts: Vec<M::Agg> = (0..col.len())
                .map(|i| if col.is_valid(i) { M::lift(col.values[i], start + i as i64) } else { M::identity() })
                .collect();
            agg.bulk_insert(&parts);
        });
        self.next_pos = start + col.len() as i64;
        Ok(())
    }

    fn evict(&mut self, n: usize) {
        if n == 1 {
            self.agg.evict()
        } else {
            self.agg.bulk_evict(n)
        }
    }

    fn query(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let a = self.agg.query();
        lowered::<M>(py, &a)
    }

    fn query_last(&mut self, py: Python<'_>, k: usize) -> PyResult<Py<PyAny>> {
        let a = self.agg.query_last(k);
        lowered::<M>(py, &a)
    }

    fn len(&self) -> usize {
        self.agg.len()
    }
}

fn make_raw<M>(algo: Algorithm, capacity: usize) -> slidewise_core::Result<Box<dyn Raw>>
where
    M: AggOp,
    M::In: PyIn + FromArrow,
    M::Out: PyOut,
{
    Ok(Box::new(RawOf::<M> { agg: slidewise_core::fifo::build::<M>(algo, capacity)?, next_pos: 0 }))
}

/// One FIFO final aggregator, as the papers describe it: insert at the back,
/// evict from the front, query all or the newest k partials.
#[pyclass(module = "slidewise._slidewise", frozen)]
struct RawAggregator {
    inner: Mutex<Box<dyn Raw>>,
    #[pyo3(get)]
    algorithm: String,
    #[pyo3(get)]
    agg: String,
    #[pyo3(get)]
    dtype: String,
}

impl RawAggregator {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Box<dyn Raw>>> {
        self.inner.lock().map_err(|_| PyRuntimeError::new_err("slidewise aggregator state is poisoned"))
    }
}

#[pymethods]
impl RawAggregator {
    #[new]
    #[pyo3(signature = (algorithm, agg, dtype="float64", capacity=1024))]
    fn new(algorithm: &str, agg: &str, dtype: &str, capacity: usize) -> PyResult<Self> {
        let algo = parse_algo(algorithm)?;
        let kind = core(AggKind::parse(agg))?;
        let dt = core(DType::parse(dtype))?;
        // The capacity is a hint; cap it so a careless value cannot
        // allocate the machine away.
        let cap = capacity.clamp(1, 1 << 20);
        let inner = core(slidewise_core::with_dtype!(dt, |T| slidewise_core::with_op!(kind, T, |Op| make_raw::<Op>(algo, cap))))?;
        Ok(RawAggregator {
            inner: Mutex::new(inner),
            algorithm: algo.name().to_string(),
            agg: kind.name().to_string(),
            dtype: dt.name().to_string(),
        })
    }

    /// Append one value (None: a null row). `pos` is the row position that
    /// argmax/argmin report; by default it counts inserts from 0.
    #[pyo3(signature = (value, pos=None))]
    fn insert(&self, value: &Bound<'_, PyAny>, pos: Option<i64>) -> PyResult<()> {
        self.lock()?.insert(value, pos)
    }

    /// Append every value of an Arrow array of this aggregator's dtype.
    fn insert_many(&self, py: Python<'_>, values: PyArray) -> PyResult<()> {
        let arr = values.array().clone();
        self.lock()?.insert_many(py, arr.as_ref())
    }

    /// Remove the `n` oldest values (fewer if the window holds fewer).
    #[pyo3(signature = (n=1))]
    fn evict(&self, n: i64) -> PyResult<()> {
        let n = nonneg("n", n)? as usize;
        self.lock()?.evict(n);
        Ok(())
    }

    fn query(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.lock()?.query(py)
    }

    fn query_last(&self, py: Python<'_>, k: i64) -> PyResult<Py<PyAny>> {
        let k = nonneg("k", k)? as usize;
        self.lock()?.query_last(py, k)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.len())
    }
}

// ---------------------------------------------------------------------------

#[pymodule]
fn _slidewise(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rolling, m)?)?;
    m.add_function(wrap_pyfunction!(many::rolling_many, m)?)?;
    m.add_class::<CountStream>()?;
    m.add_function(wrap_pyfunction!(rolling_time, m)?)?;
    m.add_class::<TimeStream>()?;
    m.add_class::<late::LateStream>()?;
    m.add_class::<RawAggregator>()?;
    optimizer::register(m)?;
    keyed::register(m)?;
    m.add("AGGS", AggKind::ALL.map(|a| a.name()).to_vec())?;
    m.add("ALGORITHMS", Algorithm::ALL.map(|a| a.name()).to_vec())?;
    m.add("DTYPES", vec!["int32", "int64", "float32", "float64"])?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
