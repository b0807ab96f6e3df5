//! `wheelgate catalog show [RELEASE]` (the effective build facts) and `wheelgate catalog check`
//! (the catalog against a real listing of torch's files: the PyTorch upstream's, a saved page
//! or a mirror's store), so an operator learns what the catalog lacks before a user does. Both
//! read `--config`'s `[catalog] extend` overlay.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use wheelgate_resolver::Catalog;
use wheelgate_resolver::catalog::{CheckReport, Finding, FindingKind, Release};
use wheelgate_resolver::select::FileRef;

use super::select::page::{IndexArgError, IndexSource, Remote, load};
use wheelgate_config::{LoadedCatalog, ServeConfig};
use wheelgate_index::cache::index::{IndexCache, IndexError};
use wheelgate_index::upstream::redact;

/// Arguments of `wheelgate catalog`.
#[derive(Debug, clap::Args)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: CatalogCommand,
}

/// The `catalog` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// Print the effective build facts (the built-in catalog, with `--config`'s overlay): every
    /// release, or one (`2.15`).
    Show(ShowArgs),
    /// Compare the catalog with a real listing of torch's files and print what it does not
    /// describe, what it describes that is not listed, and which answers rest on inference.
    /// Exits 1 when something needs attention, so it can run daily.
    Check(CheckArgs),
}

/// Arguments of `wheelgate catalog show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// One release line (`2.15`); every release when absent.
    pub release: Option<String>,
    /// The server's configuration file: its `[catalog] extend` overlay applies.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `wheelgate catalog check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The listing: an index URL (torch's page under it is read; default: `--config`'s
    /// `pytorch_url`, else the PyTorch upstream), a saved torch page (HTML or JSON), or a
    /// mirror's store directory.
    #[arg(long, value_name = "URL|FILE|STORE")]
    pub index: Option<String>,
    /// The server's configuration file: its `[catalog] extend` overlay, `pytorch_url` and
    /// `[upstreams.*]` access apply.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Why `wheelgate catalog` failed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogCommandError {
    #[error(transparent)]
    Config(#[from] wheelgate_config::ConfigError),
    #[error(transparent)]
    Catalog(#[from] Box<wheelgate_config::catalog::CatalogFileError>),
    #[error("torch {0} is not in the catalog (`wheelgate catalog show` lists every release)")]
    NoSuchRelease(String),
    #[error(transparent)]
    Index(#[from] IndexArgError),
    #[error(transparent)]
    Access(#[from] wheelgate_index::sources::ConfiguredAccessError),
    #[error("cannot read torch's page from the store `{path}`")]
    Store {
        path: PathBuf,
        #[source]
        source: IndexError,
    },
    #[error("cannot open the store `{path}`")]
    StoreOpen {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "the store `{path}` holds no page of torch from `{url}`; pass the server's --config (its `pytorch_url`)"
    )]
    NotInStore { path: PathBuf, url: String },
    #[error(
        "{0} finding(s) need attention: the catalog does not describe this listing; add them with `[catalog] extend`"
    )]
    NeedsAttention(usize),
    #[error("could not write the output")]
    Output(#[from] io::Error),
    #[error("could not encode the answer as JSON")]
    Json(#[from] serde_json::Error),
}

/// Runs `wheelgate catalog ...`.
pub fn run(args: &CatalogArgs) -> Result<(), CatalogCommandError> {
    match &args.command {
        CatalogCommand::Show(show) => run_show(show),
        CatalogCommand::Check(check) => run_check(check),
    }
}

fn read_config(path: Option<&Path>) -> Result<ServeConfig, CatalogCommandError> {
    Ok(match path {
        Some(path) => ServeConfig::from_file(path)?,
        None => ServeConfig::default(),
    })
}

fn run_show(args: &ShowArgs) -> Result<(), CatalogCommandError> {
    let config = read_config(args.config.as_deref())?;
    let loaded = config.catalog.load().map_err(Box::new)?;
    let releases: Vec<&Release> = loaded
        .catalog
        .releases()
        .iter()
        .filter(|r| {
            args.release
                .as_ref()
                .is_none_or(|wanted| r.torch.to_string() == *wanted)
        })
        .collect();
    if let Some(wanted) = &args.release
        && releases.is_empty()
    {
        return Err(CatalogCommandError::NoSuchRelease(wanted.clone()));
    }
    let shown: Vec<ShownRelease> = releases
        .iter()
        .map(|release| shown_release(loaded.catalog, release))
        .collect();
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &shown)?;
        writeln!(out)?;
        return Ok(());
    }
    write_origin(&mut out, &loaded)?;
    for release in &shown {
        let inferred = if release.inferred { " (inferred)" } else { "" };
        writeln!(out, "torch {}{inferred}", release.torch)?;
        if !release.companions.is_empty() {
            writeln!(out, "  companions: {}", release.companions.join(", "))?;
        }
        writeln!(out, "  plain: {}", release.plain.join(", "))?;
        for backend in &release.backends {
            writeln!(out, "  {}: {}", backend.backend, backend.facts.join("; "))?;
        }
    }
    Ok(())
}

