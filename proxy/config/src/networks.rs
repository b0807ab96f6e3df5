//! `[[networks]]` and `trusted_proxies`: client networks mapped to machines, so a GPU cluster's
//! subnet gets its H100 builds and the laptops' subnet CPU builds through the same `/simple/`
//! URL, with no configuration on the clients.
//!
//! ```toml
//! # The load balancer whose X-Forwarded-For / Forwarded header names the real client.
//! trusted_proxies = ["10.0.0.5/32"]
//!
//! [[networks]]
//! name = "gpu-cluster"
//! cidr = ["10.1.0.0/16", "fd00:1::/64"]
//! machine = { platform = "linux-x86_64", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }
//!
//! [[networks]]
//! name = "laptops"
//! cidr = ["10.2.0.0/16"]
//! token = "1-lx-g2.39"          # or token_file = "/etc/wheelgate/laptops.token"
//! ```
//!
//! The first rule whose CIDR holds the client's address wins; a client no rule holds gets the
//! server's machine. Everything is checked when the server starts ([`ClientNetworks::resolve`]):
//! a CIDR that does not parse or has host bits set, a rule that can never match because an
//! earlier rule holds all of its network, two rules with one network, a machine that is not in
//! the model's shape, a token that does not decode, an unreadable token file, a machine that
//! cannot exist (an NVIDIA GPU on a Mac, a Radeon on Windows: see
//! [`Machine::check_plausible`]), a backend no torch release has. Each stops the start with the
//! rule named; nothing falls back silently. A doubtful machine (an unknown `gfx9999`) is logged
//! at start with the rule named.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use wheelgate_resolver::backend::BackendParseError;
use wheelgate_resolver::machine::ImplausibleMachine;
use wheelgate_resolver::token::{self, TokenError};
use wheelgate_resolver::{Backend, Catalog, Machine, Platform};

/// One `[[networks]]` rule as written in the configuration file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkRule {
    /// A name for the status page, `/explain/` and the logs: letters, digits, `.`, `_`, `-`
    /// (default: `#<position>`, counted from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The client networks, `10.1.0.0/16` or `fd00:1::/64`; a bare address is one host.
    pub cidr: Vec<String>,
    /// The machine, in the JSON model's shape (`wheelgate detect --json`). Kept as written and
    /// read at start, so an error can name the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>", extend("x-type" = "table (a machine)"))]
    pub machine: Option<toml::Value>,
    /// The machine as a token (`wheelgate detect --token` on one of the network's machines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A file holding the token (or `wheelgate detect --json` output), read at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// A backend pinned for the network, as `/b/<backend>/` pins it (`cu128`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

/// Where a rule's machine comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineSource {
    /// `machine = { ... }`.
    Inline,
    /// `token = "..."`.
    Token,
    /// `token_file = "..."`.
    TokenFile(PathBuf),
    /// No machine given: the server's, with the rule's backend pinned.
    Server,
}

/// A rule checked and ready to match addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientNetwork {
    /// `name`, else `#<position>`.
    pub label: String,
    /// Its networks, in the order written.
    pub cidrs: Vec<IpNet>,
    /// The machine its clients resolve for; `None`: the server's.
    pub machine: Option<Machine>,
    /// Where the machine came from.
    pub source: MachineSource,
    /// The backend pinned for its clients.
    pub pinned: Option<Backend>,
}

/// Every rule and the trusted proxies, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientNetworks {
    /// In configuration order: the first that holds an address wins.
    pub rules: Vec<Arc<ClientNetwork>>,
    /// Peers whose forwarded headers are believed.
    pub trusted_proxies: Vec<IpNet>,
}

