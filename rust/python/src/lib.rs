use pyo3::prelude::*;
#[pymodule]
fn _slidewise(_m: &Bound<'_, PyModule>) -> PyResult<()> { Ok(()) }
