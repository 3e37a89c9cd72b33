//! Fuzz inputs as tests: bytes decoded into read ops the way libfuzzer does, ops encoded back
//! into bytes (the seed corpus), and the fuzz target's known-bad behaviour from the environment.

use arbitrary::{Arbitrary, Unstructured};

use super::op::ReadOp;
use crate::known_bad::KnownBad;

/// Decodes fuzz input the way `libfuzzer-sys` does for the `read_windows` target, so corpus
/// files replay as plain tests on stable. `None` when the bytes do not make ops.
pub fn decode_read_ops(bytes: &[u8]) -> Option<Vec<ReadOp>> {
    <Vec<ReadOp> as Arbitrary>::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// The bytes that [`decode_read_ops`] (and so the fuzz target) decodes into `ops`: the inverse
/// of the derived `Arbitrary` layout (a continue byte before each op, the variant as a
/// little-endian `u32` scaled to the variant count, then the fields little-endian in order). Used
/// to write seed corpora from readable scenarios.
pub fn encode_read_ops(ops: &[ReadOp]) -> Vec<u8> {
    const VARIANTS: u64 = 16;
    let mut bytes = Vec::new();
    for op in ops {
        bytes.push(1);
        let (index, fields): (u64, Vec<u8>) = match *op {
            ReadOp::Grow { len, letter } => (0, vec![len, letter]),
            ReadOp::Complete { gap } => (1, vec![gap]),
            ReadOp::OpenRequest { len } => (2, vec![len]),
            ReadOp::TerminateRequest { pick } => (3, vec![pick]),
            ReadOp::ReadSince { budget, history } => {
                (4, [&budget.to_le_bytes()[..], &[history]].concat())
            }
            ReadOp::ReadStale { pick, budget } => {
                (5, [&[pick][..], &budget.to_le_bytes()].concat())
            }
            ReadOp::ReadLatest { n, budget, history } => {
                (6, [&[n][..], &budget.to_le_bytes(), &[history]].concat())
            }
            ReadOp::ReadTurn {
                pick,
                offset,
                budget,
            } => (
                7,
                [&[pick][..], &offset.to_le_bytes(), &budget.to_le_bytes()].concat(),
            ),
            ReadOp::ReadDamaged {
                position,
                replacement,
                pad,
            } => (
                8,
                [&[position, replacement][..], &pad.to_le_bytes()].concat(),
            ),
            ReadOp::ReadForeign { seq, child } => (9, vec![seq, child]),
            ReadOp::ReadAhead { by } => (10, vec![by]),
            ReadOp::ReadSinceTurn { pick, budget } => {
                (11, [&[pick][..], &budget.to_le_bytes()].concat())
            }
            ReadOp::ReadAtNeeded { history } => (12, vec![history]),
            ReadOp::Rewrite { len, letter } => (13, vec![len, letter]),
            ReadOp::Rebuild { keep } => (14, vec![keep]),
            ReadOp::ReadForged { seq, kind } => (15, vec![seq, kind]),
        };
        // The derive picks variant `(u32 * VARIANTS) >> 32`: the smallest u32 giving `index`.
        let discriminant = u32::try_from((index << 32).div_ceil(VARIANTS)).unwrap_or(u32::MAX);
        bytes.extend_from_slice(&discriminant.to_le_bytes());
        bytes.extend_from_slice(&fields);
    }
    bytes.push(0);
    bytes
}

/// The read behaviour the fuzz target `read_windows` runs: the one named by the environment
/// variable `PARKLINE_KNOWN_BAD` (kebab-case, `PARKLINE_KNOWN_BAD=turns-only-budget`), or none.
///
/// # Errors
///
/// The variable names no known-bad behaviour, or a delivery one.
pub fn known_bad_from_env() -> Result<Option<KnownBad>, String> {
    match KnownBad::from_env("PARKLINE_KNOWN_BAD")? {
        Some(bad) if !bad.is_read() => Err(format!(
            "PARKLINE_KNOWN_BAD={bad}: a delivery behaviour; read_windows runs one of {:?}",
            KnownBad::READ.map(KnownBad::name)
        )),
        known_bad => Ok(known_bad),
    }
}
