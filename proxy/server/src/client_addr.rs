//! Who is asking: the client's address (the TCP peer, or, only when the peer is one of
//! `trusted_proxies`, the right-most untrusted address its `X-Forwarded-For` or RFC 7239
//! `Forwarded: for=` header names) and the `[[networks]]` rule that holds it.
//!
//! A client must never pick another network's builds by sending a header, so:
//! - from a peer outside `trusted_proxies` both headers are ignored (and that is logged);
//! - from a trusted peer the list is read right to left, skipping trusted hops: everything left
//!   of the first untrusted hop was written by the client itself;
//! - `unknown`, an obfuscated identifier (`_hidden`), a hop that is not an address, or the two
//!   headers naming different clients, at or right of the first untrusted hop, fails closed:
//!   the request is answered `400` naming the refusal. Falling back to the peer's own address
//!   would hand a client behind a trusted load balancer the balancer's rule (or the server's
//!   machine) for the price of one `Forwarded: for=_hidden` header, which a default nginx
//!   forwards unchanged. Text a client wrote left of the hop its proxy appended (a garbage hop,
//!   a byte that is not ASCII) does not matter: each hop is read on its own.
//!
//! Refusals are logged at `warn` at most once a minute (with how many were held back), and at
//! `debug` in between, so a client sending headers on every request cannot flood the log.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::Serialize;
use tracing::{debug, warn};
use wheelgate_resolver::{Machine, Policy};

use super::state::AppState;
use wheelgate_config::ClientNetworks;
use wheelgate_config::networks::ClientNetwork;

/// `X-Forwarded-For`, as load balancers write it.
pub const X_FORWARDED_FOR: &str = "X-Forwarded-For";
/// RFC 7239 `Forwarded`.
pub const FORWARDED: &str = "Forwarded";
/// Hops longer than this are shown shortened in messages.
const SHOWN_CHARS: usize = 60;
/// At most one `warn` per kind of refusal in this long.
const WARN_EVERY: Duration = Duration::from_mins(1);

/// Why one hop of a forwarded header names no address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadHop {
    #[error("a hop is `unknown`")]
    Unknown,
    #[error("a hop is the obfuscated identifier `{0}`")]
    Obfuscated(String),
    #[error("a hop `{0}` is not an IP address")]
    Garbage(String),
    #[error("an element names no `for=` node")]
    NoFor,
    #[error("a hop is not ASCII text")]
    NotText,
}

/// Why a forwarded header was not used; the peer's address is used instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("ignored `{header}` from `{peer}`, which is not in `trusted_proxies`")]
    Untrusted { header: &'static str, peer: IpAddr },
    #[error("refused `{header}` from the trusted proxy `{peer}`: {reason}")]
    Unusable {
        header: &'static str,
        peer: IpAddr,
        reason: BadHop,
    },
    #[error(
        "refused the forwarded headers from the trusted proxy `{peer}`: `X-Forwarded-For` names `{x_forwarded_for}` and `Forwarded` names `{forwarded}`"
    )]
    Disagree {
        peer: IpAddr,
        x_forwarded_for: IpAddr,
        forwarded: IpAddr,
    },
}

impl Refusal {
    /// Whether the request is refused: a trusted proxy's headers that cannot be read leave the
    /// client's network unknown, and no rule may be guessed for it. (An untrusted peer's headers
    /// are only ignored: the peer is the client.)
    pub fn fails_closed(&self) -> bool {
        !matches!(self, Refusal::Untrusted { .. })
    }
}

/// The client's address and how it was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress {
    pub ip: IpAddr,
    pub via: Via,
}

/// Where a client address came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The TCP connection's peer.
    Peer,
    /// A forwarded header (`X-Forwarded-For`, `Forwarded`, or both agreeing) of a trusted proxy.
    Header { header: &'static str, proxy: IpAddr },
}

impl fmt::Display for ClientAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.via {
            Via::Peer => write!(f, "`{}` (the connection's peer)", self.ip),
            Via::Header { header, proxy } => write!(
                f,
                "`{}` (from `{header}` of the trusted proxy `{proxy}`)",
                self.ip
            ),
        }
    }
}

