//! Files while the cache is short of room or the upstream cannot be verified (issue 10, items 6
//! to 8): a download reserves its size before it starts, evicting to make room, and a file that
//! cannot fit is streamed without being kept; a file with neither hash nor length is never
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
    // 20,000 cached + 20,000 expected > 30,000: the first file is evicted before the download,
    // so the second one is kept in full (before, it was cut at the limit and never served).
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
