//! `wheelgate config show`: the configuration `wheelgate serve` would run with, as TOML, each
//! key followed by where its value came from (`default`, `file`, `env VAR`, `flag --name`,
//! `pip config`), secrets redacted: passwords, tokens and keys become `***`, and a URL's
//! `user:password@` becomes `user:***@`.
//!
//! `[upstreams.*]` holds no secret (plain-text secrets are refused when the file is read), so it
//! is shown as it is, followed by a comment per private upstream saying where each secret comes
//! from and whether it is there now (`<from env FOO, set>`), and the outgoing proxy variables
//! reqwest honours (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`).
//!
//! Sources come from clap's own record of each argument (`ArgMatches::value_source`), so a value
//! given both in the environment and as a flag shows the flag, as `serve` uses it.

use std::fmt::Write as _;
use std::io::{self, Write};

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use toml::{Table, Value};
use wheelgate_config::networks::{MachineSource, NetworksError};
use wheelgate_config::{ClientNetworks, ConfigError, DEFAULT_PYPI_URL, ServeConfig, env};
use wheelgate_server::explain::describe_machine;

use super::serve::{ServeArgs, effective_config};

/// `wheelgate config ...`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

/// The `config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration of `wheelgate serve` with the same flags: every key,
    /// its value and its source (default, file, env, flag), secrets redacted.
    Show(ShowArgs),
    /// Print the configuration reference as Markdown (docs/src/configuration.md): every key of
    /// the file with its type, default and meaning, the flags and their variables, the fixed
    /// limits.
    Reference,
}

/// Arguments of `wheelgate config show`: exactly those of `wheelgate serve`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Why `wheelgate config show` failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigShowError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot represent the configuration as TOML")]
    Serialize(#[source] toml::ser::Error),
    #[error("could not write the output")]
    Output(#[from] io::Error),
    #[error(transparent)]
    Networks(#[from] NetworksError),
    #[error(
        "the configured `machine` cannot exist; fix it in the configuration file, or remove it to resolve for this host"
    )]
    Machine(#[source] wheelgate_resolver::machine::ImplausibleMachine),
    #[error(transparent)]
    Catalog(#[from] wheelgate_config::catalog::CatalogFileError),
}

/// Runs `wheelgate config ...`.
pub fn run(args: &ConfigArgs) -> Result<(), ConfigShowError> {
    match &args.command {
        ConfigCommand::Show(show) => {
            // The command line again, for clap's record of where each value came from.
            let matches = super::Cli::command().try_get_matches_from(std::env::args_os());
            let show_matches = matches.as_ref().ok().and_then(|m| {
                m.subcommand_matches("config")
                    .and_then(|c| c.subcommand_matches("show"))
            });
            let text = render(&show.serve, show_matches)?;
            io::stdout().lock().write_all(text.as_bytes())?;
        }
        ConfigCommand::Reference => super::config_reference::run()?,
    }
    Ok(())
}

/// Where one value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Default,
    File,
    Env(String),
    Flag(String),
    Pip,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File => f.write_str("file"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Pip => f.write_str("pip config"),
        }
    }
}

/// The flags of `serve` that set a key: the key, the flag's argument id (the key's own name but
/// for `--no-pytorch-index`, which sets `pytorch_index` to `false`) and its environment variable.
const FLAGS: [(&str, &str, &str); 8] = [
    ("listen", "listen", env::LISTEN),
    ("pytorch_url", "pytorch_url", env::PYTORCH_URL),
    ("pytorch_index", "no_pytorch_index", env::NO_PYTORCH_INDEX),
    ("pypi_url", "pypi_url", env::PYPI_URL),
    ("cache_dir", "cache_dir", env::CACHE_DIR),
    ("offline", "offline", env::OFFLINE),
    ("index_ttl_secs", "index_ttl_secs", env::INDEX_TTL),
    ("cache_max_bytes", "cache_max_bytes", env::CACHE_MAX_BYTES),
];

fn arg_source(matches: Option<&ArgMatches>, id: &str, env: &str) -> Option<Source> {
    match matches?.value_source(id)? {
        ValueSource::CommandLine => Some(Source::Flag(format!("--{}", id.replace('_', "-")))),
        ValueSource::EnvVariable => Some(Source::Env(env.to_string())),
        _ => None,
    }
}

