//! The mirror's header (spec/mirror.md M2): the format's name, the versions this build writes
//! and reads, and the check of a file's first record. A new format version starts here.

use serde::Serialize;

use crate::types::Life;

/// The mirror's format name, in the header.
pub const FORMAT: &str = "parkline-mirror";
/// The mirror format version this build writes (and the newest it reads).
pub const VERSION: u64 = 4;
/// The oldest mirror format version this build reads; an older file is upgraded on open (M14).
pub const VERSION_OLDEST: u64 = 1;

/// The header record (M2), with the mirror's life (M17; version 4).
#[derive(Serialize)]
pub(super) struct Header<'a> {
    pub(super) format: &'a str,
    pub(super) version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) life: Option<Life>,
}

/// The header's version, when this build reads it, and the mirror's life (M2, M17): only a
/// version 4 header names one.
pub(crate) fn check_header(json: &[u8]) -> Result<(u64, Option<Life>), String> {
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("header json error: {e}"))?;
    let version = check_version(&value)?;
    let life = match value.get("life") {
        None => return Ok((version, None)),
        Some(_) if version < 4 => return Err(format!("a version {version} header names a life")),
        Some(life) => serde_json::from_value::<Life>(life.clone()).map_err(|e| e.to_string())?,
    };
    Ok((version, Some(life)))
}

/// The version of the header `value`, when this build reads it (M2, M14).
fn check_version(value: &serde_json::Value) -> Result<u64, String> {
    //= spec/mirror.md#m2-header-and-version
    //# A reader MUST reject a file whose first record is not a header with format
    //# `parkline-mirror`, and a file whose version it does not know (this document is version 4;
    //# this build also reads versions 1, 2 and 3, M14), with the version in the error.
    let format = value.get("format").and_then(serde_json::Value::as_str);
    if format != Some(FORMAT) {
        return Err(format!("not a parkline mirror (header format {format:?})"));
    }
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(version) if (VERSION_OLDEST..=VERSION).contains(&version) => Ok(version),
        //= spec/mirror.md#m2-header-and-version
        //# A build MUST refuse a mirror of a newer version than it writes, changing nothing: a
        //# daemon rolled back to an older build cannot open the mirrors a newer build wrote.
        Some(other) => Err(format!(
            "unknown mirror version {other} (this build reads versions {VERSION_OLDEST} to {VERSION})"
        )),
        None => Err("header has no version".to_owned()),
    }
}
