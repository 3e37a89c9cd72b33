//! The differential proptest: the crate's reads against the reference's through
//! `parkline_harness::read::check`, and the scenarios it reaches.

use parkline_harness::read::{self as read_harness, check};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};

use super::cases;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn differential_reads_match_the_reference(ops in read_harness::read_ops_strategy(60)) {
        //= spec/read.md#r3-deterministic-allocation-what-did-not-fit-is-reported
        //= type=test
        //# The budget MUST be allocated in the fixed order of section 3, a pure function of the
        //# transcript and the read.
        let report = check(&ops).map_err(|d| TestCaseError::fail(d.to_string()))?;
        prop_assert_eq!(report.steps, ops.len());
    }
}

/// The generated scenarios do reach the interesting cases (so the differential is not vacuous).
#[test]
fn differential_scenarios_reach_excerpts_omissions_cuts_and_errors() {
    let mut runner = TestRunner::deterministic();
    let strategy = read_harness::read_ops_strategy(60);
    let mut total = read_harness::ReadReport::default();
    for _ in 0..64 {
        let ops =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).expect("tree"));
        let report = check(&ops).expect("no divergence");
        total.windows += report.windows;
        total.errors += report.errors;
        total.excerpts += report.excerpts;
        total.omissions += report.omissions;
        total.partial_cuts += report.partial_cuts;
        total.followed_turns += report.followed_turns;
        total.partial_new += report.partial_new;
        total.partial_replaced += report.partial_replaced;
    }
    assert!(total.windows > 100, "{total:?}");
    assert!(total.errors > 20, "{total:?}");
    assert!(total.excerpts > 10, "{total:?}");
    assert!(total.omissions > 10, "{total:?}");
    assert!(total.partial_cuts > 10, "{total:?}");
    assert!(total.followed_turns > 20, "{total:?}");
    assert!(total.partial_new > 10, "{total:?}");
    assert!(total.partial_replaced > 5, "{total:?}");
}