/// The client's address: `peer`, or what a trusted peer's forwarded headers say, with the
/// refusal to log when a header was present but not used. `None` when the peer is unknown (an
/// app served without the accept loop that records it), and when a trusted peer's headers
/// cannot be read ([`Refusal::fails_closed`]: the request is refused).
pub fn client_address(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    networks: &ClientNetworks,
) -> (Option<ClientAddress>, Option<Refusal>) {
    let Some(peer) = peer.map(|p| p.to_canonical()) else {
        return (None, None);
    };
    let own = ClientAddress {
        ip: peer,
        via: Via::Peer,
    };
    let xff = header_text(headers, X_FORWARDED_FOR);
    let forwarded = header_text(headers, FORWARDED);
    let present = match (&xff, &forwarded) {
        (None, None) => return (Some(own), None),
        (Some(_), _) => X_FORWARDED_FOR,
        (None, Some(_)) => FORWARDED,
    };
    if !networks.is_trusted(peer) {
        return (
            Some(own),
            Some(Refusal::Untrusted {
                header: present,
                peer,
            }),
        );
    }
    let trusted = |ip: IpAddr| networks.is_trusted(ip);
    let from_xff = header_bytes(headers, X_FORWARDED_FOR)
        .map(|bytes| pick(&x_forwarded_for_hops(&bytes), trusted));
    let from_forwarded =
        forwarded.map(|text| text.and_then(|t| pick(&forwarded_hops(&t), trusted)));
    let via = |header| Via::Header {
        header,
        proxy: peer,
    };
    let unusable = |header, reason| {
        (
            None,
            Some(Refusal::Unusable {
                header,
                peer,
                reason,
            }),
        )
    };
    match (from_xff, from_forwarded) {
        (Some(Err(reason)), _) => unusable(X_FORWARDED_FOR, reason),
        (_, Some(Err(reason))) => unusable(FORWARDED, reason),
        (Some(Ok(a)), Some(Ok(b))) if a != b => (
            None,
            Some(Refusal::Disagree {
                peer,
                x_forwarded_for: a,
                forwarded: b,
            }),
        ),
        (Some(Ok(ip)), Some(Ok(_))) => (
            Some(ClientAddress {
                ip,
                via: via("X-Forwarded-For and Forwarded"),
            }),
            None,
        ),
        (Some(Ok(ip)), None) => (
            Some(ClientAddress {
                ip,
                via: via(X_FORWARDED_FOR),
            }),
            None,
        ),
        (None, Some(Ok(ip))) => (
            Some(ClientAddress {
                ip,
                via: via(FORWARDED),
            }),
            None,
        ),
        (None, None) => (Some(own), None),
    }
}

/// Every field of a header joined as one list (HTTP: repeated fields are one comma list).
fn header_text(headers: &HeaderMap, name: &str) -> Option<Result<String, BadHop>> {
    let mut values = headers.get_all(name).iter().peekable();
    values.peek()?;
    let mut parts = Vec::new();
    for value in values {
        match value.to_str() {
            Ok(text) => parts.push(text),
            Err(_) => return Some(Err(BadHop::NotText)),
        }
    }
    Some(Ok(parts.join(",")))
}

/// The right-most hop that is not a trusted proxy; the left-most when all are (a request from
/// inside the proxies' own network).
fn pick(
    hops: &[Result<IpAddr, BadHop>],
    trusted: impl Fn(IpAddr) -> bool,
) -> Result<IpAddr, BadHop> {
    let mut leftmost = None;
    for hop in hops.iter().rev() {
        let ip = hop.clone()?;
        if !trusted(ip) {
            return Ok(ip);
        }
        leftmost = Some(ip);
    }
    leftmost.ok_or_else(|| BadHop::Garbage(String::new()))
}

/// Every field of a header joined as one list, as bytes: a client's bytes that are not text
/// (left of the hops its proxies appended) must not spoil the hops that are.
fn header_bytes(headers: &HeaderMap, name: &str) -> Option<Vec<u8>> {
    let mut values = headers.get_all(name).iter().peekable();
    values.peek()?;
    Some(
        values
            .map(axum::http::HeaderValue::as_bytes)
            .collect::<Vec<_>>()
            .join(&b','),
    )
}

// A real example of this parser's input (a CDN in front of nginx's
// `proxy_add_x_forwarded_for`; some load balancers add ports):
// 203.0.113.195, 2001:db8:85a3:8d3:1319:8a2e:370:7348, 198.51.100.178:41234
fn x_forwarded_for_hops(value: &[u8]) -> Vec<Result<IpAddr, BadHop>> {
    value
        .split(|&b| b == b',')
        .map(|hop| match std::str::from_utf8(hop) {
            Ok(text) if text.is_ascii() => parse_node(text.trim()),
            _ => Err(BadHop::NotText),
        })
        .collect()
}

