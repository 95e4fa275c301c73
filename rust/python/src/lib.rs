//! slidewise._slidewise: thin PyO3 bindings of slidewise-core.
//!
//! Nothing here aggregates or checks arguments: each function converts its
//! inputs (Arrow arrays borrowed zero-copy through the Arrow PyCapsule
//! interface), calls the core with the GIL released, and wraps the result.
//! Core errors become Python exceptions through one error type
//! ([`error::SwError`]). The Python package (python/slidewise) normalises
//! inputs first.

mod alloc;
mod error;
mod optimizer;
mod raw;
mod rolling;
mod stream;

use arrow_array::ArrayRef;
use pyo3::prelude::*;
use pyo3_arrow::PyArray;

use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;

#[global_allocator]
static ALLOC: alloc::Retain = alloc::Retain;

/// A core result as a Python one (for helpers returning `PyResult`).
fn core<T>(r: slidewise_core::Result<T>) -> PyResult<T> {
    r.map_err(|e| error::SwError::from(e).into())
}

fn to_pyarrow<'py>(py: Python<'py>, a: ArrayRef) -> PyResult<Bound<'py, PyAny>> {
    // pyarrow.array() imports through __arrow_c_array__: no copy.
    let pa_array = py.import(pyo3::intern!(py, "pyarrow"))?.getattr(pyo3::intern!(py, "array"))?;
    pa_array.call1((PyArray::from_array_ref(a),))
}

#[pymodule]
fn _slidewise(m: &Bound<'_, PyModule>) -> PyResult<()> {
    rolling::register(m)?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<raw::RawAggregator>()?;
    optimizer::register(m)?;
    m.add("AGGS", AggKind::ALL.map(|a| a.name()).to_vec())?;
    m.add("ALGORITHMS", Algorithm::ALL.map(|a| a.name()).to_vec())?;
    m.add("DTYPES", vec!["int32", "int64", "float32", "float64"])?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
