//! A simulated disk with live and durable images behind `parkline::Storage` (not written yet).
