//! Delivery-side conformance tests, a module per concern: the crate (`parkline::Queue` over the
//! simulated disk) checked against the reference (`parkline_model::delivery`) by one
//! `check(ops)`: differential proptest,
//! exhaustive replay of the model's graph, crash at every sync point, random crashes in long
//! runs, fuzz corpus and artifact replay, and the known-bad protocols (the harness's seams
//! around the crate) each caught.

mod corpus;
mod crash;
mod differential;
mod exhaustive;
mod frame;
mod known_bad;

use parkline_harness::delivery::{Op, QueueOp, Setup};
use parkline_harness::known_bad::KnownBad;

use crate::env_usize;

fn cases() -> u32 {
    u32::try_from(env_usize("PARKLINE_PROPTEST_CASES", 10_000)).unwrap_or(u32::MAX)
}

fn setup(bad: KnownBad) -> Setup {
    Setup {
        known_bad: Some(bad),
        ..Setup::default()
    }
}

fn park(request: u64, line: &str) -> Op {
    Op::Queue(QueueOp::Park {
        request,
        line: line.to_owned(),
    })
}
