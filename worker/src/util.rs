//! Small helpers the worker needs without `std::time` or OS randomness (neither exists on
//! `wasm32-unknown-unknown`): the clock from `Date.now()`, randomness from
//! `crypto.getRandomValues` (getrandom's `js` backend), ISO 8601 dates, hex digests.

use sha2::{Digest, Sha256};

/// Unix ms now (workerd advances the clock at I/O boundaries only; enough for audit times).
pub fn now_ms() -> i64 {
    worker::js_sys::Date::now() as i64
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `n` random bytes as hex (cryptographic randomness from the runtime).
pub fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    let _ = getrandom::getrandom(&mut b);
    hex(&b)
}

/// A random UUID v4 string.
pub fn uuid4() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::getrandom(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

pub use lid_shared::time::iso;