struct Sources<'a> {
    matches: Option<&'a ArgMatches>,
    file: Option<Table>,
    config: &'a ServeConfig,
}

impl Sources<'_> {
    fn of(&self, path: &[&str]) -> Source {
        if let [key] = path
            && let Some((_, id, env)) = FLAGS.iter().find(|(flag_key, _, _)| flag_key == key)
            && let Some(source) = arg_source(self.matches, id, env)
        {
            return source;
        }
        if let Some(file) = &self.file
            && lookup(file, path).is_some()
        {
            return Source::File;
        }
        if path == ["pypi_url"] && self.config.pypi_url != DEFAULT_PYPI_URL {
            return Source::Pip;
        }
        Source::Default
    }
}

fn lookup<'a>(table: &'a Table, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let value = table.get(*first)?;
    if rest.is_empty() || value.is_array() {
        // Inside an array of tables, every key comes from where the array does.
        return Some(value);
    }
    lookup(value.as_table()?, rest)
}

/// The annotated TOML of the effective configuration of `args`.
fn render(args: &ServeArgs, matches: Option<&ArgMatches>) -> Result<String, ConfigShowError> {
    let config = effective_config(args)?;
    let file = args
        .config
        .as_ref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| text.parse::<Table>().ok());
    // Checked as `serve` checks them, so `config show` finds a bad machine or rule before a
    // start does.
    let catalog = config.catalog.load()?;
    if let Some(machine) = &config.machine {
        machine
            .check_plausible(catalog.catalog)
            .map_err(ConfigShowError::Machine)?;
    }
    let networks = ClientNetworks::resolve(
        &config.networks,
        &config.trusted_proxies,
        catalog.catalog,
        config.machine.as_ref().map(|m| m.platform),
    )?;
    let mut table = Table::try_from(&config).map_err(ConfigShowError::Serialize)?;
    // A rule's `token` and `token_file` describe hardware, not a secret: shown as written.
    let rules = table.remove("networks");
    redact_table(&mut table);
    if let Some(rules) = rules {
        table.insert("networks".to_string(), rules);
    }
    let sources = Sources {
        matches,
        file,
        config: &config,
    };
    let mut out = String::from(
        "# The configuration `wheelgate serve` runs with these arguments. After each key, where\n\
         # its value came from: default, file, env VAR, flag --name or pip config. Secrets are\n\
         # redacted (***).\n",
    );
    if let Some(path) = &args.config {
        let from = arg_source(matches, "config", env::CONFIG)
            .map_or_else(String::new, |s| format!(" ({s})"));
        let _ = writeln!(out, "# file: {}{from}", display_path(path));
    }
    if config.machine.is_none() {
        out.push_str(
            "# machine: not set, so this host's own, probed when the server starts \
             (`wheelgate detect`)\n",
        );
    }
    describe_networks(&mut out, &networks);
    describe_catalog(&mut out, &catalog);
    out.push('\n');
    emit(&mut out, &[], &table, &sources);
    out.push('\n');
    out.push_str(&upstream_access(&config));
    out.push_str(&proxy_environment(|name| std::env::var(name).ok()));
    Ok(out)
}

/// The catalog's origin: built in, or which facts the overlay added or corrected.
fn describe_catalog(out: &mut String, catalog: &wheelgate_config::LoadedCatalog) {
    let newest = catalog.catalog.newest_release().torch;
    let Some(overlay) = &catalog.overlay else {
        let _ = writeln!(
            out,
            "# catalog: built in (releases through torch {newest}); `[catalog] extend` layers a file over it"
        );
        return;
    };
    let _ = writeln!(
        out,
        "# catalog: built in, with `{}` layered over it (releases through torch {newest}); from that file:",
        display_path(overlay)
    );
    for fact in &catalog.facts {
        let _ = writeln!(out, "#   line {}: {}", fact.line, fact.fact);
    }
}

