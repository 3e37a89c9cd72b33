//! Read-side conformance: the crate's read windows checked against the read model (not written yet).
