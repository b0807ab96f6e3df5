//! [`Hashes`]: a file's hash name to hex digest table, as small as the one entry nearly every
//! file has.
//!
//! A `BTreeMap` spent a 540-byte node on that one entry, for each file's hashes and again for
//! its metadata's: on the 2,649-link `/whl/torch/` page that was most of the 4 MB a parse
//! allocated and first-touched. Here one `(name, digest)` pair is held inline, in 48 bytes and
//! no allocation of its own; only a second hash moves the table into a sorted vector. The usual
//! names (`sha256`) are static strings, never allocated.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// Hash names that indexes write, kept as static strings (`hashlib` names; PyPI gives
/// `sha256`, `md5` and `blake2b_256`).
const KNOWN_NAMES: [&str; 9] = [
    "sha256",
    "md5",
    "blake2b_256",
    "sha1",
    "sha224",
    "sha384",
    "sha512",
    "sha3_256",
    "blake2b",
];

/// Hash name to hex digest, ordered by name, each name once: a file's `#sha256=` fragment in
/// HTML or its `hashes` table in JSON ([PEP 503], [PEP 691]), and the hashes of its separately
/// served metadata ([PEP 658]). Serializes as a JSON object, as those PEPs write it.
///
/// The map API the proxy calls (`get`, `iter`, `len`, `insert`, building from pairs) behaves as
/// `BTreeMap<String, String>`'s did: `insert` and building from pairs keep the last value of a
/// name; [`Hashes::get_or_insert_with`] keeps the first.
///
/// [PEP 503]: https://peps.python.org/pep-0503/
/// [PEP 658]: https://peps.python.org/pep-0658/
/// [PEP 691]: https://peps.python.org/pep-0691/
#[derive(Clone, Default)]
pub struct Hashes {
    entries: Entries,
}

/// One hash: its name, and its digest in hex.
type Entry = (Cow<'static, str>, String);

/// The entries, sorted by name, names unique.
#[derive(Clone, Default)]
enum Entries {
    #[default]
    None,
    /// The table nearly every file has, inline.
    One([Entry; 1]),
    /// Two or more (PyPI's JSON gives some files `sha256`, `md5` and `blake2b_256`).
    Many(Vec<Entry>),
}

impl Hashes {
    /// An empty table (allocates nothing).
    pub const fn new() -> Self {
        Hashes {
            entries: Entries::None,
        }
    }

    /// How many hashes the table holds.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the table holds no hash.
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// The digest for `name` (`"sha256"`), if the table has one.
    pub fn get(&self, name: &str) -> Option<&String> {
        let at = self.find(name).ok()?;
        Some(&self.as_slice()[at].1)
    }

    /// Whether the table has a digest for `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// `(name, digest)` pairs, ordered by name.
    pub fn iter(&self) -> Iter<'_> {
        self.as_slice()
            .iter()
            .map(|(name, digest)| (name.as_ref(), digest))
    }

    /// Sets the digest for `name`, returning the one it replaces, as `BTreeMap::insert` does.
    pub fn insert(
        &mut self,
        name: impl AsRef<str> + Into<String>,
        digest: String,
    ) -> Option<String> {
        match self.find(name.as_ref()) {
            Ok(at) => Some(std::mem::replace(&mut self.as_mut_slice()[at].1, digest)),
            Err(at) => {
                let name = intern(name);
                self.insert_at(at, name, digest);
                None
            }
        }
    }

    /// The digest for `name`, inserting `digest()` first when there is none: the first of
    /// duplicated names wins (`BTreeMap`'s `entry(name).or_insert_with(digest)`).
    pub fn get_or_insert_with(&mut self, name: &str, digest: impl FnOnce() -> String) -> &String {
        let at = match self.find(name) {
            Ok(at) => at,
            Err(at) => {
                self.insert_at(at, intern(name), digest());
                at
            }
        };
        &self.as_slice()[at].1
    }

    fn as_slice(&self) -> &[Entry] {
        match &self.entries {
            Entries::None => &[],
            Entries::One(one) => one,
            Entries::Many(many) => many,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Entry] {
        match &mut self.entries {
            Entries::None => &mut [],
            Entries::One(one) => one,
            Entries::Many(many) => many,
        }
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.as_slice()
            .binary_search_by(|(probe, _)| probe.as_ref().cmp(name))
    }

    fn insert_at(&mut self, at: usize, name: Cow<'static, str>, digest: String) {
        self.entries = match std::mem::take(&mut self.entries) {
            Entries::None => Entries::One([(name, digest)]),
            Entries::One([first]) => {
                let mut many = Vec::with_capacity(2);
                many.push(first);
                many.insert(at, (name, digest));
                Entries::Many(many)
            }
            Entries::Many(mut many) => {
                many.insert(at, (name, digest));
                Entries::Many(many)
            }
        };
    }
}

// Equal tables have equal sorted entries, wherever they are held.
impl PartialEq for Hashes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Hashes {}

impl std::hash::Hash for Hashes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

/// A known hash name as a static string, any other as given.
fn intern(name: impl AsRef<str> + Into<String>) -> Cow<'static, str> {
    match KNOWN_NAMES.iter().find(|known| **known == name.as_ref()) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(name.into()),
    }
}

impl fmt::Debug for Hashes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(String, String)> for Hashes {
    /// Later pairs replace earlier ones of the same name, as collecting into a `BTreeMap` does.
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        let mut hashes = Hashes::new();
        hashes.extend(pairs);
        hashes
    }
}

impl Extend<(String, String)> for Hashes {
    fn extend<I: IntoIterator<Item = (String, String)>>(&mut self, pairs: I) {
        for (name, digest) in pairs {
            self.insert(name, digest);
        }
    }
}

