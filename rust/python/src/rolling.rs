//! Per-row rolling: convert, call the core with the GIL released, wrap.
//! Arguments are checked by the core (`rolling::check_window`, which also
//! caps a window at the data length) and, with messages for users, by the
//! Python package first.

use pyo3::prelude::*;
use pyo3_arrow::PyArray;

use slidewise_core::engine::AggKind;
use slidewise_core::fifo::Algorithm;
use slidewise_core::rolling::{self as core_rolling, Closed, Shape};

use slidewise_core::Error;

use crate::error::SwResult;
use crate::to_pyarrow;

/// A window from Python; 0 is refused by the core.
fn size(v: i64) -> SwResult<usize> {
    usize::try_from(v).map_err(|_| Error::Invalid(format!("window must be a positive number of rows, got {v}")).into())
}

/// pandas' window shape: `closed` right / left / both / neither, `center`,
/// `step` (a positive row count).
fn shape(closed: &str, center: bool, step: i64) -> SwResult<Shape> {
    let step = usize::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::Invalid(format!("step must be a positive number of rows, got {step}")))?;
    Ok(Shape { closed: Closed::parse(closed)?, center, step })
}

fn min_periods(mp: Option<i64>) -> SwResult<Option<usize>> {
    mp.map(|m| usize::try_from(m).map_err(|_| Error::Invalid(format!("min_periods must be >= 0, got {m}")).into()))
        .transpose()
}

/// Per-row rolling aggregate of an int32/int64/float32/float64 array.
/// `closed` / `center` / `step`: pandas' window shape (`rolling/shape.rs`;
/// the defaults run the plain kernels). `nan_skip`: a NaN is missing, as
/// a null (`nan="skip"`).
#[pyfunction]
#[pyo3(signature = (values, window, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1, nan_skip=false))]
#[allow(clippy::too_many_arguments)]
pub fn rolling<'py>(
    py: Python<'py>,
    values: PyArray,
    window: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
    closed: &str,
    center: bool,
    step: i64,
    nan_skip: bool,
) -> SwResult<Bound<'py, PyAny>> {
    let (agg, algo) = (AggKind::parse(agg)?, Algorithm::parse(algorithm)?);
    let arr = values.array().clone();
    let (w, sh) = (size(window)?, shape(closed, center, step)?);
    let mp = self::min_periods(min_periods)?;
    let out = py.detach(|| {
        if nan_skip {
            core_rolling::rolling_skip_nan_dyn(arr.as_ref(), w, agg, mp, algo, sh, core_rolling::Split::default())
        } else {
            core_rolling::rolling_dyn(arr.as_ref(), w, agg, mp, algo, sh)
        }
    })?;
    Ok(to_pyarrow(py, out)?)
}

/// Per-row rolling of one array for each window: a list of arrays.
#[pyfunction]
#[pyo3(signature = (values, windows, agg, min_periods=None, algorithm="auto"))]
pub fn rolling_many<'py>(
    py: Python<'py>,
    values: PyArray,
    windows: Vec<i64>,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> SwResult<Vec<Bound<'py, PyAny>>> {
    let ws: Vec<usize> = windows.into_iter().map(size).collect::<SwResult<_>>()?;
    let (agg, algo) = (AggKind::parse(agg)?, Algorithm::parse(algorithm)?);
    let arr = values.array().clone();
    let mp = self::min_periods(min_periods)?;
    let out = py.detach(|| core_rolling::rolling_many_dyn(arr.as_ref(), &ws, agg, mp, algo))?;
    Ok(out.into_iter().map(|a| to_pyarrow(py, a)).collect::<PyResult<_>>()?)
}