// A real example of this parser's input (RFC 7239, section 4):
// for=192.0.2.43, for="[2001:db8:cafe::17]:4711";proto=https;by=203.0.113.43
fn forwarded_hops(value: &str) -> Vec<Result<IpAddr, BadHop>> {
    split_outside_quotes(value, ',')
        .into_iter()
        .map(|element| {
            let mut node = None;
            for pair in split_outside_quotes(element, ';') {
                let pair = pair.trim();
                if pair.is_empty() {
                    continue;
                }
                let (key, value) = pair
                    .split_once('=')
                    .ok_or_else(|| BadHop::Garbage(shown(pair)))?;
                if key.trim().eq_ignore_ascii_case("for") {
                    if node.is_some() {
                        return Err(BadHop::Garbage(shown(element.trim())));
                    }
                    node = Some(unquote(value.trim())?);
                }
            }
            parse_node(&node.ok_or(BadHop::NoFor)?)
        })
        .collect()
}

/// Splits at `separator` outside double quotes (a quoted string may hold `,` and `;`).
fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A token, or a quoted string with its quoted pairs (`\x`) undone.
fn unquote(value: &str) -> Result<String, BadHop> {
    let Some(inner) = value.strip_prefix('"') else {
        return Ok(value.to_string());
    };
    let inner = inner
        .strip_suffix('"')
        .ok_or_else(|| BadHop::Garbage(shown(value)))?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' {
            chars.next().ok_or_else(|| BadHop::Garbage(shown(value)))?
        } else {
            c
        });
    }
    Ok(out)
}

/// One node: `192.0.2.43`, `192.0.2.43:47011`, `2001:db8::1`, `[2001:db8::1]`,
/// `[2001:db8::1]:4711`; IPv4-mapped IPv6 addresses in their IPv4 form.
fn parse_node(text: &str) -> Result<IpAddr, BadHop> {
    if text.eq_ignore_ascii_case("unknown") {
        return Err(BadHop::Unknown);
    }
    if text.starts_with('_') {
        return Err(BadHop::Obfuscated(shown(text)));
    }
    let garbage = || BadHop::Garbage(shown(text));
    let ip = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(garbage)?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return Err(garbage());
        }
        IpAddr::V6(host.parse::<Ipv6Addr>().map_err(|_| garbage())?)
    } else if let Ok(ip) = text.parse::<IpAddr>() {
        ip
    } else {
        let (host, port) = text.split_once(':').ok_or_else(garbage)?;
        if !is_port(port) {
            return Err(garbage());
        }
        IpAddr::V4(host.parse::<Ipv4Addr>().map_err(|_| garbage())?)
    };
    Ok(ip.to_canonical())
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

/// A client-controlled text as messages show it: escaped, at most [`SHOWN_CHARS`] characters.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(SHOWN_CHARS)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > SHOWN_CHARS {
        out.push('…');
    }
    out
}

/// At most one `warn` per [`WARN_EVERY`]; the rest at `debug`, counted.
struct Throttle {
    last: Mutex<Option<Instant>>,
    held_back: AtomicU64,
}

impl Throttle {
    const fn new() -> Self {
        Throttle {
            last: Mutex::new(None),
            held_back: AtomicU64::new(0),
        }
    }

    /// `Some(held back since the last warn)` when this one may be a `warn`.
    fn warn_now(&self) -> Option<u64> {
        let mut last = self.last.lock().ok()?;
        if last.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            self.held_back.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(Instant::now());
        Some(self.held_back.swap(0, Ordering::Relaxed))
    }
}

static UNTRUSTED: Throttle = Throttle::new();
static UNUSABLE: Throttle = Throttle::new();

fn log_refusal(refusal: &Refusal) {
    let throttle = match refusal {
        Refusal::Untrusted { .. } => &UNTRUSTED,
        Refusal::Unusable { .. } | Refusal::Disagree { .. } => &UNUSABLE,
    };
    if let Some(held_back) = throttle.warn_now() {
        warn!(
            held_back,
            "{refusal}; the connection's peer address decides the client network (logged at most once a minute, the rest at debug)"
        );
    } else {
        debug!("{refusal}; the connection's peer address decides the client network");
    }
}

