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
/// record per such boundary (a settle and a redrive compact when due, so neither needs an
/// allowance).
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
    let snapshot = parkline::mirror::encode(state).len() as u64;
    let allowance = repeats.saturating_mul(attempt_record_bytes_max());
    let bound = snapshot
        .saturating_mul(2)
        .saturating_add(slack)
        .saturating_add(allowance);
    if file_len > bound {
        return Err(format!(
            "M12 file size: the mirror is {file_len} bytes, over 2 x snapshot {snapshot} + slack \
             {slack} + {repeats} attempt records = {bound}"
        ));
    }
    Ok(())
}
