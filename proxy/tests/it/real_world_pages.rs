//! What real indexes send that the PEPs do not say (issue 40): a registry's string
//! `_last-serial` and unknown keys, a project page that redirects elsewhere with relative
//! links (devpi), an entry that cannot be read among good ones; and honesty when a source's
//! pages cannot be read at all: failing on the status page, counted by source and reason,
//! named in every error it causes.

use super::proxy_under_test::{Proxy, client, get, logs, metric, start, text};
use super::rogue_upstream::{Answer, Rogue, sha256};

const WHEEL: &str = "six-1.17.0-py2.py3-none-any.whl";
const BYTES: &[u8] = b"six's wheel, as the registry stores it";
const JSON: &str = "application/vnd.pypi.simple.v1+json";

/// A registry's JSON page in the shape one real PyPI mirror writes it: keys unsorted, the
/// serial a string, keys of its own beside the PEP's.
fn registry_page(extra_entry: &str) -> String {
    format!(
        r#"{{"files": [{{"filename": "{WHEEL}", "hashes": {{"sha256": "{}"}}, "requires-python": null, "size": {}, "upload-time": "2024-12-04T17:35:26.475999Z", "url": "/f/{WHEEL}", "yanked": false, "_mirror-note": {{"cached": [1, null]}}}}{extra_entry}], "meta": {{"api-version": "1.1", "_last-serial": "26356948"}}, "name": "six", "versions": ["1.17.0"]}}"#,
        sha256(BYTES),
        BYTES.len()
    )
}