/// The asking client, as `/simple/`, `/explain/` and the status page see it: its address and
/// the `[[networks]]` rule holding it. An extractor; never rejects a request.
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub address: Option<ClientAddress>,
    pub rule: Option<Arc<ClientNetwork>>,
    pub refusal: Option<Refusal>,
}

impl Client {
    /// The client of a request from `peer` with `headers`; logs a refused forwarded header.
    /// Without rules the address decides nothing, so forwarded headers are not read at all: a
    /// load balancer's header on every request of a server without `[[networks]]` is no cause
    /// for a log line.
    pub fn of(peer: Option<IpAddr>, headers: &HeaderMap, networks: &ClientNetworks) -> Client {
        if networks.rules.is_empty() {
            return Client {
                address: peer.map(|ip| ClientAddress {
                    ip: ip.to_canonical(),
                    via: Via::Peer,
                }),
                rule: None,
                refusal: None,
            };
        }
        let (address, refusal) = client_address(peer, headers, networks);
        if let Some(refusal) = &refusal {
            log_refusal(refusal);
        }
        let rule = address.and_then(|a| networks.rule_for(a.ip)).cloned();
        Client {
            address,
            rule,
            refusal,
        }
    }

    /// The network of the matching rule that holds the address.
    pub fn network(&self) -> Option<ipnet::IpNet> {
        let (rule, address) = (self.rule.as_ref()?, self.address?);
        rule.cidrs
            .iter()
            .copied()
            .find(|net| net.contains(&address.ip))
    }

    /// What `/explain/` and the status page report.
    pub fn report(&self) -> ClientReport {
        ClientReport {
            address: self.address.map(|a| a.ip.to_string()),
            rule: self.rule.as_ref().map(|r| r.label.clone()),
            network: self.network().map(|n| n.to_string()),
            summary: self.summary(),
            refused: self.refusal.as_ref().map(ToString::to_string),
        }
    }

    /// One sentence: the address, how it was learnt, and the rule that matched or that none did.
    pub fn summary(&self) -> String {
        let Some(address) = self.address else {
            return "This client's address is unknown, so no [[networks]] rule applies: the \
                    server's machine does."
                .to_string();
        };
        match (&self.rule, self.network()) {
            (Some(rule), Some(network)) => format!(
                "This client, {address}, is in `{network}` of the [[networks]] rule `{}`, so \
                 `/simple/` resolves for that rule's machine.",
                rule.label
            ),
            _ => format!(
                "This client, {address}, is in no [[networks]] rule, so `/simple/` resolves for \
                 the server's machine."
            ),
        }
    }
}

/// The machine and policy `/simple/` resolves for when `rule` holds the client: the rule's
/// machine (the server's when it names none) with its pinned backend, else the server's.
pub fn network_machine<'a>(
    state: &'a AppState,
    rule: Option<&'a ClientNetwork>,
) -> (&'a Machine, Policy) {
    let mut policy = state.config.policy.clone();
    let Some(rule) = rule else {
        return (&state.default_machine, policy);
    };
    if let Some(pinned) = &rule.pinned {
        policy.pinned = Some(pinned.clone());
    }
    (
        rule.machine.as_ref().unwrap_or(&state.default_machine),
        policy,
    )
}

/// The client part of `/explain/` (JSON) and of the status page.
#[derive(Debug, Clone, Serialize)]
pub struct ClientReport {
    /// The address rules were matched against.
    pub address: Option<String>,
    /// The rule that matched (its name, or `#<position>`); `None`: the server's machine.
    pub rule: Option<String>,
    /// The network of that rule holding the address.
    pub network: Option<String>,
    /// [`Client::summary`].
    pub summary: String,
    /// Why a forwarded header was not used, when one was sent.
    pub refused: Option<String>,
}

impl FromRequestParts<AppState> for Client {
    type Rejection = super::error::ApiError;

