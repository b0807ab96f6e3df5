//! [`Sources`] from a configuration, checked: names, URLs and patterns, so a mistake stops the
//! start with its place and value instead of sending a name to the wrong index later.

use reqwest::Url;
use wheelgate_resolver::Catalog;

use super::{
    Owns, PYPI, PYTORCH, PatternError, ProjectPattern, Source, SourceKind, Sources, TemplateError,
    UrlCredentials, UrlTemplate,
};
use crate::upstream::redact;
use wheelgate_config::{ServeConfig, SourceConfig, UpstreamsConfig};

/// A configuration of sources that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourcesError {
    #[error(
        "`[[sources]]` name `{0}` is not valid: use lower-case letters, digits and `-` (`internal`, `acme-index`)"
    )]
    BadName(String),
    #[error(
        "`[[sources]]` name `{0}` is taken by a built-in source; its settings are `{1}_url` and `[upstreams.{1}]`"
    )]
    BuiltInName(String, &'static str),
    #[error("`[[sources]]` name `{0}` is given twice; each source needs its own name")]
    Duplicate(String),
    #[error(
        "`{section}` url `{url}` is not an http(s) URL without a query or fragment; give the index root whose `<url>/<project>/` is a project page"
    )]
    NotHttp { section: String, url: String },
    #[error(
        "`{section}` url `{url}` has a placeholder in its scheme, host or port: placeholders go only in the path and query, so every page of the source is asked of the one host configured"
    )]
    PlaceholderInHost { section: String, url: String },
    #[error("`{section}` url `{url}` is not a usable template: {source}")]
    Template {
        section: String,
        url: String,
        #[source]
        source: TemplateError,
    },
    #[error(
        "`{section}` url `{url}` is a template, which makes it a page per torch release and build, but it lists `{name}`, a PyTorch project: a per-build page serves packages built against torch, not torch's own; serve `{name}` from an index source"
    )]
    PerBuildPytorchName {
        section: String,
        url: String,
        name: String,
    },
    #[error("`{section}` lists no `projects`; give the names or globs (`acme-*`) it serves")]
    NoProjects { section: String },
    #[error("`{section}` projects: {source}")]
    Pattern {
        section: String,
        #[source]
        source: PatternError,
    },
    #[error(
        "`{section}` projects: the pattern `{pattern}` takes `{name}`, a PyTorch project (served from the PyTorch index); list `{name}` in its projects too to serve it from `{source_name}` as well, or narrow the pattern"
    )]
    ShadowsPytorch {
        section: String,
        source_name: String,
        pattern: String,
        name: String,
    },
}

impl Sources {
    /// Every source `config` names: the PyTorch index, `[[sources]]`, the general index;
    /// checked.
    pub fn configured(config: &ServeConfig) -> Result<Sources, SourcesError> {
        Sources::configured_with(config, Catalog::embedded())
    }

    /// [`Sources::configured`], the PyTorch names from `catalog` (with `[catalog] extend`'s
    /// routing names).
    pub fn configured_with(
        config: &ServeConfig,
        catalog: &'static Catalog,
    ) -> Result<Sources, SourcesError> {
        Sources::new(
            catalog,
            config.pytorch_index_url(),
            &config.pypi_url,
            &config.upstreams,
            &config.sources,
        )
    }

    /// The built-in PyTorch and general sources (`pytorch_url`, `pypi_url`, `[upstreams.*]`)
    /// with the configured ones between them, checked. Without a `pytorch_url`
    /// (`pytorch_index = false`) there is no PyTorch source at all, and `[upstreams.pytorch]`
    /// is unused: see [`Sources::unserved`].
    pub fn new(
        catalog: &'static Catalog,
        pytorch_url: Option<&str>,
        pypi_url: &str,
        upstreams: &UpstreamsConfig,
        configured: &[SourceConfig],
    ) -> Result<Sources, SourcesError> {
        let mut list = Vec::with_capacity(configured.len() + 2);
        if let Some(pytorch_url) = pytorch_url {
            let (url, url_credentials) = without_credentials(root("`pytorch_url`", pytorch_url)?);
            list.push(Source {
                name: PYTORCH.to_string(),
                kind: SourceKind::Pytorch,
                url,
                owns: Owns::PytorchNames,
                template: None,
                url_credentials,
                access: upstreams.pytorch.clone(),
                section: "[upstreams.pytorch]".to_string(),
            });
        }
        for entry in configured {
            list.push(configured_source(catalog, entry, &list)?);
        }
        let (url, url_credentials) = without_credentials(root("`pypi_url`", pypi_url)?);
        list.push(Source {
            name: PYPI.to_string(),
            kind: SourceKind::Index,
            url,
            owns: Owns::Rest,
            template: None,
            url_credentials,
            access: upstreams.pypi.clone(),
            section: "[upstreams.pypi]".to_string(),
        });
        Ok(Sources { list, catalog })
    }

