//! Which upstream page lists a file of a page the proxy serves: what the proxy's own reads of
//! that file (its metadata for binding, its device extras) name as the page they are made for,
//! so they carry that page's source's access and no other's (`upstream/transport.rs`). One
//! owner's page lists every file; a page merged from several owners (the torch family from the
//! PyTorch index and PyPI) lists each in the part it came from.

use std::sync::Arc;

use wheelgate_files::cache::FileSpec;
use wheelgate_resolver::index::{IndexFile, ProjectPage};

use wheelgate_index::sources::SourcePage;
use wheelgate_index::sources::merge::MergedPage;

/// Where the files of a page were listed upstream.
#[derive(Debug, Clone, Copy)]
pub enum Listing<'a> {
    /// One source's page, by its URL (which its relative links resolve against).
    Page(&'a str),
    /// Several owners' pages merged, their links made absolute.
    Merged(&'a [SourcePage]),
}

impl<'a> Listing<'a> {
    /// The listing of `merged`'s files.
    pub fn of(merged: &MergedPage<'a>) -> Listing<'a> {
        match merged.parts() {
            [only] => Listing::Page(&only.cached.url),
            parts => Listing::Merged(parts),
        }
    }

    /// What the page's relative links resolve against: the one page's URL; nothing for a
    /// merged page, whose links are absolute.
    pub fn base_url(&self) -> &'a str {
        match self {
            Listing::Page(url) => url,
            Listing::Merged(_) => "",
        }
    }

    /// What the file cache fetches `file` (a file of `page`, listed as this says) as: its
    /// absolute URL, the page's sha256 and size, and the page that lists it.
    pub fn upstream_spec(&self, page: &ProjectPage, file: &IndexFile) -> FileSpec {
        FileSpec {
            url: page.file_url(file, self.base_url()),
            sha256: file.sha256().map(str::to_ascii_lowercase),
            size: file.size,
            splice: None,
            listed_on: self.page_of(file),
        }
    }

    /// The page that lists `file` (a file of the page served, its link as the page gives it);
    /// `None` when no part lists it (no access is lent then).
    pub fn page_of(&self, file: &IndexFile) -> Option<Arc<str>> {
        match self {
            Listing::Page(url) => Some(Arc::from(*url)),
            Listing::Merged(parts) => parts.iter().find_map(|part| {
                let listed = part.cached.find(&file.filename)?;
                (part.cached.page.file_url(listed, &part.cached.url) == file.url)
                    .then(|| Arc::from(part.cached.url.as_str()))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wheelgate_resolver::index::{IndexFile, parse_project_html};

    use super::*;
    use wheelgate_index::cache::index::CachedPage;
    use wheelgate_index::sources::SourceId;
    use wheelgate_index::sources::merge::merge;

    fn part(source: u16, url: &str, html: &str) -> SourcePage {
        SourcePage {
            source: SourceId(source),
            cached: Arc::new(CachedPage::merged(
                url,
                parse_project_html(html).unwrap(),
                1,
            )),
        }
    }

    /// Each file of a merged page is listed by the part it came from, so the proxy's reads of
    /// it carry that part's source's access; a file no part lists is listed by none.
    #[test]
    fn a_merged_pages_files_are_listed_by_their_own_parts() {
        let pytorch = "https://pytorch.internal.example/whl/torch/";
        let pypi = "https://pypi.internal.example/simple/torch/";
        let parts = [
            part(
                0,
                pytorch,
                r#"<a href="/whl/cpu/torch-2.9.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl">torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl</a>"#,
            ),
            part(
                2,
                pypi,
                r#"<a href="../../files/torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl">torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl</a>"#,
            ),
        ];
        let merged = merge(&parts);
        let page = merged.page();
        let listing = Listing::of(&merged);
        assert_eq!(listing.base_url(), "");
        let listed: Vec<Option<Arc<str>>> = page.files.iter().map(|f| listing.page_of(f)).collect();
        assert_eq!(listed, [Some(Arc::from(pytorch)), Some(Arc::from(pypi))]);
        // A link to the PyTorch host that the PyPI page never listed: no page lends access.
        let forged = IndexFile::new(
            "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "https://pytorch.internal.example/private/torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",
        );
        assert_eq!(listing.page_of(&forged), None);
        // One owner's page lists all of its files.
        let one = merge(&parts[..1]);
        assert_eq!(Listing::of(&one).base_url(), pytorch);
        assert_eq!(
            Listing::of(&one).page_of(&one.page().files[0]),
            Some(Arc::from(pytorch))
        );
    }
}