    /// The client, or a `400` when its trusted proxy's forwarded headers cannot be read (fail
    /// closed: never the proxy's own rule or the server's machine in its place).
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        let client = Client::of(peer, &parts.headers, &state.networks);
        match &client.refusal {
            Some(refusal) if refusal.fails_closed() => {
                Err(super::error::ApiError::BadRequest(format!(
                    "{refusal}; the client's network cannot be known, so no [[networks]] rule is applied and the request is refused (ask the proxy's operator: it must send `X-Forwarded-For` or `Forwarded` with the client's address)"
                )))
            }
            _ => Ok(client),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn networks(trusted: &[&str]) -> ClientNetworks {
        let trusted: Vec<String> = trusted.iter().map(ToString::to_string).collect();
        ClientNetworks::resolve(&[], &trusted, wheelgate_resolver::Catalog::embedded(), None)
            .unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn address(
        peer: &str,
        trusted: &[&str],
        pairs: &[(&'static str, &str)],
    ) -> (IpAddr, Option<Refusal>) {
        let (address, refusal) =
            client_address(Some(ip(peer)), &headers(pairs), &networks(trusted));
        (address.unwrap().ip, refusal)
    }

    #[test]
    fn a_trusted_peer_names_the_right_most_untrusted_hop() {
        let trusted = ["10.0.0.0/24"];
        let (client, refusal) = address(
            "10.0.0.5",
            &trusted,
            &[("x-forwarded-for", "6.6.6.6, 192.0.2.7, 10.0.0.9")],
        );
        assert_eq!(
            (client, refusal),
            (ip("192.0.2.7"), None),
            "the forged 6.6.6.6 is never used"
        );
        // Repeated header fields are one list.
        let (client, _) = address(
            "10.0.0.5",
            &trusted,
            &[
                ("x-forwarded-for", "6.6.6.6"),
                ("x-forwarded-for", "192.0.2.8:41234"),
            ],
        );
        assert_eq!(client, ip("192.0.2.8"));
        // Every hop trusted: the left-most.
        let (client, _) = address(
            "10.0.0.5",
            &trusted,
            &[("x-forwarded-for", "10.0.0.7, 10.0.0.9")],
        );
        assert_eq!(client, ip("10.0.0.7"));
        let (client, _) = address(
            "10.0.0.5",
            &trusted,
            &[(
                "forwarded",
                "for=6.6.6.6, for=\"[2001:db8:cafe::17]:4711\";proto=https;by=10.0.0.5",
            )],
        );
        assert_eq!(client, ip("2001:db8:cafe::17"));
        let (client, _) = address(
            "::ffff:10.0.0.5",
            &trusted,
            &[("forwarded", "For=\"192.0.2.60:80\"")],
        );
        assert_eq!(
            client,
            ip("192.0.2.60"),
            "a dual-stack peer is still trusted"
        );
        // Both headers naming the same client.
        let (client, refusal) = address(
            "10.0.0.5",
            &trusted,
            &[
                ("x-forwarded-for", "192.0.2.1"),
                ("forwarded", "for=192.0.2.1"),
            ],
        );
        assert_eq!((client, refusal), (ip("192.0.2.1"), None));
    }

    #[test]
    fn an_untrusted_peer_keeps_its_own_address() {
        let (client, refusal) = address(
            "192.0.2.50",
            &["10.0.0.5"],
            &[("x-forwarded-for", "10.1.2.3")],
        );
        assert_eq!(client, ip("192.0.2.50"));
        assert_eq!(
            refusal.unwrap().to_string(),
            "ignored `X-Forwarded-For` from `192.0.2.50`, which is not in `trusted_proxies`"
        );
        let (client, refusal) = address("10.0.0.5", &[], &[("forwarded", "for=10.1.2.3")]);
        assert_eq!(client, ip("10.0.0.5"));
        assert!(matches!(
            refusal,
            Some(Refusal::Untrusted {
                header: FORWARDED,
                ..
            })
        ));
        let (client, refusal) = address("192.0.2.50", &["10.0.0.5"], &[]);
        assert_eq!((client, refusal), (ip("192.0.2.50"), None));
    }

    #[test]
    fn garbage_unknown_and_disagreement_fail_closed() {
        let trusted = ["10.0.0.5"];
        for (name, value, reason) in [
            ("x-forwarded-for", "10.1.2.3, unknown", "a hop is `unknown`"),
            (
                "x-forwarded-for",
                "10.1.2.3, not-an-ip",
                "a hop `not-an-ip` is not an IP address",
            ),
            ("x-forwarded-for", "", "a hop `` is not an IP address"),
            (
                "x-forwarded-for",
                "10.1.2.3,,",
                "a hop `` is not an IP address",
            ),
            (
                "x-forwarded-for",
                "[::1]x",
                "a hop `[::1]x` is not an IP address",
            ),
            (
                "x-forwarded-for",
                "1.2.3.4:99999999",
                "a hop `1.2.3.4:99999999` is not an IP address",
            ),
            (
                "forwarded",
                "for=_hidden",
                "the obfuscated identifier `_hidden`",
            ),
            (
                "forwarded",
                "proto=https",
                "an element names no `for=` node",
            ),
            (
                "forwarded",
                "for=\"10.1.2.3",
                "a hop `\\\"10.1.2.3` is not an IP address",
            ),
            (
                "forwarded",
                "for=1.2.3.4;for=5.6.7.8",
                "is not an IP address",
            ),
            (
                "forwarded",
                "garbage",
                "a hop `garbage` is not an IP address",
            ),
        ] {
            let (address, refusal) = client_address(
                Some(ip("10.0.0.5")),
                &headers(&[(name, value)]),
                &networks(&trusted),
            );
            assert_eq!(address, None, "{name}: {value}: never the peer's own");
            let refusal = refusal.unwrap();
            assert!(refusal.fails_closed());
            assert!(
                refusal.to_string().contains(reason),
                "{name}: {value}: {refusal}"
            );
        }
        // A garbage hop left of the client is the client's own text, and does not matter.
        let (client, refusal) = address(
            "10.0.0.5",
            &trusted,
            &[("x-forwarded-for", "junk, 192.0.2.1")],
        );
        assert_eq!((client, refusal), (ip("192.0.2.1"), None));
        let (address, refusal) = client_address(
            Some(ip("10.0.0.5")),
            &headers(&[
                ("x-forwarded-for", "192.0.2.1"),
                ("forwarded", "for=10.1.2.3"),
            ]),
            &networks(&trusted),
        );
        assert_eq!(address, None);
        assert!(
            refusal
                .unwrap()
                .to_string()
                .contains("`X-Forwarded-For` names `192.0.2.1` and `Forwarded` names `10.1.2.3`")
        );
        let mut map = HeaderMap::new();
        map.insert(
            "x-forwarded-for",
            HeaderValue::from_bytes(b"10.1.2.3\xff").unwrap(),
        );
        let (address, refusal) = client_address(Some(ip("10.0.0.5")), &map, &networks(&trusted));
        assert_eq!(address, None);
        assert!(refusal.unwrap().to_string().contains("not ASCII text"));
        // A byte that is not text in the client's own part, left of the hop its proxy appended
        // (nginx's `proxy_add_x_forwarded_for` joins them into one field), does not matter.
        let mut map = HeaderMap::new();
        map.insert(
            "x-forwarded-for",
            HeaderValue::from_bytes(b"10.1.2.3\xff, 192.0.2.1").unwrap(),
        );
        let (address, refusal) = client_address(Some(ip("10.0.0.5")), &map, &networks(&trusted));
        assert_eq!((address.unwrap().ip, refusal), (ip("192.0.2.1"), None));
    }

    #[test]
    fn without_rules_forwarded_headers_are_not_read() {
        let forged = headers(&[("x-forwarded-for", "10.1.2.3")]);
        let client = Client::of(
            Some(ip("::ffff:192.0.2.50")),
            &forged,
            &networks(&["192.0.2.0/24"]),
        );
        assert_eq!(client.address.unwrap().ip, ip("192.0.2.50"));
        assert_eq!(client.address.unwrap().via, Via::Peer);
        assert_eq!(client.refusal, None);
        assert!(client.rule.is_none());
    }

    #[test]
    fn hostile_text_is_shown_escaped_and_short() {
        let long = format!("\"<b>{}", "9".repeat(500));
        let (_, refusal) = client_address(
            Some(ip("10.0.0.5")),
            &headers(&[("x-forwarded-for", &long)]),
            &networks(&["10.0.0.5"]),
        );
        let text = refusal.unwrap().to_string();
        assert!(text.contains("`\\\"<b>999"), "{text}");
        assert!(text.len() < 200, "{text}");
    }

    #[test]
    fn warns_at_most_once_a_minute() {
        let throttle = Throttle::new();
        assert_eq!(throttle.warn_now(), Some(0));
        assert_eq!(throttle.warn_now(), None);
        assert_eq!(throttle.warn_now(), None);
        *throttle.last.lock().unwrap() = Instant::now().checked_sub(WARN_EVERY);
        assert_eq!(throttle.warn_now(), Some(2));
    }
}