    /// The built-in two only (no `[[sources]]`), with no access settings: for tests and tools
    /// that read one index.
    pub fn builtin(catalog: &'static Catalog, pytorch_url: &str, pypi_url: &str) -> Sources {
        Sources::new(
            catalog,
            Some(pytorch_url),
            pypi_url,
            &UpstreamsConfig::default(),
            &[],
        )
        .expect("built-in sources with valid URLs")
    }
}

fn configured_source(
    catalog: &Catalog,
    entry: &SourceConfig,
    before: &[Source],
) -> Result<Source, SourcesError> {
    let name = &entry.name;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(SourcesError::BadName(name.clone()));
    }
    for builtin in [PYTORCH, PYPI] {
        if name == builtin {
            return Err(SourcesError::BuiltInName(name.clone(), builtin));
        }
    }
    if before.iter().any(|s| &s.name == name) {
        return Err(SourcesError::Duplicate(name.clone()));
    }
    let section = format!("[[sources]] {name}");
    // A template's `user:password@` leaves it like a plain URL's, before anything is filled in
    // (so no page key, stored page or log line holds it; issue 41 item 4).
    let (template_text, template_credentials) = split_userinfo(&entry.url);
    let template = template_of(&section, &template_text)?;
    let (url, url_credentials) = match &template {
        Some(_) => (template_text, template_credentials),
        None => without_credentials(root(&format!("`{section}`"), &entry.url).map_err(|_| {
            SourcesError::NotHttp {
                section: section.clone(),
                url: redact(&entry.url),
            }
        })?),
    };
    if entry.projects.is_empty() {
        return Err(SourcesError::NoProjects { section });
    }
    let patterns = entry
        .projects
        .iter()
        .map(|text| ProjectPattern::parse(text))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| SourcesError::Pattern {
            section: section.clone(),
            source,
        })?;
    check_pytorch_names(catalog, name, &section, &patterns)?;
    if template.is_some()
        && let Some(project) = catalog
            .pytorch_projects()
            .find(|project| patterns.iter().any(|p| p.matches(project)))
    {
        return Err(SourcesError::PerBuildPytorchName {
            section,
            url: redact(&entry.url),
            name: project.clone(),
        });
    }
    Ok(Source {
        name: name.clone(),
        kind: if template.is_some() {
            SourceKind::PerBuild
        } else {
            SourceKind::Index
        },
        url,
        template,
        url_credentials,
        owns: Owns::Patterns(patterns),
        access: entry.access(),
        section,
    })
}

/// A glob that takes a PyTorch name would move it away from the PyTorch index by accident
/// (`torch*` for `torch-utils-internal`); only a name written out is meant.
fn check_pytorch_names(
    catalog: &Catalog,
    name: &str,
    section: &str,
    patterns: &[ProjectPattern],
) -> Result<(), SourcesError> {
    let listed = |project: &str| patterns.iter().any(|p| p.as_name() == Some(project));
    for pattern in patterns.iter().filter(|p| p.as_name().is_none()) {
        if let Some(project) = catalog
            .pytorch_projects()
            .find(|project| pattern.matches(project) && !listed(project))
        {
            return Err(SourcesError::ShadowsPytorch {
                section: section.to_string(),
                source_name: name.to_string(),
                pattern: pattern.to_string(),
                name: project.clone(),
            });
        }
    }
    Ok(())
}

/// The template of a URL with braces (`None` without): known placeholders only, and an http(s)
/// URL once filled.
fn template_of(section: &str, url: &str) -> Result<Option<UrlTemplate>, SourcesError> {
    if !url.contains(['{', '}']) {
        return Ok(None);
    }
    // A filled-in host would let a torch release or backend choose where the proxy connects
    // (and which origin the source's credentials are lent to): only the path and query vary.
    let authority_end = url.split_once("://").map_or(0, |(scheme, rest)| {
        scheme.len() + 3 + rest.find(['/', '?', '#']).unwrap_or(rest.len())
    });
    if url[..authority_end].contains(['{', '}']) {
        return Err(SourcesError::PlaceholderInHost {
            section: format!("`{section}`"),
            url: redact(url),
        });
    }
    let template = UrlTemplate::parse(url).map_err(|source| SourcesError::Template {
        section: section.to_string(),
        url: redact(url),
        source,
    })?;
    let example = template.fill(
        &"2.10.0".parse().expect("a version"),
        &"cu128".parse().expect("a backend"),
    );
    match Url::parse(&example) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
            Ok(Some(template))
        }
        _ => Err(SourcesError::NotHttp {
            section: format!("`{section}`"),
            url: redact(url),
        }),
    }
}

