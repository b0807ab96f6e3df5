//! PEP 691 content negotiation: pick the response format from `Accept` (with q-values) or a
//! `?format=` parameter.

use super::header_list::{elements, split_on, split_once_on};

/// A response format of the simple API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/vnd.pypi.simple.v1+json`
    Json,
    /// `application/vnd.pypi.simple.v1+html`
    Html,
    /// `text/html` (PEP 503)
    LegacyHtml,
}

pub const JSON_TYPE: &str = "application/vnd.pypi.simple.v1+json";
pub const HTML_TYPE: &str = "application/vnd.pypi.simple.v1+html";
pub const LEGACY_HTML_TYPE: &str = "text/html";

impl Format {
    /// The `Content-Type` to answer with.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => JSON_TYPE,
            Format::Html => HTML_TYPE,
            Format::LegacyHtml => "text/html; charset=utf-8",
        }
    }

    /// The format a media type names, in any letter case (media types are case-insensitive,
    /// RFC 9110 section 8.3.1).
    fn from_media_type(media: &str) -> Option<Format> {
        const NAMES: [(&str, Format); 7] = [
            (JSON_TYPE, Format::Json),
            ("application/vnd.pypi.simple.latest+json", Format::Json),
            (HTML_TYPE, Format::Html),
            ("application/vnd.pypi.simple.latest+html", Format::Html),
            (LEGACY_HTML_TYPE, Format::LegacyHtml),
            ("text/*", Format::LegacyHtml),
            ("*/*", Format::LegacyHtml),
        ];
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(media))
            .map(|&(_, format)| format)
    }
}

// A real example of this parser's input, pip's Accept header:
// `application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01`
/// The format to answer with. `format` (the `?format=` parameter) wins over `Accept`, and one
/// this server does not know is `None` (406). A missing `Accept`, or one that names no format
/// of the simple API (`application/json`, `application/xml`), means `text/html`, as PyPI
/// answers them (PEP 691 lets a server pick its default rather than refuse).
///
/// Every page request negotiates, so this allocates nothing: each entry's media type is
/// compared in place, and its `q` read only when the type is one of the API's.
pub fn negotiate(accept: Option<&str>, format: Option<&str>) -> Option<Format> {
    if let Some(format) = format {
        return Format::from_media_type(format.trim());
    }
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Format::LegacyHtml);
    };
    let mut best: Option<(f32, Format)> = None;
    for item in elements(accept) {
        let (media, params) = split_once_on(item, b';').unwrap_or((item, ""));
        let Some(format) = Format::from_media_type(media.trim()) else {
            continue;
        };
        let quality = quality_of(params);
        if quality <= 0.0 {
            continue;
        }
        // Highest q wins; on a tie, the earlier entry.
        if best.is_none_or(|(q, _)| quality > q) {
            best = Some((quality, format));
        }
    }
    Some(best.map_or(Format::LegacyHtml, |(_, format)| format))
}

/// The `q` of an entry's parameters (`q=0.1`, `level=1; q=0.5`): 1 when absent, 0 when
/// unreadable.
fn quality_of(params: &str) -> f32 {
    split_on(params, b';')
        .filter_map(|param| split_once_on(param, b'='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("q"))
        .map_or(1.0, |(_, value)| value.trim().parse().unwrap_or(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_and_uv_get_json() {
        let pip = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
        let uv = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";
        assert_eq!(negotiate(Some(pip), None), Some(Format::Json));
        assert_eq!(negotiate(Some(uv), None), Some(Format::Json));
    }

    #[test]
    fn media_types_and_q_in_any_case_and_spacing() {
        assert_eq!(
            negotiate(
                Some("Application/VND.PyPI.Simple.v1+JSON ;Q=0.5, text/html;q=0.4"),
                None
            ),
            Some(Format::Json)
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.pypi.simple.v1+json; level=1; q=0.2, text/html"),
                None
            ),
            Some(Format::LegacyHtml)
        );
        // An unreadable q counts as 0: that entry is not acceptable.
        assert_eq!(
            negotiate(Some("application/vnd.pypi.simple.v1+json;q=high"), None),
            Some(Format::LegacyHtml)
        );
    }

    #[test]
    fn old_clients_and_browsers_get_html() {
        assert_eq!(negotiate(None, None), Some(Format::LegacyHtml));
        assert_eq!(
            negotiate(Some("text/html,application/xhtml+xml,*/*;q=0.8"), None),
            Some(Format::LegacyHtml)
        );
        assert_eq!(
            negotiate(Some("application/vnd.pypi.simple.v1+html"), None),
            Some(Format::Html)
        );
    }

    #[test]
    fn types_outside_the_simple_api_get_html_as_from_pypi_and_format_parameter_wins() {
        for accept in [
            "application/xml",
            "application/json",
            "application/vnd.pypi.simple.v1+json;q=0",
        ] {
            assert_eq!(
                negotiate(Some(accept), None),
                Some(Format::LegacyHtml),
                "{accept}"
            );
        }
        assert_eq!(
            negotiate(Some("text/html"), Some(JSON_TYPE)),
            Some(Format::Json)
        );
        assert_eq!(negotiate(None, Some("nonsense")), None);
    }
}