/// One comment line per source: what it serves, then each access setting, never a secret's
/// value.
fn upstream_access(config: &ServeConfig) -> String {
    let mut out = String::from(
        "# Sources, in priority order (`pytorch_url`, `[[sources]]`, `pypi_url`; access from \
         `[upstreams.*]` and each `[[sources]]` entry; secrets are shown only as where they \
         come from):\n",
    );
    let sources = match wheelgate_index::sources::Sources::configured(config) {
        Ok(sources) => sources,
        Err(err) => {
            let _ = writeln!(out, "#   cannot be used: {err}");
            return out;
        }
    };
    if sources.pytorch().is_none() {
        let _ = writeln!(
            out,
            "#   pytorch: none ({}); `pytorch_url` and `[upstreams.pytorch]` unused",
            wheelgate_index::sources::WITHOUT_PYTORCH_INDEX
        );
    }
    for (_, source) in sources.iter() {
        let name = &source.name;
        let root = redact_url(&source.url);
        let _ = writeln!(
            out,
            "#   {name} ({root}): serves {}",
            source.owns.describe()
        );
        let lines = source.access.describe();
        if lines.is_empty() {
            let _ = writeln!(
                out,
                "#   {name} ({root}): no credentials; the system's trust store"
            );
        }
        for line in lines {
            let _ = writeln!(out, "#   {name} ({root}): {line}");
        }
    }
    out
}

/// The outgoing proxy variables as reqwest reads them (the upper-case name first, then the
/// lower-case one), credentials in their URLs redacted.
fn proxy_environment(var: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::from(
        "# Outgoing proxies from the environment (every upstream request honours them):\n",
    );
    for upper in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"] {
        let lower = upper.to_ascii_lowercase();
        let found = [upper, lower.as_str()]
            .into_iter()
            .find_map(|name| var(name).map(|value| (name, value)));
        let _ = match found {
            Some((name, value)) => writeln!(out, "#   {name} = {}", redact_url(&value)),
            None => writeln!(out, "#   {upper} <unset>"),
        };
    }
    out
}

/// The rules as `serve` reads them, one comment line each: the first holding a client's address
/// decides its machine.
fn describe_networks(out: &mut String, networks: &ClientNetworks) {
    if networks.rules.is_empty() && networks.trusted_proxies.is_empty() {
        return;
    }
    if !networks.rules.is_empty() {
        out.push_str(
            "# networks, in order (the first rule holding a client's address decides its \
             machine; other clients get the machine above):\n",
        );
    }
    for rule in &networks.rules {
        let cidrs: Vec<String> = rule.cidrs.iter().map(ToString::to_string).collect();
        let machine = rule
            .machine
            .as_ref()
            .map_or_else(|| "the server's machine".to_string(), describe_machine);
        let source = match &rule.source {
            MachineSource::Token => " (from its token)".to_string(),
            MachineSource::TokenFile(path) => format!(" (from `{}`)", path.display()),
            MachineSource::Inline | MachineSource::Server => String::new(),
        };
        let pinned = rule
            .pinned
            .as_ref()
            .map(|b| format!("; backend pinned to {b}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "#   {}: {} -> {machine}{source}{pinned}",
            rule.label,
            cidrs.join(", ")
        );
    }
    let trusted: Vec<String> = networks
        .trusted_proxies
        .iter()
        .map(ToString::to_string)
        .collect();
    let _ = writeln!(
        out,
        "# trusted_proxies: {}",
        if trusted.is_empty() {
            "none (X-Forwarded-For and Forwarded are ignored; the connection's peer is the client)"
                .to_string()
        } else {
            format!(
                "{} (their X-Forwarded-For / Forwarded headers name the client)",
                trusted.join(", ")
            )
        }
    );
}

fn display_path(path: &std::path::Path) -> String {
    path.display().to_string()
}

fn emit(out: &mut String, path: &[&str], table: &Table, sources: &Sources<'_>) {
    let is_tables = |v: &Value| {
        v.as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_table))
    };
    for (key, value) in table {
        if value.is_table() || is_tables(value) {
            continue;
        }
        let mut here = path.to_vec();
        here.push(key);
        let _ = writeln!(
            out,
            "{} = {value}  # {}",
            bare_or_quoted(key),
            sources.of(&here)
        );
    }
    for (key, value) in table {
        let mut here = path.to_vec();
        here.push(key);
        let dotted: Vec<String> = here.iter().map(|k| bare_or_quoted(k)).collect();
        if let Some(inner) = value.as_table() {
            let _ = write!(out, "\n[{}]  # {}\n", dotted.join("."), sources.of(&here));
            emit(out, &here, inner, sources);
        } else if is_tables(value) {
            for element in value.as_array().into_iter().flatten() {
                let _ = write!(out, "\n[[{}]]  # {}\n", dotted.join("."), sources.of(&here));
                if let Some(inner) = element.as_table() {
                    emit(out, &here, inner, sources);
                }
            }
        }
    }
}

