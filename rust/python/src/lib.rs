//! slidewise._slidewise: thin PyO3 bindings of slidewise-core.
//!
//! Nothing here aggregates: this file converts Arrow arrays in and out
//! (zero-copy through the Arrow PyCapsule interface), maps core errors to
//! Python exceptions, and releases the GIL while the core computes. The
//! Python package (python/slidewise) normalises inputs and validates
//! arguments first; the checks here are a second line so that no bad call
//! can reach a Rust panic.

use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, Int64Array};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::PyArray;

use slidewise_core::engine::{AggKind, DType, FromArrow};
use slidewise_core::fifo::{Algorithm, FifoAggregator};
use slidewise_core::monoid::AggOp;
use slidewise_core::window::{self, CountSpec, CountWindowOp, WindowBatch};
use slidewise_core::Error;

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

/// The state of several count-window queries over one value column: one
/// `CountWindowOp` per query, each fed the same batch.
#[pyclass(module = "slidewise._slidewise", frozen)]
struct CountStream {
    ops: Mutex<Vec<Box<dyn CountWindowOp>>>,
}

impl CountStream {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Vec<Box<dyn CountWindowOp>>>> {
        self.ops.lock().map_err(|_| PyRuntimeError::new_err("slidewise stream state is poisoned"))
    }
}

fn batches_to_py<'py>(py: Python<'py>, bs: Vec<WindowBatch>) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    bs.into_iter()
        .map(|b| {
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
    /// `specs`: one (agg, range, slide, min_periods) per query.
    #[new]
    fn new(specs: Vec<Spec>, dtype: &str, algorithm: &str) -> PyResult<Self> {
        let dtype = core(DType::parse(dtype))?;
        let algo = parse_algo(algorithm)?;
        let ops = specs
            .iter()
            .map(|s| core(window::build(&count_spec(s)?, dtype, algo)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(CountStream { ops: Mutex::new(ops) })
    }

    /// Restore a stream from `save()`'s bytes; specs, dtype and algorithm
    /// must be the ones it was built with.
    #[staticmethod]
    fn load(specs: Vec<Spec>, dtype: &str, algorithm: &str, state: &[u8]) -> PyResult<Self> {
        let dtype = core(DType::parse(dtype))?;
        let algo = parse_algo(algorithm)?;
        let corrupt = |m: &str| PyValueError::new_err(Error::Corrupt(m.into()).to_string());
        let mut inp = state;
        if inp.first() != Some(&STREAM_FORMAT) {
            return Err(corrupt("unknown checkpoint format"));
        }
        inp = &inp[1..];
        let n = core(<u64 as slidewise_core::codec::Codec>::decode(&mut inp))?;
        if n != specs.len() as u64 {
            return Err(corrupt("the checkpoint holds a different number of queries"));
        }
        let mut ops = Vec::with_capacity(specs.len());
        for s in &specs {
            ops.push(core(window::load(&count_spec(s)?, dtype, algo, &mut inp))?);
        }
        if !inp.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(CountStream { ops: Mutex::new(ops) })
    }

    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let ops = self.lock()?;
        let mut out = vec![STREAM_FORMAT];
        slidewise_core::codec::Codec::encode(&(ops.len() as u64), &mut out);
        for op in ops.iter() {
            op.save(&mut out);
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Feed one batch. `args`: per query, None or an int64 array (no nulls)
    /// of argument values for argmax/argmin. Returns, per query, the windows
    /// this batch completed as (window_start, window_end, value) arrays.
    #[pyo3(signature = (values, args=None))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        values: PyArray,
        args: Option<Vec<Option<PyArray>>>,
    ) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let mut ops = self.lock()?;
        let n_ops = ops.len();
        let arr = values.array().clone();
        let args: Vec<Option<ArrayRef>> = match args {
            None => vec![None; n_ops],
            Some(a) if a.len() == n_ops => a.into_iter().map(|x| x.map(|p| p.array().clone())).collect(),
            Some(a) => return Err(PyValueError::new_err(format!("args has {} entries for {n_ops} queries", a.len()))),
        };
        // Borrow each argument column as &[i64] before leaving the GIL.
        let mut arg_slices: Vec<Option<&[i64]>> = Vec::with_capacity(n_ops);
        for a in &args {
            arg_slices.push(match a {
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
        let ops: &mut Vec<Box<dyn CountWindowOp>> = &mut ops;
        let res = py.detach(|| {
            ops.iter_mut()
                .zip(&arg_slices)
                .map(|(op, a)| op.push(arr.as_ref(), *a))
                .collect::<slidewise_core::Result<Vec<_>>>()
        });
        batches_to_py(py, core(res)?)
    }

    /// End of stream: each query's last, partial window (if any).
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let mut guard = self.lock()?;
        let ops: &mut Vec<Box<dyn CountWindowOp>> = &mut guard;
        let res = py.detach(|| ops.iter_mut().map(|op| op.flush()).collect::<slidewise_core::Result<Vec<_>>>());
        batches_to_py(py, core(res)?)
    }

    fn rows_seen(&self) -> PyResult<u64> {
        Ok(self.lock()?.first().map_or(0, |op| op.rows_seen()))
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.len())
    }
}

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
    m.add_class::<CountStream>()?;
    m.add_class::<RawAggregator>()?;
    m.add("AGGS", AggKind::ALL.map(|a| a.name()).to_vec())?;
    m.add("ALGORITHMS", Algorithm::ALL.map(|a| a.name()).to_vec())?;
    m.add("DTYPES", vec!["int32", "int64", "float32", "float64"])?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
