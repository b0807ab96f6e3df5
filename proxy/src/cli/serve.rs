//! `wheelgate serve`: run the proxy. Configuration layers: defaults, then the TOML file, then
//! environment variables, then flags (clap reads each flag's variable when the flag is absent).

use std::net::SocketAddr;
use std::path::PathBuf;

use std::io::Write as _;

use wheelgate_config::{ConfigError, ServeConfig, env, pip_configured_index};
use wheelgate_index::units::human_bytes;
use wheelgate_index::upstream::redact;
use wheelgate_resolver::select_release;
use wheelgate_server::AppState;
use wheelgate_server::explain::describe_machine;
use wheelgate_server::serve::{StartError, per_core};
use wheelgate_server::served::build_words;

/// Arguments of `wheelgate serve`; every flag also has a config-file key of the same name.
// clap prints these doc comments as `--help` text, where Markdown backticks would show literally
// (and a URL in angle brackets would too).
#[allow(clippy::doc_markdown, rustdoc::bare_urls)]
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// TOML configuration file (see deploy/wheelgate.toml).
    #[arg(long, env = env::CONFIG, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:3141, loopback only].
    #[arg(long, env = env::LISTEN, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// The PyTorch upstream [default: https://download.pytorch.org/whl].
    #[arg(long, env = env::PYTORCH_URL, value_name = "URL")]
    pub pytorch_url: Option<String>,
    /// This network has no PyTorch index: none is asked; PyTorch's projects published on PyPI
    /// come from the general upstream alone, the others (pytorch-triton) answer 404.
    #[arg(long, env = env::NO_PYTORCH_INDEX)]
    pub no_pytorch_index: bool,
    /// The general upstream, a simple index [default: the index pip is configured with, else PyPI's].
    #[arg(long, env = env::PYPI_URL, value_name = "URL")]
    pub pypi_url: Option<String>,
    /// Cache directory [default: $XDG_CACHE_HOME/wheelgate or ~/.cache/wheelgate].
    #[arg(long, env = env::CACHE_DIR, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Serve only what is cached; never contact an upstream.
    #[arg(long, env = env::OFFLINE)]
    pub offline: bool,
    /// Seconds an index page is served before it is revalidated upstream [default: 10].
    #[arg(long, env = env::INDEX_TTL, value_name = "SECONDS")]
    pub index_ttl_secs: Option<u64>,
    /// Size limit of the file cache in bytes [default: 50 GiB].
    #[arg(long, env = env::CACHE_MAX_BYTES, value_name = "BYTES")]
    pub cache_max_bytes: Option<u64>,
}

/// Why `wheelgate serve` failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeCommandError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("could not start the async runtime")]
    Runtime(#[source] std::io::Error),
}

