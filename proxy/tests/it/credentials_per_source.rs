//! A source's credentials go only to requests made for that source (issue 41 item 3): a PyTorch
//! index with its own token, a PyPI without access, and an internal index that requires basic
//! authentication and a key header on every request, one fake each on 127.0.0.1. A PyPI page that
//! links a file on the internal index's origin, and a PyTorch download redirected there, reach
//! the internal index with none of its credentials (so it refuses them, and the client never
//! gets its bytes); the internal index's own pages and files still carry them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use wheelgate_config::upstreams::BasicCredentials;
use wheelgate_config::{SecretSource, ServeConfig, SourceConfig};
use wheelgate_server::serve::{build_state, serve_until};

use super::fake_upstream::sha256;

const PYTORCH_TOKEN: &str = "tok-pytorch-3e1";
const INTERNAL_USER: &str = "ci";
const INTERNAL_PASSWORD: &str = "s3cret-internal";
/// `Basic base64("ci:s3cret-internal")`.
const INTERNAL_BASIC: &str = "Basic Y2k6czNjcmV0LWludGVybmFs";
const INTERNAL_KEY: &str = "key-internal-9f";
const SECRET: &[u8] = b"the internal index's private bytes";
const CPU_MACHINE: &str = r#"{"platform":"linux-x86_64","glibc":"2.36"}"#;
const TORCH_CPU: &str = "torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl";

/// One request as a fake saw it: its path and the credentials it carried.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    key: Option<String>,
}

/// What a fake answers at a path.
#[derive(Clone)]
enum Answer {
    Page(String),
    File(Vec<u8>),
    Redirect(String),
}

/// One fake index: answers by path, records every request, and refuses (401) any request
/// without `required` as its `Authorization` and `X-Internal-Key` (when set).
#[derive(Clone, Default)]
struct Fake {
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    required: Option<(&'static str, &'static str)>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    fn answer(&self, path: &str, answer: Answer) {
        self.answers
            .lock()
            .unwrap()
            .insert(path.to_string(), answer);
    }

    fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|seen| seen.path == path)
            .cloned()
            .collect()
    }
}

