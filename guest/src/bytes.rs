//! Byte-string comparison for the wasm component: `memcmp` and `bcmp`.
//!
//! Every `==` or `cmp` of two strings or byte slices compiles to a call to `memcmp`
//! (or `bcmp`). In the `wasm32-wasip2` build that is wasi-libc's, which compares one
//! byte per step: 8 % of a 1,000-unit agent's recall in the component (index checks,
//! vocabulary searches), 3 % of an 11-unit one, where natively the same comparisons
//! run on the host libc's vector code. [`compare`] steps eight bytes at a time; the
//! component build exports it under those two names, which the linker then takes instead
//! of libc's (its `memcmp` object is only pulled in for a name nothing else defines).
//! Native and browser builds keep their libc's; token lookups call [`equal`] directly on
//! every target.

/// `memcmp` of `n` bytes at `a` and `b`: negative, zero or positive as the first byte
/// that differs is smaller or larger in `a` (bytes compared unsigned), 0 when none does.
/// Eight bytes a step, then four, two and one for the tail (token-sized strings are
/// mostly tail).
///
/// # Safety
///
/// `a` and `b` must each be valid for reads of `n` bytes.
#[inline]
pub unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    // Big-endian words order as their bytes do: the first differing byte decides.
    macro_rules! step {
        ($t:ty, $i:expr) => {{
            // SAFETY: the caller checked $i + size_of::<$t>() <= n; reads are unaligned.
            let (x, y) = unsafe { ((a.add($i) as *const $t).read_unaligned(), (b.add($i) as *const $t).read_unaligned()) };
            if x != y {
                return if <$t>::from_be(x) < <$t>::from_be(y) { -1 } else { 1 };
            }
        }};
    }
    let mut i = 0;
    while i + 8 <= n {
        step!(u64, i);
        i += 8;
    }
    if i + 4 <= n {
        step!(u32, i);
        i += 4;
    }
    if i + 2 <= n {
        step!(u16, i);
        i += 2;
    }
    if i < n {
        step!(u8, i);
    }
    0
}

/// `a == b`, by [`compare`] (in place, without a call to `memcmp`).
#[inline]
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    // SAFETY: both slices are valid for their length, which is the same.
    a.len() == b.len() && unsafe { compare(a.as_ptr(), b.as_ptr(), a.len()) } == 0
}

/// The C `memcmp` of the component build ([`compare`]).
///
/// # Safety
///
/// As for [`compare`].
#[cfg(all(feature = "component", target_os = "wasi"))]
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { compare(a, b, n) }
}

/// The C `bcmp` (zero exactly when equal) of the component build ([`compare`]).
///
/// # Safety
///
/// As for [`compare`].
#[cfg(all(feature = "component", target_os = "wasi"))]
#[no_mangle]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { compare(a, b, n) }
}

#[cfg(test)]
mod tests {
    /// [`super::equal`] agrees with slice equality at every length and at every position
    /// a difference can hide in.
    #[test]
    fn equal_agrees_with_slice_equality() {
        let base: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 0..base.len() {
            let a = &base[..n];
            assert!(super::equal(a, a));
            assert!(!super::equal(a, &base[..n + 1]), "lengths differ at {n}");
            for k in 0..n {
                let mut b = a.to_vec();
                b[k] ^= 0x80;
                assert!(!super::equal(a, &b), "length {n}, byte {k}");
            }
        }
    }

    /// The sign of [`super::compare`] is the order of the slices at every length and at
    /// every position of a first difference, bytes compared unsigned.
    #[test]
    fn compare_orders_as_slices_do() {
        let base: Vec<u8> = (0..40u32).map(|b| (b * 37 % 251) as u8).collect();
        let sign = |a: &[u8], b: &[u8]| unsafe { super::compare(a.as_ptr(), b.as_ptr(), a.len()) }.signum();
        for n in 0..=base.len() {
            let a = &base[..n];
            assert_eq!(sign(a, a), 0, "length {n}");
            for k in 0..n {
                for delta in [1u8, 0x80, 0xff] {
                    let mut b = a.to_vec();
                    b[k] = b[k].wrapping_add(delta);
                    // a later byte that differs the other way must not decide
                    if k + 1 < n {
                        b[k + 1] = b[k + 1].wrapping_sub(1);
                    }
                    let want = match a.cmp(b.as_slice()) {
                        std::cmp::Ordering::Less => -1,
                        std::cmp::Ordering::Equal => 0,
                        std::cmp::Ordering::Greater => 1,
                    };
                    assert_eq!(sign(a, &b), want, "length {n}, byte {k}, delta {delta}");
                    assert_eq!(sign(&b, a), -want);
                }
            }
        }
    }
}
