//! The status page at `/`, for people: what this server is, the machine it resolves `/simple/`
//! for and what `/simple/` serves it for torch, torchvision and torchaudio (from the cached live
//! pages, `served.rs`; the catalog's expectation, said to be one, before a page was read), with
//! the reason for every other build, upstream and cache health, and copy-paste pip and uv
//! configuration.
//!
//! One self-contained HTML document: inline CSS, no script, no external resource; every value
//! is HTML-escaped (machine names, upstream error messages and the `Host` header come from
//! outside).

use std::fmt::Write as _;
use std::time::SystemTime;
use wheelgate_index::units::human_bytes;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use wheelgate_resolver::{Decision, Machine, Policy, token};

use wheelgate_index::metrics::UpstreamHealth;
use wheelgate_index::upstream::redact;

use super::client_addr::{Client, network_machine};
use super::explain::{describe_machine, inline_code};
use super::html::escape;
use super::served::{Answer, ProjectBuilds, TrainBuilds, build_words, names_html, version_words};
use super::state::AppState;

/// `GET /`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(page))
}

async fn page(State(state): State<AppState>, client: Client, headers: HeaderMap) -> Response {
    let base = base_url(&headers, &state);
    let index_pages = count_index_pages(&state.config.cache_dir.join("index")).await;
    // What the live pages serve, from their cached copies: never an upstream request here.
    let (machine, policy) = network_machine(&state, client.rule.as_deref());
    let served = super::served::cached(&state, machine, &policy).await;
    let mut html = render(&state, &base, index_pages, &client, &served);
    // The wheel-variant block reads cached pages (async), so it is rendered here and placed
    // after the builds table, before the upstreams; empty unless a cached page lists variants.
    let variants = super::variants::status::section(&state).await;
    let at = html
        .find("<h2 id=\"upstreams\">")
        .or_else(|| html.find("</main>"))
        .unwrap_or(html.len());
    html.insert_str(at, &variants);
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

/// `http://<Host>` as the client reached this server; the listen address when the `Host`
/// header is missing or not a plain host name.
fn base_url(headers: &HeaderMap, state: &AppState) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() < 256
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
        })
        .map_or_else(|| state.config.listen.to_string(), str::to_string);
    format!("http://{host}")
}

async fn count_index_pages(dir: &std::path::Path) -> usize {
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return 0;
    };
    let mut count = 0;
    while let Ok(Some(entry)) = entries.next_entry().await {
        if entry.file_name().to_string_lossy().ends_with(".json") {
            count += 1;
        }
    }
    count
}

