//! What a route names, checked: a project name, a `/b/<backend>/` prefix, a `/m/<token>/`
//! machine; and the machine and policy a request resolves for (`simple.rs` and `explain.rs`
//! both route by it).

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, header};
use wheelgate_config::networks::ClientNetwork;
use wheelgate_resolver::{Backend, Machine, Policy};

use super::client_addr::network_machine;
use super::error::ApiError;
use super::state::AppState;
use super::useragent::{parse_user_agent, refine};

/// Which machine and policy a route resolves for.
pub enum Target {
    /// `/simple/`: the machine of the `[[networks]]` rule holding the client, else the server's.
    Default(Option<Arc<ClientNetwork>>),
    Pinned(Backend),
    Token(Box<Machine>),
}

impl Target {
    /// Whether the client's User-Agent may move this target's machine to the client's platform:
    /// only the server's own machine under `/simple/`, for a client no `[[networks]]` rule
    /// holds, which is a guess about a client the server knows nothing of. A token's machine,
    /// a `/b/<backend>/` prefix's (the server's, with its backend chosen by the URL) and a
    /// rule's were chosen on purpose, and an installer resolving for another platform
    /// (`uv pip compile --python-platform`, a universal `uv lock`) sends its host's User-Agent,
    /// not the target's: the User-Agent never changes them.
    pub fn refined_by_user_agent(&self) -> bool {
        matches!(self, Target::Default(None))
    }
}

pub fn parse_backend(text: &str) -> Result<Backend, ApiError> {
    text.parse()
        .map_err(|err: wheelgate_resolver::backend::BackendParseError| {
            ApiError::NotFound(err.to_string())
        })
}

/// The machine of a `/m/<token>/` segment: a token that does not decode, or names a machine
/// that cannot exist (an NVIDIA GPU on a Mac), is a 400 naming the fact. A doubtful machine is
/// served, its doubts logged once per token (`/explain/` tells its user why no GPU build fits).
pub fn parse_token(token: &str) -> Result<Machine, ApiError> {
    /// Tokens whose doubts were logged; bounded, as clients choose the tokens.
    static LOGGED: std::sync::OnceLock<Mutex<std::collections::HashSet<String>>> =
        std::sync::OnceLock::new();
    const MAX_LOGGED: usize = 1024;
    let machine = wheelgate_resolver::token::decode(token).map_err(|err| {
        ApiError::BadRequest(format!("invalid machine token in the URL: {err}; print a valid one with `wheelgate detect --token`"))
    })?;
    let doubts = machine
        .check_plausible(wheelgate_resolver::Catalog::embedded())
        .map_err(|err| {
            ApiError::BadRequest(format!(
                "the machine token in the URL describes a machine that cannot exist: {err}; print this machine's token with `wheelgate detect --token`"
            ))
        })?;
    if !doubts.is_empty() {
        let mut logged = LOGGED
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if logged.len() < MAX_LOGGED && logged.insert(token.to_string()) {
            for doubt in &doubts {
                tracing::warn!(source = "machine token", token, "{doubt}");
            }
        }
    }
    Ok(machine)
}

/// Refuses what cannot be a normalized project name (PEP 503): a clear 404, never an upstream
/// request.
pub fn check_project_name(project: &str, raw: &str) -> Result<(), ApiError> {
    if project.is_empty()
        || !project
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(ApiError::NotFound(format!(
            "`{}` is not a valid project name",
            raw.escape_default()
        )));
    }
    Ok(())
}

/// The machine and policy a route resolves for: the client network's machine (with the rule's
/// pinned backend) or the server's, the server's with a pinned backend, or the token's machine.
/// Only the server's machine under `/simple/` ([`Target::refined_by_user_agent`]) is moved to
/// the client's platform when its User-Agent says it runs elsewhere (a Mac client of a Linux GPU
/// server never gets Linux CUDA builds); every other is served as chosen.
pub fn machine_and_policy<'a>(
    state: &'a AppState,
    target: &'a Target,
    headers: &HeaderMap,
) -> (Cow<'a, Machine>, Policy) {
    let mut policy: Policy = state.config.policy.clone();
    let base: &Machine = match target {
        Target::Default(rule) => {
            let (machine, network_policy) = network_machine(state, rule.as_deref());
            policy = network_policy;
            machine
        }
        Target::Pinned(backend) => {
            policy.pinned = Some(backend.clone());
            &state.default_machine
        }
        Target::Token(machine) => machine,
    };
    let client = headers
        .get(header::USER_AGENT)
        .filter(|_| target.refined_by_user_agent())
        .and_then(|v| v.to_str().ok())
        .and_then(parse_user_agent);
    let machine = match refine(base, client.as_ref()) {
        Some(refined) => Cow::Owned(refined),
        None => Cow::Borrowed(base),
    };
    (machine, policy)
}
