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

/// FNV-1a over the token bytes, folded to 32 bits.
#[inline]
pub fn hash(bytes: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
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