fn write_origin(out: &mut impl Write, loaded: &LoadedCatalog) -> io::Result<()> {
    match &loaded.overlay {
        Some(path) => {
            writeln!(
                out,
                "# the built-in catalog with `{}` layered over it:",
                path.display()
            )?;
            for fact in &loaded.facts {
                writeln!(out, "#   line {}: {}", fact.line, fact.fact)?;
            }
        }
        None => writeln!(out, "# the built-in catalog")?,
    }
    Ok(())
}

/// One release as `catalog show` prints it.
#[derive(Debug, Serialize)]
struct ShownRelease {
    torch: String,
    inferred: bool,
    companions: Vec<String>,
    plain: Vec<String>,
    backends: Vec<ShownBackend>,
}

#[derive(Debug, Serialize)]
struct ShownBackend {
    backend: String,
    facts: Vec<String>,
}

fn shown_release(catalog: &Catalog, release: &Release) -> ShownRelease {
    let set = |name: &Option<String>, label: &str| {
        name.as_ref().map(|name| {
            let list: Vec<String> = catalog
                .sm_set(name)
                .unwrap_or_default()
                .iter()
                .map(ToString::to_string)
                .collect();
            format!("{label} {} ({name})", list.join(" "))
        })
    };
    ShownRelease {
        torch: release.torch.to_string(),
        inferred: release.inferred,
        companions: release
            .companions
            .iter()
            .map(|(project, line)| format!("{project} {line}"))
            .collect(),
        plain: release
            .plain
            .iter()
            .map(|(platform, backend)| format!("{platform} {backend}"))
            .collect(),
        backends: release
            .backends
            .iter()
            .map(|(backend, entry)| {
                let mut facts: Vec<String> = [
                    set(&entry.sm, "sm"),
                    set(&entry.sm_windows, "windows sm"),
                    set(&entry.sm_aarch64, "aarch64 sm"),
                ]
                .into_iter()
                .flatten()
                .collect();
                if let Some(platforms) = &entry.platforms {
                    let list: Vec<String> = platforms.iter().map(ToString::to_string).collect();
                    facts.push(format!("only {}", list.join(", ")));
                }
                if entry.inferred {
                    facts.push("inferred".to_string());
                }
                if let Some(note) = &entry.note {
                    facts.push(note.clone());
                }
                if facts.is_empty() {
                    facts.push("as its kind is by default".to_string());
                }
                ShownBackend {
                    backend: backend.to_string(),
                    facts,
                }
            })
            .collect(),
    }
}

/// The report as `catalog check --json` prints it.
#[derive(Debug, Serialize)]
struct CheckOutput<'a> {
    listing_from: String,
    catalog_overlay: Option<String>,
    needs_attention: bool,
    #[serde(flatten)]
    report: &'a CheckReport,
}

fn run_check(args: &CheckArgs) -> Result<(), CatalogCommandError> {
    let config = read_config(args.config.as_deref())?;
    let loaded = config.catalog.load().map_err(Box::new)?;
    let index = args
        .index
        .clone()
        .unwrap_or_else(|| format!("{}/", config.pytorch_root()));
    let (page, origin, place) = listing(&config, &index)?;
    let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    let mut report = loaded.catalog.check_listing(&refs);
    report
        .findings
        .extend(variants_findings(loaded.catalog, &config, &page, &place));
    let mut out = io::stdout().lock();
    if args.json {
        let output = CheckOutput {
            listing_from: origin,
            catalog_overlay: loaded.overlay.as_ref().map(|p| p.display().to_string()),
            needs_attention: report.needs_attention(),
            report: &report,
        };
        serde_json::to_writer_pretty(&mut out, &output)?;
        writeln!(out)?;
    } else {
        write_origin(&mut out, &loaded)?;
        writeln!(out, "# listing: {origin} ({} torch wheels)", report.files)?;
        for finding in &report.findings {
            let mark = if finding.kind.needs_attention() {
                "!"
            } else {
                "~"
            };
            writeln!(out, "{mark} {}", finding.message)?;
        }
        if report.findings.is_empty() {
            writeln!(out, "the catalog describes every release and build listed")?;
        }
    }
    let attention = report
        .findings
        .iter()
        .filter(|f| f.kind.needs_attention())
        .count();
    if attention > 0 {
        return Err(CatalogCommandError::NeedsAttention(attention));
    }
    Ok(())
}

