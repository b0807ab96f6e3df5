//! `wheelgate select <requirement>...`: which build each requirement resolves to on this machine
//! and why every other build was rejected, from the catalog alone (no network).

use std::io::{self, Write};
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{Requirement, VersionOrUrl};
use serde::Serialize;
use wheelgate_resolver::catalog::ReleaseLine;
use wheelgate_resolver::filename::normalize_name;
use wheelgate_resolver::select::{ReleaseSelection, select_release};
use wheelgate_resolver::{Backend, Catalog, Os, Policy};
use wheelgate_selectors::overrides::{Env, OverrideError};
use wheelgate_selectors::{DetectError, ProbeContext, detect};

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
}

/// Why one backend was not chosen.
#[derive(Debug, Serialize)]
pub struct Reason {
    pub backend: String,
    pub reason: String,
}

/// Runs `wheelgate select`.
pub fn run(args: &SelectArgs) -> Result<(), SelectCommandError> {
    let ctx = ProbeContext::from_env(Env::from_process()).map_err(SelectCommandError::Override)?;
    let detection = detect(&ctx)?;
    let policy = Policy {
        pinned: detection.backend_pin.clone(),
        prefer: Vec::new(),
    };
    let catalog = Catalog::embedded();
    let mut answers = Vec::new();
    for text in &args.requirements {
        answers.push(answer(catalog, &detection.machine, &policy, text)?);
    }
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
    }
    Ok(())
}

fn answer(
    catalog: &Catalog,
    machine: &wheelgate_resolver::Machine,
    policy: &Policy,
    text: &str,
) -> Result<Answer, SelectCommandError> {
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
            let release = catalog
                .releases()
                .iter()
                .find(|r| !r.inferred)
                .unwrap_or_else(|| catalog.newest_release());
            let line = line_of(&project, release.torch, release)
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
    let decision = &selection.decision;
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
    }
}