/// A `[[networks]]` rule or `trusted_proxies` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NetworksError {
    #[error("the [[networks]] rule `{rule}` lists no `cidr`; give the client networks it covers")]
    NoCidr { rule: String },
    #[error("the [[networks]] rule `{rule}` has `{text}` in `cidr`: {reason}")]
    Cidr {
        rule: String,
        text: String,
        reason: CidrError,
    },
    #[error("`trusted_proxies` has `{text}`: {reason}")]
    TrustedProxy { text: String, reason: CidrError },
    #[error(
        "the [[networks]] rules `{first}` and `{second}` both list `{cidr}`; remove one (the first listed would always win)"
    )]
    Duplicate {
        first: String,
        second: String,
        cidr: IpNet,
    },
    #[error(
        "`{inner}` of the [[networks]] rule `{later}` lies inside `{outer}` of the rule `{earlier}` listed before it, so it can never match (the first matching rule wins); list `{later}` first"
    )]
    Shadowed {
        earlier: String,
        outer: IpNet,
        later: String,
        inner: IpNet,
    },
    #[error(
        "the [[networks]] rule `{rule}` lists `{inner}`, which its `{outer}` already holds; remove `{inner}`"
    )]
    Redundant {
        rule: String,
        outer: IpNet,
        inner: IpNet,
    },
    #[error("two [[networks]] rules are named `{0}`; names must tell rules apart")]
    DuplicateName(String),
    #[error(
        "the [[networks]] rule name `{0}` is not usable; use letters, digits, `.`, `_` and `-` (at most 64)"
    )]
    Name(String),
    #[error(
        "the [[networks]] rule `{rule}` names no machine; give `machine`, `token`, `token_file` or `backend`"
    )]
    NoMachine { rule: String },
    #[error(
        "the [[networks]] rule `{rule}` gives more than one of `machine`, `token` and `token_file`; keep one"
    )]
    TwoMachines { rule: String },
    #[error(
        "the `machine` of the [[networks]] rule `{rule}` is not a machine in the JSON model's shape (what `wheelgate detect --json` prints)"
    )]
    Machine {
        rule: String,
        #[source]
        source: toml::de::Error,
    },
    #[error(
        "the `token` of the [[networks]] rule `{rule}` is not a machine token; print one with `wheelgate detect --token` on a machine of that network"
    )]
    Token {
        rule: String,
        #[source]
        source: TokenError,
    },
    #[error("the [[networks]] rule `{rule}` names a machine that cannot exist")]
    Implausible {
        rule: String,
        #[source]
        source: ImplausibleMachine,
    },
    #[error(
        "cannot read the `token_file` `{path}` of the [[networks]] rule `{rule}`; make it readable by the user wheelgate runs as, or give the token inline with `token = \"...\"`"
    )]
    TokenFile {
        rule: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the `token_file` `{path}` of the [[networks]] rule `{rule}` holds no machine token; write `wheelgate detect --token` (or `--json`) output into it"
    )]
    TokenFileContent {
        rule: String,
        path: PathBuf,
        #[source]
        source: MachineTextError,
    },
    #[error("the `backend` of the [[networks]] rule `{rule}` is unusable")]
    Backend {
        rule: String,
        #[source]
        source: BackendParseError,
    },
    #[error(
        "the [[networks]] rule `{rule}` pins `{backend}`, which no torch release in the catalog has (known: {known})"
    )]
    UnknownBackend {
        rule: String,
        backend: Backend,
        known: String,
    },
    #[error(
        "the [[networks]] rule `{rule}` pins `{backend}` for a `{platform}` machine, and no torch release in the catalog has `{backend}` builds for `{platform}`"
    )]
    BackendNotOnPlatform {
        rule: String,
        backend: Backend,
        platform: Platform,
    },
}

/// Why a text is not a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    #[error("not an address or a network (`10.1.0.0/16`, `fd00:1::/64`, `10.0.0.5`)")]
    Syntax,
    #[error("its address has bits set past the prefix; the network is `{0}`")]
    HostBits(IpNet),
    #[error("an IPv4-mapped IPv6 network; write it as the IPv4 network `{0}`")]
    Mapped(IpNet),
}

/// Why the text of a token file is not a machine.
#[derive(Debug, thiserror::Error)]
pub enum MachineTextError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("not `wheelgate detect --json` output")]
    Json(#[from] serde_json::Error),
}

impl NetworkRule {
    /// The rule as messages and pages name it: its name, else `#<position>` (from 1).
    pub fn label(&self, position: usize) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => format!("#{position}"),
        }
    }
}

