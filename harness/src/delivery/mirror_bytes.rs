//! The check of the fuzz target `mirror_decode`: any bytes decode to a typed error or to a valid
//! state that re-encodes to itself.

/// The check of the fuzz target `mirror_decode`, on `bytes` as given and on `bytes` with every
/// line's checksum recomputed (so mutations reach the records' JSON and their semantics): the
/// decoder returns a typed `Corrupt` error or a state; a state is valid (seqs increasing and
/// below `next_seq`, no seq twice, the batch id below `next_batch`, counters not wrapped to 0,
/// no parked item at `u32::MAX` failures), and it re-encodes to bytes
/// that decode to an equal state. Never a panic.
///
/// # Errors
///
/// A message saying which of these failed.
pub fn check_mirror_bytes(bytes: &[u8]) -> Result<(), String> {
    check_mirror_decode(bytes)?;
    check_mirror_decode(&with_checksums_fixed(bytes))
}

fn check_mirror_decode(bytes: &[u8]) -> Result<(), String> {
    let state = match parkline::mirror::decode(bytes) {
        Ok(state) => state,
        Err(e) if e.kind() == parkline::ErrorKind::Corrupt => return Ok(()),
        Err(e) => {
            return Err(format!(
                "decode failed with {:?}, not Corrupt: {e}",
                e.kind()
            ));
        }
    };
    let mut seqs: Vec<u64> = Vec::new();
    let in_flight = state.in_flight.iter().flat_map(|b| b.items.iter());
    for item in state
        .parked
        .iter()
        .chain(in_flight)
        .chain(&state.dead_letters)
    {
        if item.seq.0 >= state.next_seq.0 {
            return Err(format!(
                "decoded seq {} is not below next_seq {}",
                item.seq.0, state.next_seq.0
            ));
        }
        seqs.push(item.seq.0);
    }
    // M6: counters start at 1 and never wrap; a parked item can always fail once more.
    if state.next_seq.0 == 0 || state.next_batch.0 == 0 {
        return Err(format!(
            "decoded counters wrapped: next seq {} next batch {}",
            state.next_seq.0, state.next_batch.0
        ));
    }
    let mut live = state
        .parked
        .iter()
        .chain(state.in_flight.iter().flat_map(|b| b.items.iter()));
    if let Some(item) = live.find(|item| item.failures == u32::MAX) {
        return Err(format!(
            "decoded parked seq {} has failures u32::MAX",
            item.seq.0
        ));
    }
    let parked: Vec<u64> = state.parked.iter().map(|i| i.seq.0).collect();
    if parked.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!("decoded parked list out of seq order: {parked:?}"));
    }
    seqs.sort_unstable();
    if seqs.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("decoded state holds a seq twice: {seqs:?}"));
    }
    if let Some(batch) = &state.in_flight
        && batch.id.0 >= state.next_batch.0
    {
        return Err(format!(
            "decoded batch id {} is not below next_batch {}",
            batch.id.0, state.next_batch.0
        ));
    }
    // M17: the applied window holds at most its bound, each request once.
    let mut ids: Vec<&str> = state
        .ops
        .iter()
        .map(|applied| applied.id.as_str())
        .collect();
    ids.sort_unstable();
    if ids.len() > parkline::ops::APPLIED_MEMORY || ids.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("decoded applied window is not a window: {ids:?}"));
    }
    let again = parkline::mirror::encode(&state);
    match parkline::mirror::decode(&again) {
        Ok(decoded) if decoded == state => Ok(()),
        Ok(decoded) => Err(format!(
            "re-encoded state decodes differently:\n  first  {state:?}\n  second {decoded:?}"
        )),
        Err(e) => Err(format!("re-encoded state does not decode: {e}")),
    }
}

/// `bytes` with the checksum of every `<8 hex> <json>\n` line replaced by the right one.
fn with_checksums_fixed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        if line.len() >= 9 && line[8] == b' ' {
            let json = &line[9..];
            out.extend_from_slice(format!("{:08x} ", parkline_model::read::crc32(json)).as_bytes());
            out.extend_from_slice(json);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}
