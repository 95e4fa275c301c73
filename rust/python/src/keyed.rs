//! Bindings of keyed streams and keyed rolling (slidewise_core::keyed).
//! Thin: argument conversion, GIL released while the core runs.

use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, Int64Array};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::PyArray;

use slidewise_core::engine::{AggKind, DType, FromArrow};
use slidewise_core::keyed::{self, KeyedBatch, KeyedWindowOp};
use slidewise_core::partial::Slicing;
use slidewise_core::time_window::TimeSpec;
use slidewise_core::window::CountSpec;
use slidewise_core::Error;

use crate::{core, count_spec, grouping, nonneg, parse_algo, to_pyarrow, Spec};

const KEYED_FORMAT: u8 = 33;

/// Keyed count-window or time-window queries: every key runs the queries
/// alone; queries of one group share a plan (per key).
#[pyclass(module = "slidewise._slidewise", frozen)]
pub struct KeyedStream {
    state: Mutex<KeyedGroups>,
}

struct KeyedGroups {
    ops: Vec<Box<dyn KeyedWindowOp>>,
    members: Vec<Vec<usize>>,
    n_queries: usize,
    time: bool,
}

type Quad<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);

impl KeyedStream {
    fn build(
        specs: Vec<Spec>,
        dtype: &str,
        algorithm: &str,
        time: bool,
        groups: Option<Vec<usize>>,
        partial: &str,
        mut saved: Option<&[u8]>,
    ) -> PyResult<Self> {
        let dtype = core(DType::parse(dtype))?;
        let algo = parse_algo(algorithm)?;
        let slicing = core(Slicing::parse(partial))?;
        if time && slicing != Slicing::Pairs {
            return Err(PyValueError::new_err(format!("time windows use partial='pairs'; got '{partial}'")));
        }
        let count_specs: Vec<CountSpec> = if time {
            specs
                .iter()
                .map(|(agg, _, _, _)| Ok(CountSpec { agg: core(AggKind::parse(agg))?, range: 1, slide: 1, min_periods: 0 }))
                .collect::<PyResult<_>>()?
        } else {
            specs.iter().map(count_spec).collect::<PyResult<_>>()?
        };
        let time_specs: Vec<TimeSpec> = if time {
            specs
                .iter()
                .map(|(agg, range, slide, mp)| {
                    Ok(TimeSpec {
                        agg: core(AggKind::parse(agg))?,
                        range: *range,
                        slide: *slide,
                        min_periods: mp.map(|m| nonneg("min_periods", m)).transpose()?.unwrap_or(0),
                    })
                })
                .collect::<PyResult<_>>()?
        } else {
            Vec::new()
        };
        let members = grouping(&count_specs, groups)?;
        let mut ops = Vec::with_capacity(members.len());
        for m in &members {
            ops.push(if time {
                let g: Vec<TimeSpec> = m.iter().map(|&q| time_specs[q].clone()).collect();
                match saved.as_mut() {
                    None => core(keyed::build_keyed_time(&g, dtype, algo))?,
                    Some(inp) => core(keyed::load_keyed_time(&g, dtype, algo, inp))?,
                }
            } else {
                let g: Vec<CountSpec> = m.iter().map(|&q| count_specs[q].clone()).collect();
                match saved.as_mut() {
                    None => core(keyed::build_keyed_count(&g, dtype, algo, slicing))?,
                    Some(inp) => core(keyed::load_keyed_count(&g, dtype, algo, slicing, inp))?,
                }
            });
        }
        if saved.is_some_and(|rest| !rest.is_empty()) {
            return Err(PyValueError::new_err(Error::Corrupt("trailing bytes".into()).to_string()));
        }
        Ok(KeyedStream { state: Mutex::new(KeyedGroups { ops, members, n_queries: specs.len(), time }) })
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, KeyedGroups>> {
        self.state.lock().map_err(|_| PyRuntimeError::new_err("slidewise stream state is poisoned"))
    }
}

/// Per-group results back into query order: (key, start, end, value).
fn to_py<'py>(py: Python<'py>, g: &KeyedGroups, per_group: Vec<Vec<KeyedBatch>>) -> PyResult<Vec<Quad<'py>>> {
    let mut slots: Vec<Option<KeyedBatch>> = (0..g.n_queries).map(|_| None).collect();
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
                to_pyarrow(py, b.keys)?,
                to_pyarrow(py, Arc::new(Int64Array::from(b.windows.start)))?,
                to_pyarrow(py, Arc::new(Int64Array::from(b.windows.end)))?,
                to_pyarrow(py, b.windows.values)?,
            ))
        })
        .collect()
}

