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

/// A fast 64-bit fingerprint of `data` (not cryptographic), so a recall can fingerprint
/// a whole manifest for the prepared-corpus key (§21.3) at a fraction of byte-wise
/// FNV-1a's cost inside wasm. Four independent lanes of eight bytes each per step (a
/// single lane is one long chain of dependent multiplies: 7.5 % of a 1,000-unit agent's
/// recall), folded together, then the last words and the tail. Every step is a
/// bijection of the word it takes, so changing any one word changes the result.
/// Deterministic on every target.
pub fn fingerprint64(data: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, w: u64| (h.rotate_left(23) ^ w).wrapping_mul(K);
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let seed = 0xcbf2_9ce4_8422_2325u64 ^ data.len() as u64;
    let mut lanes = [seed, seed ^ K, seed.rotate_left(17), seed.rotate_left(41) ^ K];
    let mut blocks = data.chunks_exact(32);
    for b in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = mix(*lane, word(&b[8 * i..8 * i + 8]));
        }
    }
    let mut h = lanes.iter().fold(seed, |h, &l| mix(h, l));
    let mut words = blocks.remainder().chunks_exact(8);
    for w in &mut words {
        h = mix(h, word(w));
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
        // Several four-lane blocks, the words after them and a tail: every byte counts.
        let long: Vec<u8> = (0..203u32).map(|i| (i * 7 % 251) as u8).collect();
        let f = fingerprint64(&long);
        for i in 0..long.len() {
            let mut v = long.clone();
            v[i] ^= 0x80;
            assert_ne!(fingerprint64(&v), f, "flip at byte {i} of {}", long.len());
        }
    }

    #[test]
    fn hex_matches_the_formatter() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex(&all), all.iter().map(|b| format!("{b:02x}")).collect::<String>());
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[]), "");
    }
}
