//! Bindings of slidewise_core::optimizer: edge counts and WeaveShare plans.
//! Queries arrive as parallel lists (range, slide, phase in slide units);
//! the GIL is released while the core counts or plans.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use slidewise_core::optimizer::weaveshare::{weaveshare, Acq, Options};
use slidewise_core::optimizer::{count_edges as core_count, Method, Slide};

use super::core;

fn slides(ranges: &[u64], slides: &[u64], phases: &[u64]) -> PyResult<Vec<Slide>> {
    if ranges.len() != slides.len() || ranges.len() != phases.len() {
        return Err(PyValueError::new_err("ranges, slides and phases must have the same length"));
    }
    Ok((0..ranges.len()).map(|i| Slide { range: ranges[i], slide: slides[i], phase: phases[i] }).collect())
}

/// Edges in one composite slide and the composite slide (LCM of slides).
#[pyfunction]
#[pyo3(signature = (ranges, slides_, phases, method))]
pub fn count_edges(
    py: Python<'_>,
    ranges: Vec<u64>,
    slides_: Vec<u64>,
    phases: Vec<u64>,
    method: &str,
) -> PyResult<(u128, u128)> {
    let m = core(Method::parse(method))?;
    let qs = slides(&ranges, &slides_, &phases)?;
    let c = core(py.detach(|| core_count(&qs, m)))?;
    Ok((c.edges, c.composite))
}

type Detail = (Vec<usize>, Option<u128>, Option<u128>, f64, f64);

/// WeaveShare: (groups with composite, edges, density, omega), cost,
/// no-share cost, merges, pair evaluations.
#[pyfunction]
#[pyo3(signature = (ranges, slides_, phases, omegas, keys, rate, scale, method, single_tree_check=true))]
#[allow(clippy::too_many_arguments)]
pub fn plan(
    py: Python<'_>,
    ranges: Vec<u64>,
    slides_: Vec<u64>,
    phases: Vec<u64>,
    omegas: Vec<f64>,
    keys: Vec<u64>,
    rate: f64,
    scale: f64,
    method: &str,
    single_tree_check: bool,
) -> PyResult<(Vec<Detail>, f64, f64, u64, u64)> {
    let m = core(Method::parse(method))?;
    let qs = slides(&ranges, &slides_, &phases)?;
    if omegas.len() != qs.len() || keys.len() != qs.len() {
        return Err(PyValueError::new_err("omegas and keys must have one entry per query"));
    }
    let acqs: Vec<Acq> = (0..qs.len()).map(|i| Acq { slide: qs[i], omega: omegas[i], key: keys[i] }).collect();
    let opt = Options { lambda: rate, scale, method: m, single_tree_check };
    let p = core(py.detach(|| weaveshare(&acqs, &opt)))?;
    let details = p
        .trees
        .into_iter()
        .map(|t| (t.members, t.composite, t.count.map(|c| c.edges), t.density, t.omega))
        .collect();
    Ok((details, p.cost, p.no_share_cost, p.merges, p.evaluations))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_edges, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    Ok(())
}
