//! One error type for the binding: a core error or a Python one. `?` turns
//! a `slidewise_core::Error` into it, and pyo3 turns it into the Python
//! exception (a dtype problem is a `TypeError`, any other core error a
//! `ValueError` carrying the core's message): the newtype pattern of
//! pyo3-arrow and datafusion-python.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::PyErr;
use slidewise_core::Error;

pub enum SwError {
    Core(Error),
    Py(PyErr),
}

pub type SwResult<T> = Result<T, SwError>;

impl From<Error> for SwError {
    fn from(e: Error) -> Self {
        SwError::Core(e)
    }
}

impl From<PyErr> for SwError {
    fn from(e: PyErr) -> Self {
        SwError::Py(e)
    }
}

impl From<SwError> for PyErr {
    fn from(e: SwError) -> PyErr {
        match e {
            SwError::Core(e @ Error::Type(_)) => PyTypeError::new_err(e.to_string()),
            SwError::Core(e) => PyValueError::new_err(e.to_string()),
            SwError::Py(e) => e,
        }
    }
}
