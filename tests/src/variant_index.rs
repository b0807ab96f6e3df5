//! A fake wheel-variant index (PEP 825), like `download.pytorch.org/whl/variant/`: torch
//! 2.8.0, 2.9.0 and 2.10.0 with PyTorch's real `*-variants.json` files (one per schema
//! generation: unversioned, `v0.0.2`, `v0.0.3`, read in place from the shared fixtures) and
//! 2.9.1 with the same variants in PEP 825's `v0.1.1` shape; one real wheel per label, each with
//! its `*.dist-info/variant.json` naming the label and a METADATA without a local label (whose
//! requirements, on request, use PEP 817's `variant_label` marker: `filelock` for the variant's
//! own label, `never-installed` for no label). Beside it, torchaudio 2.9.0 the other way, as
//! local-labelled wheels (`torchaudio-2.9.0+cu130-...whl` under `/whl/cu130/`), one per build
//! of torch 2.9.0's labels, so the proxy must keep one build across the two. Every request is
//! counted. Missing paths answer `403`, as PyTorch's index does.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::wheels::{WheelSpec, sha256_hex};

/// The wheels' compatibility tags: any Python 3 on Linux x86-64 with glibc 2.28 or newer.
pub const TAGS: &str = "py3-none-manylinux_2_28_x86_64";

/// The releases published, with the variants file each is built from.
const RELEASES: [(&str, &str); 3] = [
    ("2.8.0", "torch-2.8.0-variants.json"),
    ("2.9.0", "torch-2.9.0-variants.json"),
    ("2.10.0", "torch-2.10.0-variants.json"),
];
/// The release whose variants file is 2.9.0's rewritten in PEP 825's shape.
const PEP_825_RELEASE: &str = "2.9.1";

/// A `torch-<version>-variants.json` of the shared fixtures, as JSON.
fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../shared/fixtures/variants-json/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture `{path}`: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("fixture `{path}`: {e}"))
}

/// `file` in PEP 825's `v0.1.1` shape: only `default-priorities.namespace` and `variants`;
/// static namespaces (PyTorch's `priority`) do not exist there, so their properties go.
fn as_pep_825(file: &Value) -> Value {
    let mut variants = file["variants"].clone();
    for properties in variants.as_object_mut().expect("variants").values_mut() {
        properties
            .as_object_mut()
            .expect("properties")
            .remove("priority");
    }
    let namespaces: Vec<Value> = file["default-priorities"]["namespace"]
        .as_array()
        .expect("namespaces")
        .iter()
        .filter(|n| n.as_str() != Some("priority"))
        .cloned()
        .collect();
    serde_json::json!({
        "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
        "default-priorities": {"namespace": namespaces},
        "variants": variants,
    })
}

/// The `variant.json` of one label's wheel: the index file with only that variant.
fn variant_json(file: &Value, label: &str) -> String {
    let mut one = file.clone();
    let properties = file["variants"][label].clone();
    one["variants"] = serde_json::json!({ label: properties });
    one.to_string()
}

/// The fake index: bytes by path, counted requests.
pub struct VariantIndex {
    pub addr: SocketAddr,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    task: JoinHandle<()>,
}

