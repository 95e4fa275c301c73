//! `Stream`: every continuous query (count, time or session windows, keyed
//! or not, in order or out of order) over one `slidewise_core::stream`.
//! Converts arguments, calls the core with the GIL released, wraps the
//! results; the core checks the spec and every batch.

use std::sync::Mutex;

use arrow_array::{ArrayRef, Int64Array};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::PyArray;

use slidewise_core::engine::{AggKind, DType, FromArrow};
use slidewise_core::partial::Slicing;
use slidewise_core::stream::{self, Batch, QuerySpec, QueryWindows, StreamSpec, Window};
use slidewise_core::Error;

use crate::error::SwResult;
use crate::to_pyarrow;

/// A query from Python: (agg, kind, a, b, min_periods, arg column) with
/// kind "count" (a = range, b = slide in rows), "time" (a = range, b =
/// slide) or "session" (a = gap), times in the time column's unit.
type QueryTuple = (String, String, i64, i64, Option<i64>, Option<String>);

fn query(q: QueryTuple) -> SwResult<QuerySpec> {
    let (agg, kind, a, b, mp, arg) = q;
    let rows = |v: i64| u64::try_from(v).unwrap_or(0);
    let window = match kind.as_str() {
        "count" => Window::Count { range: rows(a), slide: rows(b) },
        "time" => Window::Time { range: a, slide: b },
        "session" => Window::Session { gap: a },
        k => return Err(Error::Invalid(format!("unknown window kind '{k}'")).into()),
    };
    Ok(QuerySpec { agg: AggKind::parse(&agg)?, window, min_periods: mp.map_or(0, |m| m.max(0) as u64), arg })
}

#[allow(clippy::too_many_arguments)]
fn spec(
    queries: Vec<QueryTuple>,
    dtype: &str,
    algorithm: &str,
    lateness: Option<i64>,
    keyed: bool,
    partial: &str,
    groups: Option<Vec<usize>>,
) -> SwResult<StreamSpec> {
    let queries = queries.into_iter().map(query).collect::<SwResult<Vec<_>>>()?;
    let mut s = StreamSpec::new(queries, DType::parse(dtype)?);
    s.algorithm = algorithm.to_string();
    s.lateness = lateness;
    s.keyed = keyed;
    s.slicing = Slicing::parse(partial)?;
    s.groups = groups;
    Ok(s)
}

type Windows<'py> = (Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);

fn windows_to_py<'py>(py: Python<'py>, ws: Vec<QueryWindows>) -> PyResult<Vec<Windows<'py>>> {
    ws.into_iter()
        .map(|w| {
            Ok((
                w.keys.map(|k| to_pyarrow(py, k)).transpose()?,
                to_pyarrow(py, std::sync::Arc::new(Int64Array::from(w.start)))?,
                to_pyarrow(py, std::sync::Arc::new(Int64Array::from(w.end)))?,
                to_pyarrow(py, w.values)?,
            ))
        })
        .collect()
}

#[pyclass(module = "slidewise._slidewise", frozen)]
pub struct Stream {
    inner: Mutex<Box<dyn stream::Stream>>,
}

impl Stream {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Box<dyn stream::Stream>>> {
        self.inner.lock().map_err(|_| PyRuntimeError::new_err("slidewise stream state is poisoned"))
    }
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (queries, dtype, algorithm="auto", lateness=None, keyed=false, partial="pairs", groups=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        queries: Vec<QueryTuple>,
        dtype: &str,
        algorithm: &str,
        lateness: Option<i64>,
        keyed: bool,
        partial: &str,
        groups: Option<Vec<usize>>,
    ) -> SwResult<Self> {
        let s = spec(queries, dtype, algorithm, lateness, keyed, partial, groups)?;
        Ok(Stream { inner: Mutex::new(stream::build(&s)?) })
    }

