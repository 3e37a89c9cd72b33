//! The committed version 3 mirrors (`tests/fixtures/v3/README.md`), written by a version 3
//! build, opened upgraded to version 4 (M14).

use super::*;

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

/// M14: the committed version 3 files, written by a version 3 build, open upgraded to version 4
/// through M5, holding what this build's run of the same sequence holds, without the times and
/// the remembered window version 3 did not record; and they open to the state their README gives.
#[test]
fn m14_version_3_mirrors_open_upgraded_without_loss() -> TestResult {
    //= spec/mirror.md#m14-upgrade-from-older-versions
    //= type=test
    //# `open` of a version 1, 2 or 3 mirror that decodes without error MUST, before it
    //# appends anything, write the current version's snapshot of that state through M5
    //# (temp file, fsync, rename, directory fsync).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v3");
    for (name, config) in v3_configs() {
        let bytes = fs::read(dir.join(name))?;
        assert_eq!(mirror::decode_log(&bytes)?.version, 3, "{name}");
        let queue = open_bytes(&bytes, config.clone())?;
        assert_eq!(
            queue.storage().dir_syncs(),
            1,
            "{name}: rewritten through M5"
        );
        assert_eq!(mirror::decode_log(&file(&queue))?.version, 4, "{name}");
        let state = queue.state().clone();
        let written = before_format_4(v3_sequence(config.clone())?.state());
        assert_eq!(before_format_4(&state), written, "{name}");
        assert!(
            state.remembered.is_empty(),
            "{name}: version 3 remembers nothing"
        );
        assert_eq!(state.memory, config.delivered_memory, "{name}");
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
