//! Stand-in digests: 64 hex digits derived from a filename, so that a generated page is the same
//! on every run without hashing real wheels (the proxy only compares them, never recomputes them
//! for pages).

use std::fmt::Write as _;

/// 64 lowercase hex digits, a deterministic function of `seed` and `salt`.
pub fn fake_sha256(seed: &str, salt: u64) -> String {
    // FNV-1a over the seed, then splitmix64 for four well-mixed 64-bit words.
    let mut state = seed.bytes().fold(0xcbf2_9ce4_8422_2325_u64 ^ salt, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut out = String::with_capacity(64);
    for _ in 0..4 {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let _ = write!(out, "{z:016x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fake_sha256;

    #[test]
    fn is_64_hex_digits_stable_and_seed_dependent() {
        let a = fake_sha256("torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", 0);
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(
            a,
            fake_sha256("torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", 0)
        );
        assert_ne!(
            a,
            fake_sha256("torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", 0)
        );
        assert_ne!(
            a,
            fake_sha256("torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", 1)
        );
    }
}
