//! Files while the cache is short of room or the upstream cannot be verified (issue 10, items 6
//! to 8; issue 20, item 1): a download reserves its size before it starts and evicts to make
//! room as it writes, so one cancelled early evicts little, and a file that cannot fit is
//! streamed without being kept; a file with neither hash nor length is never
//! kept; bytes of a download still in flight carry only a weak `ETag`.

use std::time::Duration;

use super::proxy_under_test::{client, get, logs, metric, start};
use super::rogue_upstream::{Answer, Rogue, page, sha256};

fn content(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7) % 251).unwrap())
        .collect()
}

/// Names of committed files in the proxy's file cache.
fn committed(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("files"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            std::path::Path::new(name)
                .extension()
                .is_none_or(|ext| ext != "part")
        })
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_download_makes_room_first_and_one_that_cannot_fit_is_streamed_without_caching() {
    logs();
    let rogue = Rogue::start().await;
    let a = content(20_000, 1);
    let b = content(20_000, 2);
    let big = content(40_000, 3);
    let files = [
        ("demo-1.0-py3-none-any.whl", a.as_slice()),
        ("demo-2.0-py3-none-any.whl", b.as_slice()),
        ("demo-3.0-py3-none-any.whl", big.as_slice()),
    ];
    rogue.set("/simple/demo/", Answer::Html(page(&files)));
    for (name, bytes) in files {
        rogue.set(&format!("/f/{name}"), Answer::File(bytes.to_vec()));
    }
    let proxy = start(&rogue, |c| c.cache_max_bytes = 30_000).await;
    let fetch = |name: &str| proxy.url(&format!("/files/demo/{name}"));

    let (status, body, _) = get(&fetch("demo-1.0-py3-none-any.whl")).await;
    assert_eq!((status, body == a), (200, true));
    // 20,000 cached + 20,000 expected > 30,000: the first file is evicted as the download
    // writes, so the second one is kept in full (before, it was cut at the limit and never
    // served).
    let (status, body, _) = get(&fetch("demo-2.0-py3-none-any.whl")).await;
    assert_eq!((status, body == b), (200, true));
    assert_eq!(
        committed(proxy.cache.path()),
        [format!("sha256-{}", sha256(&b))]
    );

    // Larger than the whole limit: every byte to the client, verified, nothing kept or evicted.
    let (status, body, _) = get(&fetch("demo-3.0-py3-none-any.whl")).await;
    assert_eq!(status, 200);
    assert!(body == big, "the whole file, correct");
    assert_eq!(
        committed(proxy.cache.path()),
        [format!("sha256-{}", sha256(&b))]
    );
    assert_eq!(
        metric(&proxy, "wheelgate_file_cache_uncached_total").await,
        1
    );
    // Asked again, it is downloaded again (and served again).
    let (status, body, _) = get(&fetch("demo-3.0-py3-none-any.whl")).await;
    assert_eq!((status, body == big), (200, true));
    assert_eq!(rogue.hits("/f/demo-3.0-py3-none-any.whl"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hashless_file_cut_short_by_a_close_is_never_cached() {
    logs();
    let rogue = Rogue::start().await;
    let bytes = content(50_000, 4);
    // No #sha256 on the link, as on nightly pages.
    rogue.set(
        "/simple/demo/",
        Answer::Html(
            "<html><body><a href=\"/f/demo-1.0-py3-none-any.whl\">demo-1.0-py3-none-any.whl</a></body></html>"
                .into(),
        ),
    );
    rogue.set(
        "/f/demo-1.0-py3-none-any.whl",
        Answer::FileWithoutLength {
            body: bytes.clone(),
            cut_at: 25_000,
        },
    );
    let proxy = start(&rogue, |_| {}).await;
    let url = proxy.url("/files/demo/demo-1.0-py3-none-any.whl");
    let (status, body, _) = get(&url).await;
    assert_eq!(status, 200);
    assert_eq!(body.len(), 25_000, "what the upstream sent, streamed");
    assert!(
        committed(proxy.cache.path()).is_empty(),
        "nothing kept: without a hash or a length the cut cannot be told from the end"
    );
    // Healed, with a length: downloaded again, complete, and kept.
    rogue.set("/f/demo-1.0-py3-none-any.whl", Answer::File(bytes.clone()));
    let (status, body, _) = get(&url).await;
    assert_eq!((status, body == bytes), (200, true));
    assert_eq!(committed(proxy.cache.path()).len(), 1);
    let (_, body, _) = get(&url).await;
    assert!(body == bytes);
    assert_eq!(rogue.hits("/f/demo-1.0-py3-none-any.whl"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ranges_of_a_download_in_flight_carry_a_weak_etag_and_if_range_never_matches_them() {
    logs();
    let rogue = Rogue::start().await;
    let bytes = content(400_000, 5);
    let name = "demo-1.0-py3-none-any.whl";
    rogue.set("/simple/demo/", Answer::Html(page(&[(name, &bytes)])));
    rogue.set(
        &format!("/f/{name}"),
        Answer::SlowFile {
            body: bytes.clone(),
            chunk: 16 * 1024,
            every: Duration::from_millis(40),
        },
    );
    let proxy = start(&rogue, |_| {}).await;
    let url = proxy.url(&format!("/files/demo/{name}"));
    let strong = format!("\"{}\"", sha256(&bytes));

    // Starts the download; its first bytes arrive while the rest is still on its way.
    let full = tokio::spawn({
        let url = url.clone();
        async move { get(&url).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let response = client()
        .get(&url)
        .header("range", "bytes=0-99")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 206);
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(etag, format!("W/{strong}"), "unverified bytes: weak");
    assert!(response.bytes().await.unwrap() == bytes[..100]);
    // pip resuming with the strong tag while the file is unverified: the whole file instead.
    let response = client()
        .get(&url)
        .header("range", "bytes=100-")
        .header("if-range", &strong)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.bytes().await.unwrap() == bytes);

    let (status, body, _) = full.await.unwrap();
    assert_eq!((status, body == bytes), (200, true));
    // Committed and verified: the strong tag, and If-Range matches it.
    let response = client()
        .get(&url)
        .header("range", "bytes=100-")
        .header("if-range", &strong)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 206);
    assert_eq!(response.headers()["etag"].to_str().unwrap(), strong);
    assert!(response.bytes().await.unwrap() == bytes[100..]);
}

/// A download a client drops early (issue 20, item 1) evicts no more than it wrote and a step
/// ahead: before, the room for its whole size was made up front, evicting two cached files for
/// a file then thrown away. The limit holds at every moment, in-flight bytes included.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_download_cancelled_early_evicts_nothing_it_did_not_need() {
    const MIB: usize = 1024 * 1024;
    logs();
    let rogue = Rogue::start().await;
    let cached: Vec<Vec<u8>> = (1..=3).map(|seed| content(16 * MIB, seed)).collect();
    let big = content(40 * MIB, 9);
    let mut files: Vec<(String, &[u8])> = cached
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            (
                format!("demo-{}.0-py3-none-any.whl", i + 1),
                bytes.as_slice(),
            )
        })
        .collect();
    files.push(("demo-9.0-py3-none-any.whl".to_string(), big.as_slice()));
    let listed: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    rogue.set("/simple/demo/", Answer::Html(page(&listed)));
    for (name, bytes) in &files[..3] {
        rogue.set(&format!("/f/{name}"), Answer::File(bytes.to_vec()));
    }
    // 640 chunks of 64 KiB, 50 ms apart: the whole file would take 32 s.
    rogue.set(
        "/f/demo-9.0-py3-none-any.whl",
        Answer::SlowFile {
            body: big.clone(),
            chunk: 64 * 1024,
            every: Duration::from_millis(50),
        },
    );
    let limit = 64 * MIB;
    let proxy = start(&rogue, |c| c.cache_max_bytes = limit as u64).await;
    for (name, bytes) in &files[..3] {
        let (status, body, _) = get(&proxy.url(&format!("/files/demo/{name}"))).await;
        assert_eq!((status, body == *bytes), (200, true));
    }
    assert_eq!(committed(proxy.cache.path()).len(), 3);
    {
        let mut response = client()
            .get(proxy.url("/files/demo/demo-9.0-py3-none-any.whl"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(!response.chunk().await.unwrap().unwrap().is_empty());
        // Dropped here: the client went away.
    }
    // Cancelled once nobody read it for 5 s; meanwhile the files and the part stay in the limit.
    let deadline = std::time::Instant::now() + Duration::from_secs(9);
    while std::time::Instant::now() < deadline {
        let on_disk: u64 = std::fs::read_dir(proxy.cache.path().join("files"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(on_disk <= limit as u64, "{on_disk} bytes on disk");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let names = committed(proxy.cache.path());
    assert_eq!(
        names.len(),
        3,
        "nothing evicted for a download then thrown away: {names:?}"
    );
}

/// Downloads in flight are capped per upstream (issue 20, item 1): past the cap a download
/// waits for a slot, then is answered 503 with `Retry-After` (pip and uv retry it) instead of
/// opening yet another upstream download; a request for a file already downloading joins it
/// without a slot, and once a slot frees the refused file downloads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn downloads_past_the_cap_wait_for_a_slot_then_are_busy() {
    logs();
    let rogue = Rogue::start().await;
    let bodies: Vec<Vec<u8>> = (1..=3).map(|seed| content(256 * 1024, seed)).collect();
    let names: Vec<String> = (1..=3)
        .map(|n| format!("demo-{n}.0-py3-none-any.whl"))
        .collect();
    let listed: Vec<(&str, &[u8])> = names
        .iter()
        .zip(&bodies)
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    rogue.set("/simple/demo/", Answer::Html(page(&listed)));
    for (name, body) in names.iter().zip(&bodies) {
        // 4 chunks, 1 s apart: each download takes about 3 s.
        rogue.set(
            &format!("/f/{name}"),
            Answer::SlowFile {
                body: body.clone(),
                chunk: 64 * 1024,
                every: Duration::from_secs(1),
            },
        );
    }
    let proxy = start(&rogue, |c| {
        c.limits.max_downloads_per_upstream = 2;
        c.limits.download_wait_secs = 1;
    })
    .await;
    let url = |n: usize| proxy.url(&format!("/files/demo/{}", names[n]));
    let fetch = |n: usize| {
        let url = url(n);
        tokio::spawn(async move { get(&url).await })
    };
    let (first, second, joined) = (fetch(0), fetch(1), fetch(1));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let response = client().get(url(2)).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    let text = response.text().await.unwrap();
    assert!(
        text.contains("demo-3.0-py3-none-any.whl") && text.contains("try again"),
        "{text}"
    );
    assert!(!text.contains("127.0.0.1"), "{text}");
    for (task, body) in [
        (first, &bodies[0]),
        (second, &bodies[1]),
        (joined, &bodies[1]),
    ] {
        let (status, got, _) = task.await.unwrap();
        assert_eq!((status, &got == body), (200, true));
    }
    assert_eq!(
        rogue.hits(&format!("/f/{}", names[1])),
        1,
        "joined, not a second download"
    );
    assert_eq!(
        rogue.hits(&format!("/f/{}", names[2])),
        0,
        "never started while busy"
    );
    let (status, got, _) = get(&url(2)).await;
    assert_eq!((status, got == bodies[2]), (200, true));
}