/// The effective configuration of these arguments.
pub fn effective_config(args: &ServeArgs) -> Result<ServeConfig, ConfigError> {
    let (mut config, file_sets_pypi) = match &args.config {
        Some(path) => {
            let config = ServeConfig::from_file(path)?;
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let sets_pypi = text
                .parse::<toml::Table>()
                .is_ok_and(|t| t.contains_key("pypi_url"));
            (config, sets_pypi)
        }
        None => (ServeConfig::default(), false),
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(url) = &args.pytorch_url {
        config.pytorch_url.clone_from(url);
    }
    if args.no_pytorch_index {
        config.pytorch_index = false;
    }
    if let Some(url) = &args.pypi_url {
        config.pypi_url.clone_from(url);
    } else if !file_sets_pypi {
        let pip = pip_configured_index();
        // pip may already point at this very server (`wheelgate pip-config`): that would loop.
        let port = config.listen.port();
        let loops = [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ]
        .iter()
        .any(|own| pip.starts_with(own.as_str()));
        if !loops {
            config.pypi_url = pip;
        }
    }
    if let Some(dir) = &args.cache_dir {
        config.cache_dir.clone_from(dir);
    }
    if args.offline {
        config.offline = true;
    }
    if let Some(ttl) = args.index_ttl_secs {
        config.index_ttl_secs = ttl;
    }
    if let Some(bytes) = args.cache_max_bytes {
        config.cache_max_bytes = bytes;
    }
    Ok(config)
}

/// Runs `wheelgate serve` until a signal: builds the state, binds, says what it is doing on
/// standard output (logs stay on standard error, so a JSON log stream stays JSON), serves with
/// one connection server per core (`serve/per_core.rs`).
// The steps of `wheelgate_server::serve::run_until`, spelled out so that the lines can be printed once
// the listener is bound (the real port of `--listen 127.0.0.1:0`) and the state is built.
pub fn run(args: &ServeArgs) -> Result<(), ServeCommandError> {
    let config = effective_config(args)?;
    wheelgate_server::serve::allocator::tune_for_serving();
    // The state's background tasks (cache upkeep, refreshes it starts), the accept loop and the
    // signal wait run here; requests run on the cores' own runtimes.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(ServeCommandError::Runtime)?;
    let addr = config.listen;
    let state = runtime.block_on(wheelgate_server::serve::build_state(config))?;
    runtime.spawn(wheelgate_server::serve::reload_on_hangup(state.clone()));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|source| StartError::Listen { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    print_start_lines(&state, local);
    let read_at_start = !state.config.offline && state.config.read_sources_at_start;
    // Beside serving, not before it: a source that does not answer costs its deadline.
    let reading = state.clone();
    runtime.spawn(async move {
        let mut lines = Vec::new();
        if read_at_start {
            lines = wheelgate_index::sources::first_read::first_read_lines(
                &reading.sources,
                &reading.index,
                &reading.client,
            )
            .await;
        }
        lines.extend(live_torch_line(&reading, read_at_start).await);
        let mut out = std::io::stdout().lock();
        for line in &lines {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    });
    let cores = per_core::cores();
    tracing::info!(listen = %local, cores, "wheelgate serving");
    per_core::serve_per_core(
        &runtime,
        &state,
        listener,
        cores,
        wheelgate_server::serve::shutdown_signal(),
    )?;
    Ok(())
}

/// What `/simple/torch/` serves the server's machine, after the start lines: with the sources
/// read at start (`read`), torch's page read as a request reads it, and what it gives, or the
/// catalog's expectation, said to be one, when it could not be read; without, from a copy an
/// earlier run cached, and nothing when there is none (the start lines gave the catalog's).
pub async fn live_torch_line(state: &AppState, read: bool) -> Option<String> {
    let builds = if read {
        wheelgate_server::served::read_torch(state).await
    } else {
        wheelgate_server::served::cached(state, &state.default_machine, &state.config.policy).await
    };
    let live = matches!(
        builds.torch().answer,
        wheelgate_server::served::Answer::Live { .. }
    );
    (read || live).then(|| builds.torch_line())
}

/// The lines `wheelgate serve` starts with, on standard output, flushed at once.
fn print_start_lines(state: &AppState, local: SocketAddr) {
    let lines = start_lines(state, local);
    let mut out = std::io::stdout().lock();
    for line in &lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

/// One line each: the address, the machine `/simple/` resolves for, its torch build by the
/// catalog's expectation (said to be one: what the live page serves follows, from
/// [`live_torch_line`]), the upstreams, the cache, and the pip command to copy.
pub fn start_lines(state: &AppState, local: SocketAddr) -> Vec<String> {
    // A wildcard address is reachable on loopback from this host; other hosts use its name.
    let (host, elsewhere) = if local.ip().is_unspecified() {
        (
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), local.port()),
            " (from other machines: this host's name or address instead of 127.0.0.1)",
        )
    } else {
        (local, "")
    };
    let config = &state.config;
    let machine = &state.default_machine;
    let source = if config.machine.is_some() {
        "from the configuration"
    } else {
        "probed"
    };
    let pinned = config
        .policy
        .pinned
        .as_ref()
        .map(|b| format!("; backend pinned to {b}"))
        .unwrap_or_default();
    let newest = select_release(state.catalog(), machine, &config.policy, "torch", None);
    let build = match &newest.decision.chosen {
        Some(_) => build_words(&newest.decision),
        None => format!(
            "none usable{}",
            newest
                .decision
                .notes
                .first()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        ),
    };
    let offline = if config.offline {
        " (offline: never contacted)"
    } else {
        ""
    };
    let mut lines = vec![
        format!(
            "wheelgate {}: listening on http://{local}/ (status page there)",
            env!("CARGO_PKG_VERSION")
        ),
        format!(
            "machine for /simple/ ({source}): {}{pinned}",
            describe_machine(machine)
        ),
        format!(
            "its torch build by the catalog's expectation, not the live page (torch {}, the catalog's newest confirmed release): {build}",
            newest.torch
        ),
        format!(
            "upstreams: PyTorch {}, general {}{offline}",
            config.pytorch_index_url().map_or_else(
                || format!("none ({})", wheelgate_index::sources::WITHOUT_PYTORCH_INDEX),
                redact
            ),
            redact(&config.pypi_url)
        ),
        format!(
            "cache: {} ({} files, {} of {} limit)",
            config.cache_dir.display(),
            state.files.len(),
            human_bytes(state.files.total_bytes()),
            human_bytes(config.cache_max_bytes)
        ),
        format!("pip install torch --index-url http://{host}/simple/{elsewhere}"),
    ];
    if let Some(line) = networks_line(&state.networks) {
        lines.insert(2, line);
    }
    if let Some(line) = sources_line(&state.sources) {
        let at = lines.len() - 2;
        lines.insert(at, line);
    }
    lines
}

/// The configured `[[sources]]` and what each serves, when there are any.
fn sources_line(sources: &wheelgate_index::sources::Sources) -> Option<String> {
    let configured: Vec<String> = sources
        .iter()
        .filter(|(_, s)| {
            s.name != wheelgate_index::sources::PYTORCH && s.name != wheelgate_index::sources::PYPI
        })
        .map(|(_, s)| format!("{} {} ({})", s.name, redact(&s.url), s.owns.describe()))
        .collect();
    (!configured.is_empty()).then(|| format!("sources: {}", configured.join("; ")))
}

/// With `[[networks]]`: the rules that take precedence over the machine line before it.
fn networks_line(networks: &wheelgate_config::ClientNetworks) -> Option<String> {
    if networks.rules.is_empty() {
        return None;
    }
    let rules: Vec<String> = networks
        .rules
        .iter()
        .map(|rule| {
            let cidrs: Vec<String> = rule.cidrs.iter().map(ToString::to_string).collect();
            format!("{} {}", rule.label, cidrs.join(" "))
        })
        .collect();
    let trusted: Vec<String> = networks
        .trusted_proxies
        .iter()
        .map(ToString::to_string)
        .collect();
    Some(format!(
        "but for clients in a [[networks]] rule, first match wins: {} (their machines on the status page); trusted proxies: {}",
        rules.join(", "),
        if trusted.is_empty() {
            "none".to_string()
        } else {
            trusted.join(", ")
        }
    ))
}
