//! Which bytes each component of a distribution filename may hold, read from one table: a
//! lookup per byte, where a chain of comparisons per byte was most of splitting a wheel name
//! (every file of a page is split where the page is parsed, thousands per torch page).

/// Letters and digits.
const ALNUM: u8 = 1 << 0;
/// What a distribution name may hold: letters, digits, `_`, `.` and `-`.
const NAME: u8 = 1 << 1;
/// What one tag may hold (and a build tag): letters, digits and `_`.
const TAG: u8 = 1 << 2;
/// What a compressed tag set may hold: a tag's bytes and `.`.
const TAG_SET: u8 = 1 << 3;
/// What a PEP 825 variant label may hold: `0-9 a-z _ .`.
const LABEL: u8 = 1 << 4;
/// `.`, the separator of a compressed tag set.
const DOT: u8 = 1 << 5;

/// Each byte's classes.
static CLASSES: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut b: u8 = 0;
    loop {
        let class = if b.is_ascii_lowercase() || b.is_ascii_digit() {
            ALNUM | NAME | TAG | TAG_SET | LABEL
        } else if b.is_ascii_uppercase() {
            ALNUM | NAME | TAG | TAG_SET
        } else if b == b'_' {
            NAME | TAG | TAG_SET | LABEL
        } else if b == b'.' {
            NAME | TAG_SET | LABEL | DOT
        } else if b == b'-' {
            NAME
        } else {
            0
        };
        table[b as usize] = class;
        if b == u8::MAX {
            return table;
        }
        b += 1;
    }
}

/// What one component's bytes are: the classes every byte has, and those any byte has.
#[derive(Clone, Copy)]
pub(super) struct Classes {
    every: u8,
    any: u8,
}

impl Classes {
    /// Of no byte yet.
    pub(super) const EMPTY: Classes = Classes {
        every: u8::MAX,
        any: 0,
    };

    /// With `byte` added.
    #[inline]
    pub(super) fn with(self, byte: u8) -> Classes {
        let class = CLASSES[usize::from(byte)];
        Classes {
            every: self.every & class,
            any: self.any | class,
        }
    }

    /// Of every byte of `text`. No early exit: components are short and nearly always valid,
    /// and a branch per byte cost more than reading to the end.
    pub(super) fn of(text: &str) -> Classes {
        text.bytes().fold(Classes::EMPTY, Classes::with)
    }
}

fn is_alnum(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & ALNUM != 0
}

/// A distribution name as a filename writes it: letters, digits, `_`, `.`, `-`, starting and
/// ending with a letter or digit.
pub(super) fn valid_name(name: &str) -> bool {
    valid_name_of(name, Classes::of(name))
}

/// [`valid_name`], its bytes' classes known.
pub(super) fn valid_name_of(name: &str, classes: Classes) -> bool {
    let bytes = name.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    is_alnum(first) && is_alnum(last) && classes.every & NAME != 0
}

/// One tag, or a build tag: letters, digits and `_`, at least one.
pub(super) fn valid_tag_part(tag: &str) -> bool {
    valid_tag_part_of(tag, Classes::of(tag))
}

/// [`valid_tag_part`], its bytes' classes known.
pub(super) fn valid_tag_part_of(tag: &str, classes: Classes) -> bool {
    !tag.is_empty() && classes.every & TAG != 0
}

/// A compressed tag set (`manylinux_2_17_aarch64.manylinux2014_aarch64`): tag parts joined by
/// single dots, each non-empty letters, digits and `_`. Its bytes' classes known.
pub(super) fn valid_tag_set_of(tags: &str, classes: Classes) -> bool {
    let bytes = tags.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if classes.every & TAG_SET == 0 {
        return false;
    }
    // Dots only between parts: none first or last, never two together.
    classes.any & DOT == 0
        || (first != b'.' && last != b'.' && !bytes.windows(2).any(|pair| pair == b".."))
}

/// Whether a PEP 825 variant label is well formed: `^[0-9a-z_.]+$`. PEP 825 dropped the old
/// 16-character limit, so any length is accepted.
pub fn is_valid_variant_label(label: &str) -> bool {
    valid_label_of(label, Classes::of(label))
}

/// [`is_valid_variant_label`], its bytes' classes known.
pub(super) fn valid_label_of(label: &str, classes: Classes) -> bool {
    !label.is_empty() && classes.every & LABEL != 0
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn valid_tag_set(tags: &str) -> bool {
        valid_tag_set_of(tags, Classes::of(tags))
    }

    // The definitions the table stands for, written out byte by byte.
    fn name_by_bytes(name: &str) -> bool {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            && name.as_bytes()[0].is_ascii_alphanumeric()
            && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric()
    }

    fn tag_part_by_bytes(tag: &str) -> bool {
        !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    }

    fn tag_set_by_bytes(tags: &str) -> bool {
        tags.split('.').all(tag_part_by_bytes)
    }

    fn label_by_bytes(label: &str) -> bool {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'_' || b == b'.')
    }

    #[test]
    fn every_byte_is_classed_as_the_definitions_say() {
        for byte in 0..=255u8 {
            let Ok(text) = std::str::from_utf8(std::slice::from_ref(&byte)) else {
                continue;
            };
            assert_eq!(valid_name(text), name_by_bytes(text), "{byte}");
            assert_eq!(valid_tag_part(text), tag_part_by_bytes(text), "{byte}");
            assert_eq!(valid_tag_set(text), tag_set_by_bytes(text), "{byte}");
            assert_eq!(is_valid_variant_label(text), label_by_bytes(text), "{byte}");
        }
    }

    #[test]
    fn real_components_are_read_as_written() {
        assert!(valid_name("nvidia_cudnn_cu12"));
        assert!(valid_name("zope.interface"));
        assert!(!valid_name("_private"));
        assert!(!valid_name("trailing."));
        assert!(valid_tag_set(
            "manylinux_2_17_aarch64.manylinux2014_aarch64"
        ));
        assert!(valid_tag_set("py2.py3"));
        assert!(!valid_tag_set(".py3"));
        assert!(!valid_tag_set("py2."));
        assert!(!valid_tag_set("py2..py3"));
        assert!(!valid_tag_set("macosx-11"));
        assert!(!valid_tag_set(""));
        assert!(valid_tag_part("1"));
        assert!(!valid_tag_part("1.0"));
        assert!(is_valid_variant_label("cuda12.8"));
        assert!(!is_valid_variant_label("CUDA"));
    }

    proptest! {
        #[test]
        fn the_table_agrees_with_the_definitions(text in "[a-zA-Z0-9_.+!é -]{0,12}") {
            prop_assert_eq!(valid_name(&text), name_by_bytes(&text));
            prop_assert_eq!(valid_tag_part(&text), tag_part_by_bytes(&text));
            prop_assert_eq!(valid_tag_set(&text), tag_set_by_bytes(&text));
            prop_assert_eq!(is_valid_variant_label(&text), label_by_bytes(&text));
        }
    }
}