/// Where a listing was read, for its variants files.
enum Place {
    /// Fetched from this URL: its links are relative to it.
    Url(String),
    /// A saved page: variants files are read beside it, by name.
    Dir(PathBuf),
    /// A store: its variants files are not compared.
    Store,
}

/// The disagreements of the listing's `*-variants.json` files with the catalog: fetched when
/// the listing was, read beside a saved page; a file that cannot be had is said as a finding
/// that needs no attention.
fn variants_findings(
    catalog: &Catalog,
    config: &ServeConfig,
    page: &wheelgate_resolver::index::ProjectPage,
    place: &Place,
) -> Vec<Finding> {
    let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
    let indices = wheelgate_resolver::variants::choose::variants_json_indices(&refs);
    if indices.is_empty() || matches!(place, Place::Store) {
        return Vec::new();
    }
    let remote = match place {
        Place::Url(_) => wheelgate_index::sources::resolve_access(config)
            .ok()
            .and_then(|access| Remote::new(&access).ok()),
        _ => None,
    };
    let mut findings = Vec::new();
    for index in indices {
        let file = &page.files[index];
        let Some(version) = file
            .filename
            .strip_prefix("torch-")
            .and_then(|rest| rest.strip_suffix("-variants.json"))
        else {
            continue;
        };
        let text = match (place, &remote) {
            (Place::Url(url), Some(remote)) => {
                let link = page.file_url(file, url);
                remote
                    .block_on(async {
                        let response = remote
                            .client
                            .get_stream(
                                &link,
                                reqwest::header::HeaderMap::default(),
                                Some(url.as_str()),
                            )
                            .await?;
                        Ok::<_, wheelgate_index::upstream::UpstreamError>(
                            response.text().await.ok(),
                        )
                    })
                    .ok()
                    .flatten()
            }
            (Place::Dir(dir), _) => std::fs::read_to_string(dir.join(&file.filename)).ok(),
            _ => None,
        };
        let parsed = text
            .as_deref()
            .map(wheelgate_resolver::variants::schema::parse_variants_json);
        match parsed {
            Some(Ok(variants)) => findings.extend(catalog.check_variants(version, &variants)),
            Some(Err(err)) => findings.push(unread(version, &file.filename, &err.to_string())),
            None => findings.push(unread(version, &file.filename, "it could not be read")),
        }
    }
    findings
}

fn unread(version: &str, filename: &str, why: &str) -> Finding {
    Finding {
        kind: FindingKind::Inferred,
        release: Some(version.to_string()),
        message: format!("torch {version}: `{filename}` not compared: {why}"),
    }
}

/// torch's page from `index` (a URL, a saved page or a store), where it came from, and where
/// its variants files are.
fn listing(
    config: &ServeConfig,
    index: &str,
) -> Result<(wheelgate_resolver::index::ProjectPage, String, Place), CatalogCommandError> {
    let path = Path::new(index);
    if !index.contains("://") && path.is_dir() {
        let url = format!("{}/torch/", config.pytorch_root());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let store_error = |source| CatalogCommandError::Store {
            path: path.to_path_buf(),
            source,
        };
        let cache = IndexCache::new(path, Duration::ZERO, true).map_err(|source| {
            CatalogCommandError::StoreOpen {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let client = wheelgate_index::upstream::UpstreamClient::new(
            &wheelgate_index::upstream::ClientSettings::default(),
        )
        .map_err(|source| IndexArgError::Fetch {
            url: redact(&url),
            source,
        })?;
        let cached = runtime
            .block_on(cache.get(&client, &url))
            .map_err(store_error)?
            .ok_or_else(|| CatalogCommandError::NotInStore {
                path: path.to_path_buf(),
                url: redact(&url),
            })?;
        return Ok((
            cached.page.clone(),
            format!("{} ({})", path.display(), redact(&url)),
            Place::Store,
        ));
    }
    let source = IndexSource::parse(index);
    let remote = match &source {
        IndexSource::Url(_) => Some(Remote::new(&wheelgate_index::sources::resolve_access(
            config,
        )?)?),
        IndexSource::File(_) => None,
    };
    let loaded = load(&source, "torch", remote.as_ref())?;
    let place = match (&source, &loaded.url) {
        (_, Some(url)) => Place::Url(url.clone()),
        (IndexSource::File(file), None) => {
            Place::Dir(file.parent().map(Path::to_path_buf).unwrap_or_default())
        }
        (IndexSource::Url(_), None) => Place::Store,
    };
    Ok((loaded.page, loaded.origin, place))
}