/// `url` without its `user:password@`, and those credentials decoded: a URL with them in it
/// would be a page's key, written into the cache's and the mirror's stored pages.
fn without_credentials(url: String) -> (String, Option<UrlCredentials>) {
    let Ok(mut parsed) = Url::parse(&url) else {
        return (url, None);
    };
    if parsed.username().is_empty() && parsed.password().is_none() {
        return (url, None);
    }
    let credentials = UrlCredentials {
        user: percent_decoded(parsed.username()),
        password: percent_decoded(parsed.password().unwrap_or_default()),
    };
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    (
        parsed.as_str().trim_end_matches('/').to_string(),
        Some(credentials),
    )
}

/// `url` without the `user:password@` of its authority, and those credentials; read as text,
/// so a template's placeholders (which a URL parser would encode) stay as written.
pub fn split_userinfo(url: &str) -> (String, Option<UrlCredentials>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return (url.to_string(), None);
    };
    let (user, password) = rest[..at].split_once(':').unwrap_or((&rest[..at], ""));
    (
        format!("{scheme}://{}", &rest[at + 1..]),
        Some(UrlCredentials {
            user: percent_decoded(user),
            password: percent_decoded(password),
        }),
    )
}

/// RFC 3986 percent-decoding (`%40` → `@`); invalid escapes are kept as written.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An http(s) index root without its trailing slash.
fn root(section: &str, url: &str) -> Result<String, SourcesError> {
    match Url::parse(url) {
        // `{url}/<project>/` is appended: a query or fragment would swallow it.
        Ok(parsed)
            if matches!(parsed.scheme(), "http" | "https")
                && parsed.has_host()
                && parsed.query().is_none()
                && parsed.fragment().is_none() =>
        {
            Ok(url.trim_end_matches('/').to_string())
        }
        _ => Err(SourcesError::NotHttp {
            section: section.to_string(),
            url: redact(url),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::{ProjectKind, SourceId};

    fn source(name: &str, url: &str, projects: &[&str]) -> SourceConfig {
        toml::from_str(&format!(
            "name = {name:?}\nurl = {url:?}\nprojects = {projects:?}\n"
        ))
        .unwrap()
    }

    #[test]
    fn without_the_pytorch_index_the_general_index_is_the_only_source() {
        let config: ServeConfig = toml::from_str(
            "pytorch_url = \"https://artifactory.example/whl\"\npytorch_index = false\n\
             [upstreams.pytorch]\nca_bundle = \"/etc/ssl/company.pem\"\n",
        )
        .unwrap();
        let sources = Sources::configured(&config).unwrap();
        assert!(sources.pytorch().is_none());
        let names: Vec<&str> = sources.iter().map(|(_, s)| s.name.as_str()).collect();
        assert_eq!(names, ["pypi"]);
        assert!(sources.unserved("pytorch-triton").is_some());
    }

    fn sources(configured: &[SourceConfig]) -> Result<Sources, SourcesError> {
        Sources::new(
            Catalog::embedded(),
            Some("https://download.example/whl"),
            "https://pypi.example/simple/",
            &UpstreamsConfig::default(),
            configured,
        )
    }

    fn owner_names(sources: &Sources, project: &str) -> Vec<String> {
        sources
            .owners(project)
            .into_iter()
            .map(|id| sources.get(id).name.clone())
            .collect()
    }

    #[test]
    fn the_two_built_in_upstreams_are_the_first_and_last_sources() {
        let sources = sources(&[]).unwrap();
        assert_eq!(
            sources.pytorch().unwrap().url,
            "https://download.example/whl"
        );
        assert_eq!(sources.general().url, "https://pypi.example/simple");
        assert_eq!(owner_names(&sources, "numpy"), ["pypi"]);
        assert_eq!(owner_names(&sources, "torchtriton"), ["pypi"]);
        // Only on the PyTorch index (a placeholder on PyPI).
        assert_eq!(owner_names(&sources, "pytorch-triton"), ["pytorch"]);
        // Published by PyTorch's maintainers on both.
        assert_eq!(owner_names(&sources, "torch"), ["pytorch", "pypi"]);
        assert_eq!(
            sources
                .pytorch()
                .unwrap()
                .page_url("torch", Some(&"cu128".parse().unwrap())),
            "https://download.example/whl/cu128/torch/"
        );
        assert_eq!(
            sources
                .general()
                .page_url("numpy", Some(&"cu128".parse().unwrap())),
            "https://pypi.example/simple/numpy/"
        );
    }

    #[test]
    fn without_a_pytorch_index_the_general_index_takes_only_what_pytorch_publishes_there() {
        let without = Sources::new(
            Catalog::embedded(),
            None,
            "https://pypi.example/simple/",
            &UpstreamsConfig::default(),
            &[source(
                "mirror",
                "https://mirror.example/simple",
                &["pytorch-triton"],
            )],
        )
        .unwrap();
        assert!(without.pytorch().is_none());
        for published in ["torch", "torchvision", "fbgemm-gpu", "xformers"] {
            assert_eq!(owner_names(&without, published), ["pypi"], "{published}");
            assert_eq!(without.unserved(published), None);
        }
        assert_eq!(owner_names(&without, "numpy"), ["pypi"]);
        // Not a catalog name: PyPI's, as with a PyTorch index.
        assert_eq!(owner_names(&without, "torchtriton"), ["pypi"]);
        // Only on the PyTorch index: nobody's, never the general index's.
        for only in ["pytorch-triton-rocm", "torcharrow", "flash-attn-3"] {
            assert!(owner_names(&without, only).is_empty(), "{only}");
            let unserved = without.unserved(only).unwrap().to_string();
            assert!(
                unserved.contains(&format!("`{only}`"))
                    && unserved.contains("`pytorch_index = false`")
                    && unserved.contains("never looked up on the general index"),
                "{unserved}"
            );
        }
        // Unless a source lists it by name.
        assert_eq!(owner_names(&without, "pytorch-triton"), ["mirror"]);
        assert_eq!(without.unserved("pytorch-triton"), None);
        // Still selected per machine, wherever it comes from.
        assert_eq!(without.kind("torch"), ProjectKind::Pytorch);
        // With a PyTorch index, nothing is unserved.
        let with = sources(&[]).unwrap();
        for project in ["pytorch-triton-rocm", "torch", "numpy"] {
            assert_eq!(with.unserved(project), None, "{project}");
        }
    }
    #[test]
    fn configured_sources_own_their_names_and_nothing_else() {
        let sources = sources(&[
            source(
                "internal",
                "https://pypi.internal.example/simple",
                &["acme-*", "billing-client"],
            ),
            source("team", "http://127.0.0.1:9/simple", &["acme-utils"]),
        ])
        .unwrap();
        assert_eq!(owner_names(&sources, "acme-utils"), ["internal", "team"]);
        assert_eq!(owner_names(&sources, "acme-ml"), ["internal"]);
        assert_eq!(owner_names(&sources, "billing-client"), ["internal"]);
        assert_eq!(owner_names(&sources, "billing-client2"), ["pypi"]);
        assert_eq!(sources.owners("numpy"), [SourceId(3)]);
        assert_eq!(
            sources
                .by_name("team")
                .unwrap()
                .1
                .page_url("acme-utils", None),
            "http://127.0.0.1:9/simple/acme-utils/"
        );
    }

    #[test]
    fn a_pytorch_name_joins_a_source_only_when_written_out() {
        let err = sources(&[source("amd", "https://amd.example/whl", &["torch*"])])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`torch*`") && err.contains("PyTorch project") && err.contains("amd"),
            "{err}"
        );
        let sources = sources(&[source(
            "amd",
            "https://amd.example/whl",
            &["torch", "amd-torch-device-*"],
        )])
        .unwrap();
        assert_eq!(owner_names(&sources, "torch"), ["pytorch", "amd", "pypi"]);
        assert_eq!(owner_names(&sources, "amd-torch-device-gfx942"), ["amd"]);
    }

    #[test]
    fn a_templated_url_makes_a_per_build_source() {
        let sources = sources(&[source(
            "pyg",
            "https://data.pyg.example/whl/torch-{torch}+{backend}.html",
            &["torch-scatter", "pyg-lib"],
        )])
        .unwrap();
        let (id, pyg) = sources.by_name("pyg").unwrap();
        assert_eq!(pyg.kind, SourceKind::PerBuild);
        assert_eq!(
            pyg.template
                .as_ref()
                .unwrap()
                .fill(&"2.9.1".parse().unwrap(), &"cu130".parse().unwrap()),
            "https://data.pyg.example/whl/torch-2.9.1+cu130.html"
        );
        assert_eq!(sources.per_build_owners("torch-scatter"), [id]);
        assert!(sources.per_build_owners("numpy").is_empty());
    }

    #[test]
    fn credentials_in_a_template_leave_the_template() {
        let entry = source(
            "pyg",
            "https://ci:p%40ss@data.example/whl/torch-{torch}+{backend}.html",
            &["torch-scatter"],
        );
        let sources = Sources::new(
            Catalog::embedded(),
            Some("https://download.example/whl"),
            "https://pypi.example/simple/",
            &UpstreamsConfig::default(),
            &[entry],
        )
        .unwrap();
        let (_, pyg) = sources.iter().find(|(_, s)| s.name == "pyg").unwrap();
        assert_eq!(
            pyg.url,
            "https://data.example/whl/torch-{torch}+{backend}.html"
        );
        let credentials = pyg.url_credentials.as_ref().unwrap();
        assert_eq!(
            (credentials.user.as_str(), credentials.password.as_str()),
            ("ci", "p@ss")
        );
        let filled = pyg
            .template
            .as_ref()
            .unwrap()
            .fill(&"2.10.0".parse().unwrap(), &"cu128".parse().unwrap());
        assert_eq!(filled, "https://data.example/whl/torch-2.10.0+cu128.html");
    }

    #[test]
    fn credentials_in_a_url_leave_the_url() {
        let sources = Sources::new(
            Catalog::embedded(),
            Some("https://ci:p%40ss@download.example/whl"),
            "https://pypi.example/simple/",
            &UpstreamsConfig::default(),
            &[],
        )
        .unwrap();
        let pytorch = sources.pytorch().unwrap();
        assert_eq!(pytorch.url, "https://download.example/whl");
        let credentials = pytorch.url_credentials.as_ref().unwrap();
        assert_eq!(
            (credentials.user.as_str(), credentials.password.as_str()),
            ("ci", "p@ss")
        );
        assert!(!format!("{pytorch:?}").contains("p@ss"));
        assert_eq!(sources.general().url_credentials, None);
    }

    #[test]
    fn bad_sources_are_refused_with_what_to_do() {
        let cases = [
            (
                source("Internal", "https://a.example/simple", &["x"]),
                "not valid",
            ),
            (
                source("pypi", "https://a.example/simple", &["x"]),
                "built-in",
            ),
            (
                source("a", "ftp://a.example/simple", &["x"]),
                "not an http(s) URL",
            ),
            (source("a", "/srv/wheels", &["x"]), "not an http(s) URL"),
            (
                source("a", "https://a.example/simple?x=1", &["x"]),
                "not an http(s) URL",
            ),
            (
                source("a", "https://a.example/{cuda}.html", &["x"]),
                "`{cuda}` is not a placeholder",
            ),
            (
                source("a", "https://a.example/{torch.html", &["x"]),
                "not closed",
            ),
            (
                source("a", "https://{backend}.a.example/{torch}.html", &["x"]),
                "placeholders go only in the path and query",
            ),
            (
                source("a", "https://a.example:{torch_minor}/{torch}.html", &["x"]),
                "placeholders go only in the path and query",
            ),
            (
                source("a", "{backend}://a.example/{torch}.html", &["x"]),
                "placeholders go only in the path and query",
            ),
            (
                source(
                    "a",
                    "https://a.example/{torch}+{backend}.html",
                    &["torchvision"],
                ),
                "PyTorch project",
            ),
            (
                source("a", "file:///srv/{torch}.html", &["x"]),
                "not an http(s) URL",
            ),
            (
                source("a", "https://a.example/simple", &[]),
                "no `projects`",
            ),
            (
                source("a", "https://a.example/simple", &["Acme_Utils"]),
                "`acme-utils`",
            ),
        ];
        for (config, expected) in cases {
            let err = sources(&[config]).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
        let twice = sources(&[
            source("a", "https://a.example/simple", &["x"]),
            source("a", "https://b.example/simple", &["y"]),
        ])
        .unwrap_err()
        .to_string();
        assert!(twice.contains("twice"), "{twice}");
        let redacted = sources(&[source("a", "ftp://ci:hunter2@a.example/", &["x"])])
            .unwrap_err()
            .to_string();
        assert!(!redacted.contains("hunter2"), "{redacted}");
    }
}