#[pymethods]
impl KeyedStream {
    /// `specs`: (agg, range, slide, min_periods) per query, in rows (count
    /// windows) or in the time column's unit (`time=True`); `partial`: the
    /// count windows' partial aggregation (pairs, panes, cutty).
    #[new]
    #[pyo3(signature = (specs, dtype, algorithm, time=false, groups=None, partial="pairs"))]
    fn new(specs: Vec<Spec>, dtype: &str, algorithm: &str, time: bool, groups: Option<Vec<usize>>, partial: &str) -> PyResult<Self> {
        Self::build(specs, dtype, algorithm, time, groups, partial, None)
    }

    #[staticmethod]
    #[pyo3(signature = (specs, dtype, algorithm, state, time=false, groups=None, partial="pairs"))]
    fn load(
        specs: Vec<Spec>,
        dtype: &str,
        algorithm: &str,
        state: &[u8],
        time: bool,
        groups: Option<Vec<usize>>,
        partial: &str,
    ) -> PyResult<Self> {
        if state.first() != Some(&KEYED_FORMAT) {
            return Err(PyValueError::new_err(Error::Corrupt("unknown checkpoint format".into()).to_string()));
        }
        Self::build(specs, dtype, algorithm, time, groups, partial, Some(&state[1..]))
    }

    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut guard = self.lock()?;
        // A &mut (Send, as the states are) lets the GIL go while a large
        // keyed state is written; a & would need the states to be Sync.
        let ops: &mut Vec<Box<dyn KeyedWindowOp>> = &mut guard.ops;
        let out = py.detach(move || {
            let mut out = vec![KEYED_FORMAT];
            for op in ops.iter() {
                op.save(&mut out);
            }
            out
        });
        Ok(PyBytes::new(py, &out))
    }

    /// Feed one batch: keys (int32/int64/string/large_string, no nulls),
    /// values, int64 event times for time windows, and per query None or an
    /// int64 argument column (argmax/argmin). Returns per query the windows
    /// the batch completed as (key, window_start, window_end, value).
    #[pyo3(signature = (keys, values, ts=None, args=None))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        keys: PyArray,
        values: PyArray,
        ts: Option<PyArray>,
        args: Option<Vec<Option<PyArray>>>,
    ) -> PyResult<Vec<Quad<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut KeyedGroups = &mut guard;
        let (k, v) = (keys.array().clone(), values.array().clone());
        let ts: Option<ArrayRef> = ts.map(|t| t.array().clone());
        if g.time && ts.is_none() {
            return Err(PyValueError::new_err("a keyed time-window stream needs the time column"));
        }
        let args: Vec<Option<ArrayRef>> = match args {
            None => vec![None; g.n_queries],
            Some(a) if a.len() == g.n_queries => a.into_iter().map(|x| x.map(|p| p.array().clone())).collect(),
            Some(a) => return Err(PyValueError::new_err(format!("args has {} entries for {} queries", a.len(), g.n_queries))),
        };
        let mut arg_slices: Vec<Option<&[i64]>> = Vec::with_capacity(g.ops.len());
        for m in &g.members {
            arg_slices.push(match &args[m[0]] {
                None => None,
                Some(a) => {
                    let col = core(<i64 as FromArrow>::column(a.as_ref()))?;
                    if col.nulls.is_some() {
                        return Err(PyValueError::new_err("argument column must not hold nulls"));
                    }
                    Some(col.values)
                }
            });
        }
        let ops = &mut g.ops;
        let res = py.detach(|| {
            ops.iter_mut()
                .zip(&arg_slices)
                .map(|(op, a)| op.push(k.as_ref(), v.as_ref(), ts.as_deref(), *a))
                .collect::<slidewise_core::Result<Vec<_>>>()
        });
        let res = core(res)?;
        to_py(py, g, res)
    }

    /// End of stream: every key's final windows.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Vec<Quad<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut KeyedGroups = &mut guard;
        let ops = &mut g.ops;
        let res = py.detach(|| ops.iter_mut().map(|op| op.flush()).collect::<slidewise_core::Result<Vec<_>>>());
        let res = core(res)?;
        to_py(py, g, res)
    }

    /// Distinct keys seen.
    fn num_keys(&self) -> PyResult<usize> {
        Ok(self.lock()?.ops.first().map_or(0, |op| op.num_keys()))
    }
}

