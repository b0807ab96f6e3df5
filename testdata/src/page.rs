//! The files of the generated page and its HTML, in download.pytorch.org's exact format:
//!
//! ```text
//! <a href="/whl/cu130/torch-2.10.0%2Bcu130-cp310-cp310-manylinux_2_28_aarch64.whl#sha256=adfb…" data-dist-info-metadata="sha256=b0d9…" data-core-metadata="sha256=b0d9…">torch-2.10.0+cu130-cp310-cp310-manylinux_2_28_aarch64.whl</a><br/>
//! ```

use std::fmt::Write as _;

use crate::digest::fake_sha256;
use crate::releases::{RELEASES, Release};

/// One file link of the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFile {
    pub filename: String,
    /// The link without its fragment, root-relative (`/whl/cu128/torch-2.9.0%2Bcu128-...whl`).
    pub path: String,
    pub sha256: String,
    /// The `.metadata` file's digest, for releases whose links announce one.
    pub metadata_sha256: Option<String>,
}

impl PageFile {
    /// The `href` as the page writes it: path and `#sha256=` fragment.
    pub fn href(&self) -> String {
        format!("{}#sha256={}", self.path, self.sha256)
    }
}

/// Every file of the generated `/whl/torch/` page, in the page's order (by filename, as
/// download.pytorch.org sorts its listing).
pub fn torch_files() -> Vec<PageFile> {
    let mut files = Vec::with_capacity(3000);
    for release in RELEASES {
        for version in release.versions {
            release_files(release, version, &mut files);
        }
    }
    files.sort_by(|a, b| a.filename.cmp(&b.filename));
    files
}

fn release_files(release: &Release, version: &str, out: &mut Vec<PageFile>) {
    for build in release.builds {
        for platform in build.platforms {
            for python in release.pythons {
                let Some(abi) = abi_tag(python, platform) else {
                    continue;
                };
                let interpreter = python.trim_end_matches('t');
                let local = if build.labelled {
                    format!("+{}", build.backend)
                } else {
                    String::new()
                };
                let filename = format!("torch-{version}{local}-{interpreter}-{abi}-{platform}.whl");
                out.push(file(&filename, build.directory, release.metadata));
            }
        }
    }
    for platform in release.macos {
        for python in release.pythons.iter().filter(|p| !p.ends_with('t')) {
            let filename = format!("torch-{version}-{python}-none-{platform}.whl");
            out.push(file(&filename, "cpu", release.metadata));
        }
    }
}

/// The ABI tag of a `CPython` build on a platform; `None` where no such wheel is published
/// (free-threaded builds exist for Linux only here).
fn abi_tag(python: &str, platform: &str) -> Option<String> {
    let linux = platform.contains("linux");
    match python {
        // Python 2.7 wheels were never built for Windows.
        "cp27" => linux.then(|| "cp27mu".to_string()),
        "cp35" | "cp36" | "cp37" => Some(format!("{python}m")),
        free if free.ends_with('t') => linux.then(|| free.to_string()),
        other => Some(other.to_string()),
    }
}

fn file(filename: &str, directory: &str, metadata: bool) -> PageFile {
    let directory = if directory.is_empty() {
        String::new()
    } else {
        format!("{directory}/")
    };
    PageFile {
        filename: filename.to_string(),
        path: format!("/whl/{directory}{}", filename.replace('+', "%2B")),
        sha256: fake_sha256(filename, 0),
        metadata_sha256: metadata.then(|| fake_sha256(filename, 1)),
    }
}

/// The generated `/whl/torch/` page, as download.pytorch.org serves it (2,649 links, 711 KB).
pub fn torch_page_html() -> String {
    page_html(&torch_files())
}

/// A torch page of `files` in download.pytorch.org's format (a backend's own page,
/// `/whl/cu128/torch/`, is the aggregated page's files under `/whl/cu128/`).
pub fn page_html(files: &[PageFile]) -> String {
    let mut html = String::with_capacity(files.len() * 300 + 256);
    html.push_str("<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n");
    for file in files {
        let _ = write!(html, "    <a href=\"{}\"", file.href());
        if let Some(metadata) = &file.metadata_sha256 {
            let _ = write!(
                html,
                " data-dist-info-metadata=\"sha256={metadata}\" data-core-metadata=\"sha256={metadata}\""
            );
        }
        let _ = writeln!(html, ">{}</a><br/>", file.filename);
    }
    html.push_str("  </body>\n</html>\n<!--TIMESTAMP 1774772182-->");
    html
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn has_the_real_pages_size_and_shape() {
        let files = torch_files();
        assert!(
            (2600..=3000).contains(&files.len()),
            "{} files",
            files.len()
        );
        let html = torch_page_html();
        assert!(
            (650_000..=850_000).contains(&html.len()),
            "{} bytes",
            html.len()
        );
        let names: HashSet<&str> = files.iter().map(|f| f.filename.as_str()).collect();
        assert_eq!(names.len(), files.len(), "every filename is unique");
        for needle in [
            "torch-2.11.0+cu130-cp314-cp314t-manylinux_2_28_x86_64.whl",
            "torch-2.11.0+cu129-cp312-cp312-manylinux_2_28_aarch64.whl",
            "torch-2.11.0+rocm7.2-cp312-cp312-linux_x86_64.whl",
            "torch-2.11.0+xpu-cp312-cp312-win_amd64.whl",
            "torch-2.11.0-cp312-none-macosx_11_0_arm64.whl",
            "torch-2.10.0+cpu-cp312-cp312-win_arm64.whl",
            "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_s390x.whl",
            "torch-2.5.1-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "torch-1.7.1-cp38-cp38-linux_x86_64.whl",
            "torch-1.0.0-cp27-cp27mu-linux_x86_64.whl",
            "torch-2.4.0+cpu.cxx11.abi-cp311-cp311-linux_x86_64.whl",
        ] {
            assert!(names.contains(needle), "{needle} missing");
        }
        assert!(html.contains(
            "href=\"/whl/cu130/torch-2.11.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256="
        ));
        assert!(html.contains("href=\"/whl/cu124/torch-2.5.0-cp310-cp310-manylinux_2_17_aarch64"));
        assert!(html.contains("data-dist-info-metadata=\"sha256="));
        assert!(html.contains("href=\"/whl/torch-2.0.1-cp38-cp38-manylinux_2_17_aarch64"));
        assert!(html.contains("href=\"/whl/rocm6.4/torch-2.9.0%2Brocm6.4-"));
        assert!(html.contains("href=\"/whl/cpu-cxx11-abi/torch-2.4.0%2Bcpu.cxx11.abi-"));
    }

    #[test]
    fn is_deterministic() {
        assert_eq!(torch_page_html(), torch_page_html());
    }
}
