//! The conformance harness: one `Op` vocabulary and one `check(ops)` (not written yet).
