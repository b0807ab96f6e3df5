//! `wheelgate mirror sync`: download a declared set into a store for an offline server, with
//! progress bars; `--dry-run` lists what would be fetched and its size.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use wheelgate_mirror::{
    self as mirror, FileOutcome, MirrorConfig, MirrorConfigError, Plan, PlannedFile,
    ResolvedPackage, SyncError, SyncOptions, SyncProgress,
};

/// Arguments of `wheelgate mirror`.
#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    #[command(subcommand)]
    pub command: MirrorCommand,
}

/// The mirror subcommands.
// clap prints these doc comments as `--help` text: `<environment>` is a placeholder there, not
// an HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Subcommand)]
pub enum MirrorCommand {
    /// Resolve the requirements a mirror configuration declares for every target environment
    /// and download the union into a store that `wheelgate serve --offline --cache-dir STORE`
    /// serves, with a PEP 751 lock per environment; rerun to resume.
    Sync(SyncArgs),
    /// Resolve every target environment and write its PEP 751 lock (pylock.<environment>.toml),
    /// downloading nothing but metadata.
    Lock(LockArgs),
}

/// Arguments of `wheelgate mirror lock`.
#[allow(clippy::doc_markdown)]
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Mirror configuration (see deploy/mirror.toml).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Directory the locks are written to (created if absent).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The offline server's address as clients reach it, the base of the locks' file URLs
    /// [default: the configuration's server_url, else http://localhost:3141].
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
}

/// Arguments of `wheelgate mirror sync`.
// clap prints these doc comments as `--help` text, where Markdown backticks would show literally.
#[allow(clippy::doc_markdown)]
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Mirror configuration (see deploy/mirror.toml).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The store directory (created if absent); serve it with --cache-dir.
    #[arg(long, value_name = "DIR")]
    pub store: PathBuf,
    /// List what would be fetched and its total size; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Files downloaded at once.
    #[arg(long, value_name = "N", default_value_t = mirror::sync::DEFAULT_JOBS)]
    pub jobs: usize,
    /// The offline server's address as clients reach it, the base of the locks' file URLs
    /// [default: the configuration's server_url, else http://localhost:3141].
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
}

/// Why `wheelgate mirror` failed.
#[derive(Debug, thiserror::Error)]
pub enum MirrorCommandError {
    #[error(transparent)]
    Config(#[from] MirrorConfigError),
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error(
        "{failed} of {total} files or pages failed; the store `{store}` is incomplete (no {marker}). Run the same command again to resume"
    )]
    Incomplete {
        failed: usize,
        total: usize,
        store: PathBuf,
        marker: &'static str,
    },
    #[error("could not start the async runtime")]
    Runtime(#[source] std::io::Error),
}

/// Runs `wheelgate mirror ...`.
pub fn run(args: &MirrorArgs) -> Result<(), MirrorCommandError> {
    match &args.command {
        MirrorCommand::Sync(args) => run_sync(args),
        MirrorCommand::Lock(args) => run_lock(args),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, MirrorCommandError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(MirrorCommandError::Runtime)
}

fn run_lock(args: &LockArgs) -> Result<(), MirrorCommandError> {
    let mut config = MirrorConfig::from_file(&args.config)?;
    if let Some(url) = &args.server_url {
        config.server_url.clone_from(url);
    }
    let started = Instant::now();
    let (plan, written) = runtime()?.block_on(mirror::lock(&config, &args.out))?;
    for (resolution, path) in plan.resolutions.iter().zip(&written) {
        println!(
            "{}: {} packages -> {}",
            resolution.environment.name,
            resolution.packages.len(),
            path.display()
        );
    }
    println!(
        "{} locks written in {:.1} s (file URLs under {})",
        written.len(),
        started.elapsed().as_secs_f64(),
        config.server_url
    );
    Ok(())
}

fn run_sync(args: &SyncArgs) -> Result<(), MirrorCommandError> {
    let mut config = MirrorConfig::from_file(&args.config)?;
    if let Some(url) = &args.server_url {
        config.server_url.clone_from(url);
    }
    let runtime = runtime()?;
    if args.dry_run {
        let dry = runtime.block_on(mirror::dry_run(&config, &args.store, args.jobs))?;
        print_dry_run(&dry);
        return Ok(());
    }
    let bars = Bars::new();
    let options = SyncOptions {
        store: args.store.clone(),
        jobs: args.jobs,
    };
    let report = runtime.block_on(mirror::sync(&config, &options, &bars))?;
    bars.finish();
    for failure in &report.failures {
        eprintln!("failed: {}: {}", failure.what, failure.message);
    }
    print!("{}", summary_table(&report));
    println!("{}", report.summary());
    if !report.is_complete() {
        return Err(MirrorCommandError::Incomplete {
            failed: report.failures.len(),
            total: report.plan.files.len() + report.plan.pages.len(),
            store: report.store,
            marker: mirror::MARKER,
        });
    }
    println!(
        "the store `{}` is complete ({} pages); serve it with:\n  {}",
        report.store.display(),
        report.plan.pages.len(),
        report.serve_command()
    );
    if !report.plan.resolutions.is_empty() {
        println!(
            "PEP 751 locks, one per environment, in `{}` (install with `uv pip install -r <lock>`)",
            report.store.join(mirror::lock::LOCKS_DIR).display()
        );
    }
    Ok(())
}

fn print_dry_run(dry: &mirror::DryRun) {
    let by_url: HashMap<&str, usize> = dry
        .plan
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.spec.url.as_str(), i))
        .collect();
    for resolution in &dry.plan.resolutions {
        let env = &resolution.environment;
        let mut lines = String::new();
        let (mut files, mut bytes, mut present) = (0usize, 0u64, 0usize);
        for package in &resolution.packages {
            let backend = package
                .backend()
                .map(|b| format!("  ({b})"))
                .unwrap_or_default();
            let _ = writeln!(lines, "  {} {}{backend}", package.project, package.version);
            for file in package.index_files() {
                let url = package.page.page.file_url(file, &package.page.url);
                for url in [url.clone(), format!("{url}.metadata")] {
                    if let Some(&i) = by_url.get(url.as_str()) {
                        files += 1;
                        bytes += dry.sizes[i].unwrap_or(0);
                        present += usize::from(dry.present[i]);
                    }
                }
            }
        }
        println!(
            "{} (Python {}, {}): {} packages, {files} files, {}, {present} already in the store",
            env.name,
            env.python,
            env.platform,
            resolution.packages.len(),
            mirror::sync::human_bytes(bytes)
        );
        print!("{lines}");
    }
    for ((file, size), present) in dry.plan.files.iter().zip(&dry.sizes).zip(&dry.present) {
        let size = size.map_or_else(|| "size unknown".to_string(), mirror::sync::human_bytes);
        let stored = if *present { ", in the store" } else { "" };
        println!("{}  {}  ({size}{stored})", file.project, file.filename);
    }
    let (bytes, unknown) = dry.total();
    let mut total = format!(
        "would fetch {} pages and {} files, {} in total",
        dry.plan.pages.len(),
        dry.plan.files.len(),
        mirror::sync::human_bytes(bytes)
    );
    if unknown > 0 {
        let _ = write!(total, " ({unknown} files of unknown size not counted)");
    }
    let present = dry.present.iter().filter(|p| **p).count();
    let _ = write!(total, ", {present} already in the store");
    println!("{total} (dry run: nothing written)");
}