async fn get_json(url: &str) -> (u16, String) {
    let response = client()
        .get(url)
        .header("Accept", JSON)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

async fn status_page(proxy: &Proxy) -> String {
    text(&get(&proxy.url("/")).await.1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_page_with_a_string_serial_and_keys_of_its_own_is_served() {
    logs();
    let rogue = Rogue::start().await;
    rogue.set("/simple/six/", Answer::Json(registry_page("")));
    rogue.set(&format!("/f/{WHEEL}"), Answer::File(BYTES.to_vec()));
    let proxy = start(&rogue, |_| {}).await;

    let (status, body) = get_json(&proxy.url("/simple/six/")).await;
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["files"][0]["filename"], WHEEL);
    // The index's own key, passed on as the registry wrote it.
    assert_eq!(page["meta"]["_last-serial"], "26356948", "{body}");
    let (status, html, _) = get(&proxy.url("/simple/six/")).await;
    assert_eq!(status, 200);
    assert!(text(&html).contains(WHEEL));
    let (status, bytes, _) = get(&proxy.url(&format!("/files/six/{WHEEL}"))).await;
    assert_eq!((status, bytes.as_slice()), (200, BYTES));

    assert!(status_page(&proxy).await.contains("class=\"ok\""));
    assert_eq!(
        metric(
            &proxy,
            "wheelgate_index_pages_rejected_total{reason=\"unparseable\"}"
        )
        .await,
        0
    );
}

/// devpi answers `/root/pypi/+simple/<project>/` for a page asked elsewhere, and its links are
/// relative to where it answered (`../../+f/...`): they resolve there, not where the proxy
/// asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirected_page_links_files_relative_to_where_it_was_answered() {
    logs();
    let rogue = Rogue::start().await;
    rogue.set(
        "/simple/acme-utils/",
        Answer::MovedTo("/root/pypi/+simple/acme-utils/".to_owned()),
    );
    let name = "acme_utils-1.2.0-py3-none-any.whl";
    let bytes = b"acme's wheel";
    rogue.set(
        "/root/pypi/+simple/acme-utils/",
        Answer::Html(format!(
            "<html><body><a href=\"../../+f/ab/{name}#sha256={}\">{name}</a></body></html>",
            sha256(bytes)
        )),
    );
    rogue.set(
        &format!("/root/pypi/+f/ab/{name}"),
        Answer::File(bytes.to_vec()),
    );
    let proxy = start(&rogue, |_| {}).await;

    let (status, page, _) = get(&proxy.url("/simple/acme-utils/")).await;
    assert_eq!(status, 200, "{}", text(&page));
    let (status, body, _) = get(&proxy.url(&format!("/files/acme-utils/{name}"))).await;
    assert_eq!(
        (status, body.as_slice()),
        (200, &bytes[..]),
        "{}",
        text(&body)
    );
    assert_eq!(rogue.hits(&format!("/root/pypi/+f/ab/{name}")), 1);

    // And from the disk copy of the page alone (no file cached) after a restart: the copy
    // keeps where the page came from.
    let pages = tempfile::tempdir().unwrap();
    let index = pages.path().join("index");
    std::fs::create_dir(&index).unwrap();
    // The server answers before its disk copy lands (moments later).
    let written = proxy.cache.path().join("index");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !std::fs::read_dir(&written).unwrap().any(|entry| {
        entry
            .unwrap()
            .path()
            .extension()
            .is_some_and(|e| e == "json")
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "the page was never written"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for entry in std::fs::read_dir(&written).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), index.join(entry.file_name())).unwrap();
    }
    drop(proxy);
    let restarted = start(&rogue, |config| {
        config.cache_dir = pages.path().to_path_buf();
        config.index_ttl_secs = 3600;
    })
    .await;
    let (status, body, _) = get(&restarted.url(&format!("/files/acme-utils/{name}"))).await;
    assert_eq!(
        (status, body.as_slice()),
        (200, &bytes[..]),
        "{}",
        text(&body)
    );
    assert_eq!(
        rogue.hits("/simple/acme-utils/"),
        1,
        "the page came from disk"
    );
    assert_eq!(rogue.hits(&format!("/root/pypi/+f/ab/{name}")), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_that_cannot_be_read_is_left_off_and_explained_not_the_page() {
    logs();
    let rogue = Rogue::start().await;
    rogue.set(
        "/simple/six/",
        Answer::Json(registry_page(
            r#", {"filename": "six-1.16.0.tar.gz", "url": "/f/six-1.16.0.tar.gz", "hashes": {"sha256": 7}}"#,
        )),
    );
    let proxy = start(&rogue, |_| {}).await;
    let (status, body) = get_json(&proxy.url("/simple/six/")).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(WHEEL) && !body.contains("six-1.16.0"),
        "{body}"
    );
    let (status, explained, _) = get(&proxy.url("/explain/six/?format=json")).await;
    assert_eq!(status, 200);
    let explained: serde_json::Value = serde_json::from_slice(&explained).unwrap();
    let dropped = &explained["dropped"][0];
    assert_eq!(dropped["filename"], "six-1.16.0.tar.gz");
    assert_eq!(
        dropped["reason"],
        "the upstream page's entry cannot be read: its `hashes` has `sha256` as a number, not a string"
    );
}

/// A source whose pages cannot be read is a failing source: the status page says so with the
/// reason, `/metrics` counts it by source and reason, and the 502 names it and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_whose_pages_cannot_be_read_is_failing_everywhere_it_shows() {
    logs();
    let rogue = Rogue::start().await;
    rogue.set(
        "/simple/numpy/",
        Answer::Json(r#"{"meta": {"api-version": "1.1"}, "files": "later"}"#.to_owned()),
    );
    // torch's owners: the PyTorch index down, PyPI's page unreadable.
    rogue.set("/whl/torch/", Answer::Status(503));
    rogue.set(
        "/simple/torch/",
        Answer::Json(r#"{"files": {"torch": 1}}"#.to_owned()),
    );
    let proxy = start(&rogue, |_| {}).await;

    let (status, body, _) = get(&proxy.url("/simple/numpy/")).await;
    let body = text(&body);
    assert_eq!(status, 502, "{body}");
    assert!(
        body.contains(
            "cannot be read (the PEP 691 JSON project page has `files` as a string, not a list)"
        ),
        "{body}"
    );
    let status_html = status_page(&proxy).await;
    assert!(
        status_html.contains("class=\"bad\">failed</span>")
            && status_html.contains("its pages cannot be read"),
        "{status_html}"
    );
    assert_eq!(
        metric(
            &proxy,
            "wheelgate_index_pages_rejected_total{reason=\"unparseable\"}"
        )
        .await,
        1
    );
    assert_eq!(
        metric(
            &proxy,
            "wheelgate_source_page_failures_total{source=\"pypi\",reason=\"unreadable\"}"
        )
        .await,
        1
    );

    let (status, body, _) = get(&proxy.url("/simple/torch/")).await;
    let body = text(&body);
    assert_eq!(status, 502, "{body}");
    assert!(
        body.contains("`pytorch`: the upstream") && body.contains("answered 503"),
        "{body}"
    );
    assert!(
        body.contains("`pypi`: the upstream") && body.contains("cannot be read"),
        "{body}"
    );
}

/// At start the server reads one page of each source and says what it got, so the unreadable
/// registry is named before any installer meets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_read_of_each_source_names_the_one_whose_pages_cannot_be_read() {
    logs();
    let rogue = Rogue::start().await;
    rogue.set(
        "/simple/pip/",
        Answer::Json(r#"{"meta": {"_last-serial": "1"}, "projects": []}"#.to_owned()),
    );
    rogue.set(
        "/whl/torch/",
        Answer::Html(super::rogue_upstream::page(&[(
            "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
            b"torch",
        )])),
    );
    let proxy = start(&rogue, |_| {}).await;
    let lines = wheelgate_index::sources::first_read::first_read_lines(
        &proxy.state.sources,
        &proxy.state.index,
        &proxy.state.client,
    )
    .await;
    assert_eq!(
        lines,
        [
            "source `pytorch`: pages read (`torch`: 1 files)",
            "source `pypi`: pages cannot be read: the upstream `127.0.0.1:PORT` sent a project page that cannot be read (the PEP 691 JSON project page has no `files` list), and no cached copy exists"
                .replace("PORT", &rogue.addr.port().to_string())
                .as_str(),
        ]
    );
}

/// Every page captured from a real registry (`testdata/registry/`), served by an upstream as it
/// came: each file on it is on the page the proxy serves, in both forms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_captured_registry_page_is_served_whole_in_both_forms() {
    logs();
    for captured in &wheelgate_testdata::registry::REGISTRY_PAGES {
        let rogue = Rogue::start().await;
        let path = format!("/simple/{}/", captured.project);
        let body = captured.body.to_owned();
        rogue.set(
            &path,
            if captured.is_json() {
                Answer::Json(body)
            } else {
                Answer::Html(body)
            },
        );
        let proxy = start(&rogue, |_| {}).await;
        let (status, json) = get_json(&proxy.url(&path)).await;
        assert_eq!(status, 200, "{json}");
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let files = json["files"].as_array().unwrap();
        assert_eq!(files.len(), captured.files, "{}", captured.project);
        let yanked = files.iter().filter(|f| f["yanked"] != false).count();
        assert_eq!(yanked, captured.yanked);
        assert!(
            files
                .iter()
                .all(|f| f["url"].as_str().unwrap().starts_with("/files/")
                    && f["hashes"]["sha256"].is_string()),
            "every link is the proxy's, every file verifiable"
        );
        let (status, html, _) = get(&proxy.url(&path)).await;
        assert_eq!(status, 200);
        assert_eq!(text(&html).matches("<a href=").count(), captured.files);
    }
}