impl Drop for VariantIndex {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Served {
    files: Arc<HashMap<String, Bytes>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl VariantIndex {
    /// Builds every release's wheels and serves them on `127.0.0.1:0`.
    pub async fn start() -> VariantIndex {
        VariantIndex::start_with(false).await
    }

    /// [`VariantIndex::start`], the wheels' requirements using `variant_label` markers when
    /// `markers` is set.
    pub async fn start_with(markers: bool) -> VariantIndex {
        let mut files = HashMap::new();
        let mut links = String::new();
        let mut releases: Vec<(String, Value)> = RELEASES
            .iter()
            .map(|(version, name)| ((*version).to_string(), fixture(name)))
            .collect();
        releases.push((
            PEP_825_RELEASE.to_string(),
            as_pep_825(&fixture("torch-2.9.0-variants.json")),
        ));
        for (version, file) in &releases {
            let labels: Vec<&String> = file["variants"]
                .as_object()
                .expect("variants")
                .keys()
                .collect();
            for label in labels {
                let mut spec = WheelSpec::new("torch", version, TAGS);
                if markers {
                    // PyTorch's variant wheels require per-variant packages through PEP 817's
                    // `variant_label` marker, which released installers cannot parse.
                    spec = spec
                        .requires(&format!("filelock; variant_label == '{label}'"))
                        .requires("never-installed; variant_label == 'no_such_label'");
                }
                spec.dist_info_files
                    .push(("variant.json".to_string(), variant_json(file, label)));
                let wheel = spec.build();
                let name = format!("torch-{version}-{TAGS}-{label}.whl");
                let _ = writeln!(
                    links,
                    "<a href=\"/whl/variant/{name}#sha256={}\" data-dist-info-metadata=\"sha256={}\" data-core-metadata=\"sha256={}\">{name}</a><br/>",
                    wheel.sha256, wheel.metadata_sha256, wheel.metadata_sha256
                );
                files.insert(
                    format!("/whl/variant/{name}.metadata"),
                    Bytes::from(wheel.metadata),
                );
                files.insert(format!("/whl/variant/{name}"), Bytes::from(wheel.bytes));
            }
            let json = file.to_string();
            let name = format!("torch-{version}-variants.json");
            let _ = writeln!(
                links,
                "<a href=\"/whl/variant/{name}#sha256={}\">{name}</a><br/>",
                sha256_hex(json.as_bytes())
            );
            files.insert(format!("/whl/variant/{name}"), Bytes::from(json));
        }
        let torchaudio = local_labelled_torchaudio(&releases[1].1, &mut files);
        files.insert(
            "/whl/variant/torchaudio/".to_string(),
            Bytes::from(torchaudio),
        );
        files.insert(
            "/whl/variant/torch/".to_string(),
            Bytes::from(format!(
                "<!DOCTYPE html>\n<html>\n<body>\n<h1>Links for torch</h1>\n{links}</body>\n</html>\n"
            )),
        );
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let served = Served {
            files: Arc::new(files),
            hits: Arc::clone(&hits),
        };
        let router = Router::new().fallback(serve).with_state(served);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake variant index");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .await
                .expect("fake variant index");
        });
        VariantIndex { addr, hits, task }
    }

    /// The index root to give wheelgate as `pytorch_url`: `http://127.0.0.1:<port>/whl/variant`.
    pub fn url(&self) -> String {
        format!("http://{}/whl/variant", self.addr)
    }

    /// Requests for `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// The torchaudio 2.9.0 page: one local-labelled wheel per build that a label of `torch_29`
/// (torch 2.9.0's variants file) names, in `/whl/<backend>/`, as download.pytorch.org lists
/// them; the wheels go into `files`.
fn local_labelled_torchaudio(torch_29: &Value, files: &mut HashMap<String, Bytes>) -> String {
    let mut links = String::new();
    for label in torch_29["variants"].as_object().expect("variants").keys() {
        let Some(backend) = wheelgate_resolver::Backend::from_variant_label(label) else {
            continue;
        };
        let wheel = WheelSpec::new("torchaudio", &format!("2.9.0+{backend}"), TAGS).build();
        let name = format!("torchaudio-2.9.0+{backend}-{TAGS}.whl");
        let path = format!("/whl/{backend}/{}", name.replace('+', "%2B"));
        let _ = writeln!(
            links,
            "<a href=\"{path}#sha256={}\">{name}</a><br/>",
            wheel.sha256
        );
        files.insert(format!("/whl/{backend}/{name}"), Bytes::from(wheel.bytes));
    }
    format!(
        "<!DOCTYPE html>\n<html>\n<body>\n<h1>Links for torchaudio</h1>\n{links}</body>\n</html>\n"
    )
}

async fn serve(State(served): State<Served>, uri: Uri) -> Response {
    let path = crate::upstream::percent_decode(uri.path());
    *served.hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    match served.files.get(&path) {
        Some(bytes) if path.ends_with('/') => {
            ([(header::CONTENT_TYPE, "text/html")], bytes.clone()).into_response()
        }
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::FORBIDDEN.into_response(),
    }
}

/// The label in the `variant.json` of the torch installed in `--target` directory `dir`.
pub fn installed_variant(dir: &Path) -> Option<String> {
    let entries = std::fs::read_dir(dir).ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("torch-") && name.ends_with(".dist-info") {
            let text = std::fs::read_to_string(entry.path().join("variant.json")).ok()?;
            let file = wheelgate_resolver::variants::parse_variant_json(&text).ok()?;
            return file.single_variant().map(|(label, _)| label.to_string());
        }
    }
    None
}
