//! The committed version 3 mirrors (`tests/fixtures/v3/README.md`): what this build writes, byte
//! for byte, while it writes version 3, so that the build that changes the format has files of
//! the version before it to upgrade (M14).

use super::*;

/// Set to a directory, [`m2_the_version_3_fixtures_are_what_this_build_writes`] writes the
/// fixtures there instead of comparing.
const WRITE_ENV: &str = "PARKLINE_WRITE_V3_FIXTURES";

fn outcomes(delivered: &[bool]) -> Vec<Outcome> {
    let of = |&d: &bool| {
        if d {
            Outcome::Delivered
        } else {
            Outcome::Failed
        }
    };
    delivered.iter().map(of).collect()
}

fn internal(what: &str) -> crate::Error {
    crate::Error::new(ErrorKind::Internal, format!("{what}: nothing handed over"))
}

/// The fixtures' configs: `failures_max` 2, and the default slack (`mixed.mirror`, nothing
/// compacted) or none (`compacted.mirror`, every settle, redrive and discard compacts).
fn v3_configs() -> [(&'static str, Config); 2] {
    let config = |slack| Config {
        failures_max: 2,
        compact_slack_bytes: slack,
        ..Config::default()
    };
    [
        (
            "mixed.mirror",
            config(Config::default().compact_slack_bytes),
        ),
        ("compacted.mirror", config(0)),
    ]
}

/// The sequence of `tests/fixtures/v3/README.md`, in memory; the queue at its end.
fn v3_sequence(config: Config) -> crate::Result<Queue<MemStorage>> {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", config.clone())?;
    let lines = ["r11 a", "r12 \"b\"", "[parkline batch 1 end]", "r14 d", ""];
    for (request, line) in (11..).zip(lines) {
        queue.park(RequestId(request), line)?;
    }
    let first = queue
        .boundary(Budget(1 << 20))?
        .ok_or_else(|| internal("1"))?;
    queue.settle(first.id, &outcomes(&[true, true, false, false, false]))?;
    let second = queue
        .boundary(Budget(1 << 20))?
        .ok_or_else(|| internal("2"))?;
    queue.settle(second.id, &outcomes(&[false, true, false]))?;
    queue.park_all(&[(RequestId(16), "r16 a"), (RequestId(17), "r17 b")])?;
    queue.park(RequestId(18), "r18 c")?;
    queue.redrive(&[Seq(5)])?;
    queue.discard(&[Seq(3)])?;
    queue.boundary(Budget(12))?.ok_or_else(|| internal("3"))?;
    // Two more lives end before batch 3 is settled (attempts 2 and 3); the fourth closes it
    // at its first boundary (D10), which hands over the capped batch after it, settled.
    for _ in 0..2 {
        let storage = queue.into_storage();
        queue = Queue::with_storage(storage, "m", config.clone())?;
        queue.boundary(Budget(12))?;
    }
    queue = Queue::with_storage(queue.into_storage(), "m", config.clone())?;
    let capped = queue
        .boundary(Budget(1 << 20))?
        .ok_or_else(|| internal("4"))?;
    let delivered = vec![true; capped.items.len()];
    queue.settle(capped.id, &outcomes(&delivered))?;
    Ok(queue)
}

/// M2, M14: the committed version 3 files are what this build writes by their sequence, and
/// open to the state their README gives. When the format changes, this becomes the upgrade
/// test of version 3 files, as `m14_version_2_mirrors_open_upgraded_without_loss` is of
/// version 2's.
#[test]
fn m2_the_version_3_fixtures_are_what_this_build_writes() -> TestResult {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v3");
    for (name, config) in v3_configs() {
        let queue = v3_sequence(config.clone())?;
        let written = file(&queue);
        if let Some(out) = std::env::var_os(WRITE_ENV) {
            fs::write(Path::new(&out).join(name), &written)?;
            continue;
        }
        assert_eq!(mirror::decode_log(&written)?.version, 3);
        assert!(
            fs::read(dir.join(name))? == written,
            "{name} differs from what this build writes"
        );
        let state = open_bytes(&written, config)?.state().clone();
        let seqs: Vec<u64> = state.parked.iter().map(|item| item.seq.0).collect();
        let handed: Vec<u64> = state.parked.iter().map(|item| item.handed).collect();
        assert_eq!((seqs, handed), (vec![6, 7, 8], vec![3, 0, 0]), "{name}");
        assert!(
            state.in_flight.is_none() && state.dead_letters.is_empty(),
            "{name}"
        );
        assert_eq!(
            (state.next_seq, state.next_batch),
            (Seq(9), BatchId(5)),
            "{name}"
        );
        assert_eq!(state.cap, Some(2), "{name}");
    }
    Ok(())
}
