//! Whether a page the upstream just sent may replace the cached copy. A 200 is not proof of a
//! good page: an upstream behind a broken CDN or a misconfigured mirror answers empty pages,
//! error pages with a 200, or garbage, and each would wipe a project that was being served.

use std::collections::HashSet;

use wheelgate_resolver::index::{IndexParseError, ProjectPage};

use super::CachedPage;
use crate::metrics::PageRejection;

/// What to do with a fetched page.
// Made and matched once per fetch, never stored: boxing the page would cost an allocation for
// nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(super) enum Verdict {
    /// It becomes the cached copy.
    Accept(ProjectPage),
    /// The cached copy stays; the reason is logged and counted.
    Refuse {
        reason: PageRejection,
        detail: String,
    },
    /// It does not parse and there is no cached copy to serve instead.
    Unparseable(IndexParseError),
}

/// Judges a fetched page against the cached copy. A page that lists fewer files than before is
/// accepted when it keeps some of them (files really removed upstream); one that lists none of
/// the cached files and fewer of its own is a different page, not an update.
pub(super) fn admit(
    fetched: Result<ProjectPage, IndexParseError>,
    cached: Option<&CachedPage>,
) -> Verdict {
    let page = match (fetched, cached) {
        (Ok(page), _) => page,
        (Err(err), Some(_)) => {
            return Verdict::Refuse {
                reason: PageRejection::Unparseable,
                detail: err.to_string(),
            };
        }
        (Err(err), None) => return Verdict::Unparseable(err),
    };
    let Some(old) = cached.filter(|old| !old.page.files.is_empty()) else {
        return Verdict::Accept(page);
    };
    if page.files.is_empty() {
        return Verdict::Refuse {
            reason: PageRejection::Empty,
            detail: format!(
                "the new copy lists no file; the cached one lists {}",
                old.page.files.len()
            ),
        };
    }
    let before: HashSet<&str> = old.page.files.iter().map(|f| f.filename.as_str()).collect();
    let kept = page
        .files
        .iter()
        .filter(|f| before.contains(f.filename.as_str()))
        .count();
    if kept == 0 && page.files.len() < old.page.files.len() {
        return Verdict::Refuse {
            reason: PageRejection::Unrelated,
            detail: format!(
                "the new copy lists {} files, none of the {} the cached one lists",
                page.files.len(),
                old.page.files.len()
            ),
        };
    }
    Verdict::Accept(page)
}

#[cfg(test)]
mod tests {

    use wheelgate_resolver::index::{IndexFile, parse_project_html};

    use super::*;

    fn page(names: &[&str]) -> ProjectPage {
        ProjectPage {
            files: names
                .iter()
                .map(|n| IndexFile::new(*n, format!("/f/{n}")))
                .collect(),
            ..ProjectPage::default()
        }
    }

    fn cached(names: &[&str]) -> CachedPage {
        CachedPage::for_tests("http://up.example/simple/x/", page(names))
    }

    const OLD: &[&str] = &["x-1.0-py3-none-any.whl", "x-2.0-py3-none-any.whl"];

    #[test]
    fn an_empty_page_never_replaces_one_with_files() {
        let old = cached(OLD);
        assert!(matches!(
            admit(Ok(page(&[])), Some(&old)),
            Verdict::Refuse {
                reason: PageRejection::Empty,
                ..
            }
        ));
        // Without files to protect, an empty page is what the project has.
        assert!(matches!(
            admit(Ok(page(&[])), Some(&cached(&[]))),
            Verdict::Accept(_)
        ));
        assert!(matches!(admit(Ok(page(&[])), None), Verdict::Accept(_)));
    }

    #[test]
    fn garbage_is_refused_when_a_copy_exists() {
        let old = cached(OLD);
        let garbage = parse_project_html("\u{0}\u{1}<<<>>> not a page <a href=");
        match garbage {
            // The HTML parser is lenient: garbage parses as a page listing nothing.
            Ok(parsed) => assert!(matches!(
                admit(Ok(parsed), Some(&old)),
                Verdict::Refuse { .. }
            )),
            Err(err) => assert!(matches!(
                admit(Err(err), Some(&old)),
                Verdict::Refuse {
                    reason: PageRejection::Unparseable,
                    ..
                }
            )),
        }
    }

    #[test]
    fn a_real_shrink_is_accepted_and_an_unrelated_page_is_not() {
        let old = cached(OLD);
        assert!(matches!(
            admit(Ok(page(&["x-2.0-py3-none-any.whl"])), Some(&old)),
            Verdict::Accept(_)
        ));
        assert!(matches!(
            admit(Ok(page(&["other-9.9.tar.gz"])), Some(&old)),
            Verdict::Refuse {
                reason: PageRejection::Unrelated,
                ..
            }
        ));
        // Growth is an update, even with new names only.
        assert!(matches!(
            admit(
                Ok(page(&[
                    "x-3.0-py3-none-any.whl",
                    "x-3.1-py3-none-any.whl",
                    "x-3.2.tar.gz"
                ])),
                Some(&old)
            ),
            Verdict::Accept(_)
        ));
    }
}