impl ClientNetworks {
    /// Checks the rules and the trusted proxies and reads every machine (token files included).
    /// `server_platform` is the platform of the server's machine where known, to check a
    /// backend pinned on it.
    pub fn resolve(
        rules: &[NetworkRule],
        trusted_proxies: &[String],
        catalog: &Catalog,
        server_platform: Option<Platform>,
    ) -> Result<ClientNetworks, NetworksError> {
        let trusted_proxies = trusted_proxies
            .iter()
            .map(|text| {
                parse_cidr(text).map_err(|reason| NetworksError::TrustedProxy {
                    text: text.clone(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut resolved: Vec<Arc<ClientNetwork>> = Vec::with_capacity(rules.len());
        for (index, rule) in rules.iter().enumerate() {
            let network = resolve_rule(rule, index + 1, catalog, server_platform)?;
            if resolved.iter().any(|other| other.label == network.label) {
                return Err(NetworksError::DuplicateName(network.label));
            }
            check_against_earlier(&resolved, &network)?;
            resolved.push(Arc::new(network));
        }
        Ok(ClientNetworks {
            rules: resolved,
            trusted_proxies,
        })
    }

    /// The first rule whose networks hold `address`.
    pub fn rule_for(&self, address: IpAddr) -> Option<&Arc<ClientNetwork>> {
        let address = address.to_canonical();
        self.rules
            .iter()
            .find(|rule| rule.cidrs.iter().any(|net| net.contains(&address)))
    }

    /// Whether forwarded headers from `peer` are believed.
    pub fn is_trusted(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted_proxies.iter().any(|net| net.contains(&peer))
    }
}

fn resolve_rule(
    rule: &NetworkRule,
    position: usize,
    catalog: &Catalog,
    server_platform: Option<Platform>,
) -> Result<ClientNetwork, NetworksError> {
    let label = rule.label(position);
    if rule.name.is_some() && !is_name(&label) {
        return Err(NetworksError::Name(label.escape_default().to_string()));
    }
    if rule.cidr.is_empty() {
        return Err(NetworksError::NoCidr { rule: label });
    }
    let mut cidrs: Vec<IpNet> = Vec::with_capacity(rule.cidr.len());
    for text in &rule.cidr {
        let net = parse_cidr(text).map_err(|reason| NetworksError::Cidr {
            rule: label.clone(),
            text: text.clone(),
            reason,
        })?;
        // Within one rule, a network inside another (or equal to it) is dead text.
        if let Some(outer) = cidrs.iter().find(|o| o.contains(&net) || net.contains(*o)) {
            let (outer, inner) = if outer.contains(&net) {
                (*outer, net)
            } else {
                (net, *outer)
            };
            return Err(NetworksError::Redundant {
                rule: label,
                outer,
                inner,
            });
        }
        cidrs.push(net);
    }
    let (machine, source) = rule_machine(rule, &label)?;
    if let Some(machine) = &machine {
        // An impossible machine would silently get CPU builds for the whole network.
        let doubts =
            machine
                .check_plausible(catalog)
                .map_err(|source| NetworksError::Implausible {
                    rule: label.clone(),
                    source,
                })?;
        for doubt in doubts {
            tracing::warn!(source = "[[networks]] rule", rule = %label, "{doubt}");
        }
    }
    let pinned = match &rule.backend {
        Some(text) => Some(known_backend(
            text,
            &label,
            catalog,
            machine.as_ref().map(|m| m.platform).or(server_platform),
        )?),
        None => None,
    };
    if machine.is_none() && pinned.is_none() {
        return Err(NetworksError::NoMachine { rule: label });
    }
    Ok(ClientNetwork {
        label,
        cidrs,
        machine,
        source,
        pinned,
    })
}

/// A rule's networks against every earlier rule's: an exact duplicate, or a network an earlier
/// rule holds whole, is an error; a network that holds an earlier rule's (the exception listed
/// before the general case) is how rules are meant to be written.
fn check_against_earlier(
    earlier: &[Arc<ClientNetwork>],
    rule: &ClientNetwork,
) -> Result<(), NetworksError> {
    for other in earlier {
        for outer in &other.cidrs {
            for inner in &rule.cidrs {
                if outer == inner {
                    return Err(NetworksError::Duplicate {
                        first: other.label.clone(),
                        second: rule.label.clone(),
                        cidr: *inner,
                    });
                }
                if outer.contains(inner) {
                    return Err(NetworksError::Shadowed {
                        earlier: other.label.clone(),
                        outer: *outer,
                        later: rule.label.clone(),
                        inner: *inner,
                    });
                }
            }
        }
    }
    Ok(())
}

fn rule_machine(
    rule: &NetworkRule,
    label: &str,
) -> Result<(Option<Machine>, MachineSource), NetworksError> {
    let given = [
        rule.machine.is_some(),
        rule.token.is_some(),
        rule.token_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(NetworksError::TwoMachines {
            rule: label.to_string(),
        });
    }
    if let Some(value) = &rule.machine {
        let machine: Machine =
            value
                .clone()
                .try_into()
                .map_err(|source| NetworksError::Machine {
                    rule: label.to_string(),
                    source,
                })?;
        return Ok((Some(machine), MachineSource::Inline));
    }
    if let Some(text) = &rule.token {
        let machine = token::decode(text.trim()).map_err(|source| NetworksError::Token {
            rule: label.to_string(),
            source,
        })?;
        return Ok((Some(machine), MachineSource::Token));
    }
    if let Some(path) = &rule.token_file {
        let text = std::fs::read_to_string(path).map_err(|source| NetworksError::TokenFile {
            rule: label.to_string(),
            path: path.clone(),
            source,
        })?;
        let machine =
            machine_from_text(&text).map_err(|source| NetworksError::TokenFileContent {
                rule: label.to_string(),
                path: path.clone(),
                source,
            })?;
        return Ok((Some(machine), MachineSource::TokenFile(path.clone())));
    }
    Ok((None, MachineSource::Server))
}

/// A rule name as pages, logs and messages show it in backticks: no markup, no backtick, and
/// never `#<n>`, the label of an unnamed rule.
fn is_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A token file's text: a token, or `wheelgate detect --json` output (as `select --machine`
/// reads a file).
fn machine_from_text(text: &str) -> Result<Machine, MachineTextError> {
    let text = text.trim();
    if text.starts_with('{') {
        return Ok(serde_json::from_str(text)?);
    }
    Ok(token::decode(text)?)
}

/// A pinned backend that some torch release of the catalog has (for the machine's platform
/// where known): a typo such as `cu1280` is named at start rather than leaving every client of
/// the network without a build.
fn known_backend(
    text: &str,
    label: &str,
    catalog: &Catalog,
    platform: Option<Platform>,
) -> Result<Backend, NetworksError> {
    let backend: Backend = text
        .trim()
        .parse()
        .map_err(|source| NetworksError::Backend {
            rule: label.to_string(),
            source,
        })?;
    let mut known: Vec<&Backend> = catalog
        .releases()
        .iter()
        .flat_map(|release| release.backends.keys())
        .collect();
    known.sort();
    known.dedup();
    if !known.contains(&&backend) {
        let names: Vec<String> = known.iter().map(ToString::to_string).collect();
        return Err(NetworksError::UnknownBackend {
            rule: label.to_string(),
            backend,
            known: names.join(", "),
        });
    }
    if let Some(platform) = platform
        && !catalog.releases().iter().any(|release| {
            catalog
                .offered_backends(release, platform)
                .contains(&backend)
        })
    {
        return Err(NetworksError::BackendNotOnPlatform {
            rule: label.to_string(),
            backend,
            platform,
        });
    }
    Ok(backend)
}

/// `10.1.0.0/16`, `fd00:1::/64`, or a bare address (one host). Host bits past the prefix
/// (`10.1.2.3/16`) are refused rather than silently cleared: the writer meant some network,
/// and the message names it.
pub fn parse_cidr(text: &str) -> Result<IpNet, CidrError> {
    let text = text.trim();
    let net = match text.parse::<IpNet>() {
        Ok(net) => net,
        Err(_) => IpNet::from(text.parse::<IpAddr>().map_err(|_| CidrError::Syntax)?),
    };
    if net.trunc() != net {
        return Err(CidrError::HostBits(net.trunc()));
    }
    // `::ffff:10.0.0.0/104`: addresses are compared in their canonical (IPv4) form, where such a
    // network would never match.
    if let IpNet::V6(v6) = net
        && let Some(v4) = v6.network().to_ipv4_mapped()
        && v6.prefix_len() >= 96
    {
        let prefix = v6.prefix_len() - 96;
        let mapped =
            ipnet::Ipv4Net::new(v4, prefix).map_or_else(|_| IpNet::from(IpAddr::V4(v4)), IpNet::V4);
        return Err(CidrError::Mapped(mapped));
    }
    Ok(net)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: &str = r#"machine = { platform = "linux-x86_64", nvidia = { driver_version = "580.65.06", gpus = [{ compute_capability = "9.0" }] } }"#;

    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        trusted_proxies: Vec<String>,
        networks: Vec<NetworkRule>,
    }

    fn resolve(toml_text: &str) -> Result<ClientNetworks, NetworksError> {
        let file: File = toml::from_str(toml_text).unwrap();
        ClientNetworks::resolve(
            &file.networks,
            &file.trusted_proxies,
            Catalog::embedded(),
            Some("linux-x86_64".parse().unwrap()),
        )
    }

    fn error(toml_text: &str) -> String {
        let err = resolve(toml_text).unwrap_err();
        let mut text = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_machine_that_cannot_exist_stops_the_start_with_the_rule_named() {
        let text = error(
            r#"
            [[networks]]
            name = "macs"
            cidr = ["10.3.0.0/16"]
            machine = { platform = "macos-arm64", nvidia = { gpus = [{ compute_capability = "9.0" }] } }
            "#,
        );
        assert!(
            text.starts_with("the [[networks]] rule `macs` names a machine that cannot exist: a `macos-arm64` machine cannot have NVIDIA GPUs"),
            "{text}"
        );
        let text = error(
            r#"
            [[networks]]
            name = "gamers"
            cidr = ["10.4.0.0/16"]
            token = "1-wx-m-k1100"
            "#,
        );
        assert!(
            text.contains("rule `gamers` names a machine that cannot exist: a `windows-x86_64` machine cannot use its AMD GPU `gfx1100` through ROCm"),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        std::fs::write(
            &path,
            r#"{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"2.1"}]}}"#,
        )
        .unwrap();
        let text = error(&format!(
            "[[networks]]\nname = \"old\"\ncidr = [\"10.5.0.0/16\"]\ntoken_file = {:?}\n",
            path.to_str().unwrap()
        ));
        assert!(
            text.contains("rule `old` names a machine that cannot exist: NVIDIA GPU 1 has compute capability `2.1`"),
            "{text}"
        );
        // Doubtful but possible: an unknown gfx target is resolved (and logged at start).
        let networks = resolve(
            r#"
            [[networks]]
            cidr = ["10.6.0.0/16"]
            token = "1-lx-m-k9999"
            "#,
        )
        .unwrap();
        assert_eq!(networks.rules.len(), 1);
    }

    #[test]
    fn the_first_rule_holding_the_address_wins() {
        let networks = resolve(&format!(
            r#"
trusted_proxies = ["10.0.0.5", "fd00::/8"]
[[networks]]
name = "gpu-login"
cidr = ["10.1.9.0/24"]
backend = "cpu"
[[networks]]
name = "gpu"
cidr = ["10.1.0.0/16", "fd00:1::/64"]
{H100}
[[networks]]
cidr = ["10.2.0.0/16"]
token = "1-lx-g2.39"
"#
        ))
        .unwrap();
        let label = |address: &str| networks.rule_for(ip(address)).map(|r| r.label.clone());
        assert_eq!(label("10.1.9.7").as_deref(), Some("gpu-login"));
        assert_eq!(label("10.1.2.3").as_deref(), Some("gpu"));
        assert_eq!(
            label("::ffff:10.1.2.3").as_deref(),
            Some("gpu"),
            "IPv4 over a dual-stack socket"
        );
        assert_eq!(label("fd00:1::42").as_deref(), Some("gpu"));
        assert_eq!(label("10.2.0.1").as_deref(), Some("#3"));
        assert_eq!(label("10.3.0.1"), None);
        assert_eq!(label("127.0.0.1"), None);
        let gpu = networks.rule_for(ip("10.1.2.3")).unwrap();
        assert_eq!(gpu.source, MachineSource::Inline);
        let cc = gpu.machine.as_ref().unwrap().nvidia_gpus()[0].compute_capability;
        assert_eq!(cc.unwrap().to_string(), "9.0");
        let login = networks.rule_for(ip("10.1.9.7")).unwrap();
        assert_eq!(login.source, MachineSource::Server);
        assert_eq!(login.pinned, Some(Backend::Cpu));
        assert!(networks.is_trusted(ip("10.0.0.5")));
        assert!(networks.is_trusted(ip("::ffff:10.0.0.5")));
        assert!(networks.is_trusted(ip("fd12::1")));
        assert!(!networks.is_trusted(ip("10.0.0.6")));
    }

    #[test]
    fn bad_cidrs_are_named_with_the_rule() {
        let text =
            error("[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/33\"]\nbackend = \"cpu\"\n");
        assert!(text.contains("rule `gpu` has `10.1.0.0/33`"), "{text}");
        assert!(text.contains("not an address or a network"), "{text}");
        let text = error("[[networks]]\ncidr = [\"10.1.2.3/16\"]\nbackend = \"cpu\"\n");
        assert!(text.contains("rule `#1`"), "{text}");
        assert!(text.contains("the network is `10.1.0.0/16`"), "{text}");
        let text = error("[[networks]]\ncidr = [\"::ffff:10.0.0.0/104\"]\nbackend = \"cpu\"\n");
        assert!(text.contains("`10.0.0.0/8`"), "{text}");
        let text = error("[[networks]]\ncidr = []\nbackend = \"cpu\"\n");
        assert!(text.contains("lists no `cidr`"), "{text}");
        let text = error(
            "trusted_proxies = [\"lb.internal\"]\n[[networks]]\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n",
        );
        assert!(
            text.contains("`trusted_proxies` has `lb.internal`"),
            "{text}"
        );
    }

    #[test]
    fn overlapping_rules_name_both_and_the_overlap() {
        let text = error(
            "[[networks]]\nname = \"a\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n\
             [[networks]]\nname = \"b\"\ncidr = [\"192.168.0.0/16\", \"10.0.0.0/8\"]\nbackend = \"cpu\"\n",
        );
        assert!(
            text.contains("rules `a` and `b` both list `10.0.0.0/8`"),
            "{text}"
        );
        let text = error(
            "[[networks]]\nname = \"all\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n\
             [[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\nbackend = \"cu128\"\n",
        );
        assert!(
            text.contains("`10.1.0.0/16` of the [[networks]] rule `gpu` lies inside `10.0.0.0/8` of the rule `all`"),
            "{text}"
        );
        assert!(text.contains("list `gpu` first"), "{text}");
        // The other way round is how an exception is written.
        resolve(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\nbackend = \"cu128\"\n\
             [[networks]]\nname = \"all\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n",
        )
        .unwrap();
        let text = error(
            "[[networks]]\nname = \"a\"\ncidr = [\"10.1.0.0/16\", \"10.0.0.0/8\"]\nbackend = \"cpu\"\n",
        );
        assert!(
            text.contains("lists `10.1.0.0/16`, which its `10.0.0.0/8` already holds"),
            "{text}"
        );
        let text = error(
            "[[networks]]\nname = \"a\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n\
             [[networks]]\nname = \"a\"\ncidr = [\"11.0.0.0/8\"]\nbackend = \"cpu\"\n",
        );
        assert!(
            text.contains("two [[networks]] rules are named `a`"),
            "{text}"
        );
        let text =
            error("[[networks]]\nname = \"#2\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n");
        assert!(text.contains("rule name `#2` is not usable"), "{text}");
        let text =
            error("[[networks]]\nname = \"a`<b>\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cpu\"\n");
        assert!(text.contains("rule name `a`<b>` is not usable"), "{text}");
    }

    #[test]
    fn machines_tokens_and_backends_are_checked() {
        let text = error(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.0.0.0/8\"]\n\
             machine = { platform = \"linux-x86_64\", nvidia = { driver_version = \"abc\" } }\n",
        );
        assert!(
            text.contains("`machine` of the [[networks]] rule `gpu`"),
            "{text}"
        );
        assert!(text.contains("`abc`"), "{text}");
        let text = error(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.0.0.0/8\"]\ntoken = \"1-lx-n580-s99.9\"\n",
        );
        assert!(
            text.contains("`token` of the [[networks]] rule `gpu`"),
            "{text}"
        );
        assert!(text.contains("s99.9"), "{text}");
        let text = error("[[networks]]\nname = \"gpu\"\ncidr = [\"10.0.0.0/8\"]\n");
        assert!(text.contains("names no machine"), "{text}");
        let text = error(&format!(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.0.0.0/8\"]\ntoken = \"1-lx\"\n{H100}\n"
        ));
        assert!(text.contains("more than one of"), "{text}");
        let text =
            error("[[networks]]\nname = \"gpu\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cu12.8\"\n");
        assert!(text.contains("`cu12.8` is not a backend name"), "{text}");
        let text =
            error("[[networks]]\nname = \"gpu\"\ncidr = [\"10.0.0.0/8\"]\nbackend = \"cu1280\"\n");
        assert!(
            text.contains("pins `cu1280`, which no torch release in the catalog has"),
            "{text}"
        );
        assert!(
            text.contains("cu128"),
            "the known backends are listed: {text}"
        );
        let text = error(
            "[[networks]]\nname = \"macs\"\ncidr = [\"10.0.0.0/8\"]\ntoken = \"1-ma\"\nbackend = \"cu128\"\n",
        );
        assert!(
            text.contains("pins `cu128` for a `macos-arm64` machine"),
            "{text}"
        );
    }

    #[test]
    fn token_files_are_read_at_start_and_an_unreadable_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("gpu.token");
        std::fs::write(&token_file, "1-lx-g2.39-n580.65.06-s9.0x8\n").unwrap();
        let json_file = dir.path().join("gpu.json");
        std::fs::write(&json_file, r#"{"platform":"linux-aarch64"}"#).unwrap();
        let rules = format!(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\ntoken_file = {:?}\n\
             [[networks]]\nname = \"arm\"\ncidr = [\"10.2.0.0/16\"]\ntoken_file = {:?}\n",
            token_file.display().to_string(),
            json_file.display().to_string()
        );
        let networks = resolve(&rules).unwrap();
        let gpu = networks.rule_for(ip("10.1.0.1")).unwrap();
        assert_eq!(gpu.machine.as_ref().unwrap().nvidia_gpus().len(), 8);
        assert_eq!(gpu.source, MachineSource::TokenFile(token_file.clone()));
        let arm = networks.rule_for(ip("10.2.0.1")).unwrap();
        assert_eq!(
            arm.machine.as_ref().unwrap().platform.to_string(),
            "linux-aarch64"
        );

        let missing = dir.path().join("missing.token");
        let text = error(&format!(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\ntoken_file = {:?}\n",
            missing.display().to_string()
        ));
        assert!(
            text.contains(&format!(
                "cannot read the `token_file` `{}` of the [[networks]] rule `gpu`",
                missing.display()
            )),
            "{text}"
        );
        assert!(
            text.contains("readable by the user wheelgate runs as"),
            "{text}"
        );
        std::fs::write(&token_file, "not a token\n").unwrap();
        let text = error(&format!(
            "[[networks]]\nname = \"gpu\"\ncidr = [\"10.1.0.0/16\"]\ntoken_file = {:?}\n",
            token_file.display().to_string()
        ));
        assert!(text.contains("holds no machine token"), "{text}");
    }

    #[test]
    fn unknown_keys_in_a_rule_are_refused() {
        let err = toml::from_str::<File>("[[networks]]\ncidr = [\"10.0.0.0/8\"]\nmachin = \"x\"\n")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("machin"), "{err}");
    }
}
