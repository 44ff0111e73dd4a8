//! SHA-256 digests as lowercase hex: how content-addressed recall (§21.5.1 audit
//! records, Spec-13 content items) and the derived-blob caches name what they hold.

use sha2::{Digest, Sha256};

/// Lowercase hex of `bytes` (a table lookup per nibble: this runs on every recall, where
/// `format!("{b:02x}")` per byte cost more than the hashing itself inside wasm).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// SHA-256 of `data` as 64 lowercase hex digits.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_matches_the_formatter() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex(&all), all.iter().map(|b| format!("{b:02x}")).collect::<String>());
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[]), "");
    }
}
