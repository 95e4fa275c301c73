//! Per-row rolling with a window shape (pandas `closed=`, `center=`,
//! `step=`): convert, call the core's `*_shaped_dyn` with the GIL released,
//! wrap. Kept apart from `rolling.rs` so the plain calls stay as they are.

use pyo3::prelude::*;
use pyo3_arrow::PyArray;

use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{self as core_rolling, Closed, Shape};
use slidewise_core::Error;

use crate::error::SwResult;
use crate::to_pyarrow;

fn shape(closed: &str, center: bool, step: i64) -> SwResult<Shape> {
    let step = usize::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::Invalid(format!("step must be a positive number of rows, got {step}")))?;
    Ok(Shape { closed: Closed::parse(closed)?, center, step })
}

fn size(v: i64, what: &str) -> SwResult<usize> {
    usize::try_from(v).map_err(|_| Error::Invalid(format!("{what} must be >= 0, got {v}")).into())
}

fn min_periods(mp: Option<i64>) -> SwResult<Option<usize>> {
    mp.map(|m| size(m, "min_periods")).transpose()
}

/// `rolling` over a count window with a shape.
#[pyfunction]
#[pyo3(signature = (values, window, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_shaped<'py>(
    py: Python<'py>,
    values: PyArray,
    window: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
    closed: &str,
    center: bool,
    step: i64,
) -> SwResult<Bound<'py, PyAny>> {
    let (agg, algo) = (AggKind::parse(agg)?, Algorithm::parse(algorithm)?);
    let (w, mp, sh) = (size(window, "window")?, self::min_periods(min_periods)?, shape(closed, center, step)?);
    let arr = values.array().clone();
    let out = py.detach(|| core_rolling::rolling_shaped_dyn(arr.as_ref(), w, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

/// Keyed count-window `rolling` with a shape (step 1).
#[pyfunction]
#[pyo3(signature = (keys, values, window, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_keyed_shaped<'py>(
    py: Python<'py>,
    keys: PyArray,
    values: PyArray,
    window: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
    closed: &str,
    center: bool,
    step: i64,
) -> SwResult<Bound<'py, PyAny>> {
    let (agg, algo) = (AggKind::parse(agg)?, Algorithm::parse(algorithm)?);
    let (w, mp, sh) = (size(window, "window")?, self::min_periods(min_periods)?, shape(closed, center, step)?);
    let (k, v) = (keys.array().clone(), values.array().clone());
    let out = py.detach(|| core_rolling::rolling_keyed_shaped_dyn(k.as_ref(), v.as_ref(), w, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

/// Time-window `rolling` with a shape (step 1).
#[pyfunction]
#[pyo3(signature = (values, ts, range, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_time_shaped<'py>(
    py: Python<'py>,
    values: PyArray,
    ts: PyArray,
    range: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
    closed: &str,
    center: bool,
    step: i64,
) -> SwResult<Bound<'py, PyAny>> {
    let (agg, algo) = (AggKind::parse(agg)?, Algorithm::parse(algorithm)?);
    let (mp, sh) = (self::min_periods(min_periods)?, shape(closed, center, step)?);
    let (arr, ts) = (values.array().clone(), ts.array().clone());
    let out = py.detach(|| core_rolling::rolling_time_shaped_dyn(arr.as_ref(), ts.as_ref(), range, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

/// Keyed time-window `rolling` with a shape (step 1).
#[pyfunction]
#[pyo3(signature = (keys, values, ts, range, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_time_keyed_shaped<'py>(
    py: Python<'py>,
    keys: PyArray,
    values: PyArray,
    ts: PyArray,
    range: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
    closed: &str,
    center: bool,
    step: i64,
) -> SwResult<Bound<'py, PyAny>> {
    let (agg, algo) = (AggKind::parse(agg)?, Algorithm::parse(algorithm)?);
    let (mp, sh) = (self::min_periods(min_periods)?, shape(closed, center, step)?);
    let (k, v, t) = (keys.array().clone(), values.array().clone(), ts.array().clone());
    let out = py.detach(|| core_rolling::rolling_time_keyed_shaped_dyn(k.as_ref(), v.as_ref(), t.as_ref(), range, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rolling_shaped, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_keyed_shaped, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_time_shaped, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_time_keyed_shaped, m)?)?;
    Ok(())
}
