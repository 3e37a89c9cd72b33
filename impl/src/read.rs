//! Budgeted cursor reads (not written yet).
