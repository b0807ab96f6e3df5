//! The configuration an offline server needs for a store synced with `[[sources]]`: flags
//! cannot say which source owns which names, and without them every owned name answered 404
//! offline (issue 41 item 4). Written into the store as `serve.toml` beside the marker; the
//! command `mirror sync` prints names it.
//!
//! No credential is written: an offline server never asks an upstream, and every URL's
//! `user:password@` is left out (pages are stored under the URL without it, so the keys match).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::config::MirrorConfig;

/// The file's name in the store.
pub const SERVE_CONFIG: &str = "serve.toml";

#[derive(Serialize)]
struct OfflineServe<'a> {
    offline: bool,
    cache_dir: &'a Path,
    pytorch_url: String,
    pypi_url: String,
    sources: Vec<OfflineSource<'a>>,
}

#[derive(Serialize)]
struct OfflineSource<'a> {
    name: &'a str,
    url: String,
    projects: &'a [String],
}

/// The file's text for `store` synced with `config`.
pub fn render(store: &Path, config: &MirrorConfig) -> String {
    let serve = OfflineServe {
        offline: true,
        cache_dir: store,
        pytorch_url: without_userinfo(&config.pytorch_url),
        pypi_url: without_userinfo(&config.pypi_url),
        sources: config
            .sources
            .iter()
            .map(|source| OfflineSource {
                name: &source.name,
                url: without_userinfo(&source.url),
                projects: &source.projects,
            })
            .collect(),
    };
    let body = toml::to_string(&serve).unwrap_or_default();
    format!(
        "# Written by `wheelgate mirror sync`: `wheelgate serve --config <this file>` serves this\n\
         # store offline with the sources it was synced from. No credentials: offline, no\n\
         # upstream is asked.\n{body}"
    )
}

/// Writes [`render`] into `store` (owner-only, atomically); its path.
pub fn write(store: &Path, config: &MirrorConfig) -> std::io::Result<PathBuf> {
    let path = store.join(SERVE_CONFIG);
    wheelgate_index::cache::private::write_atomically(&path, render(store, config).as_bytes())?;
    Ok(path)
}

/// `url` without the `user:password@` of its authority.
fn without_userinfo(url: &str) -> String {
    wheelgate_index::sources::split_userinfo(url).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_left_out_and_templates_kept() {
        assert_eq!(
            without_userinfo("https://ci:s3cret@mirror.example/simple"),
            "https://mirror.example/simple"
        );
        assert_eq!(
            without_userinfo("https://tok@data.example/whl/torch-{torch}+{backend}.html"),
            "https://data.example/whl/torch-{torch}+{backend}.html"
        );
        assert_eq!(
            without_userinfo("https://a.example/p@th/simple"),
            "https://a.example/p@th/simple"
        );
        assert_eq!(without_userinfo("not a url"), "not a url");
    }
}
