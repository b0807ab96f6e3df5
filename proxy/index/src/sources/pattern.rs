//! The names a source owns: normalized project names (PEP 503) or globs over them.
//!
//! ```toml
//! projects = ["acme-*", "billing-client"]
//! ```
//!
//! A glob's `*` stands for any run of name characters (none included), `?` for one; nothing
//! else is special. Names are compared in their normalized form, so a pattern must be written
//! normalized too (`acme-utils`, not `Acme_Utils`): a pattern that could never match is an
//! error, not a silent no-op.

use std::fmt;

/// One entry of a source's `projects`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectPattern {
    /// A normalized name, matched exactly.
    Name(String),
    /// A glob with at least one `*` or `?`.
    Glob(String),
}

/// A `projects` entry that is neither a normalized name nor a glob over normalized names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("`{0}` is empty; give a project name such as `acme-utils` or a glob such as `acme-*`")]
    Empty(String),
    #[error(
        "`{given}` is not a normalized project name (PEP 503): write it as `{normalized}`, lower case with `-` for every run of `-`, `_` and `.`"
    )]
    NotNormalized { given: String, normalized: String },
    #[error(
        "`{0}` holds characters a project name cannot have; use lower-case letters, digits and `-`, with `*` and `?` as wildcards"
    )]
    BadCharacter(String),
}

impl ProjectPattern {
    /// Reads one `projects` entry.
    pub fn parse(text: &str) -> Result<ProjectPattern, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty(text.to_string()));
        }
        let wildcard = text.contains(['*', '?']);
        let literal = text.replace(['*', '?'], "");
        if literal
            .bytes()
            .any(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
        {
            return Err(PatternError::BadCharacter(text.to_string()));
        }
        let normalized = normalize_keeping_wildcards(text);
        if normalized != text {
            return Err(PatternError::NotNormalized {
                given: text.to_string(),
                normalized,
            });
        }
        if wildcard {
            Ok(ProjectPattern::Glob(text.to_string()))
        } else if text.starts_with('-') || text.ends_with('-') {
            // PEP 503 normalization keeps them, but no valid project name has them (PEP 508).
            Err(PatternError::BadCharacter(text.to_string()))
        } else {
            Ok(ProjectPattern::Name(text.to_string()))
        }
    }

    /// Whether the normalized `name` is one this pattern owns.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            ProjectPattern::Name(exact) => exact == name,
            ProjectPattern::Glob(glob) => glob_matches(glob.as_bytes(), name.as_bytes()),
        }
    }

    /// The name, when this is an exact name rather than a glob.
    pub fn as_name(&self) -> Option<&str> {
        match self {
            ProjectPattern::Name(name) => Some(name),
            ProjectPattern::Glob(_) => None,
        }
    }
}

impl fmt::Display for ProjectPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProjectPattern::Name(text) | ProjectPattern::Glob(text) => f.write_str(text),
        }
    }
}

/// PEP 503's normalization (`[-_.]+` → `-`, lower case), leaving `*` and `?` where they are.
fn normalize_keeping_wildcards(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_separator = false;
    for c in text.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_separator {
                out.push('-');
            }
            in_separator = true;
        } else {
            out.push(c.to_ascii_lowercase());
            in_separator = false;
        }
    }
    out
}

/// `*` any run (none included), `?` one character; iterative, with one backtrack point, so a
/// pattern of many stars costs linear time in the name for each star, never exponential.
fn glob_matches(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_globs_match_normalized_names() {
        let glob = ProjectPattern::parse("acme-*").unwrap();
        assert!(glob.matches("acme-utils"));
        assert!(glob.matches("acme-"));
        assert!(!glob.matches("acme"));
        assert!(!glob.matches("notacme-utils"));
        let name = ProjectPattern::parse("billing-client").unwrap();
        assert!(name.matches("billing-client"));
        assert!(!name.matches("billing-client2"));
        assert_eq!(name.as_name(), Some("billing-client"));
        let middle = ProjectPattern::parse("*-internal-?").unwrap();
        assert!(middle.matches("a-internal-b"));
        assert!(!middle.matches("a-internal-bc"));
        assert!(ProjectPattern::parse("*").unwrap().matches("anything"));
        assert!(ProjectPattern::parse("a*b*c").unwrap().matches("abc"));
        assert!(ProjectPattern::parse("a*b*c").unwrap().matches("axxbyyc"));
        assert!(!ProjectPattern::parse("a*b*c").unwrap().matches("axxbyy"));
    }

    #[test]
    fn refuses_what_could_never_match() {
        assert_eq!(
            ProjectPattern::parse("Acme_Utils").unwrap_err().to_string(),
            "`Acme_Utils` is not a normalized project name (PEP 503): write it as `acme-utils`, lower case with `-` for every run of `-`, `_` and `.`"
        );
        for bad in ["acme utils", "acme/utils", "acmé", "-acme", "acme-"] {
            assert!(
                matches!(
                    ProjectPattern::parse(bad),
                    Err(PatternError::BadCharacter(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            ProjectPattern::parse(""),
            Err(PatternError::Empty(_))
        ));
    }

    #[test]
    fn many_stars_backtrack_to_the_right_answer() {
        let pattern = ProjectPattern::parse(&"a*".repeat(40)).unwrap();
        assert!(!pattern.matches(&("a".repeat(39) + "b")));
        assert!(pattern.matches(&("a".repeat(40) + "b")));
    }
}
