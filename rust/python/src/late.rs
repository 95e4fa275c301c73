//! Out-of-order time-window streams (`Stream(..., lateness=...)`): a thin
//! binding of `slidewise_core::late_window`. Queries with the same group id
//! share one plan; every group sees every row, so the late rows (and the
//! row counts) are those of the first group.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::PyArray;

use slidewise_core::engine::{AggKind, DType};
use slidewise_core::general::LateAlgorithm;
use slidewise_core::late_window::{self, LateWindowOp};
use slidewise_core::time_window::TimeSpec;
use slidewise_core::window::CountSpec;
use slidewise_core::Error;

use super::{batches_to_py, core, grouping, nonneg, to_pyarrow, Groups, TimeSpecTuple, Triple};

#[pyclass(module = "slidewise._slidewise", frozen)]
pub struct LateStream {
    state: Mutex<LateGroups>,
}

struct LateGroups {
    ops: Vec<Box<dyn LateWindowOp>>,
    members: Vec<Vec<usize>>,
    n_queries: usize,
}

const LATE_STREAM_FORMAT: u8 = 23;

impl LateStream {
    fn build(
        specs: Vec<TimeSpecTuple>,
        lateness: i64,
        dtype: &str,
        algorithm: &str,
        groups: Option<Vec<usize>>,
        mut saved: Option<&[u8]>,
    ) -> PyResult<Self> {
        let dtype = core(DType::parse(dtype))?;
        let algo = core(LateAlgorithm::parse(algorithm))?;
        if lateness < 0 {
            return Err(PyValueError::new_err(format!("lateness must be >= 0, got {lateness}")));
        }
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
                None => core(late_window::build_late(&g, lateness, dtype, algo))?,
                Some(inp) => core(late_window::load_late(&g, lateness, dtype, algo, inp))?,
            });
        }
        if saved.is_some_and(|rest| !rest.is_empty()) {
            return Err(PyValueError::new_err(Error::Corrupt("trailing bytes".into()).to_string()));
        }
        Ok(LateStream { state: Mutex::new(LateGroups { ops, members, n_queries: specs.len() }) })
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, LateGroups>> {
        self.state.lock().map_err(|_| PyRuntimeError::new_err("slidewise stream state is poisoned"))
    }

    fn results<'py>(py: Python<'py>, g: &LateGroups, per_group: Vec<Vec<slidewise_core::window::WindowBatch>>) -> PyResult<Vec<Triple<'py>>> {
        let as_groups = Groups { ops: Vec::new(), members: g.members.clone(), n_queries: g.n_queries };
        batches_to_py(py, &as_groups, per_group)
    }
}

#[pymethods]
impl LateStream {
    /// `specs`: (agg, range, slide, min_periods) per query; range, slide and
    /// `lateness` in the event-time column's unit.
    #[new]
    #[pyo3(signature = (specs, lateness, dtype, algorithm, groups=None))]
    fn new(specs: Vec<TimeSpecTuple>, lateness: i64, dtype: &str, algorithm: &str, groups: Option<Vec<usize>>) -> PyResult<Self> {
        Self::build(specs, lateness, dtype, algorithm, groups, None)
    }

    #[staticmethod]
    #[pyo3(signature = (specs, lateness, dtype, algorithm, state, groups=None))]
    fn load(
        specs: Vec<TimeSpecTuple>,
        lateness: i64,
        dtype: &str,
        algorithm: &str,
        state: &[u8],
        groups: Option<Vec<usize>>,
    ) -> PyResult<Self> {
        if state.first() != Some(&LATE_STREAM_FORMAT) {
            return Err(PyValueError::new_err(Error::Corrupt("unknown checkpoint format".into()).to_string()));
        }
        Self::build(specs, lateness, dtype, algorithm, groups, Some(&state[1..]))
    }

    fn save<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let g = self.lock()?;
        let mut out = vec![LATE_STREAM_FORMAT];
        for op in g.ops.iter() {
            op.save(&mut out);
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Feed one batch: values and int64 event times in any order. Returns,
    /// per query, the windows the watermark passed, as (start, end, value).
    fn push<'py>(&self, py: Python<'py>, values: PyArray, ts: PyArray) -> PyResult<Vec<Triple<'py>>> {
        let mut guard = self.lock()?;
        let g: &mut LateGroups = &mut guard;
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
        let g: &mut LateGroups = &mut guard;
        let ops = &mut g.ops;
        let res = py.detach(|| ops.iter_mut().map(|op| op.flush()).collect::<slidewise_core::Result<Vec<_>>>());
        let res = core(res)?;
        Self::results(py, g, res)
    }

    /// The rows behind the watermark since the last call: (values, int64
    /// times), in arrival order.
    fn take_late<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let mut g = self.lock()?;
        let mut first = None;
        for (i, op) in g.ops.iter_mut().enumerate() {
            let r = op.take_late();
            if i == 0 {
                first = Some(r);
            }
        }
        let r = first.expect("a stream has a query");
        Ok((to_pyarrow(py, r.values)?, to_pyarrow(py, Arc::clone(&r.ts))?))
    }

    /// (rows in, rows on time, rows late): rows in == on time + late.
    fn counts(&self) -> PyResult<(u64, u64, u64)> {
        let g = self.lock()?;
        let c = g.ops[0].counts();
        Ok((c.rows_in, c.on_time, c.late))
    }

    /// Largest event time seen minus lateness (None before the first row).
    fn watermark(&self) -> PyResult<Option<i64>> {
        Ok(self.lock()?.ops[0].watermark())
    }
}