const STYLE: &str = "
body{font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:980px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #dde1e8;padding-bottom:4px}
.lead{color:#4a5263;margin:0 0 8px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e8}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #eef0f4;vertical-align:top}
th{width:210px;color:#4a5263;font-weight:600}
thead th{width:auto;background:#f0f2f6}
pre{background:#1d2330;color:#e8ecf3;padding:10px 12px;border-radius:6px;overflow-x:auto;margin:6px 0 12px}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace}
.ok{color:#17803d;font-weight:600}.bad{color:#b42318;font-weight:600}.muted{color:#6b7385}
.chosen{display:inline-block;background:#e7f5ec;color:#17803d;border-radius:4px;padding:0 6px;font-weight:700}
ul.reasons{margin:0;padding-left:18px;color:#4a5263;font-size:13px}
";

/// The whole page, for the asking `client` (its `[[networks]]` rule decides the machine shown);
/// `served`: what `/simple/` serves that machine ([`super::served::cached`]).
pub fn render(
    state: &AppState,
    base: &str,
    index_pages: usize,
    client: &Client,
    served: &TrainBuilds,
) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>wheelgate</title><style>{STYLE}</style></head><body><main>\n\
         <h1>wheelgate <span class=\"muted\">{}</span></h1>\n\
         <p class=\"lead\">A package index that gives every machine the right PyTorch build \
         through one index URL: it serves <code>download.pytorch.org</code> and PyPI merged \
         safely, keeps one accelerator build of each torch version (the one this machine can \
         run), and caches every file.</p>\n",
        escape(crate::build_info::LONG_VERSION)
    );
    render_clients(&mut out, state, base);
    render_networks(&mut out, state, client);
    let (machine, policy) = network_machine(state, client.rule.as_deref());
    render_machine(&mut out, machine, &policy, client);
    render_choices(&mut out, served);
    render_facts(&mut out, state);
    render_upstreams(&mut out, state);
    render_cache(&mut out, state, index_pages);
    out.push_str("</main></body></html>\n");
    out
}

fn render_clients(out: &mut String, state: &AppState, base: &str) {
    let simple = format!("{base}/simple/");
    let auth_note = if state.config.auth.enabled() {
        "<p>This server needs credentials: put them in the URL, \
         <code>http://USER:PASSWORD@host/simple/</code> (pip and uv send them on every request).</p>"
    } else {
        ""
    };
    let _ = write!(
        out,
        "<h2 id=\"use\">Point pip and uv here</h2>{auth_note}\n\
         <p>For this server's machine (below):</p>\
         <pre><code>pip install torch --index-url {s}\nuv pip install torch --index-url {s}</code></pre>\
         <p><code>pip.conf</code> (<code>~/.config/pip/pip.conf</code>) and \
         <code>uv.toml</code> (<code>~/.config/uv/uv.toml</code>):</p>\
         <pre><code>[global]\nindex-url = {s}</code></pre>\
         <pre><code>[[index]]\nurl = \"{s}\"\ndefault = true</code></pre>\
         <p>For another machine, describe it there and put its token in the URL:</p>\
         <pre><code>wheelgate detect --token      # prints TOKEN on the client machine\n\
         pip install torch --index-url {b}/m/TOKEN/simple/\n\
         wheelgate pip-config --proxy {b}   # or write both files at once</code></pre>\
         <p>A fixed backend, like <code>download.pytorch.org/whl/&lt;backend&gt;</code>: \
         <code>{b}/b/cu128/simple/</code>.</p>\n",
        s = escape(&simple),
        b = escape(base),
    );
    // Every installer's configuration, as `wheelgate pip-config --format` prints it for this
    // server's `/simple/`; with `[auth]` on, with placeholders where each tool takes credentials.
    let index = if state.config.auth.enabled() {
        simple.replacen("://", "://USER:PASSWORD@", 1)
    } else {
        simple.clone()
    };
    out.push_str(
        "<h3 id=\"installers\">Every installer</h3>\
         <p><code>wheelgate pip-config --proxy URL --format NAME</code> prints these for the \
         machine it runs on. A lock file records the build of the machine that locked it: \
         lock per kind of machine (README, Installers).</p>\n",
    );
    for format in crate::installer_config::Format::ALL {
        let _ = writeln!(
            out,
            "<details><summary><code>--format {}</code></summary><pre><code>{}</code></pre></details>",
            format.name(),
            escape(&crate::installer_config::render(format, &index)),
        );
    }
}

/// The `[[networks]]` rules, the one holding the asking client marked, and the trusted proxies.
/// Every rule's networks and machine map a company's networks and hardware, so without
/// `[auth]` (anyone may read this page) a client sees its own rule only.
fn render_networks(out: &mut String, state: &AppState, client: &Client) {
    let networks = &state.networks;
    if networks.rules.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h2 id=\"networks\">Client networks</h2><p>{}</p>",
        inline_code(&client.summary())
    );
    if let Some(refusal) = &client.refusal {
        let _ = write!(
            out,
            "<p class=\"muted\">{}</p>",
            inline_code(&refusal.to_string())
        );
    }
    let everything = state.config.auth.enabled();
    out.push_str("<table><thead><tr><th>Rule</th><th>Networks</th><th>Machine</th></tr></thead>");
    for rule in &networks.rules {
        let matched = client
            .rule
            .as_ref()
            .is_some_and(|r| std::sync::Arc::ptr_eq(r, rule));
        if !matched && !everything {
            continue;
        }
        let cidrs: Vec<String> = rule.cidrs.iter().map(ToString::to_string).collect();
        let machine = rule
            .machine
            .as_ref()
            .map_or_else(|| "the server's".to_string(), describe_machine);
        let pinned = rule
            .pinned
            .as_ref()
            .map(|b| format!("; backend pinned to {b}"))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td><code>{}</code></td><td>{}{}</td></tr>",
            escape(&rule.label),
            if matched {
                " <span class=\"chosen\">this client</span>"
            } else {
                ""
            },
            escape(&cidrs.join(", ")),
            escape(&machine),
            escape(&pinned),
        );
    }
    out.push_str("</table>\n<p>The first rule holding a client's address wins; other clients get the server's machine.</p>\n");
    if !everything {
        out.push_str(
            "<p class=\"muted\">Other rules and the trusted proxies are shown only when this \
             server asks for credentials (<code>[auth]</code>): they would map the company's \
             networks for any visitor.</p>\n",
        );
        return;
    }
    let trusted: Vec<String> = networks
        .trusted_proxies
        .iter()
        .map(ToString::to_string)
        .collect();
    let _ = writeln!(
        out,
        "<p>Trusted proxies (their <code>X-Forwarded-For</code> and <code>Forwarded</code> \
         headers name the client): {}</p>",
        if trusted.is_empty() {
            "none: the connection's peer is the client".to_string()
        } else {
            format!("<code>{}</code>", escape(&trusted.join(", ")))
        }
    );
}

fn render_machine(out: &mut String, machine: &Machine, policy: &Policy, client: &Client) {
    let mut rows: Vec<(&str, String)> = vec![("Platform", machine.platform.to_string())];
    if let Some(glibc) = &machine.glibc {
        rows.push(("glibc", glibc.to_string()));
    }
    if let Some(level) = machine.x86_64_level {
        rows.push(("x86-64 level", format!("v{level}")));
    }
    match &machine.nvidia {
        Some(nvidia) => {
            let driver = nvidia
                .driver_version
                .as_ref()
                .map_or_else(|| "unknown".to_string(), ToString::to_string);
            let cuda = nvidia
                .cuda_version
                .as_ref()
                .map(|c| format!(", CUDA {c}"))
                .unwrap_or_default();
            rows.push(("NVIDIA driver", format!("{driver}{cuda}")));
            for gpu in &nvidia.gpus {
                let cc = gpu
                    .compute_capability
                    .as_ref()
                    .map(|c| format!(" (compute capability {c})"))
                    .unwrap_or_default();
                rows.push((
                    "NVIDIA GPU",
                    format!("{}{cc}", gpu.name.as_deref().unwrap_or("unnamed GPU")),
                ));
            }
        }
        None => rows.push(("NVIDIA", "none".to_string())),
    }
    if let Some(amd) = &machine.amd {
        if let Some(rocm) = &amd.rocm_version {
            rows.push(("ROCm", rocm.to_string()));
        }
        for gpu in &amd.gpus {
            rows.push((
                "AMD GPU",
                format!(
                    "{} ({})",
                    gpu.name.as_deref().unwrap_or("unnamed GPU"),
                    gpu.gfx
                ),
            ));
        }
    }
    if let Some(intel) = &machine.intel {
        for gpu in &intel.gpus {
            // Facts only: whether PyTorch's XPU builds take this device is the catalog's
            // judgement, shown with the builds below.
            let facts = match (&gpu.device_ip, gpu.xpu_capable) {
                (Some(ip), _) => format!("device IP {ip}"),
                (None, true) => "an XPU-class device".to_string(),
                (None, false) => "not an XPU-class device".to_string(),
            };
            rows.push((
                "Intel GPU",
                format!("{} ({facts})", gpu.name.as_deref().unwrap_or("unnamed GPU")),
            ));
        }
    }
    if let Some(pinned) = &policy.pinned {
        rows.push(("Pinned backend", pinned.to_string()));
    }
    if !policy.prefer.is_empty() {
        let prefer: Vec<String> = policy.prefer.iter().map(ToString::to_string).collect();
        rows.push(("Preferred backends", prefer.join(", ")));
    }
    rows.push(("Token", token::encode(machine)));
    let _ = write!(
        out,
        "<h2 id=\"machine\">The machine <code>/simple/</code> resolves for{}</h2><table>",
        client
            .rule
            .as_ref()
            .map_or_else(String::new, |rule| format!(
                " this client (rule <code>{}</code>)",
                escape(&rule.label)
            ))
    );
    render_rows(out, &rows);
    out.push_str("</table>\n");
}

/// What `/simple/` serves for torch's release train: per project, the version the live page
/// serves and its build here and on every other platform, or the catalog's expectation, said to
/// be one, while no page of it was read.
fn render_choices(out: &mut String, served: &TrainBuilds) {
    let source = if served.line_is_live {
        "torch's live page"
    } else {
        "the catalog's newest confirmed release: torch's live page has not been read yet"
    };
    let _ = write!(
        out,
        "<h2 id=\"choices\">What <code>/simple/</code> serves it for torch {} ({source})</h2>\
         <p>From the live pages as this server last read them (each source's cached copy, \
         selected as <code>/simple/</code> selects it; this page never asks an upstream), or, \
         for a project no page of which was read yet, the catalog's expectation.</p>\
         <table><thead><tr><th>Project</th><th>Version</th><th>Build here</th>\
         <th>Other platforms</th><th>Why, and why not the others</th></tr></thead>",
        escape(&served.line.to_string())
    );
    for row in &served.rows {
        render_choice(out, served, row);
    }
    out.push_str(
        "</table>\n<p>Every version on the live index, the build kept and why each other was \
         dropped: <a href=\"/explain/torch/\"><code>/explain/torch/</code></a> (JSON with \
         <code>Accept: application/json</code>; for another machine \
         <code>/m/TOKEN/explain/torch/</code>, for a pinned backend \
         <code>/b/cu128/explain/torch/</code>).</p>\n",
    );
}

/// One project's row.
fn render_choice(out: &mut String, served: &TrainBuilds, row: &ProjectBuilds) {
    let project = escape(&row.project);
    let name = format!("<a href=\"/explain/{project}/\"><code>{project}</code></a>");
    let line = escape(&served.line.to_string());
    let mut reasons = String::from("<ul class=\"reasons\">");
    if !row.unread.is_empty() {
        let _ = write!(
            reasons,
            "<li>no copy cached of the {} of {} (not read yet, or it has none): builds it \
             may offer are not counted here</li>",
            if row.unread.len() == 1 {
                "page"
            } else {
                "pages"
            },
            names_html(&row.unread)
        );
    }
    let (version, build, elsewhere) = match &row.answer {
        Answer::Live {
            served: Some(version),
            on_line,
        } => live_cells(version, *on_line, (&project, &line), &mut reasons),
        Answer::Live { served: None, .. } => (
            "<span class=\"bad\">none served</span> on the live page".to_string(),
            String::new(),
            String::new(),
        ),
        Answer::Catalog(selection) => {
            push_reasons(&mut reasons, &selection.decision);
            (
                format!(
                    "<span class=\"muted\">not read yet; the catalog's expectation for torch {}</span>",
                    escape(&selection.torch.to_string())
                ),
                format!(
                    "{} <span class=\"muted\">(the catalog's)</span>",
                    chosen_html(&selection.decision)
                ),
                String::new(),
            )
        }
        Answer::CatalogNone { newest } => (
            format!(
                "<span class=\"bad\">no {project} for torch {line}</span> in the catalog{}; \
                 <span class=\"muted\">its page not read yet</span>",
                newest
                    .map(|l| format!(" (its newest is torch {l}'s)"))
                    .unwrap_or_default()
            ),
            String::new(),
            String::new(),
        ),
        Answer::Unserved(why) => (
            format!(
                "<span class=\"muted\">not served on this network: {}</span>",
                escape(why)
            ),
            String::new(),
            String::new(),
        ),
    };
    reasons.push_str("</ul>");
    let _ = write!(
        out,
        "<tr><td>{name}</td><td>{version}</td><td>{build}</td><td>{elsewhere}</td><td>{reasons}</td></tr>"
    );
}

/// The version, build and other platforms' cells of a version a live page serves;
/// (`project`, `line`): the project's and torch's line's escaped text.
fn live_cells(
    version: &super::served::Served,
    on_line: bool,
    (project, line): (&str, &str),
    reasons: &mut String,
) -> (String, String, String) {
    let mut text = escape(&version_words(&version.version));
    if !on_line {
        text = format!(
            "<span class=\"bad\">no {project} for torch {line}</span> on the live page; \
             its newest: {text}{}",
            version
                .line
                .map(|l| format!(" (torch {l}'s)"))
                .unwrap_or_default()
        );
    }
    let build = match &version.decision {
        _ if !version.here => {
            "<span class=\"bad\">none for this machine's platform</span>".to_string()
        }
        Some(decision) => {
            push_reasons(reasons, decision);
            chosen_html(decision)
        }
        None => "every file (no backend named)".to_string(),
    };
    let elsewhere = version
        .platforms
        .iter()
        .map(|choice| {
            format!(
                "{}: {}",
                escape(&choice.platform.to_string()),
                chosen_html(&choice.decision)
            )
        })
        .collect::<Vec<_>>()
        .join("<br>");
    (text, build, elsewhere)
}

/// A decision's chosen build: a badge, with `CPU build of last resort` when it is one.
fn chosen_html(decision: &Decision) -> String {
    match &decision.chosen {
        None => "<span class=\"bad\">none usable</span>".to_string(),
        Some(backend) => {
            let mut html = format!(
                "<span class=\"chosen\">{}</span>",
                escape(&backend.to_string())
            );
            if decision.cpu_last_resort.is_some() {
                let _ = write!(
                    html,
                    " <span class=\"bad\" title=\"{}\">CPU build of last resort</span>",
                    escape(&build_words(decision))
                );
            }
            html
        }
    }
}

/// A decision's notes and every other build's reason, as list items.
fn push_reasons(reasons: &mut String, decision: &Decision) {
    for note in &decision.notes {
        let _ = write!(reasons, "<li>{}</li>", escape(note));
    }
    for (backend, rejection) in decision.rejections() {
        let _ = write!(
            reasons,
            "<li><code>{}</code>: {}</li>",
            escape(&backend.to_string()),
            escape(&rejection.to_string())
        );
    }
}

fn ago(time: SystemTime) -> String {
    let secs = time.elapsed().map_or(0, |d| d.as_secs());
    let when = httpdate::fmt_http_date(time);
    match secs {
        0..=59 => format!("{when} ({secs} s ago)"),
        60..=3599 => format!("{when} ({} min ago)", secs / 60),
        _ => format!("{when} ({} h ago)", secs / 3600),
    }
}

fn render_upstreams(out: &mut String, state: &AppState) {
    out.push_str(
        "<h2 id=\"upstreams\">Sources</h2><table><thead><tr><th>Source</th><th>URL</th>\
         <th>Last page fetch</th><th>Access</th></tr></thead>",
    );
    if state.sources.pytorch().is_none() {
        let _ = write!(
            out,
            "<tr><td>pytorch</td><td colspan=\"3\"><span class=\"muted\">none on this network \
             ({}); its URL is never asked</span></td></tr>",
            escape(wheelgate_index::sources::WITHOUT_PYTORCH_INDEX)
        );
    }
    for (_, source) in state.sources.iter() {
        let url = &source.url;
        let name = format!("{} (serves {})", source.name, source.owns.describe());
        let health: UpstreamHealth = state.metrics.upstream_health(url);
        let status = if state.config.offline {
            "<span class=\"muted\">offline: never contacted</span>".to_string()
        } else {
            match (&health.last_success, &health.last_failure) {
                (None, None) => "<span class=\"muted\">no fetch yet</span>".to_string(),
                (Some(ok), failure) if failure.as_ref().is_none_or(|(at, _)| at < ok) => {
                    format!("<span class=\"ok\">ok</span> {}", escape(&ago(*ok)))
                }
                (ok, Some((at, error))) => format!(
                    "<span class=\"bad\">failed</span> {}: {}{}",
                    escape(&ago(*at)),
                    escape(error),
                    ok.map(|ok| format!(
                        "<br><span class=\"muted\">last success {}</span>",
                        escape(&ago(ok))
                    ))
                    .unwrap_or_default()
                ),
                (Some(_), None) => unreachable!("matched above"),
            }
        };
        let breaker = if state.client.breakers().is_open(url) {
            "<br><span class=\"bad\">breaker open</span>: requests to it fail at once for a \
             while; cached pages are served"
        } else {
            ""
        };
        // `[upstreams.*]` as resolved at start: where its credentials go, the names of the
        // headers sent (never their values) and the CA certificates added.
        let access = match state.client.access_for(url) {
            None => "<span class=\"muted\">public: no credentials, system trust store</span>"
                .to_string(),
            Some(access) => {
                let names: Vec<&str> = access
                    .headers
                    .keys()
                    .map(axum::http::HeaderName::as_str)
                    .collect();
                let ca = match access.roots.len() {
                    0 => "system trust store only".to_string(),
                    1 => "CA bundle: 1 certificate besides the system's".to_string(),
                    n => format!("CA bundle: {n} certificates besides the system's"),
                };
                format!(
                    "<code>{}</code><br>sent to {}<br>headers: {}<br>{ca}",
                    escape(&access.section),
                    access
                        .origins
                        .iter()
                        .map(|origin| format!("<code>{}</code>", escape(origin)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        escape(&names.join(", "))
                    }
                )
            }
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td>{status}{breaker}</td><td>{access}</td></tr>",
            escape(&name),
            escape(&redact(url))
        );
    }
    out.push_str("</table>\n");
}

/// How old the build facts are, where they come from, and whether answers rest on inference.
fn render_facts(out: &mut String, state: &AppState) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let age = match state.catalog().updated() {
        Some((date, day)) => {
            let days = (now / 86_400).saturating_sub(day);
            format!(
                "{date} ({days} days ago), releases through torch {}",
                state.catalog().newest_release().torch
            )
        }
        None => "not dated".to_string(),
    };
    let origin = match &state.config.catalog.extend {
        Some(path) => format!("built in, with {} layered over it", path.display()),
        None => "built in (`[catalog] extend` layers a file over it)".to_string(),
    };
    let inferred = match state.metrics.last_inferred_answer() {
        Some(at) if now.saturating_sub(at) < 3600 => format!(
            "yes: a page answered {} s ago rests on an inferred fact (see its /explain/ notes; `wheelgate catalog check`)",
            now.saturating_sub(at)
        ),
        Some(at) => format!("no (last {} min ago)", now.saturating_sub(at) / 60),
        None => "no, not since the start".to_string(),
    };
    let rows = [
        ("Facts as of", age),
        ("Catalog", origin),
        ("Inferred facts used in the last hour", inferred),
    ];
    out.push_str("<h2 id=\"facts\">Build facts</h2><table>");
    render_rows(out, &rows);
    out.push_str("</table>\n");
}

fn render_cache(out: &mut String, state: &AppState, index_pages: usize) {
    let files = state.files.len();
    let bytes = state.files.total_bytes();
    let limit = state.config.cache_max_bytes;
    let (hits, misses) = state.metrics.file_counts();
    let rows = [
        ("Directory", state.config.cache_dir.display().to_string()),
        ("Files", files.to_string()),
        (
            "Size",
            format!(
                "{} of {} ({:.0}% used)",
                human_bytes(bytes),
                human_bytes(limit),
                percent(bytes, limit)
            ),
        ),
        ("Index pages cached", index_pages.to_string()),
        (
            "File requests since start",
            format!("{hits} from the cache, {misses} downloaded"),
        ),
        (
            "Mode",
            if state.config.offline {
                "offline: serving only what is cached".to_string()
            } else {
                "online".to_string()
            },
        ),
    ];
    out.push_str("<h2 id=\"cache\">Cache</h2><table>");
    render_rows(out, &rows);
    out.push_str(
        "</table>\n<p class=\"muted\">Operations: <code>/healthz</code>, <code>/readyz</code>, \
         <code>/metrics</code> (Prometheus).</p>\n",
    );
}

#[allow(clippy::cast_precision_loss)]
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Table rows of a name and a value, both escaped.
fn render_rows(out: &mut String, rows: &[(&str, String)]) {
    for (name, value) in rows {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(50 * 1024 * 1024 * 1024), "50.0 GiB");
    }
}
