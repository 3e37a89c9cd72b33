//! The read model (not written yet).
