//! The M12 file-size bound (spec/mirror.md), checked after every op of a delivery check.

/// The longest `attempt` record line (checksum, space, JSON, newline): with the largest batch id
/// and attempt.
pub fn attempt_record_bytes_max() -> u64 {
    let json = format!(
        r#"{{"type":"attempt","batch":{},"attempt":{}}}"#,
        u64::MAX,
        u32::MAX
    );
    json.len() as u64 + 10
}

/// The M12 bound (spec/mirror.md): a mirror file of `file_len` bytes holding `state`, written by
/// the crate with slack `slack`, where `repeats` boundaries of a recovered batch happened since
/// the last settle, is at most twice the state's snapshot plus the slack plus one `attempt`
/// record per such boundary (a `close` record is shorter). A settle, a redrive and a discard
/// compact when due, so none needs an allowance.
///
/// # Errors
///
/// The bound and the figures, when the file is longer.
pub fn m12_bound(
    file_len: u64,
    state: &parkline::mirror::MirrorState,
    slack: u64,
    repeats: u64,
) -> Result<(), String> {
    let allowance = repeats.saturating_mul(attempt_record_bytes_max());
    // Every line is in the snapshot at least once, escaped (never shorter), so a file within the
    // bound of the lines' bytes alone is within the bound of the snapshot: the same verdict
    // without encoding the whole state after every op (that was 53 % of a `delivery_ops` exec).
    let bound_of = |snapshot: u64| {
        snapshot
            .saturating_mul(2)
            .saturating_add(slack)
            .saturating_add(allowance)
    };
    if file_len <= bound_of(snapshot_floor(state)) {
        return Ok(());
    }
    let snapshot = parkline::mirror::encode(state).len() as u64;
    let bound = bound_of(snapshot);
    if file_len > bound {
        return Err(format!(
            "M12 file size: the mirror is {file_len} bytes, over 2 x snapshot {snapshot} + slack \
             {slack} + {repeats} attempt records = {bound}"
        ));
    }
    Ok(())
}

/// M12 at rest (spec/mirror.md): right after an idle call that found `state` drained and wrote
/// without a fault, the mirror of `file_len` bytes is at most the state's
/// snapshot plus `rest_slack`. A state that is not drained passes.
///
/// # Errors
///
/// The bound and the figures, when the file is longer.
pub fn m12_rest_bound(
    file_len: u64,
    state: &parkline::mirror::MirrorState,
    rest_slack: u64,
) -> Result<(), String> {
    if !state.is_drained() {
        return Ok(());
    }
    // A drained state's snapshot is its header and counters: cheap to encode at every settle.
    let snapshot = parkline::mirror::encode(state).len() as u64;
    let bound = snapshot.saturating_add(rest_slack);
    if file_len > bound {
        return Err(format!(
            "M12 at rest: the drained mirror is {file_len} bytes, over snapshot {snapshot} + rest \
             slack {rest_slack} = {bound}"
        ));
    }
    Ok(())
}

/// A lower bound of the snapshot's length: the bytes of the lines the state holds, each of which
/// the snapshot writes once, escaped.
pub fn snapshot_floor(state: &parkline::mirror::MirrorState) -> u64 {
    state
        .parked
        .iter()
        .chain(&state.dead_letters)
        .chain(state.in_flight.iter().flat_map(|batch| &batch.items))
        .map(|item| item.line.len() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parkline::mirror::{MirrorState, encode};
    use parkline::{Item, RequestId, Seq};

    fn item(seq: u64, line: &str) -> Item {
        Item::new(Seq(seq), RequestId(seq), line)
    }

    /// The shortcut's floor never exceeds the snapshot (lines that escape to more bytes, none at
    /// all), and the verdict at the exact bound is the exact check's on either side.
    #[test]
    fn the_floor_is_below_the_snapshot_and_the_verdict_is_exact() {
        let lines = ["", "plain", "\\\"quotes\" and \\", "\u{1}\u{1f}\t", "é✓"];
        let mut state = MirrorState::default();
        for (i, line) in lines.iter().enumerate() {
            state.parked.push(item(i as u64 + 1, line));
            state.dead_letters.push(item(i as u64 + 100, line));
        }
        state.next_seq = Seq(200);
        let snapshot = encode(&state).len() as u64;
        assert!(snapshot_floor(&state) <= snapshot);
        assert_eq!(snapshot_floor(&MirrorState::default()), 0);
        for (slack, repeats) in [(0, 0), (7, 0), (0, 2), (64, 3)] {
            let bound = 2 * snapshot + slack + repeats * attempt_record_bytes_max();
            assert!(m12_bound(bound, &state, slack, repeats).is_ok());
            let err = m12_bound(bound + 1, &state, slack, repeats).unwrap_err();
            assert!(err.contains(&format!("= {bound}")), "{err}");
        }
    }

    /// The rest bound passes a drained file at exactly the snapshot plus the rest slack, rejects
    /// one byte more with the figures, and passes any length while a line is held.
    #[test]
    fn m12_rest_bound_rejects_a_drained_file_over_it() {
        let mut state = MirrorState {
            next_seq: Seq(41),
            ..MirrorState::default()
        };
        let snapshot = encode(&state).len() as u64;
        assert_eq!(snapshot, 105);
        assert!(m12_rest_bound(snapshot + 512, &state, 512).is_ok());
        let err = m12_rest_bound(snapshot + 513, &state, 512).unwrap_err();
        assert_eq!(
            err,
            "M12 at rest: the drained mirror is 618 bytes, over snapshot 105 + rest slack 512 = 617"
        );
        state.dead_letters.push(item(3, "dead"));
        assert!(m12_rest_bound(u64::MAX, &state, 0).is_ok());
    }
}
