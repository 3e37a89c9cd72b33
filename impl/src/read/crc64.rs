//! CRC-64/XZ (ECMA-182 polynomial, reflected, as `xz` writes it): the cursor's check of the turn
//! it follows and of the partial turn's prefix (spec/read.md section 5). Hand-written because
//! it is one table and one loop; the reference in `parkline-model` computes it bit by bit, and
//! the tests compare the two and pin the standard check value.

/// The reflected ECMA-182 polynomial.
const POLY: u64 = 0xC96C_5795_D787_0F42;

/// `TABLE[b]`: the register after shifting byte `b` through it, built at compile time.
const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
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
        table[byte] = crc;
        byte += 1;
    }
    table
};

/// The CRC-64/XZ of `bytes`.
pub(crate) fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = !0u64;
    for &byte in bytes {
        crc = (crc >> 8) ^ TABLE[usize::from(crc as u8 ^ byte)];
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

    #[test]
    fn crc64_has_the_standard_check_value_of_crc_64_xz() {
        assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
        assert_eq!(crc64(b""), 0);
    }
}
