//! Per-build sources (issue 41 items 7 and 8): a torch page of a thousand releases reads their
//! template pages a few at a time and answers the first page in bounded time; `/bound/`
//! answers only what a served page links, so a client makes the proxy fetch no other template
//! page and serves no file under another project's name; a listed wheel that cannot be derived
//! is left off the page, with its reason in `/explain/`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use wheelgate_config::SourceConfig;

use super::proxy_under_test::{Proxy, get, text};
use super::rogue_upstream::sha256;

const TORCH_TAGS: &str = "py3-none-manylinux_2_28_x86_64";

/// A wheel of `members`, stored.
fn wheel(members: &[(&str, &[u8])]) -> Bytes {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, content) in members {
        zip.start_file(*name, stored).unwrap();
        zip.write_all(content).unwrap();
    }
    Bytes::from(zip.finish().unwrap().into_inner())
}

fn good_wheel() -> Bytes {
    wheel(&[
        ("torch_scatter/__init__.py", b"VALUE = 1\n"),
        (
            "torch_scatter-2.1.2.dist-info/METADATA",
            b"Metadata-Version: 2.1\nName: torch-scatter\nVersion: 2.1.2\n\n",
        ),
        (
            "torch_scatter-2.1.2.dist-info/RECORD",
            b"torch_scatter/__init__.py,,\ntorch_scatter-2.1.2.dist-info/METADATA,,\n",
        ),
    ])
}

/// The PyTorch index (`/whl/torch/`, CPU builds of `releases`), an empty general index, a PyG
/// host (`/pyg/torch-<release>+cpu.html`, each page answered after `delay`) and the wheels.
#[derive(Default)]
struct Host {
    releases: Vec<String>,
    /// Template page name → the wheels it lists.
    pages: HashMap<String, Vec<String>>,
    files: HashMap<String, Bytes>,
    /// Files whose host ignores `Range` (answering the whole file).
    no_ranges: Vec<String>,
    delay: Duration,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    page_hits: AtomicUsize,
    /// GETs of the files in `no_ranges`.
    unranged_hits: AtomicUsize,
}

fn links(files: &[(String, &Bytes)]) -> String {
    let mut html = String::from("<html><body>\n");
    for (name, bytes) in files {
        let _ = writeln!(
            html,
            "<a href=\"/files/{name}#sha256={}\">{name}</a>",
            sha256(bytes)
        );
    }
    html.push_str("</body></html>\n");
    html
}

async fn answer(State(host): State<Arc<Host>>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    if path == "/whl/torch/" {
        let empty = Bytes::new();
        let files: Vec<(String, &Bytes)> = host
            .releases
            .iter()
            .map(|r| (format!("torch-{r}+cpu-{TORCH_TAGS}.whl"), &empty))
            .collect();
        return ([(header::CONTENT_TYPE, "text/html")], links(&files)).into_response();
    }
    if let Some(name) = path.strip_prefix("/pyg/") {
        let Some(listed) = host.pages.get(name) else {
            return StatusCode::NOT_FOUND.into_response();
        };
        host.page_hits.fetch_add(1, Ordering::SeqCst);
        let now = host.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        host.most_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(host.delay).await;
        host.in_flight.fetch_sub(1, Ordering::SeqCst);
        let files: Vec<(String, &Bytes)> =
            listed.iter().map(|f| (f.clone(), &host.files[f])).collect();
        return ([(header::CONTENT_TYPE, "text/html")], links(&files)).into_response();
    }
    if let Some(name) = path.strip_prefix("/files/")
        && let Some(bytes) = host.files.get(name)
    {
        if host.no_ranges.iter().any(|n| n == name) {
            host.unranged_hits.fetch_add(1, Ordering::SeqCst);
            return bytes.clone().into_response();
        }
        return ranged(bytes, request.headers().get(header::RANGE));
    }
    StatusCode::NOT_FOUND.into_response()
}

