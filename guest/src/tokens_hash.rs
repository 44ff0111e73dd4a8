//! The hash of the cl100k rank table (§21.1.2 token counting), shared by `build.rs`,
//! which lays the table out, and `tokens`, which probes it.
//!
//! A slot holds `rank + 1` in its low [`INDEX_BITS`] bits (0 = empty) and, above
//! them, [`TAG_BITS`] of the hash bits the slot's position does not use (its tag): a
//! probe compares a token's bytes only when the tags agree, so most lookups that miss
//! (most of the pair lookups of a byte-pair merge) read no entry at all.

/// Slots of the open-addressing table: a power of two, ~2.6× the 99,998 multi-byte tokens.
pub const SLOTS: usize = 1 << 18;

/// Bits of a slot that hold `rank + 1` (cl100k has fewer than 2^17 ranks).
pub const INDEX_BITS: u32 = 17;

/// A hash of the token bytes, folded to 32 bits, read eight bytes at a time: a piece or
/// a pair of parts is mostly under eight bytes, so most hashes take no loop at all
/// (FNV-1a's byte-at-a-time loop, used before, cost a loop step per byte, which the
/// component pays for with an epoch check on every step). Only `u64` arithmetic, so
/// `build.rs` (on the build machine) and every target agree.
#[inline]
pub fn hash(bytes: &[u8]) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let n = bytes.len();
    let v = if n >= 8 {
        let mut h = n as u64;
        let mut i = 0;
        while i + 8 < n {
            h = (h ^ le(bytes, i, 8)).wrapping_mul(K).rotate_left(31);
            i += 8;
        }
        // the last eight bytes (overlapping the chunk before when n is not a multiple)
        (h ^ le(bytes, n - 8, 8)).wrapping_mul(K)
    } else if n >= 4 {
        // two four-byte reads that overlap and cover every byte
        (le(bytes, 0, 4) | le(bytes, n - 4, 4) << 32) ^ (n as u64).wrapping_mul(K)
    } else if n > 0 {
        (le(bytes, 0, 1) | le(bytes, n / 2, 1) << 8 | le(bytes, n - 1, 1) << 16) ^ (n as u64).wrapping_mul(K)
    } else {
        0
    };
    // murmur3's 64-bit finaliser: every input bit moves every output bit
    let mut x = v;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x ^ (x >> 32)) as u32
}

/// `width` (1, 4 or 8) bytes of `bytes` from `at`, little endian; 0 past the end.
#[inline]
pub fn le(bytes: &[u8], at: usize, width: usize) -> u64 {
    match (width, bytes.get(at..at + width)) {
        (8, Some(&[a, b, c, d, e, f, g, h])) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        (4, Some(&[a, b, c, d])) => u32::from_le_bytes([a, b, c, d]) as u64,
        (1, Some(&[a])) => a as u64,
        _ => 0,
    }
}

/// Where probing for a token of hash `h` starts.
#[inline]
pub fn home(h: u32) -> usize {
    h as usize & (SLOTS - 1)
}

/// Bits of the tag. Each one more halves the probes that read an entry only to find
/// another token, and adds ≈ 12 KB to the table's gzip size (the worker ships the table,
/// within its 2 MiB).
pub const TAG_BITS: u32 = 11;

/// The tag of a token of hash `h`, as a slot holds it (above the index bits).
#[inline]
pub fn tag(h: u32) -> u32 {
    ((h >> SLOTS.trailing_zeros()) & ((1 << TAG_BITS) - 1)) << INDEX_BITS
}

/// The slot for the token of rank `index` and hash `h`.
#[allow(dead_code)] // build.rs lays the table out with it
#[inline]
pub fn slot(h: u32, index: u32) -> u32 {
    tag(h) | (index + 1)
}
