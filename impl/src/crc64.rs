//! CRC-64/XZ (ECMA-182 polynomial, reflected, as `xz` writes it): the read side's check of the
//! turn a cursor follows and of the partial turn's prefix (spec/read.md section 5), and the
//! remembered window's check of a line (spec/delivery.md D3). Hand-written because it is one
//! table and one loop; the reference in `parkline-model` computes it bit by bit, and the tests
//! compare the two and pin the standard check value.

/// The reflected ECMA-182 polynomial.
const POLY: u64 = 0xC96C_5795_D787_0F42;

/// `TABLES[0][b]`: the register after shifting byte `b` through it; `TABLES[k][b]`: after
/// shifting it and `k` zero bytes more, so eight bytes are folded with eight independent
/// lookups ("slicing by 8"), built at compile time.
const TABLES: [[u64; 256]; 8] = {
    let mut tables = [[0u64; 256]; 8];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = byte as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][byte] = crc;
        byte += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut byte = 0;
        while byte < 256 {
            let previous = tables[k - 1][byte];
            tables[k][byte] = (previous >> 8) ^ tables[0][(previous & 0xff) as usize];
            byte += 1;
        }
        k += 1;
    }
    tables
};

/// The CRC-64/XZ of `bytes`: eight bytes a step (a line's check at every settle, D3), then the
/// rest a byte at a time.
pub(crate) fn crc64(bytes: &[u8]) -> u64 {
    let t = &TABLES;
    let mut crc = !0u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let x = crc ^ u64::from_le_bytes(eight);
        let b = x.to_le_bytes();
        crc = t[7][usize::from(b[0])]
            ^ t[6][usize::from(b[1])]
            ^ t[5][usize::from(b[2])]
            ^ t[4][usize::from(b[3])]
            ^ t[3][usize::from(b[4])]
            ^ t[2][usize::from(b[5])]
            ^ t[1][usize::from(b[6])]
            ^ t[0][usize::from(b[7])];
    }
    for &byte in words.remainder() {
        crc = (crc >> 8) ^ t[0][usize::from(crc as u8 ^ byte)];
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::{TABLES, crc64};

    /// The register a byte at a time, as the standard defines it: the reference of the eight.
    fn bytewise(bytes: &[u8]) -> u64 {
        let mut crc = !0u64;
        for &byte in bytes {
            crc = (crc >> 8) ^ TABLES[0][usize::from(crc as u8 ^ byte)];
        }
        !crc
    }

    #[test]
    fn crc64_has_the_standard_check_value_of_crc_64_xz() {
        assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
        assert_eq!(crc64(b""), 0);
    }

    #[test]
    fn crc64_eight_at_a_time_is_the_bytewise_register_at_every_length() {
        let bytes: Vec<u8> = (0..200u32).map(|n| (n * 37 + 11) as u8).collect();
        for len in 0..=bytes.len() {
            for start in 0..3.min(len + 1) {
                let piece = &bytes[start..len];
                assert_eq!(crc64(piece), bytewise(piece), "{start}..{len}");
            }
        }
    }
}