/// Per-row time rolling: row i aggregates rows j <= i with
/// ts[j] > ts[i] - range (pandas `rolling("5s")`); `ts` int64 in the unit of
/// `range`.
#[pyfunction]
#[pyo3(signature = (values, ts, range, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_time<'py>(
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
    let (arr, ts) = (values.array().clone(), ts.array().clone());
    let (mp, sh) = (self::min_periods(min_periods)?, shape(closed, center, step)?);
    let out = py.detach(|| core_rolling::rolling_time_dyn(arr.as_ref(), ts.as_ref(), range, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

/// Per-row rolling within each key (pandas `groupby(k).rolling(window)`,
/// aligned with the input rows).
#[pyfunction]
#[pyo3(signature = (keys, values, window, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_keyed<'py>(
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
    let (k, v) = (keys.array().clone(), values.array().clone());
    let (w, sh) = (size(window)?, shape(closed, center, step)?);
    let mp = self::min_periods(min_periods)?;
    let out = py.detach(|| core_rolling::rolling_keyed_dyn(k.as_ref(), v.as_ref(), w, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

/// Many windows and aggregations, keyed: one array per (aggregation,
/// window), aggregation-major; the rows grouped once for all.
#[pyfunction]
#[pyo3(signature = (keys, values, windows, aggs, min_periods=None, algorithm="auto"))]
pub fn rolling_many_keyed<'py>(
    py: Python<'py>,
    keys: PyArray,
    values: PyArray,
    windows: Vec<i64>,
    aggs: Vec<String>,
    min_periods: Option<i64>,
    algorithm: &str,
) -> SwResult<Vec<Bound<'py, PyAny>>> {
    let ws: Vec<usize> = windows.into_iter().map(size).collect::<SwResult<_>>()?;
    let aggs: Vec<AggKind> = aggs.iter().map(|a| AggKind::parse(a)).collect::<Result<_, _>>()?;
    let algo = Algorithm::parse(algorithm)?;
    let (k, v) = (keys.array().clone(), values.array().clone());
    let mp = self::min_periods(min_periods)?;
    let out = py.detach(|| core_rolling::rolling_many_keyed_dyn(k.as_ref(), v.as_ref(), &ws, &aggs, mp, algo))?;
    Ok(out.into_iter().map(|a| to_pyarrow(py, a)).collect::<PyResult<_>>()?)
}

/// Per-row time rolling within each key (pandas
/// `groupby(k).rolling("5s", on=ts)`); `ts` int64, non-decreasing per key.
#[pyfunction]
#[pyo3(signature = (keys, values, ts, range, agg, min_periods=None, algorithm="auto", closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_time_keyed<'py>(
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
    let (k, v, t) = (keys.array().clone(), values.array().clone(), ts.array().clone());
    let (mp, sh) = (self::min_periods(min_periods)?, shape(closed, center, step)?);
    let out = py.detach(|| core_rolling::rolling_time_keyed_dyn(k.as_ref(), v.as_ref(), t.as_ref(), range, agg, mp, algo, sh))?;
    Ok(to_pyarrow(py, out)?)
}

/// The order statistic named by `agg` (median / quantile / rank).
fn order_stat(agg: &str, q: Option<f64>, interpolation: Option<&str>) -> SwResult<core_rolling::OrderStat> {
    match core_rolling::OrderStat::parse(agg, q, interpolation)? {
        Some(s) => Ok(s),
        None => Err(Error::Invalid(format!("not an order statistic: {agg:?} (median, quantile or rank)")).into()),
    }
}

/// Rolling median / quantile / rank for each window (optionally per key):
/// a list of float64 arrays. `kernel`: auto, sorted_buffer, median_sort or
/// fenwick (tests and benchmarks); `closed` / `center` / `step` as pandas
/// (`step` 1 with keys).
#[pyfunction]
#[pyo3(signature = (values, windows, agg, q=None, interpolation=None, min_periods=None, kernel="auto", keys=None, closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_order<'py>(
    py: Python<'py>,
    values: PyArray,
    windows: Vec<i64>,
    agg: &str,
    q: Option<f64>,
    interpolation: Option<&str>,
    min_periods: Option<i64>,
    kernel: &str,
    keys: Option<PyArray>,
    closed: &str,
    center: bool,
    step: i64,
) -> SwResult<Vec<Bound<'py, PyAny>>> {
    let sh = shape(closed, center, step)?;
    let ws: Vec<usize> = windows.into_iter().map(size).collect::<SwResult<_>>()?;
    let stat = order_stat(agg, q, interpolation)?;
    let kernel = core_rolling::OrderKernel::parse(kernel)?;
    let arr = values.array().clone();
    let keys = keys.map(|k| k.array().clone());
    let mp = self::min_periods(min_periods)?;
    let out = py.detach(|| match keys {
        Some(k) => core_rolling::rolling_order_keyed_dyn(k.as_ref(), arr.as_ref(), &ws, stat, mp, kernel, sh),
        None => core_rolling::rolling_many_order_dyn(arr.as_ref(), &ws, stat, mp, kernel, sh),
    })?;
    Ok(out.into_iter().map(|a| to_pyarrow(py, a)).collect::<PyResult<_>>()?)
}

/// Rolling median / quantile / rank over a time window `(t - range, t]`
/// (optionally per key; `closed` / `center` as pandas, `step` 1): one
/// float64 array.
#[pyfunction]
#[pyo3(signature = (values, ts, range, agg, q=None, interpolation=None, min_periods=None, keys=None, closed="right", center=false, step=1))]
#[allow(clippy::too_many_arguments)]
pub fn rolling_order_time<'py>(
    py: Python<'py>,
    values: PyArray,
    ts: PyArray,
    range: i64,
    agg: &str,
    q: Option<f64>,
    interpolation: Option<&str>,
    min_periods: Option<i64>,
    keys: Option<PyArray>,
    closed: &str,
    center: bool,
    step: i64,
) -> SwResult<Bound<'py, PyAny>> {
    let sh = shape(closed, center, step)?;
    let stat = order_stat(agg, q, interpolation)?;
    let (arr, ts) = (values.array().clone(), ts.array().clone());
    let keys = keys.map(|k| k.array().clone());
    let mp = self::min_periods(min_periods)?;
    let out = py.detach(|| match keys {
        Some(k) => core_rolling::rolling_order_time_keyed_dyn(k.as_ref(), arr.as_ref(), ts.as_ref(), range, stat, mp, sh),
        None => core_rolling::rolling_order_time_dyn(arr.as_ref(), ts.as_ref(), range, stat, mp, sh),
    })?;
    Ok(to_pyarrow(py, out)?)
}

/// `nan="skip"`: the float array with its NaN rows null (values shared),
/// or None when it has no valid NaN (`rolling::nan_to_null_dyn`).
#[pyfunction]
pub fn nan_to_null<'py>(py: Python<'py>, values: PyArray) -> SwResult<Option<Bound<'py, PyAny>>> {
    let arr = values.array().clone();
    match py.detach(|| core_rolling::nan_to_null_dyn(arr.as_ref())) {
        Some(out) => Ok(Some(to_pyarrow(py, out)?)),
        None => Ok(None),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(nan_to_null, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_order, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_order_time, m)?)?;
    m.add_function(wrap_pyfunction!(rolling, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_many, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_time, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_keyed, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_many_keyed, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_time_keyed, m)?)?;
    Ok(())
}
