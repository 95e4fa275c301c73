//! `RawAggregator`: one FIFO final aggregator, method by method, as the
//! papers describe it (for teaching, tests and cross-checks). One virtual
//! call per method, which is also one Python call.

use std::sync::Mutex;

use arrow_array::Array;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3_arrow::PyArray;

use slidewise_core::engine::{AggKind, DType, FromArrow};
use slidewise_core::fifo::{Algorithm, FifoAggregator};
use slidewise_core::monoid::AggOp;

use crate::core;

fn nonneg(what: &str, v: i64) -> PyResult<u64> {
    u64::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} must be >= 0, got {v}")))
}

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
        // None is a null row: it occupies a slot and contributes nothing (but
        // to Spark's first / last, for which a null row is the answer).
        let p = if v.is_none() { M::lift_null(pos) } else { M::lift(M::In::from_py(v)?, pos) };
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
                .map(|i| col.lift::<M>(i, start + i as i64).unwrap_or_else(M::identity))
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
pub struct RawAggregator {
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
        let algo = core(Algorithm::parse(algorithm))?;
        let kind = core(AggKind::parse(agg))?;
        let dt = core(DType::parse(dtype))?;
        // The capacity is a hint; cap it so a careless value cannot
        // allocate the machine away.
        let cap = capacity.clamp(1, 1 << 20);
        // Computed on the wide dtype (`DType::wide`); `insert` keeps the
        // narrow dtype's range and rounding.
        let inner = core(slidewise_core::with_wide_dtype!(dt.wide(), |T| {
            slidewise_core::with_op!(kind, T, |Op| make_raw::<Op>(algo, cap))
        }))?;
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
        match self.dtype.as_str() {
            "int32" if !value.is_none() => {
                <i32 as PyIn>::from_py(value)?;
            }
            "float32" if !value.is_none() => {
                let x = <f32 as PyIn>::from_py(value)?;
                return self.lock()?.insert(&pyo3::types::PyFloat::new(value.py(), x as f64), pos);
            }
            _ => {}
        }
        self.lock()?.insert(value, pos)
    }

    /// Append every value of an Arrow array of this aggregator's dtype.
    fn insert_many(&self, py: Python<'_>, values: PyArray) -> PyResult<()> {
        let arr = values.array().clone();
        if core(DType::of(arr.data_type()))? != core(DType::parse(&self.dtype))? {
            return Err(PyTypeError::new_err(format!(
                "this aggregator's dtype is {}, got a {} array",
                self.dtype,
                arr.data_type()
            )));
        }
        let wide = core(slidewise_core::engine::widen(arr.as_ref()))?;
        self.lock()?.insert_many(py, wide.as_deref().unwrap_or(arr.as_ref()))
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
