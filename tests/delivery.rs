//! Delivery-side conformance tests (differential, exhaustive, crash, kill -9, corpus).
