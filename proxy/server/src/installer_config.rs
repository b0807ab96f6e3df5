//! The configuration texts of `wheelgate pip-config --format`: one per installer, each a ready
//! file or command under comments naming where it goes. Pure: the index URL in, text out; the
//! status page renders the same texts for its own `/simple/`.
//!
//! Where credentials go (what each tool was seen to do, `tests/tests/e2e/installers_*.rs`):
//! pip and uv take them in the index URL; uv keeps them out of `uv.lock`, so a project file
//! names the index and uv reads `UV_INDEX_<NAME>_USERNAME`/`_PASSWORD`; Poetry takes them from
//! `poetry config http-basic.<source>` or `POETRY_HTTP_BASIC_<SOURCE>_USERNAME`/`_PASSWORD`;
//! PDM expands `${VARIABLE}` in a source URL, so the file holds no secret.

use std::fmt::Write as _;

/// Which installer's configuration to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `pip.conf` and a uv `uv.toml` (the output before `--format` existed).
    Pip,
    /// A uv project's `[[tool.uv.index]]` (and `uv.toml`'s `[[index]]`).
    Uv,
    /// `poetry source add --priority=primary` and the `pyproject.toml` table.
    Poetry,
    /// `[[tool.pdm.source]]` replacing PyPI, or `pdm config pypi.url`.
    Pdm,
    /// `PIP_INDEX_URL`, `UV_DEFAULT_INDEX` and the other variables, for CI.
    Env,
}

impl Format {
    /// Every format, in the order the status page shows them.
    pub const ALL: [Format; 5] = [
        Format::Pip,
        Format::Uv,
        Format::Poetry,
        Format::Pdm,
        Format::Env,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pip => "pip",
            Format::Uv => "uv",
            Format::Poetry => "poetry",
            Format::Pdm => "pdm",
            Format::Env => "env",
        }
    }
}

/// The name the project-file formats give the index (`[[tool.uv.index]] name`, the Poetry
/// source); credential variables are derived from it (`UV_INDEX_WHEELGATE_USERNAME`).
pub const INDEX_NAME: &str = "wheelgate";

/// An index URL split into the URL without credentials and the credentials it carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// `http://host:3141/m/<token>/simple/`, without any `user:password@`.
    pub url: String,
    /// The user of `http://user:password@host/...`, as written (percent-encoded).
    pub user: Option<String>,
    /// The password, as written (percent-encoded).
    pub password: Option<String>,
}

impl Index {
    /// Splits `http://user:password@host/...` (either part may be absent).
    pub fn parse(url: &str) -> Index {
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let authority_end = rest.find('/').unwrap_or(rest.len());
        let (authority, path) = rest.split_at(authority_end);
        let Some((userinfo, host)) = authority.rsplit_once('@') else {
            return Index {
                url: url.to_string(),
                user: None,
                password: None,
            };
        };
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user, Some(password.to_string())),
            None => (userinfo, None),
        };
        Index {
            url: format!("{scheme}://{host}{path}"),
            user: Some(user.to_string()),
            password,
        }
    }

    /// The URL with the credentials in it, as pip and uv take them.
    pub fn with_credentials(&self) -> String {
        self.with_userinfo(self.user.as_deref(), self.password.as_deref())
    }

    fn with_userinfo(&self, user: Option<&str>, password: Option<&str>) -> String {
        let Some(user) = user else {
            return self.url.clone();
        };
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("", &self.url));
        match password {
            Some(password) => format!("{scheme}://{user}:{password}@{rest}"),
            None => format!("{scheme}://{user}@{rest}"),
        }
    }

    fn has_credentials(&self) -> bool {
        self.user.is_some()
    }
}

/// The text of `format` for the index at `url` (credentials, if any, in its userinfo).
pub fn render(format: Format, url: &str) -> String {
    let index = Index::parse(url);
    let mut out = String::new();
    match format {
        Format::Pip => pip(&mut out, &index),
        Format::Uv => uv(&mut out, &index),
        Format::Poetry => poetry(&mut out, &index),
        Format::Pdm => pdm(&mut out, &index),
        Format::Env => env(&mut out, &index),
    }
    out.truncate(out.trim_end().len());
    out
}