fn min_periods(mp: Option<i64>) -> PyResult<Option<usize>> {
    Ok(mp.map(|m| nonneg("min_periods", m)).transpose()?.map(|m| m as usize))
}

/// Per-row rolling within each key (pandas `groupby(k).rolling(window)`,
/// aligned with the input rows).
#[pyfunction]
#[pyo3(signature = (keys, values, window, agg, min_periods=None, algorithm="auto"))]
pub fn rolling_keyed<'py>(
    py: Python<'py>,
    keys: PyArray,
    values: PyArray,
    window: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> PyResult<Bound<'py, PyAny>> {
    if window <= 0 {
        return Err(PyValueError::new_err(format!("window must be a positive number of rows, got {window}")));
    }
    let mp = self::min_periods(min_periods)?;
    let agg = core(AggKind::parse(agg))?;
    let algo = parse_algo(algorithm)?;
    let (k, v) = (keys.array().clone(), values.array().clone());
    let w = usize::try_from(window).unwrap_or(usize::MAX);
    let out = py.detach(|| keyed::rolling_keyed_dyn(k.as_ref(), v.as_ref(), w, agg, mp, algo));
    to_pyarrow(py, core(out)?)
}

/// Many windows, keyed: one array per window.
#[pyfunction]
#[pyo3(signature = (keys, values, windows, agg, min_periods=None, algorithm="auto"))]
pub fn rolling_many_keyed<'py>(
    py: Python<'py>,
    keys: PyArray,
    values: PyArray,
    windows: Vec<i64>,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let ws = windows
        .iter()
        .map(|&w| {
            if w <= 0 {
                Err(PyValueError::new_err(format!("window must be a positive number of rows, got {w}")))
            } else {
                Ok(w as usize)
            }
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mp = self::min_periods(min_periods)?;
    let agg = core(AggKind::parse(agg))?;
    let algo = parse_algo(algorithm)?;
    let (k, v) = (keys.array().clone(), values.array().clone());
    let out = py.detach(|| keyed::rolling_many_keyed_dyn(k.as_ref(), v.as_ref(), &ws, agg, mp, algo));
    core(out)?.into_iter().map(|a| to_pyarrow(py, a)).collect()
}

/// Per-row time rolling within each key (pandas
/// `groupby(k).rolling("5s", on=ts)`); `ts` int64, non-decreasing per key.
#[pyfunction]
#[pyo3(signature = (keys, values, ts, range, agg, min_periods=None, algorithm="auto"))]
pub fn rolling_time_keyed<'py>(
    py: Python<'py>,
    keys: PyArray,
    values: PyArray,
    ts: PyArray,
    range: i64,
    agg: &str,
    min_periods: Option<i64>,
    algorithm: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mp = self::min_periods(min_periods)?;
    let agg = core(AggKind::parse(agg))?;
    let algo = parse_algo(algorithm)?;
    let (k, v, t) = (keys.array().clone(), values.array().clone(), ts.array().clone());
    let out = py.detach(|| keyed::rolling_time_keyed_dyn(k.as_ref(), v.as_ref(), t.as_ref(), range, agg, mp, algo));
    to_pyarrow(py, core(out)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KeyedStream>()?;
    m.add_function(wrap_pyfunction!(rolling_keyed, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_many_keyed, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_time_keyed, m)?)?;
    Ok(())
}