    /// The stream `save()` wrote, under the same arguments.
    #[staticmethod]
    #[pyo3(signature = (state, queries, dtype, algorithm="auto", lateness=None, keyed=false, partial="pairs", groups=None))]
    #[allow(clippy::too_many_arguments)]
    fn restore(
        state: &[u8],
        queries: Vec<QueryTuple>,
        dtype: &str,
        algorithm: &str,
        lateness: Option<i64>,
        keyed: bool,
        partial: &str,
        groups: Option<Vec<usize>>,
    ) -> SwResult<Self> {
        let s = spec(queries, dtype, algorithm, lateness, keyed, partial, groups)?;
        Ok(Stream { inner: Mutex::new(stream::restore(&s, state)?) })
    }

    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.lock()?;
        Ok(PyBytes::new(py, &s.save()))
    }

    /// Feed one batch: values, int64 event times (time and session windows),
    /// keys (keyed streams), and per query an int64 argument column or
    /// None. Returns, per query, (keys or None, window_start, window_end,
    /// value) of the windows this batch completed.
    #[pyo3(signature = (values, time=None, keys=None, args=None))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        values: PyArray,
        time: Option<PyArray>,
        keys: Option<PyArray>,
        args: Option<Vec<Option<PyArray>>>,
    ) -> SwResult<Vec<Windows<'py>>> {
        let mut s = self.lock()?;
        let values = values.array().clone();
        let time: Option<ArrayRef> = time.map(|t| t.array().clone());
        let keys: Option<ArrayRef> = keys.map(|k| k.array().clone());
        let args: Vec<Option<ArrayRef>> = args.unwrap_or_default().into_iter().map(|a| a.map(|a| a.array().clone())).collect();
        let mut arg_cols = Vec::with_capacity(args.len());
        for a in &args {
            arg_cols.push(match a {
                None => None,
                Some(a) => {
                    let c = i64::column(a.as_ref())?;
                    if c.nulls.is_some_and(|n| n.null_count() > 0) {
                        return Err(Error::Invalid("argument column must not hold nulls".into()).into());
                    }
                    Some(c.values)
                }
            });
        }
        let batch = Batch { values: values.as_ref(), time: time.as_deref(), keys: keys.as_deref(), args: arg_cols };
        let st: &mut dyn stream::Stream = &mut **s;
        let out = py.detach(|| st.push(&batch))?;
        Ok(windows_to_py(py, out)?)
    }

    /// End of stream: every window still holding a row.
    fn flush<'py>(&self, py: Python<'py>) -> SwResult<Vec<Windows<'py>>> {
        let mut s = self.lock()?;
        let st: &mut dyn stream::Stream = &mut **s;
        let out = py.detach(|| st.flush())?;
        Ok(windows_to_py(py, out)?)
    }

    /// Late rows since the last call: (keys or None, times, values).
    fn take_late<'py>(&self, py: Python<'py>) -> PyResult<(Option<Bound<'py, PyAny>>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let l = self.lock()?.take_late();
        Ok((l.keys.map(|k| to_pyarrow(py, k)).transpose()?, to_pyarrow(py, l.ts)?, to_pyarrow(py, l.values)?))
    }

    /// (rows in, rows aggregated, rows late).
    fn counts(&self) -> PyResult<(u64, u64, u64)> {
        let c = self.lock()?.counts();
        Ok((c.rows_in, c.on_time, c.late))
    }

    fn watermark(&self) -> PyResult<Option<i64>> {
        Ok(self.lock()?.watermark())
    }

    fn num_keys(&self) -> PyResult<usize> {
        Ok(self.lock()?.num_keys())
    }

    /// Number of operators (groups of queries sharing a plan).
    fn plans(&self) -> PyResult<usize> {
        Ok(self.lock()?.groups())
    }

    /// The output type of query `q`'s values (for empty results).
    fn out_type<'py>(&self, py: Python<'py>, q: usize) -> PyResult<Bound<'py, PyAny>> {
        let t = self.lock()?.out_type(q);
        to_pyarrow(py, arrow_array::new_empty_array(&t)).and_then(|a| a.getattr("type"))
    }
}