fn pip(out: &mut String, index: &Index) {
    let url = index.with_credentials();
    let _ = write!(
        out,
        "# pip: ~/.config/pip/pip.conf (or PIP_INDEX_URL={url})\n[global]\nindex-url = {url}\n\n\
         # uv: ~/.config/uv/uv.toml (or UV_DEFAULT_INDEX={url})\n[[index]]\nurl = \"{url}\"\ndefault = true\n"
    );
}

fn uv(out: &mut String, index: &Index) {
    let url = &index.url;
    let _ = write!(
        out,
        "# uv project: pyproject.toml (every uv command of the project, `uv lock` and `uv sync` included)\n\
         [[tool.uv.index]]\nname = \"{INDEX_NAME}\"\nurl = \"{url}\"\ndefault = true\n\n\
         # uv for this user: ~/.config/uv/uv.toml\n\
         [[index]]\nname = \"{INDEX_NAME}\"\nurl = \"{url}\"\ndefault = true\n\n\
         # uv.lock records the build this URL served when it was locked: see docs/src/installers.md.\n\
         # Another machine's URL without editing the file: UV_INDEX={INDEX_NAME}={url}\n"
    );
    if index.has_credentials() {
        credentials_note(
            out,
            "uv reads them from the environment (never written to uv.lock)",
        );
        let _ = writeln!(
            out,
            "UV_INDEX_WHEELGATE_USERNAME={}",
            index.user.as_deref().unwrap_or_default()
        );
        if let Some(password) = &index.password {
            let _ = writeln!(out, "UV_INDEX_WHEELGATE_PASSWORD={password}");
        }
    }
}

fn poetry(out: &mut String, index: &Index) {
    let url = &index.url;
    let _ = write!(
        out,
        "# Poetry: in the project's directory (writes the table below into pyproject.toml)\n\
         poetry source add --priority=primary {INDEX_NAME} {url}\n\n\
         # or by hand, in pyproject.toml\n\
         [[tool.poetry.source]]\nname = \"{INDEX_NAME}\"\nurl = \"{url}\"\npriority = \"primary\"\n"
    );
    if index.has_credentials() {
        credentials_note(
            out,
            "Poetry keeps them out of pyproject.toml and poetry.lock this way",
        );
        let user = index.user.as_deref().unwrap_or_default();
        let password = index.password.as_deref().unwrap_or_default();
        let _ = write!(
            out,
            "poetry config http-basic.{INDEX_NAME} {user} {password}\n\
             # or, in CI\n\
             POETRY_HTTP_BASIC_WHEELGATE_USERNAME={user}\n\
             POETRY_HTTP_BASIC_WHEELGATE_PASSWORD={password}\n"
        );
    }
}

fn pdm(out: &mut String, index: &Index) {
    // PDM expands `${VAR}` in a source URL: the file names the variables, not the secret.
    let file_url = if index.has_credentials() {
        index.with_userinfo(
            Some("${WHEELGATE_USER}"),
            index.password.as_ref().map(|_| "${WHEELGATE_PASSWORD}"),
        )
    } else {
        index.url.clone()
    };
    let _ = write!(
        out,
        "# PDM: pyproject.toml; the name `pypi` replaces PyPI, so every package comes through here\n\
         [[tool.pdm.source]]\nname = \"pypi\"\nurl = \"{file_url}\"\n\n\
         # or for this user, all projects: pdm config pypi.url {}\n",
        index.with_credentials()
    );
    if index.has_credentials() {
        credentials_note(out, "PDM expands them in the URL above");
        let _ = writeln!(
            out,
            "WHEELGATE_USER={}",
            index.user.as_deref().unwrap_or_default()
        );
        if let Some(password) = &index.password {
            let _ = writeln!(out, "WHEELGATE_PASSWORD={password}");
        }
    }
}

fn env(out: &mut String, index: &Index) {
    let url = index.with_credentials();
    let _ = write!(
        out,
        "# CI: environment variables, one installer each\n\
         PIP_INDEX_URL={url}\n\
         # uv (UV_INDEX_URL is the older name, still read; UV_DEFAULT_INDEX wins when both are set)\n\
         UV_DEFAULT_INDEX={url}\nUV_INDEX_URL={url}\n\
         # pip-compile and pip-sync run pip, which reads PIP_INDEX_URL; PDM outside a project's sources\n\
         PDM_PYPI_URL={url}\n\
         # Poetry has no variable for a source's URL: see --format poetry\n"
    );
}