async fn serve_fake(State(fake): State<Fake>, uri: Uri, headers: HeaderMap) -> Response {
    let value = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let seen = Seen {
        path: uri.path().to_string(),
        authorization: value(header::AUTHORIZATION.as_str()),
        key: value("x-internal-key"),
    };
    fake.seen.lock().unwrap().push(seen.clone());
    if let Some((authorization, key)) = fake.required
        && (seen.authorization.as_deref() != Some(authorization)
            || seen.key.as_deref() != Some(key))
    {
        return (StatusCode::UNAUTHORIZED, "credentials required").into_response();
    }
    let answer = fake.answers.lock().unwrap().get(uri.path()).cloned();
    match answer {
        Some(Answer::Page(html)) => ([(header::CONTENT_TYPE, "text/html")], html).into_response(),
        Some(Answer::File(bytes)) => bytes.into_response(),
        Some(Answer::Redirect(to)) => (StatusCode::FOUND, [(header::LOCATION, to)]).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn start(required: Option<(&'static str, &'static str)>) -> (Fake, SocketAddr) {
    let fake = Fake {
        required,
        ..Fake::default()
    };
    let router = Router::new().fallback(serve_fake).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (fake, addr)
}

/// A PEP 503 page of one file, linked at `href` with the sha256 of `bytes`.
fn page(name: &str, href: &str, bytes: &[u8]) -> Answer {
    Answer::Page(format!(
        "<!DOCTYPE html><html><body>\n<a href=\"{href}#sha256={}\">{name}</a><br/>\n</body></html>",
        sha256(bytes)
    ))
}

struct Company {
    pytorch: Fake,
    pypi: Fake,
    internal: Fake,
    internal_addr: SocketAddr,
    proxy: SocketAddr,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

/// The three indexes and the proxy in front of them: `[upstreams.pytorch]` with a token, and
/// `[[sources]] internal` owning `acme-*` with basic authentication and a key header.
async fn company() -> Company {
    let (pytorch, pytorch_addr) = start(None).await;
    let (pypi, pypi_addr) = start(None).await;
    let (internal, internal_addr) = start(Some((INTERNAL_BASIC, INTERNAL_KEY))).await;
    let secrets = tempfile::tempdir().unwrap();
    let secret = |name: &str, value: &str| {
        let path = secrets.path().join(name);
        std::fs::write(&path, value).unwrap();
        SecretSource::File(path)
    };
    let mut config = ServeConfig {
        pytorch_url: format!("http://{pytorch_addr}/whl"),
        pypi_url: format!("http://{pypi_addr}/simple"),
        machine: Some(serde_json::from_str(CPU_MACHINE).unwrap()),
        read_sources_at_start: false,
        sources: vec![SourceConfig {
            name: "internal".to_string(),
            url: format!("http://{internal_addr}/simple"),
            projects: vec!["acme-*".to_string()],
            token: None,
            basic: Some(BasicCredentials {
                user: INTERNAL_USER.to_string(),
                password: secret("password", INTERNAL_PASSWORD),
            }),
            headers: [("X-Internal-Key".to_string(), secret("key", INTERNAL_KEY))].into(),
            ca_bundle: None,
            extra_origins: Vec::new(),
        }],
        ..ServeConfig::default()
    };
    config.upstreams.pytorch.token = Some(secret("pytorch-token", PYTORCH_TOKEN));
    let cache = tempfile::tempdir().unwrap();
    config.cache_dir = cache.path().to_path_buf();
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    tokio::spawn(serve_until(listener, state, std::future::pending()));
    Company {
        pytorch,
        pypi,
        internal,
        internal_addr,
        proxy,
        _dirs: (secrets, cache),
    }
}

/// The file `filename` of `project` through the proxy: status and body.
async fn download(proxy: SocketAddr, project: &str, filename: &str) -> (StatusCode, Vec<u8>) {
    let page = reqwest::get(format!("http://{proxy}/simple/{project}/"))
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK, "the page of `{project}`");
    let html = page.text().await.unwrap();
    assert!(
        html.contains(&filename.replace('+', "%2B")) || html.contains(filename),
        "`{filename}` is not on the proxy's page: {html}"
    );
    let response = reqwest::get(format!(
        "http://{proxy}/files/{project}/{}",
        filename.replace('+', "%2B")
    ))
    .await
    .unwrap();
    let status = response.status();
    (status, response.bytes().await.unwrap().to_vec())
}

fn carried_nothing(seen: &[Seen]) -> bool {
    seen.iter()
        .all(|seen| seen.authorization.is_none() && seen.key.is_none())
}

#[tokio::test]
async fn a_general_index_page_linking_the_internal_origin_gets_none_of_its_credentials() {
    let company = company().await;
    let secret_path = "/packages/evilpkg-1.0.tar.gz";
    company
        .internal
        .answer(secret_path, Answer::File(SECRET.to_vec()));
    let link = format!("http://{}{secret_path}", company.internal_addr);
    company.pypi.answer(
        "/simple/evilpkg/",
        page("evilpkg-1.0.tar.gz", &link, SECRET),
    );
    let (status, body) = download(company.proxy, "evilpkg", "evilpkg-1.0.tar.gz").await;
    assert_ne!(status, StatusCode::OK, "the internal file was served");
    assert!(
        !body.windows(SECRET.len()).any(|w| w == SECRET),
        "the client got the internal index's bytes"
    );
    let seen = company.internal.seen_at(secret_path);
    assert!(
        carried_nothing(&seen),
        "a request made for PyPI carried the internal index's credentials: {seen:?}"
    );
    assert!(carried_nothing(&company.pypi.seen.lock().unwrap()));
}

#[tokio::test]
async fn a_pytorch_redirect_to_the_internal_origin_is_followed_without_its_credentials() {
    let company = company().await;
    let secret_path = "/packages/presigned/torch.whl";
    company
        .internal
        .answer(secret_path, Answer::File(SECRET.to_vec()));
    let file_path = format!("/whl/cpu/{}", TORCH_CPU.replace('+', "%2B"));
    company
        .pytorch
        .answer("/whl/torch/", page(TORCH_CPU, &file_path, SECRET));
    company.pytorch.answer(
        &file_path,
        Answer::Redirect(format!("http://{}{secret_path}", company.internal_addr)),
    );
    let (status, body) = download(company.proxy, "torch", TORCH_CPU).await;
    assert_ne!(status, StatusCode::OK, "the internal file was served");
    assert!(!body.windows(SECRET.len()).any(|w| w == SECRET));
    // The PyTorch index got its own token, page and file.
    let bearer = format!("Bearer {PYTORCH_TOKEN}");
    for path in ["/whl/torch/".to_string(), file_path] {
        let seen = company.pytorch.seen_at(&path);
        assert!(!seen.is_empty(), "{path} was not asked");
        assert!(
            seen.iter()
                .all(|seen| seen.authorization.as_deref() == Some(bearer.as_str())),
            "{path}: {seen:?}"
        );
    }
    // The redirect reached the internal index with nothing: not its credentials, nor the
    // PyTorch index's token.
    let seen = company.internal.seen_at(secret_path);
    assert!(!seen.is_empty(), "the redirect was not followed");
    assert!(carried_nothing(&seen), "{seen:?}");
}

#[tokio::test]
async fn the_internal_index_still_gets_its_credentials_for_its_own_pages_and_files() {
    let company = company().await;
    let name = "acme_utils-1.0-py3-none-any.whl";
    let bytes = b"acme utils 1.0".to_vec();
    company.internal.answer(
        "/simple/acme-utils/",
        page(name, &format!("/packages/{name}"), &bytes),
    );
    company
        .internal
        .answer(&format!("/packages/{name}"), Answer::File(bytes.clone()));
    let (status, body) = download(company.proxy, "acme-utils", name).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, bytes);
    for path in [
        "/simple/acme-utils/".to_string(),
        format!("/packages/{name}"),
    ] {
        let seen = company.internal.seen_at(&path);
        assert!(!seen.is_empty(), "{path} was not asked");
        assert!(
            seen.iter()
                .all(|seen| seen.authorization.as_deref() == Some(INTERNAL_BASIC)
                    && seen.key.as_deref() == Some(INTERNAL_KEY)),
            "{path}: {seen:?}"
        );
    }
}
