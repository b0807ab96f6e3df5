//! [`LinkedPage`]: a page whose files are held elsewhere (a cached upstream page's), each
//! written with a link of its own. A proxy that serves a selection of an upstream page with
//! its links rewritten renders it as it is, without copying the files it keeps: a copy of
//! each kept file's strings, made and freed again for one rendering, was a fifth of the work
//! between a cold torch page's arrival and its answer.

use std::ops::Range;

use super::model::{CoreMetadata, IndexFile, Meta, ProjectPage, ProjectStatus};

/// Whether `file` is a wheel whose page offers no PEP 658 metadata but gives its sha256: its
/// `METADATA` can be read from the wheel once the wheel is verified, and served as `.metadata`.
/// An sdist has none to give, and a wheel without a hash could not be verified first.
pub fn offers_derived_metadata(file: &IndexFile) -> bool {
    file.core_metadata == CoreMetadata::Absent
        && crate::filename::is_wheel(&file.filename)
        && file.sha256().is_some()
}

/// A page of borrowed files, each with its own link. Rendered by
/// [`super::render_linked_json`] and [`super::render_linked_html`] exactly as the
/// [`ProjectPage`] of [`LinkedPage::to_page`] renders.
#[derive(Debug, Clone, Default)]
pub struct LinkedPage<'a> {
    /// The project name.
    pub name: String,
    /// Every version of the project ([`ProjectPage::versions`]).
    pub versions: Vec<String>,
    /// The page's API version and repository metadata.
    pub meta: Meta,
    /// The project status marker, when the page has one.
    pub status: Option<ProjectStatus>,
    /// Whether a wheel the page gives a sha256 but no PEP 658 metadata for is written with
    /// core metadata offered (`true`) all the same ([`offers_derived_metadata`]): a proxy that
    /// serves `.metadata` from the verified wheel itself sets it.
    pub derived_metadata: bool,
    /// The files, in page order, each with where its link lies in `links`.
    files: Vec<(&'a IndexFile, Range<usize>)>,
    /// The files' links, one after another.
    links: String,
    /// Files the page holds itself, after the borrowed ones, each linked by its own `url`: a
    /// few the proxy adds (a build listed a second time, under the plain version).
    owned: Vec<IndexFile>,
}

impl<'a> LinkedPage<'a> {
    /// A page without files yet ([`LinkedPage::push`] adds them).
    pub fn new(
        name: String,
        versions: Vec<String>,
        meta: Meta,
        status: Option<ProjectStatus>,
    ) -> Self {
        LinkedPage {
            name,
            versions,
            meta,
            status,
            derived_metadata: false,
            files: Vec::new(),
            links: String::new(),
            owned: Vec::new(),
        }
    }

    /// Room for `files` more files with links of about `link_bytes` bytes each.
    pub fn reserve(&mut self, files: usize, link_bytes: usize) {
        self.files.reserve(files);
        self.links.reserve(files * link_bytes);
    }

    /// Adds `file` with the link `write_link` appends to the string it is given.
    pub fn push(&mut self, file: &'a IndexFile, write_link: impl FnOnce(&mut String)) {
        let start = self.links.len();
        write_link(&mut self.links);
        self.files.push((file, start..self.links.len()));
    }

    /// Adds `file`, held by the page, linked by its `url`: listed after the borrowed files.
    pub fn push_owned(&mut self, file: IndexFile) {
        self.owned.push(file);
    }

    /// How many files the page lists.
    pub fn len(&self) -> usize {
        self.files.len() + self.owned.len()
    }

    /// Whether the page lists no file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each file with its link, in page order: the borrowed ones, then those the page holds.
    pub fn files<'s>(&'s self) -> impl ExactSizeIterator<Item = (&'s IndexFile, &'s str)> + 's {
        let borrowed = self
            .files
            .iter()
            .map(|(file, link)| -> (&'s IndexFile, &'s str) {
                (*file, self.links.get(link.clone()).unwrap_or_default())
            });
        let owned = self.owned.iter().map(|file| (file, file.url.as_str()));
        Counted {
            inner: borrowed.chain(owned),
            left: self.len(),
        }
    }

    /// What the page says of `file`'s PEP 658 metadata: the page's own word, or offered when
    /// [`LinkedPage::derived_metadata`] says so.
    pub fn core_metadata<'f>(&self, file: &'f IndexFile) -> &'f CoreMetadata {
        const OFFERED: &CoreMetadata = &CoreMetadata::Present;
        if self.derived_metadata && offers_derived_metadata(file) {
            OFFERED
        } else {
            &file.core_metadata
        }
    }

    /// The page with each file copied, its link replaced: for what must change the page
    /// further.
    pub fn to_page(&self) -> ProjectPage {
        let files = self
            .files()
            .map(|(file, link)| IndexFile {
                filename: file.filename.clone(),
                url: link.to_string(),
                hashes: file.hashes.clone(),
                requires_python: file.requires_python.clone(),
                yanked: file.yanked.clone(),
                core_metadata: self.core_metadata(file).clone(),
                gpg_sig: file.gpg_sig,
                size: file.size,
                upload_time: file.upload_time.clone(),
                provenance: file.provenance.clone(),
            })
            .collect();
        ProjectPage {
            name: self.name.clone(),
            files,
            versions: self.versions.clone(),
            meta: self.meta.clone(),
            base: None,
            status: self.status.clone(),
            dropped: Vec::new(),
        }
    }
}

/// An iterator that knows how many items are left: a chain of two whose lengths are known.
struct Counted<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.left -= 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {}