/// `bytes`, or the part a `Range` asks for.
fn ranged(bytes: &Bytes, range: Option<&header::HeaderValue>) -> Response {
    let Some(range) = range.and_then(|v| v.to_str().ok()) else {
        return bytes.clone().into_response();
    };
    let len = bytes.len() as u64;
    let (start, end) = match range.trim_start_matches("bytes=").split_once('-') {
        Some(("", suffix)) => (len - suffix.parse::<u64>().unwrap().min(len), len - 1),
        Some((from, "")) => (from.parse().unwrap(), len - 1),
        Some((from, to)) => (
            from.parse().unwrap(),
            to.parse::<u64>().unwrap().min(len - 1),
        ),
        None => return StatusCode::BAD_REQUEST.into_response(),
    };
    (
        StatusCode::PARTIAL_CONTENT,
        [(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"))],
        bytes.slice(usize::try_from(start).unwrap()..=usize::try_from(end).unwrap()),
    )
        .into_response()
}

async fn start_host(host: Host) -> (std::net::SocketAddr, Arc<Host>) {
    let host = Arc::new(host);
    let router = Router::new().fallback(answer).with_state(Arc::clone(&host));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (addr, host)
}

/// A proxy in front of `addr` with the PyG source owning `torch-scatter`.
async fn proxy(addr: std::net::SocketAddr) -> Proxy {
    let rogue = super::rogue_upstream::Rogue::start().await;
    super::proxy_under_test::start(&rogue, |config| {
        config.pytorch_url = format!("http://{addr}/whl");
        config.pypi_url = format!("http://{addr}/pypi");
        config.index_ttl_secs = 600;
        config.limits.upstream_attempt_secs = 10;
        config.limits.upstream_deadline_secs = 14;
        config.sources = vec![SourceConfig {
            name: "pyg".to_string(),
            url: format!("http://{addr}/pyg/torch-{{torch}}+{{backend}}.html"),
            projects: vec!["torch-scatter".to_string()],
            token: None,
            basic: None,
            headers: std::collections::BTreeMap::new(),
            ca_bundle: None,
            extra_origins: Vec::new(),
        }];
    })
    .await
}

/// The torch-scatter wheel of `release` (`2.9.0` → `+pt290cpu`).
fn scatter(release: &str) -> String {
    format!(
        "torch_scatter-2.1.2+pt{}cpu-py3-none-linux_x86_64.whl",
        release.replace('.', "")
    )
}

/// A host with the CPU builds of `releases`, each with a template page listing `scatter`'s
/// wheel (the good one) and the wheels of `extra` on the first release's page.
fn host(releases: &[String], delay: Duration, extra: &[(&str, Bytes)]) -> Host {
    let good = good_wheel();
    let mut host = Host {
        releases: releases.to_vec(),
        delay,
        ..Host::default()
    };
    for release in releases {
        let name = scatter(release);
        host.files.insert(name.clone(), good.clone());
        host.pages
            .insert(format!("torch-{release}+cpu.html"), vec![name]);
    }
    let first = host
        .pages
        .get_mut(&format!("torch-{}+cpu.html", releases[0]))
        .unwrap();
    for (name, bytes) in extra {
        first.push((*name).to_string());
        host.files.insert((*name).to_string(), bytes.clone());
    }
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_torch_releases_are_read_a_few_at_a_time_and_the_first_page_answers_in_time() {
    let releases: Vec<String> = (0..1000)
        .map(|i| format!("2.{}.{}", i / 10, i % 10))
        .collect();
    let (addr, host) = start_host(host(&releases, Duration::from_millis(50), &[])).await;
    let proxy = proxy(addr).await;

    let (status, body, took) = get(&proxy.url("/simple/torch-scatter/")).await;
    let body = text(&body);
    assert_eq!(status, 200, "{body}");
    assert!(
        took < Duration::from_secs(9),
        "the first page took {took:?}"
    );
    let most = host.most_in_flight.load(Ordering::SeqCst);
    assert!(most <= 8, "{most} template pages were asked for at once");
    // Newest first: the newest release's build is on the first answer.
    assert!(body.contains(&scatter("2.99.9")), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_answers_only_what_a_served_page_links() {
    let releases = vec!["2.9.0".to_string(), "2.8.0".to_string()];
    let numpy = "numpy-2.0.0-py3-none-any.whl";
    let (addr, host) = start_host(host(&releases, Duration::ZERO, &[(numpy, good_wheel())])).await;
    let proxy = proxy(addr).await;
    let wheel = scatter("2.9.0");

    // A release and a build torch's page does not list: 404, and no template page fetched.
    for (link, expected) in [
        (
            format!("/bound/pyg/9.9.0/cpu/%3D%3D9.9.%2A/torch-scatter/{wheel}.metadata"),
            "torch's pages list no such build",
        ),
        (
            format!("/bound/pyg/2.9.0/cu128/%3D%3D2.9.%2A/torch-scatter/{wheel}.metadata"),
            "torch's pages list no such build",
        ),
        // A project the source does not own, though its page lists a wheel of it.
        (
            format!("/bound/pyg/2.9.0/cpu/%3D%3D2.9.%2A/numpy/{numpy}.metadata"),
            "not served from the source `pyg`",
        ),
        // One project's file under another's name.
        (
            format!("/bound/pyg/2.9.0/cpu/%3D%3D2.9.%2A/torch-scatter/{numpy}.metadata"),
            "is not a wheel of",
        ),
    ] {
        let (status, body, _) = get(&proxy.url(&link)).await;
        assert_eq!(status, 404, "{link}: {}", text(&body));
        assert!(text(&body).contains(expected), "{link}: {}", text(&body));
    }
    assert_eq!(
        host.page_hits.load(Ordering::SeqCst),
        0,
        "no template page read"
    );

    // What a page links answers, on a replica that has not served that page too.
    let link = format!("/bound/pyg/2.9.0/cpu/%3D%3D2.9.%2A/torch-scatter/{wheel}.metadata");
    let (status, body, _) = get(&proxy.url(&link)).await;
    assert_eq!(status, 200, "{}", text(&body));
    assert!(
        text(&body).contains("Requires-Dist: torch==2.9.*"),
        "{}",
        text(&body)
    );
    let (status, page, _) = get(&proxy.url("/simple/torch-scatter/")).await;
    assert_eq!(status, 200);
    assert!(
        text(&page).contains("/bound/pyg/2.9.0/cpu/"),
        "{}",
        text(&page)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_wheel_that_cannot_be_derived_is_left_off_with_its_reason() {
    let releases = vec!["2.9.0".to_string()];
    let no_metadata = "torch_scatter-2.1.1+pt290cpu-py3-none-linux_x86_64.whl";
    // 9 MiB on a host that ignores `Range`, not cached here: past what is read whole.
    let unranged = "torch_scatter-2.1.0+pt290cpu-py3-none-linux_x86_64.whl";
    let large: Vec<u8> = (0..9 * 1024 * 1024u32)
        .map(|i| u8::try_from(i.wrapping_mul(2_654_435_761) >> 24).unwrap())
        .collect();
    let mut host = host(
        &releases,
        Duration::ZERO,
        &[
            (
                no_metadata,
                wheel(&[("torch_scatter/__init__.py", b"VALUE = 1\n")]),
            ),
            (
                unranged,
                wheel(&[
                    ("torch_scatter/data.bin", &large),
                    (
                        "torch_scatter-2.1.0.dist-info/METADATA",
                        b"Metadata-Version: 2.1\nName: torch-scatter\nVersion: 2.1.0\n\n",
                    ),
                ]),
            ),
        ],
    );
    host.no_ranges.push(unranged.to_string());
    let (addr, host) = start_host(host).await;
    let proxy = proxy(addr).await;

    let (status, page, _) = get(&proxy.url("/simple/torch-scatter/")).await;
    let page = text(&page);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&scatter("2.9.0")), "{page}");
    assert!(!page.contains("2.1.1"), "{page}");
    assert!(!page.contains("2.1.0"), "{page}");
    let (status, explained, _) = get(&proxy.url("/explain/torch-scatter/?format=json")).await;
    let explained = text(&explained);
    assert_eq!(status, 200, "{explained}");
    let dropped: serde_json::Value = serde_json::from_str(&explained).unwrap();
    let reason = |file: &str| {
        dropped["dropped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["filename"] == file)
            .map_or_else(
                || panic!("{file} is not in `dropped`: {explained}"),
                |d| d["reason"].as_str().unwrap().to_string(),
            )
    };
    assert!(reason(no_metadata).contains("no top-level"), "{explained}");
    assert!(reason(unranged).contains("cannot read"), "{explained}");
    // Refused once, not read again for every page request.
    let (status, again, _) = get(&proxy.url("/simple/torch-scatter/")).await;
    assert_eq!(status, 200);
    assert!(!text(&again).contains("2.1.0"));
    assert_eq!(host.unranged_hits.load(Ordering::SeqCst), 1);
}