fn bare_or_quoted(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

/// Whether a key names a secret: its value is never printed.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "token",
        "secret",
        "bearer",
        "credential",
        "api_key",
        "access_key",
    ]
    .iter()
    .any(|word| key.contains(word))
}

fn redact_table(table: &mut Table) {
    for (key, value) in table.iter_mut() {
        if key == "upstreams" {
            // Names of variables and files only: a secret written there is refused on reading.
            continue;
        }
        if is_secret_key(key) {
            redact_all(value);
        } else {
            redact_urls(value);
        }
    }
}

fn redact_all(value: &mut Value) {
    match value {
        Value::String(text) => *text = "***".to_string(),
        Value::Array(items) => items.iter_mut().for_each(redact_all),
        Value::Table(table) => table.iter_mut().for_each(|(_, v)| redact_all(v)),
        _ => {}
    }
}

fn redact_urls(value: &mut Value) {
    match value {
        Value::String(text) => *text = redact_url(text),
        Value::Array(items) => items.iter_mut().for_each(redact_urls),
        Value::Table(table) => redact_table(table),
        _ => {}
    }
}

/// `https://user:pass@host/x` → `https://user:***@host/x`; `https://token@host` →
/// `https://***@host`; anything else unchanged.
fn redact_url(text: &str) -> String {
    if let Some((scheme, rest)) = text.split_once("://")
        && let Some(at) = rest.find('@')
        && !rest[..at].contains('/')
    {
        let userinfo = &rest[..at];
        let shown = match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***"),
            None => "***".to_string(),
        };
        return format!("{scheme}://{shown}@{}", &rest[at + 1..]);
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn show(arguments: &[&str]) -> String {
        let mut full = vec!["wheelgate", "config", "show"];
        full.extend_from_slice(arguments);
        let parsed = Cli::command().try_get_matches_from(&full).unwrap();
        let Command::Config(ConfigArgs {
            command: ConfigCommand::Show(args),
        }) = Cli::try_parse_from(&full).unwrap().command
        else {
            panic!("not config show")
        };
        let show = parsed
            .subcommand_matches("config")
            .and_then(|c| c.subcommand_matches("show"));
        render(&args.serve, show).unwrap()
    }

    #[test]
    fn every_key_has_its_source_and_secrets_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wheelgate.toml");
        std::fs::write(
            &path,
            r#"
pypi_url = "https://ci:hunter2@mirror.example/simple"
index_ttl_secs = 60
[policy]
prefer = ["cu128"]
[auth]
basic = [{ user = "alice", password = "wonderland" }]
bearer = ["tok-abc"]
"#,
        )
        .unwrap();
        let text = show(&[
            "--config",
            path.to_str().unwrap(),
            "--listen",
            "0.0.0.0:9000",
            "--cache-dir",
            dir.path().to_str().unwrap(),
            "--pytorch-url",
            "https://tok@pytorch.example/whl",
        ]);
        for line in [
            "listen = \"0.0.0.0:9000\"  # flag --listen",
            "pypi_url = \"https://ci:***@mirror.example/simple\"  # file",
            "pytorch_url = \"https://***@pytorch.example/whl\"  # flag --pytorch-url",
            "index_ttl_secs = 60  # file",
            "offline = false  # default",
            "shutdown_grace_secs = 25  # default",
            "cache_max_bytes = 53687091200  # default",
            "[policy]  # file",
            "prefer = [\"cu128\"]  # file",
            "[auth]  # file",
            "bearer = [\"***\"]  # file",
            "public_metrics = false  # default",
            "[[auth.basic]]  # file",
            "user = \"alice\"  # file",
            "password = \"***\"  # file",
        ] {
            assert!(text.contains(line), "missing `{line}` in\n{text}");
        }
        for secret in ["hunter2", "wonderland", "tok-abc", "tok@"] {
            assert!(!text.contains(secret), "`{secret}` shown in\n{text}");
        }
        // Still TOML, and with nothing redacted it is the same configuration.
        text.parse::<Table>().unwrap();
    }

    #[test]
    fn without_secrets_the_output_is_the_effective_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let text = show(&[
            "--cache-dir",
            dir.path().to_str().unwrap(),
            "--pypi-url",
            "https://pypi.example/simple",
            "--offline",
        ]);
        assert!(text.contains("offline = true  # flag --offline"), "{text}");
        let parsed: ServeConfig = toml::from_str(&text).unwrap();
        assert!(parsed.offline);
        assert_eq!(parsed.pypi_url, "https://pypi.example/simple");
        assert_eq!(parsed.cache_dir, dir.path());
    }

    #[test]
    fn no_pytorch_index_is_shown_with_its_flag_and_the_missing_source() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().to_str().unwrap();
        let text = show(&["--cache-dir", cache, "--no-pytorch-index"]);
        assert!(
            text.contains("pytorch_index = false  # flag --no-pytorch-index"),
            "{text}"
        );
        assert!(
            text.contains("#   pytorch: none (`pytorch_index = false`: PyTorch's projects"),
            "{text}"
        );
        assert!(!text.contains("#   pytorch (https://"), "{text}");
        let parsed: ServeConfig = toml::from_str(&text).unwrap();
        assert!(!parsed.pytorch_index);
        let path = dir.path().join("wheelgate.toml");
        std::fs::write(&path, "pytorch_index = false\n").unwrap();
        let text = show(&["--cache-dir", cache, "--config", path.to_str().unwrap()]);
        assert!(text.contains("pytorch_index = false  # file"), "{text}");
        let text = show(&["--cache-dir", cache]);
        assert!(text.contains("pytorch_index = true  # default"), "{text}");
    }

    #[test]
    fn private_upstreams_show_where_secrets_come_from_and_the_proxies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wheelgate.toml");
        std::fs::write(
            &path,
            r#"
pypi_url = "https://artifactory.example/api/pypi/remote/simple"
[upstreams.pypi]
token = { env = "WHEELGATE_TEST_SURELY_UNSET_TOKEN" }
headers = { "X-JFrog-Art-Api" = { file = "/surely/absent/key" } }
"#,
        )
        .unwrap();
        let text = show(&["--config", path.to_str().unwrap()]);
        for line in [
            "[upstreams.pypi.token]  # file",
            "env = \"WHEELGATE_TEST_SURELY_UNSET_TOKEN\"  # file",
            "#   pypi (https://artifactory.example/api/pypi/remote/simple): Authorization: Bearer <from env WHEELGATE_TEST_SURELY_UNSET_TOKEN, unset>",
            "#   pypi (https://artifactory.example/api/pypi/remote/simple): X-JFrog-Art-Api: <from file /surely/absent/key, unreadable>",
            "#   pytorch (https://download.pytorch.org/whl): no credentials; the system's trust store",
        ] {
            assert!(text.contains(line), "missing `{line}` in\n{text}");
        }
        let parsed: ServeConfig = toml::from_str(&text).unwrap();
        assert!(!parsed.upstreams.pypi.is_empty());
        let env = proxy_environment(|name| match name {
            "HTTPS_PROXY" => Some("http://alice:s3cret@proxy.example:3128".into()),
            "no_proxy" => Some("localhost,.internal".into()),
            _ => None,
        });
        for line in [
            "#   HTTPS_PROXY = http://alice:***@proxy.example:3128",
            "#   HTTP_PROXY <unset>",
            "#   no_proxy = localhost,.internal",
        ] {
            assert!(env.contains(line), "missing `{line}` in\n{env}");
        }
        assert!(!env.contains("s3cret"), "{env}");
    }

    #[test]
    fn refuses_a_configured_machine_that_cannot_exist_as_serve_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wheelgate.toml");
        std::fs::write(
            &path,
            "[machine]\nplatform = \"macos-arm64\"\n[machine.nvidia]\ndriver_version = \"580.65.06\"\ngpus = [{ compute_capability = \"9.0\" }]\n",
        )
        .unwrap();
        let full = [
            "wheelgate",
            "config",
            "show",
            "--config",
            path.to_str().unwrap(),
            "--cache-dir",
            dir.path().to_str().unwrap(),
        ];
        let Command::Config(ConfigArgs {
            command: ConfigCommand::Show(args),
        }) = Cli::try_parse_from(full).unwrap().command
        else {
            panic!("not config show")
        };
        let err = render(&args.serve, None).unwrap_err();
        let text = format!(
            "{err}: {}",
            wheelgate_index::error_chain::source_chain(&err)
        );
        assert!(
            text.contains("the configured `machine` cannot exist"),
            "{text}"
        );
        assert!(text.to_lowercase().contains("macos"), "{text}");
    }

    #[test]
    fn shows_the_network_rules_in_order_and_refuses_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("laptops.token");
        std::fs::write(&token_file, "1-lx-g2.39\n").unwrap();
        let path = dir.path().join("wheelgate.toml");
        let write = |rules: &str| {
            std::fs::write(
                &path,
                format!(
                    "trusted_proxies = [\"10.0.0.5\"]\n\
                     [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\n\
                     machine = {{ platform = \"linux-x86_64\", nvidia = {{ driver_version = \"580.65.06\", gpus = [{{ compute_capability = \"9.0\" }}] }} }}\n\
                     [[networks]]\nname = \"laptops\"\ncidr = [\"10.2.0.0/16\"]\ntoken_file = {:?}\n{rules}",
                    token_file.display().to_string()
                ),
            )
            .unwrap();
        };
        write("[[networks]]\ncidr = [\"10.3.0.0/16\"]\ntoken = \"1-ma\"\n");
        let cache = dir.path().to_str().unwrap();
        let text = show(&["--config", path.to_str().unwrap(), "--cache-dir", cache]);
        for line in [
            "#   gpu: 10.1.0.0/16 -> linux-x86_64; NVIDIA driver 580.65.06: GPU 0 (compute capability 9.0)\n",
            &format!(
                "#   laptops: 10.2.0.0/16 -> linux-x86_64, glibc 2.39; no GPU (from `{}`)\n",
                token_file.display()
            ),
            "#   #3: 10.3.0.0/16 -> macos-arm64; no GPU (from its token)\n",
            "# trusted_proxies: 10.0.0.5/32 (their X-Forwarded-For / Forwarded headers name the client)\n",
            "trusted_proxies = [\"10.0.0.5\"]  # file",
            "[[networks]]  # file",
            "name = \"gpu\"  # file",
            "token = \"1-ma\"  # file",
            "[networks.machine]  # file",
        ] {
            assert!(text.contains(line), "missing `{line}` in\n{text}");
        }
        assert!(text.find("#   gpu").unwrap() < text.find("#   laptops").unwrap());
        // The output is still the same configuration.
        let parsed: ServeConfig = toml::from_str(&text).unwrap();
        assert_eq!(parsed.networks.len(), 3);
        assert_eq!(
            parsed.networks[1].token_file.as_deref(),
            Some(token_file.as_path())
        );

        write("[[networks]]\nname = \"inner\"\ncidr = [\"10.1.2.0/24\"]\nbackend = \"cpu\"\n");
        let full = [
            "wheelgate",
            "config",
            "show",
            "--config",
            path.to_str().unwrap(),
            "--cache-dir",
            cache,
        ];
        let Command::Config(ConfigArgs {
            command: ConfigCommand::Show(args),
        }) = Cli::try_parse_from(full).unwrap().command
        else {
            panic!("not config show")
        };
        let err = render(&args.serve, None).unwrap_err().to_string();
        assert!(
            err.contains("`10.1.2.0/24` of the [[networks]] rule `inner` lies inside `10.1.0.0/16` of the rule `gpu`"),
            "{err}"
        );
    }

    #[test]
    fn urls_keep_their_user_and_lose_their_password() {
        assert_eq!(
            redact_url("https://user:pass@host/simple/"),
            "https://user:***@host/simple/"
        );
        assert_eq!(redact_url("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact_url("plain"), "plain");
    }
}
