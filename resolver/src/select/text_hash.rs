//! A fast hash for the short strings selection looks up once per file of a page (version texts,
//! local labels, link directories): Fx, eight bytes a step. The standard library's `SipHash`
//! resists collision attacks, which these maps do not need (a page can only make its own
//! selection slower, and holds a bounded number of distinct texts), and it was a tenth of a whole
//! selection; FNV-1a, a byte a step, was 3% more instructions than Fx over the torch page.

use std::collections::HashMap;

/// A `HashMap` keyed by short texts, hashed with Fx.
pub(super) type TextMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

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