impl<const N: usize> From<[(String, String); N]> for Hashes {
    /// Later pairs replace earlier ones of the same name, as `BTreeMap::from` does.
    fn from(pairs: [(String, String); N]) -> Self {
        pairs.into_iter().collect()
    }
}

/// The iterator of [`Hashes::iter`]: `(name, digest)` pairs, ordered by name.
pub type Iter<'a> =
    std::iter::Map<std::slice::Iter<'a, Entry>, fn(&'a Entry) -> (&'a str, &'a String)>;

impl<'a> IntoIterator for &'a Hashes {
    type Item = (&'a str, &'a String);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Serialize for Hashes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (name, digest) in self {
            map.serialize_entry(name, digest)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Hashes {
    /// A JSON object of strings; a repeated name keeps its last digest, as serde's `BTreeMap`
    /// (and Python's `json`, which pip reads with) does.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HashesVisitor;
        impl<'de> Visitor<'de> for HashesVisitor {
            type Value = Hashes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Hashes, A::Error> {
                let mut hashes = Hashes::new();
                while let Some((name, digest)) = map.next_entry::<String, String>()? {
                    hashes.insert(name, digest);
                }
                Ok(hashes)
            }
        }
        deserializer.deserialize_map(HashesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str, digest: &str) -> (String, String) {
        (name.to_owned(), digest.to_owned())
    }

    #[test]
    fn keeps_names_sorted_and_unique_like_a_btree_map() {
        let hashes = Hashes::from([pair("sha256", "aa"), pair("md5", "bb"), pair("x", "cc")]);
        let names: Vec<&str> = hashes.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["md5", "sha256", "x"]);
        assert_eq!(hashes.get("sha256").cloned(), Some("aa".to_owned()));
        assert_eq!(hashes.get("sha512"), None);
        assert!(hashes.contains_key("x"));
        assert_eq!(hashes.len(), 3);
        // Order of insertion does not matter to equality.
        assert_eq!(
            hashes,
            Hashes::from([pair("x", "cc"), pair("sha256", "aa"), pair("md5", "bb")])
        );
        assert_ne!(hashes, Hashes::from([pair("sha256", "aa")]));
        assert!(Hashes::new().is_empty());
        assert_eq!(Hashes::default(), Hashes::new());
    }

    #[test]
    fn insert_keeps_the_last_and_get_or_insert_with_the_first() {
        let mut hashes = Hashes::new();
        assert_eq!(hashes.insert("sha256", "aa".to_owned()), None);
        assert_eq!(
            hashes.insert("sha256".to_owned(), "bb".to_owned()),
            Some("aa".to_owned())
        );
        assert_eq!(
            hashes.get_or_insert_with("sha256", || "cc".to_owned()),
            "bb"
        );
        assert_eq!(hashes.get_or_insert_with("md5", || "dd".to_owned()), "dd");
        assert_eq!(
            hashes,
            Hashes::from([
                pair("sha256", "aa"),
                pair("md5", "dd"),
                pair("sha256", "bb")
            ])
        );
        let collected: Hashes = [pair("a", "1"), pair("a", "2")].into_iter().collect();
        assert_eq!(collected.get("a").map(String::as_str), Some("2"));
    }

    #[test]
    fn a_single_entry_is_held_inline_with_a_static_name() {
        let mut hashes = Hashes::new();
        hashes.insert("sha256", "aa".to_owned());
        assert!(matches!(
            &hashes.entries,
            Entries::One([(Cow::Borrowed("sha256"), _)])
        ));
        hashes.insert("Unknown-Name", "bb".to_owned());
        assert!(matches!(
            &hashes.entries,
            Entries::Many(many) if matches!(many[..], [(Cow::Owned(_), _), (Cow::Borrowed(_), _)])
        ));
        assert_eq!(hashes.get("sha256").map(String::as_str), Some("aa"));
        hashes.insert("md5", "cc".to_owned());
        let names: Vec<&str> = hashes.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["Unknown-Name", "md5", "sha256"]);
        // As small as the vector it replaced was, plus the one entry it holds.
        assert!(std::mem::size_of::<Hashes>() <= 48);
    }

    #[test]
    fn serializes_as_a_json_object_in_name_order() {
        let hashes = Hashes::from([pair("sha256", "aa"), pair("md5", "bb")]);
        let json = serde_json::to_string(&hashes).unwrap();
        assert_eq!(json, r#"{"md5":"bb","sha256":"aa"}"#);
        assert_eq!(serde_json::from_str::<Hashes>(&json).unwrap(), hashes);
        assert_eq!(serde_json::to_string(&Hashes::new()).unwrap(), "{}");
        assert_eq!(format!("{hashes:?}"), r#"{"md5": "bb", "sha256": "aa"}"#);
    }

    #[test]
    fn reads_json_as_serde_reads_a_btree_map() {
        for json in [
            r#"{"sha256":"aa","sha256":"bb","md5":"cc"}"#,
            r#"{"sha256":"a\"a"}"#,
            "{}",
        ] {
            let ours: Hashes = serde_json::from_str(json).unwrap();
            let btree: std::collections::BTreeMap<String, String> =
                serde_json::from_str(json).unwrap();
            assert_eq!(ours, btree.into_iter().collect::<Hashes>(), "{json}");
        }
        for json in [
            r#"{"sha256":1}"#,
            "[]",
            r#""sha256""#,
            "null",
            r#"{"a":null}"#,
        ] {
            assert!(serde_json::from_str::<Hashes>(json).is_err(), "{json}");
        }
    }
}
