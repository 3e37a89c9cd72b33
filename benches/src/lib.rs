//! Shared helpers for the parkline benchmarks.
