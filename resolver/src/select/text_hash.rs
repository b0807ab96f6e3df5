//! A fast hash for the short strings selection looks up once per file of a page (version texts,
//! local labels, link directories): FNV-1a. The standard library's `SipHash` resists collision
//! attacks, which these maps do not need (a page can only make its own selection slower, and
//! holds a bounded number of distinct texts), and it was a tenth of a whole selection.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by short texts, hashed with FNV-1a.
pub(super) type TextMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv1a>>;

/// The 64-bit FNV-1a hasher.
pub(super) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_texts_stay_distinct() {
        let mut map: TextMap<&str, usize> = TextMap::default();
        for (i, text) in ["2.9.0+cu130", "2.9.0+cu128", "2.9.0", "cu130", ""]
            .iter()
            .enumerate()
        {
            map.insert(text, i);
        }
        assert_eq!(map.len(), 5);
        assert_eq!(map["2.9.0+cu128"], 1);
        assert_eq!(map[""], 4);
    }
}
