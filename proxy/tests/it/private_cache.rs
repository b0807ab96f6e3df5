//! Nothing a cache keeps is readable by the host's other users (issue 41 item 4): every file
//! `0600`, every directory `0700`, whatever the umask, and a cache directory an earlier version
//! made `0755` closed when the server takes it.

use std::os::unix::fs::PermissionsExt as _;

use super::proxy_under_test::{get, logs, start};
use super::rogue_upstream::{Answer, Rogue, page};

/// Every path under `dir` (itself included) whose mode lets group or others in.
fn open_to_others(dir: &std::path::Path) -> Vec<String> {
    let mut open = Vec::new();
    let mode = std::fs::metadata(dir).unwrap().permissions().mode();
    if mode & 0o077 != 0 {
        open.push(format!("{} {mode:o}", dir.display()));
    }
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            open.extend(open_to_others(&path));
        } else {
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            if mode & 0o077 != 0 {
                open.push(format!("{} {mode:o}", path.display()));
            }
        }
    }
    open
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stored_file_and_directory_is_owner_only() {
    logs();
    let wheel = "demo-1.0-py3-none-any.whl";
    let rogue = Rogue::start().await;
    rogue.set(
        "/simple/demo/",
        Answer::Html(page(&[(wheel, b"demo's bytes")])),
    );
    rogue.set(
        &format!("/f/{wheel}"),
        Answer::File(b"demo's bytes".to_vec()),
    );
    let proxy = start(&rogue, |config| {
        // A cache directory an earlier version made, open to everyone.
        std::fs::set_permissions(&config.cache_dir, std::fs::Permissions::from_mode(0o755))
            .unwrap();
    })
    .await;
    assert_eq!(get(&proxy.url("/simple/demo/")).await.0, 200);
    assert_eq!(
        get(&proxy.url(&format!("/files/demo/{wheel}"))).await.0,
        200
    );
    // The page's disk copy lands moments after the answer.
    let index = proxy.cache.path().join("index");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read_dir(&index).unwrap().count() == 0 {
        assert!(std::time::Instant::now() < deadline, "no page was written");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let open = open_to_others(proxy.cache.path());
    assert!(open.is_empty(), "readable by others: {open:#?}");
}
