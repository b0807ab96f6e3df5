//! Any JSON value, read for what it is rather than for what a PEP says it should be: the first
//! step of the tolerant reader (`json/read.rs`), which then takes from it what selection and
//! rewriting need and nothing more.
//!
//! Strings borrow from the page where they can (no escape in them), so reading a page this way
//! allocates about what reading it into typed fields did: each string once, when a field keeps
//! it, plus one vector per object.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON value, its strings and keys borrowed from the page where possible.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Shape<'a> {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Seq(Vec<Shape<'a>>),
    /// Members in page order (a repeated key is kept twice; readers take the first).
    Map(Vec<(Cow<'a, str>, Shape<'a>)>),
}

impl<'a> Shape<'a> {
    /// What the value is, for a reason naming what was found: "a number", "an object", ...
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Shape::Null => "null",
            Shape::Bool(_) => "a boolean",
            Shape::Unsigned(_) | Shape::Signed(_) | Shape::Float(_) => "a number",
            Shape::Str(_) => "a string",
            Shape::Seq(_) => "a list",
            Shape::Map(_) => "an object",
        }
    }

    /// The member `key` of an object (the first, when the page repeats it); `None` for any
    /// other value.
    pub(super) fn get(&self, key: &str) -> Option<&Shape<'a>> {
        match self {
            Shape::Map(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, when the value is one.
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Shape::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The value written back as compact JSON, for members passed through as they came.
    pub(super) fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        let text = |out: &mut String, text: &str| {
            out.push_str(&serde_json::to_string(text).unwrap_or_default());
        };
        match self {
            Shape::Null => out.push_str("null"),
            Shape::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Shape::Unsigned(value) => out.push_str(&value.to_string()),
            Shape::Signed(value) => out.push_str(&value.to_string()),
            // serde_json writes what it read back to the same digits.
            Shape::Float(value) => out.push_str(&serde_json::to_string(value).unwrap_or_default()),
            Shape::Str(value) => text(out, value),
            Shape::Seq(items) => {
                out.push('[');
                for (at, item) in items.iter().enumerate() {
                    if at > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            Shape::Map(members) => {
                out.push('{');
                for (at, (key, value)) in members.iter().enumerate() {
                    if at > 0 {
                        out.push(',');
                    }
                    text(out, key);
                    out.push(':');
                    value.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

impl<'de> de::Deserialize<'de> for Shape<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Shape<'de>, E> {
        Ok(Shape::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Shape<'de>, E> {
        Ok(Shape::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Shape<'de>, E> {
        Ok(Shape::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Shape<'de>, E> {
        Ok(Shape::Unsigned(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Shape<'de>, E> {
        Ok(Shape::Signed(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Shape<'de>, E> {
        Ok(Shape::Float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Shape<'de>, E> {
        Ok(Shape::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Shape<'de>, E> {
        Ok(Shape::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Shape<'de>, E> {
        Ok(Shape::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Shape::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(key) = map.next_key_seed(KeySeed)? {
            members.push((key, map.next_value()?));
        }
        Ok(Shape::Map(members))
    }
}

/// An object's key, borrowed from the page when it has no escape.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_kind_and_writes_it_back() {
        let json = r#"{"a":null,"b":[true,1,-2,1.5,"x\"y"],"c":{"d":{}},"a":2}"#;
        let shape: Shape<'_> = serde_json::from_str(json).unwrap();
        assert_eq!(
            shape.get("a"),
            Some(&Shape::Null),
            "the first of a repeated key"
        );
        assert_eq!(shape.get("zz"), None);
        assert_eq!(shape.get("b").unwrap().kind(), "a list");
        assert_eq!(shape.to_json(), json);
        // Borrowed where the page had no escape.
        let Shape::Map(members) = &shape else {
            panic!()
        };
        assert!(matches!(members[0].0, Cow::Borrowed(_)));
    }
}
