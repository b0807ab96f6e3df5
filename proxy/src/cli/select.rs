//! `wheelgate select <requirement>...`: which build each requirement resolves to on this machine
//! (or another: `--machine TOKEN|FILE`) and why every other build was rejected. From the
//! catalog alone (no network), or with `--index URL|FILE` from a real project page, through the
//! selection the proxy rewrites pages with.

mod bound;
mod machine;
pub mod page;

use std::io::{self, Write};
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{Requirement, VersionOrUrl};
use serde::Serialize;
use wheelgate_index::sources::{ConfiguredAccessError, resolve_access};
use wheelgate_index::upstream::OriginAccess;
use wheelgate_resolver::catalog::ReleaseLine;
use wheelgate_resolver::filename::normalize_name;
use wheelgate_resolver::select::{Decision, ReleaseSelection, select_release};
use wheelgate_resolver::{Backend, Catalog, Machine, Os, Policy};
use wheelgate_selectors::overrides::{Env, OverrideError, backend_override};
use wheelgate_selectors::{DetectError, ProbeContext, detect};
use wheelgate_server::rewrite::select_files;

/// Where `wheelgate select` points users for a backend.
const PYTORCH_INDEX: &str = "https://download.pytorch.org/whl";

/// Arguments of `wheelgate select`.
#[derive(Debug, clap::Args)]
pub struct SelectArgs {
    /// Requirements as pip takes them: `torch`, `'torch==2.9.0'`, `torchvision>=0.24`.
    #[arg(required = true, value_name = "REQUIREMENT")]
    pub requirements: Vec<String>,
    /// Print a JSON array, one object per requirement.
    #[arg(long)]
    pub json: bool,
    /// Choose from a real project page instead of the catalog: an index URL
    /// (`https://download.pytorch.org/whl/`, the project's page under it is fetched) or a saved
    /// page, HTML or JSON.
    #[arg(long, value_name = "URL|FILE")]
    pub index: Option<String>,
    /// Choose for another machine: the token `wheelgate detect --token` printed there, or a
    /// file with `wheelgate detect --json` output. This machine is then not probed.
    #[arg(long, value_name = "TOKEN|FILE")]
    pub machine: Option<String>,
    /// The server's configuration file (deploy/wheelgate.toml): its `[catalog] extend`
    /// overlay applies, and its [upstreams.pytorch] and [upstreams.pypi] credentials, headers
    /// and CA bundles apply to an --index URL on their upstream's origin, as `wheelgate serve`
    /// sends them.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// Why `wheelgate select` failed.
#[derive(Debug, thiserror::Error)]
pub enum SelectCommandError {
    #[error("invalid override; unset it or fix its value")]
    Override(#[source] OverrideError),
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error("`{text}` is not a valid requirement: {message}")]
    Requirement { text: String, message: String },
    #[error(
        "`{0}` is not a PyTorch project; wheelgate resolves builds only for the projects the PyTorch index owns (torch, torchvision, torchaudio, ...)"
    )]
    NotPytorch(String),
    #[error("no torch release in the catalog satisfies `{0}`")]
    NoRelease(String),
    #[error("no version on `{origin}` satisfies `{requirement}`")]
    NotOnPage { requirement: String, origin: String },
    #[error(transparent)]
    Machine(#[from] machine::MachineArgError),
    #[error(transparent)]
    Index(#[from] page::IndexArgError),
    #[error(transparent)]
    Config(#[from] wheelgate_config::ConfigError),
    #[error(transparent)]
    Access(#[from] ConfiguredAccessError),
    #[error(transparent)]
    Catalog(#[from] wheelgate_config::catalog::CatalogFileError),
    #[error("could not write the output")]
    Output(#[from] io::Error),
    #[error("could not encode the answer as JSON")]
    Json(#[from] serde_json::Error),
}

/// One requirement's answer, the `--json` form.
#[derive(Debug, Serialize)]
pub struct Answer {
    pub project: String,
    /// The version it resolved to: the pinned one, else the newest release line that fits.
    pub version: String,
    /// `null` when no build fits.
    pub backend: Option<String>,
    pub index_url: Option<String>,
    pub reasons: Vec<Reason>,
    pub notes: Vec<String>,
    /// With `--index`: the page chosen from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// With `--index`: the files of the version the proxy would serve this machine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// With `--index`: the build kept on each other platform the version's wheels are built
    /// for, for the same accelerators there (`null` where none runs); `backend` is the
    /// machine's own platform's.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub platforms: std::collections::BTreeMap<String, Option<String>>,
}

/// Why one backend was not chosen.
#[derive(Debug, Serialize)]
pub struct Reason {
    pub backend: String,
    pub reason: String,
}

/// Runs `wheelgate select`.
pub fn run(args: &SelectArgs) -> Result<(), SelectCommandError> {
    let env = Env::from_process();
    let (machine, pinned) = if let Some(arg) = &args.machine {
        let pinned = backend_override(&env).map_err(SelectCommandError::Override)?;
        (machine::read_machine(arg)?, pinned)
    } else {
        let ctx = ProbeContext::from_env(env).map_err(SelectCommandError::Override)?;
        let detection = detect(&ctx)?;
        (detection.machine, detection.backend_pin)
    };
    let policy = Policy {
        pinned,
        prefer: Vec::new(),
    };
    let config = match &args.config {
        Some(path) => Some(wheelgate_config::ServeConfig::from_file(path)?),
        None => None,
    };
    let access = match (&config, args.index.as_deref().map(page::IndexSource::parse)) {
        // Secrets are read only when a page is fetched: a saved page needs none.
        (Some(config), Some(page::IndexSource::Url(url))) => {
            let access = resolve_access(config)?;
            warn_if_unscoped(&url, &access);
            access
        }
        _ => Vec::new(),
    };
    let catalog = match &config {
        Some(config) => config.catalog.load()?.catalog,
        None => Catalog::embedded(),
    };
    let answers = answers_with(
        catalog,
        &machine,
        &policy,
        &args.requirements,
        args.index.as_deref(),
        &access,
    )?;
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &answers)?;
        writeln!(out)?;
        return Ok(());
    }
    for answer in &answers {
        match (&answer.backend, &answer.index_url) {
            (Some(backend), Some(url)) => writeln!(
                out,
                "{} {}: {backend}  (--index-url {url})",
                answer.project, answer.version
            )?,
            _ => writeln!(
                out,
                "{} {}: no build runs on this machine",
                answer.project, answer.version
            )?,
        }
        for reason in &answer.reasons {
            writeln!(out, "  {}: {}", reason.backend, reason.reason)?;
        }
        for note in &answer.notes {
            writeln!(out, "  note: {note}")?;
        }
        for (platform, backend) in &answer.platforms {
            writeln!(
                out,
                "  on {platform}: {}",
                backend.as_deref().unwrap_or("no build runs there")
            )?;
        }
        if let Some(page) = &answer.page {
            writeln!(
                out,
                "  from {page}; the files the proxy serves this machine:"
            )?;
            for file in &answer.files {
                writeln!(out, "    {file}")?;
            }
            if answer.files.is_empty() {
                writeln!(out, "    (none)")?;
            }
        }
    }
    Ok(())
}

/// Says so when `--config` gives access settings but none applies to the `--index` URL (its
/// upstream URL in the file is another origin, or unset and so PyPI's): the page is then
/// fetched without credentials, which a private upstream answers with a 401 that would
/// otherwise be puzzling.
fn warn_if_unscoped(url: &str, access: &[OriginAccess]) {
    let applies = reqwest::Url::parse(url)
        .is_ok_and(|parsed| access.iter().any(|access| access.applies_to(&parsed)));
    if !access.is_empty() && !applies {
        let origins: Vec<&str> = access
            .iter()
            .flat_map(|access| access.origins.iter().map(String::as_str))
            .collect();
        tracing::warn!(
            index = %wheelgate_index::upstream::redact(url),
            origins = %origins.join(", "),
            "the --config file's [upstreams.*] apply to other origins than the --index URL's; it is fetched without them (set pytorch_url or pypi_url in that file to this index)"
        );
    }
}

/// Each requirement's answer for `machine`: from the catalog, or with `index` (a URL or a saved
/// page, as `--index` takes) from a real page through the proxy's selection. Shared with the
/// Python package's `wheelgate.select`, so both answer what this command prints.
pub fn answers(
    machine: &Machine,
    policy: &Policy,
    requirements: &[String],
    index: Option<&str>,
) -> Result<Vec<Answer>, SelectCommandError> {
    answers_with(
        Catalog::embedded(),
        machine,
        policy,
        requirements,
        index,
        &[],
    )
}

/// [`answers`] from `catalog` (with `--config`'s overlay), an index URL fetched with `access`
/// (a private upstream's credentials, headers and CA bundle, each for its origins: `--config`'s
/// `[upstreams.*]`).
pub fn answers_with(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    requirements: &[String],
    index: Option<&str>,
    access: &[OriginAccess],
) -> Result<Vec<Answer>, SelectCommandError> {
    let index = index.map(page::IndexSource::parse);
    let remote = match &index {
        Some(page::IndexSource::Url(_)) => Some(page::Remote::new(access)?),
        _ => None,
    };
    requirements
        .iter()
        .map(|text| match &index {
            Some(source) => {
                answer_from_page(catalog, machine, policy, source, remote.as_ref(), text)
            }
            None => answer(catalog, machine, policy, text),
        })
        .collect()
}

/// A requirement, with its project normalized and checked to be one PyTorch builds.
fn parse_requirement(
    catalog: &Catalog,
    text: &str,
) -> Result<(Requirement<pep508_rs::VerbatimUrl>, String), SelectCommandError> {
    let requirement = Requirement::<pep508_rs::VerbatimUrl>::from_str(text).map_err(|err| {
        SelectCommandError::Requirement {
            text: text.to_string(),
            message: err.message.to_string(),
        }
    })?;
    let project = normalize_name(requirement.name.as_ref());
    if !catalog.is_pytorch_built(&project) {
        return Err(SelectCommandError::NotPytorch(project));
    }
    Ok((requirement, project))
}

/// The answer from a real page: the newest version on it that the requirement allows (no
/// pre-release unless pinned), decided exactly as the proxy decides when it rewrites the page.
fn answer_from_page(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    source: &page::IndexSource,
    remote: Option<&page::Remote>,
    text: &str,
) -> Result<Answer, SelectCommandError> {
    let (requirement, project) = parse_requirement(catalog, text)?;
    let loaded = page::load(source, &project, remote)?;
    let mut selection = select_files(catalog, machine, policy, &project, &loaded.page);
    // Bound to torch's builds by their metadata, as the proxy binds the page
    // (`wheelgate_server::binding`).
    let mut binding_note = None;
    let has_builds = selection.versions.iter().any(|v| v.decision.is_some());
    if has_builds && !catalog.is_release_train_project(&project) {
        match (source, remote) {
            (page::IndexSource::Url(root), Some(remote)) => {
                let context = bound::BindContext {
                    catalog,
                    machine,
                    policy,
                    root,
                    remote,
                };
                bound::bind(&context, &project, &loaded, &mut selection)?;
            }
            _ => {
                binding_note = Some(format!(
                    "{project} is built against torch, but a saved page carries neither torch's page nor its files' metadata: its builds were not matched with torch's; give --index the index's URL to match them"
                ));
            }
        }
    }
    let specifiers = match &requirement.version_or_url {
        Some(VersionOrUrl::VersionSpecifier(specifiers)) => Some(specifiers),
        _ => None,
    };
    let pinned = specifiers.is_some_and(|s| {
        s.iter().any(|s| {
            matches!(
                s.operator(),
                pep440_rs::Operator::Equal | pep440_rs::Operator::ExactEqual
            )
        })
    });
    let allowed: Vec<_> = selection
        .versions
        .iter()
        .filter(|v| pinned || !v.version.any_prerelease())
        .filter(|v| specifiers.is_none_or(|s| s.contains(&v.version)))
        .collect();
    // The proxy's page leaves out a version with no file kept, so installers take the newest
    // with one; only when none has one is the newest shown, with why nothing is kept.
    let chosen = allowed
        .iter()
        .find(|v| !v.kept.is_empty())
        .or_else(|| allowed.first())
        .ok_or_else(|| SelectCommandError::NotOnPage {
            requirement: text.to_string(),
            origin: loaded.origin.clone(),
        })?;
    let files = chosen
        .kept
        .iter()
        .map(|&i| loaded.page.files[i].filename.clone())
        .collect();
    let mut answer = match &chosen.decision {
        Some(decision) => decision_answer(
            project,
            chosen.version.to_string(),
            decision,
            machine.platform.os,
        ),
        // A version whose files carry no backend: every file is served as it is.
        None => Answer {
            project,
            version: chosen.version.to_string(),
            backend: None,
            index_url: None,
            reasons: Vec::new(),
            notes: vec!["the files of this version name no backend; all are served".to_string()],
            page: None,
            files: Vec::new(),
            platforms: std::collections::BTreeMap::new(),
        },
    };
    answer.notes.extend(binding_note);
    answer.page = Some(loaded.origin);
    answer.files = files;
    answer.platforms = chosen
        .platforms
        .iter()
        .map(|choice| {
            (
                choice.platform.to_string(),
                choice.decision.chosen.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    Ok(answer)
}

fn answer(
    catalog: &Catalog,
    machine: &Machine,
    policy: &Policy,
    text: &str,
) -> Result<Answer, SelectCommandError> {
    let (requirement, project) = parse_requirement(catalog, text)?;
    let (version, shown) = match &requirement.version_or_url {
        Some(VersionOrUrl::VersionSpecifier(specifiers)) if !specifiers.is_empty() => {
            let exact = specifiers.iter().find(|s| {
                matches!(
                    s.operator(),
                    pep440_rs::Operator::Equal | pep440_rs::Operator::ExactEqual
                )
            });
            if let Some(exact) = exact {
                (exact.version().clone(), exact.version().to_string())
            } else {
                // The newest release line whose `.0` release the specifiers allow.
                let line = catalog
                    .releases()
                    .iter()
                    .filter(|r| !r.inferred)
                    .filter_map(|r| line_of(&project, r.torch, r))
                    .find(|v| specifiers.contains(v))
                    .ok_or_else(|| SelectCommandError::NoRelease(text.to_string()))?;
                let shown = line.to_string();
                (line, shown)
            }
        }
        _ => {
            // The newest confirmed release that has this project (torchaudio stops at 2.11).
            let line = catalog
                .releases()
                .iter()
                .filter(|r| !r.inferred)
                .find_map(|r| line_of(&project, r.torch, r))
                .or_else(|| {
                    let newest = catalog.newest_release();
                    line_of(&project, newest.torch, newest)
                })
                .ok_or_else(|| SelectCommandError::NoRelease(text.to_string()))?;
            let shown = line.to_string();
            (line, shown)
        }
    };
    let selection = select_release(catalog, machine, policy, &project, Some(&version));
    Ok(to_answer(project, shown, &selection, machine.platform.os))
}

/// The `.0` version of `project` in the release train of torch `line`.
fn line_of(
    project: &str,
    line: ReleaseLine,
    release: &wheelgate_resolver::catalog::Release,
) -> Option<Version> {
    let own = if project == "torch" {
        Some(line)
    } else {
        release.companions.get(project).copied()
    }?;
    format!("{}.{}.0", own.major, own.minor).parse().ok()
}

fn to_answer(project: String, version: String, selection: &ReleaseSelection, os: Os) -> Answer {
    decision_answer(project, version, &selection.decision, os)
}

fn decision_answer(project: String, version: String, decision: &Decision, os: Os) -> Answer {
    let backend = decision.chosen.as_ref();
    let index_url = backend.map(|b| match (b, os) {
        // macOS wheels are the plain ones on PyPI and under /whl/cpu alike.
        (Backend::Cpu, Os::Macos) => format!("{PYTORCH_INDEX}/cpu"),
        (b, _) => format!("{PYTORCH_INDEX}/{b}"),
    });
    Answer {
        project,
        version,
        backend: backend.map(ToString::to_string),
        index_url,
        reasons: decision
            .rejections()
            .map(|(b, r)| Reason {
                backend: b.to_string(),
                reason: r.to_string(),
            })
            .collect(),
        notes: decision.notes.clone(),
        page: None,
        files: Vec::new(),
        platforms: std::collections::BTreeMap::new(),
    }
}
