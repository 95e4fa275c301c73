//! STUB: to be replaced by the real algorithm.
crate::stub_algorithm!(FlatFit);
