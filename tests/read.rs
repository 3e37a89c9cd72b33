//! Read-side conformance tests.
