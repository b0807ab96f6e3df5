//! What pip and uv record of a resolution, read into [`Resolved`] files: pip's installation
//! report (`pip install --report`) and the PEP 751 lock `uv pip compile` writes. Pure parsers;
//! the runs are [`super::resolution`]'s.

use std::collections::BTreeSet;

use crate::upstream::percent_decode;

use super::release::Resolved;

/// pip's installation report (`--report`): per item, `metadata.name` and `.version`, and
/// `download_info` with the file's URL and hash, as pip 26 writes it:
///
/// ```json
/// {"version": "1", "install": [{"download_info": {"url":
/// "http://127.0.0.1:8080/packages/acme_core-2.1-py3-none-any.whl", "archive_info": {"hashes":
/// {"sha256": "1200..."}, "hash": "sha256=1200..."}}, "is_direct": false, "requested": false,
/// "metadata": {"name": "acme-core", "version": "2.1", ...}}]}
/// ```
///
/// pip takes the hash from the index's link where it has one (and checks the download against
/// it); `archive_info` is empty where the link has none.
pub fn parse_pip_report(content: &str) -> (BTreeSet<Resolved>, Vec<String>) {
    let report: serde_json::Value = serde_json::from_str(content).expect("pip's report is JSON");
    let mut resolved = BTreeSet::new();
    let mut urls = Vec::new();
    for item in report["install"]
        .as_array()
        .expect("`install` in pip's report")
    {
        let text = |value: &serde_json::Value| {
            value
                .as_str()
                .unwrap_or_else(|| panic!("a string in pip's report item {item}"))
                .to_string()
        };
        let url = text(&item["download_info"]["url"]);
        resolved.insert(Resolved {
            name: normalize(&text(&item["metadata"]["name"])),
            version: text(&item["metadata"]["version"]),
            filename: filename(&url),
            sha256: item["download_info"]["archive_info"]["hashes"]["sha256"]
                .as_str()
                .map(str::to_string),
        });
        urls.push(url);
    }
    (resolved, urls)
}

/// A PEP 751 lock as `uv pip compile --output-file pylock.toml` writes it: a `[[packages]]`
/// table per package, its files one per line:
///
/// uv hashes the files whose index gave no hash.
///
/// ```toml
/// [[packages]]
/// name = "acme-legacy"
/// version = "0.3"
/// sdist = { url = "http://127.0.0.1:8080/packages/acme_legacy-0.3.zip", hashes = { sha256 = "2033..." } }
///
/// [[packages]]
/// name = "acme-utils"
/// version = "1.0"
/// wheels = [{ url = "http://127.0.0.1:8080/packages/acme_utils-1.0-py3-none-any.whl", hashes = { sha256 = "98b8..." } }]
/// ```
pub fn parse_pylock(content: &str) -> (BTreeSet<Resolved>, Vec<String>) {
    let quoted = |line: &str, key: &str| {
        let start = line.find(key)? + key.len();
        let end = line[start..].find('"')?;
        Some(line[start..start + end].to_string())
    };
    let (mut name, mut version) = (String::new(), String::new());
    let mut resolved = BTreeSet::new();
    let mut urls = Vec::new();
    for line in content.lines() {
        if let Some(value) = line.strip_prefix("name = ") {
            name = normalize(value.trim_matches('"'));
        } else if let Some(value) = line.strip_prefix("version = ") {
            version = value.trim_matches('"').to_string();
        } else if let Some(url) = quoted(line, "url = \"") {
            resolved.insert(Resolved {
                name: name.clone(),
                version: version.clone(),
                filename: filename(&url),
                sha256: quoted(line, "sha256 = \""),
            });
            urls.push(url);
        }
    }
    (resolved, urls)
}

/// The file name a URL ends in, percent-decoded, without its fragment or query.
fn filename(url: &str) -> String {
    let path = url.split(['#', '?']).next().unwrap_or_default();
    percent_decode(path.rsplit('/').next().unwrap_or_default())
}

/// PEP 503's normalized name.
fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pylock_files_carry_their_package() {
        let lock = r#"lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.11.7"

[[packages]]
name = "acme-core"
version = "2.1"
wheels = [{ url = "http://127.0.0.1:1/packages/acme_core-2.1-py3-none-any.whl", hashes = { sha256 = "1200" } }]

[[packages]]
name = "Acme_Legacy"
version = "0.3"
sdist = { url = "http://127.0.0.1:1/files/acme-legacy/acme_legacy-0.3.zip#x", hashes = { sha256 = "2033" } }
"#;
        let (resolved, urls) = parse_pylock(lock);
        let found: Vec<_> = resolved
            .iter()
            .map(|r| (&*r.name, &*r.version, &*r.filename, r.sha256.as_deref()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "acme-core",
                    "2.1",
                    "acme_core-2.1-py3-none-any.whl",
                    Some("1200")
                ),
                ("acme-legacy", "0.3", "acme_legacy-0.3.zip", Some("2033")),
            ]
        );
        assert_eq!(urls.len(), 2);
    }

    #[test]
    fn pip_report_items_become_files() {
        let report = r#"{"version": "1", "install": [{"download_info": {"url": "http://127.0.0.1:1/files/torch/torch-2.9.0%2Bcpu-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "ab"}, "hash": "sha256=ab"}}, "metadata": {"name": "Torch", "version": "2.9.0+cpu"}}]}"#;
        let (resolved, _) = parse_pip_report(report);
        let file = resolved.into_iter().next().unwrap();
        assert_eq!(file.name, "torch");
        assert_eq!(file.filename, "torch-2.9.0+cpu-py3-none-any.whl");
        assert_eq!(file.sha256.as_deref(), Some("ab"));
    }
}
