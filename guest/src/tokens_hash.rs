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
#[allow(dead_code)] // only `layout` uses it: build.rs, the edge builds and tests
#[inline]
pub fn slot(h: u32, index: u32) -> u32 {
    tag(h) | (index + 1)
}

/// The whole rank table (`cl100k.bin`, laid out as `build.rs` describes) from its compact
/// form: `lens[r]` is the length of the token of rank `r`, and `bytes` every token's bytes
/// in rank order. `build.rs` lays out the table the component ships with it, and the edge
/// builds (the worker and the browser preview), which ship only the compact form, lay out
/// theirs with it on first use (`tokens::table`): one layout, so both tables are
/// byte-identical (tested). Input that is not a table's (too many ranks, short bytes)
/// gives what it gives, never a panic.
#[allow(dead_code)] // build.rs, the edge builds (`tokens::table`) and tests
pub fn layout(lens: &[u8], bytes: &[u8]) -> Vec<u8> {
    const SINGLE: usize = 1;
    const PAIRS: usize = SINGLE + 256;
    const SLOTS_AT: usize = PAIRS + (1 << 16);
    const OFFSETS: usize = SLOTS_AT + SLOTS;
    let r = lens.len().min((1 << INDEX_BITS) - 1);
    let total = lens[..r].iter().map(|&n| n as usize).sum::<usize>().min(bytes.len());
    let words = OFFSETS + r + 1;
    // One zeroed buffer written in place (an empty slot or pair is 0): no second copy.
    let mut blob = vec![0u8; words * 4 + total];
    let put = |blob: &mut [u8], word: usize, v: u32| {
        if let Some(w) = blob.get_mut(word * 4..word * 4 + 4) {
            w.copy_from_slice(&v.to_le_bytes());
        }
    };
    let get = |blob: &[u8], word: usize| match blob.get(word * 4..word * 4 + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    };
    put(&mut blob, 0, r as u32);
    for b in 0..256 {
        put(&mut blob, SINGLE + b, u32::MAX);
    }
    let mut at = 0usize;
    for (rank, &n) in lens[..r].iter().enumerate() {
        let end = (at + n as usize).min(total);
        put(&mut blob, OFFSETS + rank, at as u32);
        let t = bytes.get(at..end).unwrap_or(&[]);
        match t {
            [b] => put(&mut blob, SINGLE + *b as usize, rank as u32),
            // Every two-byte token by its bytes (the first pair lookups of a merge are all
            // of two bytes: one load each instead of a hash probe); the slots hold the
            // longer tokens.
            [a, b] => put(&mut blob, PAIRS + ((*a as usize) << 8 | *b as usize), rank as u32 + 1),
            _ if t.len() > 2 => {
                let h = hash(t);
                let mut s = home(h);
                // fewer tokens than slots: a free slot is always found
                for _ in 0..SLOTS {
                    if get(&blob, SLOTS_AT + s) == 0 {
                        put(&mut blob, SLOTS_AT + s, slot(h, rank as u32));
                        break;
                    }
                    s = (s + 1) & (SLOTS - 1);
                }
            }
            _ => {}
        }
        at = end;
    }
    put(&mut blob, OFFSETS + r, at as u32);
    if let (Some(dst), Some(src)) = (blob.get_mut(words * 4..), bytes.get(..total)) {
        dst.copy_from_slice(src);
    }
    blob
}

/// The compact form `[r: u32 LE][lens: r bytes][bytes]` of `r` tokens (`build.rs` writes
/// it; [`compact_parts`] reads it).
#[allow(dead_code)] // build.rs
pub fn compact(lens: &[u8], bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + lens.len() + bytes.len());
    out.extend_from_slice(&(lens.len() as u32).to_le_bytes());
    out.extend_from_slice(lens);
    out.extend_from_slice(bytes);
    out
}

/// Splits the compact form ([`compact`]) into `(lens, bytes)`.
#[allow(dead_code)] // the edge builds (`tokens::table`) and tests
pub fn compact_parts(compact: &[u8]) -> (&[u8], &[u8]) {
    let r = match compact.get(..4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]) as usize,
        _ => 0,
    };
    let lens = compact.get(4..4 + r).unwrap_or(&[]);
    let bytes = compact.get(4 + lens.len()..).unwrap_or(&[]);
    (lens, bytes)
}
