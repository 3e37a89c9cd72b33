//! Fuzz inputs as tests: corpus and artifact bytes decoded into ops the way libfuzzer does, and
//! the fuzz target's [`Setup`] from the environment.

use arbitrary::{Arbitrary, Unstructured};

use super::check::Setup;
use super::op::Op;
use crate::known_bad::KnownBad;

/// Decode fuzz input the way `libfuzzer_sys::fuzz_target!(|ops: Vec<Op>| ...)` does, so corpus and
/// artifact files replay as plain tests on stable. `None` when libfuzzer would skip the input.
pub fn decode_ops(bytes: &[u8]) -> Option<Vec<Op>> {
    if bytes.len() < <Vec<Op> as Arbitrary>::size_hint(0).0 {
        return None;
    }
    <Vec<Op> as Arbitrary>::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// The [`Setup`] the fuzz target uses: the default, or the delivery behaviour named by the
/// environment variable `PARKLINE_KNOWN_BAD` (kebab-case, `PARKLINE_KNOWN_BAD=pop-front`), to
/// show a campaign finds it.
///
/// # Errors
///
/// The variable names no known-bad behaviour, or a read-side one.
pub fn setup_from_env() -> Result<Setup, String> {
    match KnownBad::from_env("PARKLINE_KNOWN_BAD")? {
        Some(bad) if bad.is_read() => Err(format!(
            "PARKLINE_KNOWN_BAD={bad}: a read-side behaviour; delivery_ops runs one of {:?}",
            KnownBad::DELIVERY.map(KnownBad::name)
        )),
        known_bad => Ok(Setup {
            known_bad,
            snapshot_every_op: false,
            ..Setup::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::QueueOp;
    use crate::delivery::op::{BIG_LINE_CHARS, BUDGET_ALL, BUDGET_MAX, LINES, PARK_MANY_MAX};

    /// An op's first byte picks its kind as `int_in_range(0..=26)` did (the byte modulo 27),
    /// except the three discard bytes, the two lost-name bytes, the FIFO byte and the two idle
    /// bytes: an input written before those ops decodes as it did unless one of those bytes
    /// starts one of its ops.
    #[test]
    fn op_bytes_keep_their_decoding_but_the_bytes_of_later_ops() {
        let tail = [5u8, 1, 9, 200, 3, 4, 0, 7];
        for byte in 0..=u8::MAX {
            let was = Unstructured::new(&[byte]).int_in_range(0u8..=26);
            assert_eq!(was.ok(), Some(byte % 27), "byte {byte}");
            let mut bytes = vec![byte];
            bytes.extend_from_slice(&tail);
            let op = Op::arbitrary(&mut Unstructured::new(&bytes)).expect("decodes");
            let discard = matches!(op, Op::Queue(QueueOp::Discard { .. }));
            assert_eq!(
                discard,
                [168, 202, 216].contains(&byte),
                "byte {byte}: {op:?}"
            );
            let lost = matches!(op, Op::NameLost { .. });
            assert_eq!(lost, [187, 241].contains(&byte), "byte {byte}: {op:?}");
            let fifo = matches!(op, Op::RequestFileFifo);
            assert_eq!(fifo, byte == 163, "byte {byte}: {op:?}");
            let idle = matches!(op, Op::Queue(QueueOp::Idle));
            assert_eq!(idle, [190, 245].contains(&byte), "byte {byte}: {op:?}");
            if !discard && !lost && !fifo && !idle {
                let same =
                    Op::arbitrary(&mut Unstructured::new(&[&[byte % 27], &tail[..]].concat()));
                assert_eq!(same.ok(), Some(op), "byte {byte}");
            }
        }
        let empty = Op::arbitrary(&mut Unstructured::new(&[])).expect("decodes");
        assert!(
            matches!(empty, Op::Queue(QueueOp::Park { .. })),
            "{empty:?}"
        );
    }

    #[test]
    fn ops_decode_from_bytes_within_bounds() {
        let mut rng = crate::simdisk::SplitMix::new(7);
        let mut ops = Vec::new();
        for _ in 0..400 {
            let bytes: Vec<u8> = (0..512).map(|_| rng.next_u64() as u8).collect();
            ops.extend(decode_ops(&bytes).expect("decodes"));
        }
        // Random inputs reach the group park of several lines, the redrive and the discard (D8,
        // D21, D22).
        assert!(
            ops.iter()
                .any(|op| matches!(op, Op::Queue(QueueOp::ParkAll { items }) if items.len() > 1))
        );
        assert!(
            ops.iter()
                .any(|op| matches!(op, Op::Queue(QueueOp::Redrive { .. })))
        );
        assert!(
            ops.iter()
                .any(|op| matches!(op, Op::Queue(QueueOp::Discard { .. })))
        );
        assert!(ops.iter().any(|op| matches!(op, Op::Queue(QueueOp::Idle))));
        for op in &ops {
            match op {
                Op::Queue(QueueOp::Park { request, line }) => {
                    assert!((1..=4).contains(request));
                    assert!(LINES.contains(&line.as_str()) || line.len() == BIG_LINE_CHARS);
                }
                Op::Queue(QueueOp::Boundary { budget }) => {
                    assert!(*budget <= BUDGET_MAX || *budget == BUDGET_ALL);
                }
                Op::ParkMany { count, line, .. } => {
                    assert!((1..=PARK_MANY_MAX).contains(count));
                    assert!(LINES.contains(&line.as_str()) || line.len() == BIG_LINE_CHARS);
                }
                Op::Craft(c) => {
                    assert!(c.lines <= 3 && c.in_flight <= 3 && c.seq_gap <= 3);
                    assert!(c.batch_gap <= 2 && c.attempt_gap <= 2 && c.failures_gap <= 3);
                }
                Op::Queue(QueueOp::Settle { delivered }) => assert!(delivered.len() <= 6),
                Op::CrashAtSync { n, .. } => assert!((1..=3).contains(n)),
                Op::IoError { n } | Op::IoErrorReopen { n } => assert!((1..=4).contains(n)),
                Op::DiskFull { at } => assert!(*at <= 2),
                Op::NameLost { .. } | Op::RequestFileFifo => {}
                Op::Queue(QueueOp::ParkAll { items }) => assert!(items.len() <= 4),
                Op::Queue(QueueOp::Redrive { seqs } | QueueOp::Discard { seqs }) => {
                    assert!(seqs.iter().flatten().all(|seq| (1..=12).contains(seq)));
                }
                Op::Queue(QueueOp::HandOverFailed | QueueOp::Idle)
                | Op::Crash { .. }
                | Op::Restart => {}
                // Threads in a fuzz exec would make its coverage the scheduler's: the decoder
                // leaves group commit to the proptests and the kill -9 test.
                Op::Queue(QueueOp::ParkConcurrently { .. }) => {
                    panic!("the fuzz decoder gave a park_concurrently")
                }
            }
        }
    }
}
