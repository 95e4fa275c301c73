//! `rolling_many`: many windows over one column in one call (the shared
//! max / min pass of slidewise-core's `rolling::many`), GIL released.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_arrow::PyArray;

use slidewise_core::engine::AggKind;

use crate::{core, nonneg, parse_algo, to_pyarrow};

/// Per-row rolling aggregates of one array for each window: a list of
/// arrays, in the order of `windows`.
#[pyfunction]
#[pyo3(signature = (values, windows, agg, min_periods=None, algorithm="auto"))]
pub(crate) fn rolling_many<'py>(
    py: Python<'py>,
    values: PyArray,
    windows: Vec<i64>,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let mut ws = Vec::with_capacity(windows.len());
    for &w in &windows {
        if w <= 0 {
            return Err(PyValueError::new_err(format!("window must be a positive number of rows, got {w}")));
        }
        ws.push(usize::try_from(w).map_err(|_| PyValueError::new_err(format!("window {w} is too large")))?);
    }
    let mp = min_periods.map(|m| nonneg("min_periods", m)).transpose()?.map(|m| m as usize);
    let agg = core(AggKind::parse(agg))?;
    let algo = parse_algo(algorithm)?;
    let arr = values.array().clone();
    let out = py.detach(|| slidewise_core::rolling::rolling_many_dyn(arr.as_ref(), &ws, agg, mp, algo));
    core(out)?.into_iter().map(|a| to_pyarrow(py, a)).collect()
}
