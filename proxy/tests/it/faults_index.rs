//! Index pages while the upstream misbehaves (issue 10, items 1 to 4): a stalling or dripping
//! upstream costs clients nothing once a page is cached (stale while revalidate, one refresh per
//! URL, deadlines, a circuit breaker), a bad 200 never replaces a good copy, per-name state does
//! not grow, and pages over the size limit are refused.

use std::time::Duration;

use super::proxy_under_test::{Proxy, get, logs, metric, start, text};
use super::rogue_upstream::{Answer, Rogue, page};

const WHEEL: &str = "demo-1.0-py3-none-any.whl";
const WHEEL2: &str = "demo-2.0-py3-none-any.whl";
const BYTES: &[u8] = b"the demo wheel's bytes";
const BYTES2: &[u8] = b"the second demo wheel";

/// A rogue upstream serving a good `demo` page with two files.
async fn healthy() -> Rogue {
    let rogue = Rogue::start().await;
    rogue.set(
        "/simple/demo/",
        Answer::Html(page(&[(WHEEL, BYTES), (WHEEL2, BYTES2)])),
    );
    rogue.set(&format!("/f/{WHEEL}"), Answer::File(BYTES.to_vec()));
    rogue.set(&format!("/f/{WHEEL2}"), Answer::File(BYTES2.to_vec()));
    rogue
}

