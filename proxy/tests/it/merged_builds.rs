//! A merged name's builds (issue 41 item 5): for a version and build the PyTorch index
//! publishes, its files alone are served; PyPI adds only what the PyTorch index lacks.

use super::proxy_under_test::{get, logs, start, text};
use super::rogue_upstream::{Answer, Rogue};

const PYTORCH_WHEEL: &str = "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pypi_never_displaces_the_pytorch_index_files_of_a_build_it_publishes() {
    logs();
    let rogue = Rogue::start().await;
    let digest = "ab".repeat(32);
    rogue.set(
        "/whl/torch/",
        Answer::Html(format!(
            "<html><body><a href=\"/whl/cpu/{}#sha256={digest}\">{PYTORCH_WHEEL}</a></body></html>",
            PYTORCH_WHEEL.replace('+', "%2B")
        )),
    );
    let pypi_file = |name: &str| {
        format!(r#"{{"filename":"{name}","url":"/p/{name}","hashes":{{"sha256":"{digest}"}}}}"#)
    };
    let pypi_files = [
        // The same build: a newer glibc tag, the version spelled with a fourth zero.
        "torch-2.9.0+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
        "torch-2.9.0.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        // A version the PyTorch index lacks: PyPI adds it.
        "torch-2.9.1+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
    ];
    rogue.set(
        "/simple/torch/",
        Answer::Json(format!(
            r#"{{"meta":{{"api-version":"1.0"}},"name":"torch","files":[{}]}}"#,
            pypi_files.map(pypi_file).join(",")
        )),
    );
    let proxy = start(&rogue, |_| {}).await;
    let (status, page, _) = get(&proxy.url("/simple/torch/")).await;
    let page = text(&page);
    assert_eq!(status, 200, "{page}");
    let listed: Vec<&str> = page
        .lines()
        .filter_map(|line| line.split_once("\">")?.1.split_once("</a>"))
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("torch-"))
        .collect();
    assert_eq!(
        listed,
        [
            PYTORCH_WHEEL,
            "torch-2.9.1+cpu-cp312-cp312-manylinux_2_35_x86_64.whl"
        ],
        "{page}"
    );
}
