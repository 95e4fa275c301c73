//! One error type for the core. Messages name the problem and the values
//! involved, because they reach Python users verbatim.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A bad argument: window of 0, unknown agg name, slide > range, ...
    Invalid(String),
    /// The input column's type is not supported for this operation.
    Type(String),
    /// The algorithm needs an inverse the operation does not have.
    NotInvertible { algorithm: &'static str, agg: &'static str },
    /// The algorithm needs a commutative operation.
    NotCommutative { algorithm: &'static str, agg: &'static str },
    /// Restoring a checkpoint failed.
    Corrupt(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid(m) | Error::Type(m) => f.write_str(m),
            Error::NotInvertible { algorithm, agg } => write!(
                f,
                "algorithm '{algorithm}' needs an invertible aggregation, and '{agg}' has no inverse; \
                 use algorithm='auto' or one of two_stacks, daba, flatfat, bint, flatfit, slideside, recalc"
            ),
            Error::NotCommutative { algorithm, agg } => write!(
                f,
                "algorithm '{algorithm}' needs a commutative aggregation, and '{agg}' is order-sensitive; \
                 use algorithm='auto' or 'flatfat'"
            ),
            Error::Corrupt(m) => write!(f, "cannot restore slidewise state: {m}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// `Err(Error::Invalid(format!(...)))`
#[macro_export]
macro_rules! invalid {
    ($($t:tt)*) => { Err($crate::Error::Invalid(format!($($t)*))) };
}
