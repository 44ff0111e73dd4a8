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

/// A fast 64-bit fingerprint of `data` (not cryptographic): eight bytes per step, so a
/// recall can fingerprint a whole manifest for the prepared-corpus key (§21.3) at a
/// fraction of byte-wise FNV-1a's cost inside wasm. Deterministic on every target.
pub fn fingerprint64(data: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, w: u64| (h.rotate_left(23) ^ w).wrapping_mul(K);
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ data.len() as u64;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = mix(h, u64::from_le_bytes(b));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = mix(h, u64::from_le_bytes(tail) ^ ((words.remainder().len() as u64) << 59));
    h ^ (h >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_differ_on_any_change() {
        let base = br#"{"agent_id":"a","entries":[{"name":"x"}]}"#.to_vec();
        let f = fingerprint64(&base);
        assert_eq!(f, fingerprint64(&base), "deterministic");
        for i in 0..base.len() {
            let mut v = base.clone();
            v[i] ^= 1;
            assert_ne!(fingerprint64(&v), f, "flip at byte {i}");
        }
        let mut longer = base.clone();
        longer.push(0);
        assert_ne!(fingerprint64(&longer), f, "a trailing zero byte");
        assert_ne!(fingerprint64(b""), fingerprint64(b"\0"));
    }

    #[test]
    fn hex_matches_the_formatter() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex(&all), all.iter().map(|b| format!("{b:02x}")).collect::<String>());
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[]), "");
    }
}
