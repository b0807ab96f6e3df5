//! URL templates of per-build sources: a find-links page per torch release and build, as PyG
//! publishes its extensions (`https://data.pyg.org/whl/torch-{torch}+{backend}.html`, a page
//! of `torch_scatter-2.1.2+pt210cu128-...whl` links) and mmcv
//! (`.../mmcv/dist/{backend}/torch{torch_minor}/index.html`).
//!
//! Placeholders (fixed, so configurations keep working):
//! - `{torch}`: a torch release as the torch page lists it (`2.10.0`), its local label dropped;
//! - `{torch_minor}`: its release line (`2.10`);
//! - `{backend}`: the build torch gets (`cu128`, `rocm7.1`, `cpu`).

use std::fmt;

use pep440_rs::Version;
use wheelgate_resolver::Backend;

/// The placeholders a template may use.
pub const PLACEHOLDERS: [&str; 3] = ["torch", "torch_minor", "backend"];

/// A template that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "`{{{0}}}` is not a placeholder; use `{{torch}}` (2.10.0), `{{torch_minor}}` (2.10) or `{{backend}}` (cu128)"
    )]
    Unknown(String),
    #[error("a `{{` is not closed by `}}`")]
    Unclosed,
    #[error("a `}}` closes no `{{`")]
    Unopened,
    #[error("it names no placeholder; a fixed URL is an index root, not a template")]
    NoPlaceholder,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Torch,
    TorchMinor,
    Backend,
}

/// A parsed URL template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate {
    pieces: Vec<Piece>,
}

impl UrlTemplate {
    /// Parses `text`, refusing unknown placeholders and unbalanced braces.
    pub fn parse(text: &str) -> Result<UrlTemplate, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let open = rest.find('{');
            let close = rest.find('}');
            match (open, close) {
                (None, None) => {
                    pieces.push(Piece::Text(rest.to_string()));
                    break;
                }
                (None, Some(_)) => return Err(TemplateError::Unopened),
                (Some(open), Some(close)) if close < open => return Err(TemplateError::Unopened),
                (Some(_), None) => return Err(TemplateError::Unclosed),
                (Some(open), Some(close)) => {
                    if open > 0 {
                        pieces.push(Piece::Text(rest[..open].to_string()));
                    }
                    let name = &rest[open + 1..close];
                    pieces.push(match name {
                        "torch" => Piece::Torch,
                        "torch_minor" => Piece::TorchMinor,
                        "backend" => Piece::Backend,
                        other if other.contains('{') => return Err(TemplateError::Unclosed),
                        other => return Err(TemplateError::Unknown(other.to_string())),
                    });
                    rest = &rest[close + 1..];
                }
            }
        }
        if pieces.iter().all(|p| matches!(p, Piece::Text(_))) {
            return Err(TemplateError::NoPlaceholder);
        }
        Ok(UrlTemplate { pieces })
    }

    /// The URL for torch `release` (its local label ignored) and `backend`.
    pub fn fill(&self, release: &Version, backend: &Backend) -> String {
        let mut url = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => url.push_str(text),
                Piece::Torch => url.push_str(&release.clone().without_local().to_string()),
                Piece::TorchMinor => url.push_str(&release_line(release)),
                Piece::Backend => url.push_str(&backend.to_string()),
            }
        }
        url
    }

    /// Whether the URL names the full release (`{torch}`), not only its line: then each release
    /// of a line has a page of its own.
    pub fn names_release(&self) -> bool {
        self.pieces.contains(&Piece::Torch)
    }
}

impl fmt::Display for UrlTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => f.write_str(text)?,
                Piece::Torch => f.write_str("{torch}")?,
                Piece::TorchMinor => f.write_str("{torch_minor}")?,
                Piece::Backend => f.write_str("{backend}")?,
            }
        }
        Ok(())
    }
}

/// A release's line, `major.minor` (`2.10` of `2.10.1`).
pub fn release_line(release: &Version) -> String {
    let parts = release.release();
    format!(
        "{}.{}",
        parts.first().copied().unwrap_or(0),
        parts.get(1).copied().unwrap_or(0)
    )
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn fills_pyg_and_mmcv_templates() {
        let pyg =
            UrlTemplate::parse("https://data.pyg.org/whl/torch-{torch}+{backend}.html").unwrap();
        let release = Version::from_str("2.10.0+cu128").unwrap();
        let cu128: Backend = "cu128".parse().unwrap();
        assert_eq!(
            pyg.fill(&release, &cu128),
            "https://data.pyg.org/whl/torch-2.10.0+cu128.html"
        );
        assert!(pyg.names_release());
        let mmcv = UrlTemplate::parse(
            "https://download.openmmlab.com/mmcv/dist/{backend}/torch{torch_minor}/index.html",
        )
        .unwrap();
        assert_eq!(
            mmcv.fill(
                &Version::from_str("2.1.2").unwrap(),
                &"cpu".parse().unwrap()
            ),
            "https://download.openmmlab.com/mmcv/dist/cpu/torch2.1/index.html"
        );
        assert!(!mmcv.names_release());
        assert_eq!(
            mmcv.to_string(),
            "https://download.openmmlab.com/mmcv/dist/{backend}/torch{torch_minor}/index.html"
        );
    }

    #[test]
    fn refuses_what_it_cannot_fill() {
        let err = |text: &str| UrlTemplate::parse(text).unwrap_err().to_string();
        assert!(err("https://a.example/{cuda}.html").contains("`{cuda}`"));
        assert!(err("https://a.example/{torch.html").contains("not closed"));
        assert!(err("https://a.example/torch}.html").contains("closes no"));
        assert!(err("https://a.example/simple").contains("no placeholder"));
    }
}
