//! The hash of the cl100k rank table (§21.1.2 token counting), shared by `build.rs`,
//! which lays the table out, and `tokens`, which probes it.

/// Slots of the open-addressing table: a power of two, ~2.6× the 99,998 multi-byte tokens.
pub const SLOTS: usize = 1 << 18;

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
