//! `wheelgate catalog check` and `catalog show` as an operator runs them: against the real
//! captured cu130 page, a generated listing with a release, a backend and a label the catalog
//! lacks (exit 1, text and JSON), the same listing read from a store, and an overlay that
//! describes what was missing (exit 0).

use std::fmt::Write as _;
use std::process::{Command, Output};

use super::fake_upstream::Fake;

fn wheelgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wheelgate"))
        .args(args)
        .output()
        .unwrap()
}

/// A torch listing: 2.9.0 as the catalog describes it on Linux x86_64, plus what it lacks.
fn listing() -> String {
    let mut html = String::from("<html><body>\n");
    let mut link = |dir: &str, name: &str| {
        let _ = writeln!(
            html,
            "<a href=\"/whl/{dir}/{name}#sha256=00\">{name}</a><br/>"
        );
    };
    for backend in [
        "cpu", "cu126", "cu128", "cu129", "cu130", "rocm6.3", "rocm6.4", "xpu",
    ] {
        link(
            backend,
            &format!("torch-2.9.0+{backend}-cp312-cp312-manylinux_2_28_x86_64.whl"),
        );
    }
    link(
        "cu134",
        "torch-2.9.0+cu134-cp312-cp312-manylinux_2_28_x86_64.whl",
    );
    link(
        "cu140",
        "torch-2.99.0+cu140-cp312-cp312-manylinux_2_28_x86_64.whl",
    );
    link(
        "cpu",
        "torch-2.9.0+cpu.cxx11.abi-cp312-cp312-linux_x86_64.whl",
    );
    html.push_str("</body></html>\n");
    html
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_real_cu130_page_needs_nothing() {
    let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/pytorch-index/whl_cu130_torch.html");
    if !page.exists() {
        eprintln!(
            "skipped: {} is not checked out beside the workspace",
            page.display()
        );
        return;
    }
    let output = wheelgate(&["catalog", "check", "--index", page.to_str().unwrap()]);
    let text = stdout(&output);
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("(182 torch wheels)"), "{text}");
    assert!(
        text.contains("~ torch 2.11: cu129's compiled architectures are not given"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_the_catalog_lacks_fails_until_an_overlay_describes_it() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("torch.html");
    std::fs::write(&page, listing()).unwrap();
    let page = page.to_str().unwrap().to_string();
    let output = tokio::task::block_in_place(|| wheelgate(&["catalog", "check", "--index", &page]));
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    for needle in [
        "! torch 2.99: listed (cu140) but not in the catalog",
        "! torch 2.9: cu134 on linux-x86_64 is listed; the catalog has it not described",
        "~ torch 2.9: 1 file(s) labelled `cpu.cxx11.abi`",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("2 finding(s) need attention"),
        "{output:?}"
    );
    let output = tokio::task::block_in_place(|| {
        wheelgate(&["catalog", "check", "--json", "--index", &page])
    });
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["needs_attention"], true);
    assert_eq!(
        json["listing"]["2.9"]["linux-x86_64"]
            .as_array()
            .unwrap()
            .len(),
        9
    );

    // The same listing from a store: the page as a sync stored it, no upstream needed after.
    let fake = Fake::start().await;
    fake.add_page("/whl/torch/", listing());
    let store = dir.path().join("store");
    let index =
        wheelgate_index::cache::index::IndexCache::new(&store, std::time::Duration::ZERO, false)
            .unwrap();
    let client = wheelgate_index::upstream::UpstreamClient::new(
        &wheelgate_index::upstream::ClientSettings::default(),
    )
    .unwrap();
    index
        .get(&client, &fake.url("/whl/torch/"))
        .await
        .unwrap()
        .unwrap();
    drop(index);
    let config = dir.path().join("wheelgate.toml");
    std::fs::write(&config, format!("pytorch_url = \"{}\"\n", fake.url("/whl"))).unwrap();
    drop(fake);
    let (store, config) = (store.to_str().unwrap(), config.to_str().unwrap());
    let output = tokio::task::block_in_place(|| {
        wheelgate(&["catalog", "check", "--index", store, "--config", config])
    });
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{output:?}");
    assert!(text.contains("! torch 2.99: listed (cu140)"), "{text}");

    // An overlay describing 2.99 and 2.9's cu134: nothing needs attention.
    std::fs::write(
        dir.path().join("extra.toml"),
        "[[release]]\ntorch = \"2.99\"\nbackends.cu140 = { sm = \"cu13x\" }\n\n[[release]]\ntorch = \"2.9\"\nbackends.cu134 = { sm = \"cu13x\", os = [\"linux\"] }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("with-overlay.toml"),
        "[catalog]\nextend = \"extra.toml\"\n",
    )
    .unwrap();
    let with = dir.path().join("with-overlay.toml");
    let with = with.to_str().unwrap();
    let output = tokio::task::block_in_place(|| {
        wheelgate(&["catalog", "check", "--index", &page, "--config", with])
    });
    assert!(output.status.success(), "{}", stdout(&output));
    let output =
        tokio::task::block_in_place(|| wheelgate(&["catalog", "show", "2.99", "--config", with]));
    let text = stdout(&output);
    assert!(
        text.contains("torch 2.99\n") && text.contains("cu140: sm 7.5"),
        "{text}"
    );
    let output = tokio::task::block_in_place(|| wheelgate(&["catalog", "show", "3.0"]));
    assert!(!output.status.success());
}

/// PyTorch's own `*-variants.json` files (2.8.0 to 2.10.0, captured in `shared/fixtures`), read
/// beside a saved page, agree with the catalog; one whose `gfx_arch` the catalog lacks is a
/// finding that needs attention.
#[test]
fn variants_files_are_compared_with_the_catalogs_sets() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/variants-json");
    if !fixtures.exists() {
        eprintln!(
            "skipped: {} is not checked out beside the workspace",
            fixtures.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut html = String::from("<html><body>\n");
    for version in ["2.8.0", "2.9.0", "2.10.0"] {
        let name = format!("torch-{version}-variants.json");
        std::fs::copy(fixtures.join(&name), dir.path().join(&name)).unwrap();
        let _ = writeln!(html, "<a href=\"{name}\">{name}</a><br/>");
        let wheel = format!("torch-{version}-cp312-cp312-manylinux_2_28_x86_64-null.whl");
        let _ = writeln!(html, "<a href=\"{wheel}#sha256=00\">{wheel}</a><br/>");
    }
    let page = dir.path().join("torch.html");
    std::fs::write(&page, &html).unwrap();
    let output = wheelgate(&["catalog", "check", "--index", page.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stdout(&output));

    // A target the catalog does not have, in the 2.10 file.
    let name = "torch-2.10.0-variants.json";
    let text = std::fs::read_to_string(dir.path().join(name))
        .unwrap()
        .replacen("\"gfx1030\"", "\"gfx1030\", \"gfx1152\"", 1);
    std::fs::write(dir.path().join(name), text).unwrap();
    let output = wheelgate(&["catalog", "check", "--index", page.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the variants file lists gfx1152 the catalog lacks"),
        "{text}"
    );
}