/// One row per environment (packages and files of its resolution), then the totals.
fn summary_table(report: &mirror::SyncReport) -> String {
    let mut text = String::new();
    if report.plan.resolutions.is_empty() {
        return text;
    }
    let width = report
        .plan
        .resolutions
        .iter()
        .map(|r| r.environment.name.len())
        .max()
        .unwrap_or(0)
        .max("environment".len());
    let _ = writeln!(
        text,
        "{:<width$}  {:>8}  {:>6}",
        "environment", "packages", "files"
    );
    for resolution in &report.plan.resolutions {
        // Distributions and their .metadata files, as the union row counts them.
        let files: usize = resolution
            .packages
            .iter()
            .flat_map(ResolvedPackage::index_files)
            .map(|f| 1 + usize::from(f.core_metadata.is_present()))
            .sum();
        let _ = writeln!(
            text,
            "{:<width$}  {:>8}  {:>6}",
            resolution.environment.name,
            resolution.packages.len(),
            files
        );
    }
    let _ = writeln!(
        text,
        "{:<width$}  {:>8}  {:>6}  downloaded {} ({}), already present {} ({})",
        "all (union)",
        report
            .plan
            .resolutions
            .iter()
            .flat_map(|r| r.packages.iter().map(|p| (&p.project, &p.full_version)))
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        report.plan.files.len(),
        report.downloaded,
        mirror::sync::human_bytes(report.downloaded_bytes),
        report.skipped,
        mirror::sync::human_bytes(report.skipped_bytes),
    );
    text
}

/// indicatif bars: one for the whole sync (bytes), one per file downloading.
struct Bars {
    multi: MultiProgress,
    total: ProgressBar,
    files: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    fn new() -> Bars {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let total = multi.add(ProgressBar::new(0));
        total.set_style(
            ProgressStyle::with_template(
                "{prefix:>8} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        total.set_prefix("mirror");
        total.set_message("resolving dependencies, fetching index pages");
        total.enable_steady_tick(Duration::from_millis(200));
        Bars {
            multi,
            total,
            files: Mutex::new(HashMap::new()),
        }
    }

    fn finish(&self) {
        self.total.finish_and_clear();
        let _ = self.multi.clear();
    }

    fn file_bars(&self) -> std::sync::MutexGuard<'_, HashMap<String, ProgressBar>> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SyncProgress for Bars {
    fn planned(&self, plan: &Plan) {
        let (bytes, _) = plan.known_size();
        self.total.set_length(bytes);
        self.total
            .set_message(format!("{} files", plan.files.len()));
    }

    fn started(&self, file: &PlannedFile, len: Option<u64>) {
        if file.spec.size.is_none()
            && let Some(len) = len
        {
            self.total.inc_length(len);
        }
        let bar = self.multi.add(ProgressBar::new(len.unwrap_or(0)));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>8} [{bar:30}] {bytes}/{total_bytes} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(file.filename.clone());
        self.file_bars().insert(file.spec.url.clone(), bar);
    }

    fn advanced(&self, file: &PlannedFile, bytes: u64) {
        self.total.inc(bytes);
        if let Some(bar) = self.file_bars().get(&file.spec.url) {
            bar.inc(bytes);
        }
    }

    fn finished(&self, file: &PlannedFile, outcome: &FileOutcome) {
        if let Some(bar) = self.file_bars().remove(&file.spec.url) {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
        match outcome {
            FileOutcome::Skipped { bytes } => {
                if file.spec.size.is_none() {
                    self.total.inc_length(*bytes);
                }
                self.total.inc(*bytes);
            }
            // Failures are listed once, after the bars are gone.
            FileOutcome::Failed(_) | FileOutcome::Downloaded { .. } => {}
        }
    }
}