fn credentials_note(out: &mut String, how: &str) {
    let _ = write!(out, "\n# credentials: {how}\n");
}

#[cfg(test)]
mod tests {
    use super::{Format, Index, render};

    const URL: &str = "http://h:3141/m/abc/simple/";
    const WITH_CREDENTIALS: &str = "http://ci:s3cret@h:3141/m/abc/simple/";

    #[test]
    fn splits_credentials_from_the_url() {
        assert_eq!(
            Index::parse(WITH_CREDENTIALS),
            Index {
                url: URL.to_string(),
                user: Some("ci".to_string()),
                password: Some("s3cret".to_string()),
            }
        );
        let token_only = Index::parse("https://__token__@h/simple/");
        assert_eq!(token_only.url, "https://h/simple/");
        assert_eq!(token_only.user.as_deref(), Some("__token__"));
        assert_eq!(token_only.password, None);
        assert_eq!(token_only.with_credentials(), "https://__token__@h/simple/");
        // An `@` in the path is not userinfo.
        assert_eq!(Index::parse("http://h/a@b/simple/").user, None);
    }

    #[test]
    fn pip_is_the_output_before_formats() {
        let text = render(Format::Pip, URL);
        assert!(text.contains("[global]\nindex-url = http://h:3141/m/abc/simple/"));
        assert!(text.contains("url = \"http://h:3141/m/abc/simple/\"\ndefault = true"));
        assert!(
            render(Format::Pip, WITH_CREDENTIALS)
                .contains(&format!("index-url = {WITH_CREDENTIALS}"))
        );
    }

    #[test]
    fn uv_names_a_default_index_and_keeps_secrets_out_of_the_file() {
        let text = render(Format::Uv, WITH_CREDENTIALS);
        assert!(text.contains(
            "[[tool.uv.index]]\nname = \"wheelgate\"\nurl = \"http://h:3141/m/abc/simple/\"\ndefault = true"
        ), "{text}");
        assert!(
            text.contains("UV_INDEX_WHEELGATE_USERNAME=ci\nUV_INDEX_WHEELGATE_PASSWORD=s3cret")
        );
        assert!(!text.contains("ci:s3cret@"), "{text}");
        assert!(!render(Format::Uv, URL).contains("credentials"));
    }

    #[test]
    fn poetry_adds_a_primary_source() {
        let text = render(Format::Poetry, WITH_CREDENTIALS);
        assert!(text.contains(
            "poetry source add --priority=primary wheelgate http://h:3141/m/abc/simple/\n"
        ));
        assert!(text.contains("priority = \"primary\""));
        assert!(text.contains("poetry config http-basic.wheelgate ci s3cret"));
        assert!(text.contains("POETRY_HTTP_BASIC_WHEELGATE_PASSWORD=s3cret"));
        assert!(!text.contains("ci:s3cret@"), "{text}");
    }

    #[test]
    fn pdm_replaces_pypi_with_credentials_from_variables() {
        let text = render(Format::Pdm, WITH_CREDENTIALS);
        assert!(text.contains(
            "[[tool.pdm.source]]\nname = \"pypi\"\nurl = \"http://${WHEELGATE_USER}:${WHEELGATE_PASSWORD}@h:3141/m/abc/simple/\""
        ), "{text}");
        assert!(text.contains(&format!("pdm config pypi.url {WITH_CREDENTIALS}")));
        assert!(render(Format::Pdm, URL).contains(&format!("url = \"{URL}\"")));
    }

    #[test]
    fn env_has_every_variable() {
        let text = render(Format::Env, WITH_CREDENTIALS);
        for name in [
            "PIP_INDEX_URL",
            "UV_DEFAULT_INDEX",
            "UV_INDEX_URL",
            "PDM_PYPI_URL",
        ] {
            assert!(
                text.lines()
                    .any(|l| l == format!("{name}={WITH_CREDENTIALS}")),
                "{name}: {text}"
            );
        }
    }

    #[test]
    fn every_format_has_a_name_clap_accepts() {
        use clap::ValueEnum;
        for format in Format::ALL {
            assert_eq!(Format::from_str(format.name(), false), Ok(format));
        }
    }
}