/// Waits until no background refresh is running.
async fn refreshed(proxy: &Proxy) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while proxy.state.index.refreshes_in_flight() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a refresh outlived its deadline"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits out the page's TTL (1 s in these tests).
async fn expire() {
    tokio::time::sleep(Duration::from_millis(1100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_upstream_costs_clients_nothing_once_the_page_is_cached() {
    logs();
    let rogue = healthy().await;
    let proxy = start(&rogue, |_| {}).await;
    let page_url = proxy.url("/simple/demo/");
    let file_url = proxy.url(&format!("/files/demo/{WHEEL}"));
    assert_eq!(get(&page_url).await.0, 200);
    let (status, body, _) = get(&file_url).await;
    assert_eq!((status, body.as_slice()), (200, BYTES));

    rogue.set("/simple/demo/", Answer::Stall);
    expire().await;
    // Four clients at once, pages and the cached file, as in the report (90 to 362 s before).
    let clients: Vec<_> = [&page_url, &file_url, &page_url, &file_url]
        .into_iter()
        .map(|url| {
            let url = url.clone();
            tokio::spawn(async move { get(&url).await })
        })
        .collect();
    for client in clients {
        let (status, body, took) = client.await.unwrap();
        assert_eq!(status, 200, "{}", text(&body));
        assert!(took < Duration::from_secs(2), "answered in {took:?}");
    }
    // One background refresh for all of them, and none left once it gave up.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // One refresh: its attempt, and a retry within the deadline (a refresh per client would
    // be at least four).
    let refreshes = rogue.hits("/simple/demo/") - 1;
    assert!(
        refreshes <= 2,
        "one refresh, not one per client: {refreshes} requests"
    );
    assert_eq!(proxy.state.index.refreshes_in_flight(), 0);
    // Still served at once afterwards.
    let (status, _, took) = get(&page_url).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cached_file_never_waits_for_its_pages_revalidation() {
    logs();
    let rogue = healthy().await;
    // A long revalidation wait, so that waiting for it cannot pass unseen.
    let proxy = start(&rogue, |config| config.limits.revalidate_wait_ms = 3000).await;
    let page_url = proxy.url("/simple/demo/");
    let file_url = proxy.url(&format!("/files/demo/{WHEEL}"));
    assert_eq!(get(&page_url).await.0, 200);
    assert_eq!(get(&file_url).await.0, 200);

    rogue.set("/simple/demo/", Answer::Stall);
    expire().await;
    // The file first: its lookup finds it on the expired copy and starts the refresh without
    // waiting for it (the soak's cached files waited the whole revalidation while pages stalled).
    let (status, body, took) = get(&file_url).await;
    assert_eq!((status, body.as_slice()), (200, BYTES));
    assert!(
        took < Duration::from_millis(500),
        "the file waited {took:?}"
    );
    // The page itself does wait for the revalidation the file started (a release published
    // since must show) until it gives up at the test's deadline, then answers the copy.
    let (status, _, took) = get(&page_url).await;
    assert_eq!(status, 200);
    assert!(
        took >= Duration::from_secs(1),
        "the page answered in {took:?} without waiting for its revalidation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dripping_upstream_is_bounded_by_the_deadline() {
    logs();
    let rogue = healthy().await;
    let proxy = start(&rogue, |_| {}).await;
    let page_url = proxy.url("/simple/demo/");
    assert_eq!(get(&page_url).await.0, 200);
    let drip = Answer::Drip {
        body: page(&[(WHEEL, BYTES)]),
        every: Duration::from_millis(300),
    };
    rogue.set("/simple/demo/", drip.clone());
    expire().await;
    let (status, _, took) = get(&page_url).await;
    assert_eq!(status, 200);
    assert!(
        took < Duration::from_secs(1),
        "the stale copy once the revalidation wait (300 ms) is over: {took:?}"
    );

    // A project never seen must wait for the upstream, but no longer than the deadline (2 s).
    rogue.set("/simple/fresh/", drip);
    let (status, body, took) = get(&proxy.url("/simple/fresh/")).await;
    assert_eq!(status, 504, "{}", text(&body));
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(
        text(&body).contains(&format!("`{}`", rogue.addr)) && !text(&body).contains("http://"),
        "names the upstream, not its URL: {}",
        text(&body)
    );
}

/// A page parsed as it arrives (`cache/index/arriving.rs`) is the page parsed whole: the same
/// page, seven bytes per write, is served as when it came in one piece. Its text holds what a pause
/// could cut wrongly: a two-byte character, character references, a comment, an attribute
/// split anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_arriving_in_pieces_is_served_as_one_sent_at_once() {
    logs();
    let body = format!(
        "<!DOCTYPE html>\n<html><body>\n<h1>Links for demo</h1>\n<!-- <a href=\"/f/x\">x</a> -->\n\
         <a href=\"/f/{WHEEL}#sha256={}\" data-requires-python=\"&gt;=3.9\" data-yanked=\"broken &amp; withdrawn, déjà\">{WHEEL}</a><br/>\n\
         <a href=\"/f/{WHEEL2}#sha256={}\">{WHEEL2}</a><br/>\n</body></html>\n",
        super::rogue_upstream::sha256(BYTES),
        super::rogue_upstream::sha256(BYTES2),
    );
    let whole = healthy().await;
    whole.set("/simple/demo/", Answer::Html(body.clone()));
    let dripping = healthy().await;
    dripping.set(
        "/simple/demo/",
        Answer::SlowFile {
            body: body.into_bytes(),
            chunk: 7,
            every: Duration::from_millis(1),
        },
    );
    let (from_whole, from_drip) = (start(&whole, |_| {}).await, start(&dripping, |_| {}).await);
    let (status, expected, _) = get(&from_whole.url("/simple/demo/")).await;
    assert_eq!(status, 200, "{}", text(&expected));
    assert!(text(&expected).contains("déjà"), "{}", text(&expected));
    let (status, served, _) = get(&from_drip.url("/simple/demo/")).await;
    assert_eq!(status, 200, "{}", text(&served));
    assert_eq!(text(&served), text(&expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_breaker_stops_paying_for_an_upstream_that_is_down() {
    logs();
    let rogue = healthy().await;
    let proxy = start(&rogue, |c| {
        c.limits.breaker_failures = 2;
        c.limits.breaker_open_secs = 30;
    })
    .await;
    assert_eq!(get(&proxy.url("/simple/demo/")).await.0, 200);
    for project in ["a", "b", "c", "d", "e"] {
        rogue.set(&format!("/simple/{project}/"), Answer::Close);
    }
    // Two failed fetches (each with its retries) open the breaker.
    assert_eq!(get(&proxy.url("/simple/a/")).await.0, 502);
    assert_eq!(get(&proxy.url("/simple/b/")).await.0, 502);
    let asked = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|p| rogue.hits(&format!("/simple/{p}/")))
        .sum::<usize>();
    let response = super::proxy_under_test::client()
        .get(proxy.url("/simple/c/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let body = response.text().await.unwrap();
    assert!(body.contains("is failing"), "{body}");
    let (_, _, took) = get(&proxy.url("/simple/d/")).await;
    assert!(
        took < Duration::from_millis(500),
        "failed at once: {took:?}"
    );
    let asked_after = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|p| rogue.hits(&format!("/simple/{p}/")))
        .sum::<usize>();
    assert_eq!(asked, asked_after, "nothing reaches an upstream known down");
    let label = format!(
        "wheelgate_upstream_breaker_open{{upstream=\"{}\",requests=\"pages\"}}",
        rogue.addr
    );
    assert_eq!(metric(&proxy, &label).await, 1);
    assert!(
        metric(
            &proxy,
            &format!(
                "wheelgate_upstream_short_circuited_total{{upstream=\"{}\",requests=\"pages\"}}",
                rogue.addr
            )
        )
        .await
            >= 2
    );
    // Files have their own breaker: a file of the cached page still downloads.
    let (status, body, _) = get(&proxy.url(&format!("/files/demo/{WHEEL}"))).await;
    assert_eq!((status, body.as_slice()), (200, BYTES));
    // The cached project is still served while the breaker is open, expired or not.
    expire().await;
    let (status, _, took) = get(&proxy.url("/simple/demo/")).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(500), "{took:?}");
    let (_, status_page, _) = get(&proxy.url("/")).await;
    assert!(
        text(&status_page).contains("breaker open"),
        "the status page says the upstream is short-circuited"
    );
}

/// Every kind of bad 200 the adversarial run found, each against a good cached copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_200_never_replaces_a_good_copy() {
    logs();
    let garbage: String = (0..4000u32)
        .map(|i| char::from_u32((i * 7919) % 0xD7FF + 1).unwrap_or('x'))
        .collect();
    let bad_answers = [
        ("empty page", Answer::Html(String::new())),
        (
            "an HTML page with no links",
            Answer::Html("<html><body>maintenance</body></html>".into()),
        ),
        ("random bytes", Answer::Html(garbage)),
        (
            "a body shorter than its Content-Length",
            Answer::LyingLength {
                body: page(&[(WHEEL, BYTES)])[..40].to_string(),
                claimed: 5000,
            },
        ),
        (
            "invalid JSON",
            Answer::Json("{\"meta\": {\"api-version\": ".into()),
        ),
        (
            "an unrelated smaller page",
            Answer::Html(page(&[("demo-9.9.tar.gz", b"x")])),
        ),
    ];
    // Each case on its own upstream and server, all at once.
    let cases: Vec<_> = bad_answers
        .into_iter()
        .map(|(what, bad)| tokio::spawn(bad_200_case(what, bad)))
        .collect();
    for case in cases {
        case.await.unwrap();
    }
}

async fn bad_200_case(what: &'static str, bad: Answer) {
    let rogue = healthy().await;
    let proxy = start(&rogue, |_| {}).await;
    let page_url = proxy.url("/simple/demo/");
    let (_, good, _) = get(&page_url).await;
    assert_eq!(
        get(&proxy.url(&format!("/files/demo/{WHEEL}"))).await.0,
        200
    );
    rogue.set("/simple/demo/", bad);
    expire().await;
    // The first request triggers the refresh; the second sees its outcome.
    for _ in 0..2 {
        let (status, body, _) = get(&page_url).await;
        assert_eq!(status, 200, "{what}: {}", text(&body));
        assert_eq!(body, good, "{what}: the page still lists every file");
        refreshed(&proxy).await;
    }
    let (status, body, _) = get(&proxy.url(&format!("/files/demo/{WHEEL}"))).await;
    assert_eq!((status, body.as_slice()), (200, BYTES), "{what}");
    let (status, _, _) = get(&proxy.url(&format!("/files/demo/{WHEEL2}"))).await;
    assert_eq!(status, 200, "{what}: an uncached file of the good copy");
    let mut rejected = 0;
    for reason in [
        "empty",
        "unparseable",
        "unrelated",
        "truncated",
        "too_large",
    ] {
        let series = format!("wheelgate_index_pages_rejected_total{{reason=\"{reason}\"}}");
        rejected += metric(&proxy, &series).await;
    }
    assert!(rejected >= 1, "{what}: counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_that_really_shrinks_is_accepted_and_dropped_files_stay_downloadable() {
    logs();
    let rogue = healthy().await;
    let proxy = start(&rogue, |_| {}).await;
    let page_url = proxy.url("/simple/demo/");
    assert!(text(&get(&page_url).await.1).contains(WHEEL2));
    rogue.set("/simple/demo/", Answer::Html(page(&[(WHEEL, BYTES)])));
    expire().await;
    get(&page_url).await;
    refreshed(&proxy).await;
    let (_, body, _) = get(&page_url).await;
    assert!(text(&body).contains(WHEEL), "{}", text(&body));
    assert!(
        !text(&body).contains(WHEEL2),
        "the removal is served: {}",
        text(&body)
    );
    // A client that saw the old page (and perhaps started downloading) still gets the file.
    let (status, body, _) = get(&proxy.url(&format!("/files/demo/{WHEEL2}"))).await;
    assert_eq!((status, body.as_slice()), (200, BYTES2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_distinct_names_leaves_nothing_behind() {
    let rogue = Rogue::start().await;
    let proxy = start(&rogue, |_| {}).await;
    let names: Vec<String> = (0..400)
        .map(|i| format!("p{i}-{}", "x".repeat(150)))
        .collect();
    let clients: Vec<_> = names
        .chunks(50)
        .map(|chunk| {
            let urls: Vec<String> = chunk
                .iter()
                .map(|name| proxy.url(&format!("/simple/{name}/")))
                .collect();
            tokio::spawn(async move {
                for url in urls {
                    assert_eq!(get(&url).await.0, 404);
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    assert_eq!(
        proxy.state.index.refreshes_in_flight(),
        0,
        "refresh entries pruned"
    );
    assert_eq!(
        proxy.state.index.pages_in_memory(),
        0,
        "no page kept for a 404"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_over_the_size_limit_is_refused_clearly() {
    logs();
    let rogue = healthy().await;
    let proxy = start(&rogue, |c| c.limits.max_page_bytes = 64 * 1024).await;
    let files: Vec<(String, Vec<u8>)> = (0..3000)
        .map(|i| (format!("demo-1.{i}-py3-none-any.whl"), vec![0u8; 1]))
        .collect();
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let huge = page(&borrowed);
    assert!(huge.len() > 64 * 1024);
    rogue.set("/simple/huge/", Answer::Html(huge.clone()));
    let (status, body, _) = get(&proxy.url("/simple/huge/")).await;
    assert_eq!(status, 502);
    assert!(
        text(&body).contains("over the limit of 65536 bytes"),
        "{}",
        text(&body)
    );
    // With a good copy cached, an oversized new one leaves it in place.
    assert_eq!(get(&proxy.url("/simple/demo/")).await.0, 200);
    rogue.set("/simple/demo/", Answer::Html(huge));
    expire().await;
    get(&proxy.url("/simple/demo/")).await;
    refreshed(&proxy).await;
    let (status, body, _) = get(&proxy.url("/simple/demo/")).await;
    assert_eq!(status, 200);
    assert!(text(&body).contains(WHEEL2));
    assert!(
        metric(
            &proxy,
            "wheelgate_index_pages_rejected_total{reason=\"too_large\"}"
        )
        .await
            >= 2
    );
}
