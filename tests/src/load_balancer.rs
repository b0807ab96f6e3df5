//! A load balancer in front of wheelgate, for the client-network tests: it listens on
//! `127.0.0.1:0`, forwards every request to one address (the proxy, over IPv4 or IPv6 loopback,
//! which decides the peer address wheelgate sees), and appends `X-Forwarded-For: <client>` as
//! nginx's `proxy_add_x_forwarded_for` does, naming a client address from another network. pip
//! cannot send that header itself; through this hop real pip installs as a client of that
//! network would. Shut down on drop.

use std::net::{IpAddr, SocketAddr};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse as _, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Largest request body forwarded (pip sends none).
const MAX_REQUEST_BODY: usize = 1024 * 1024;

/// Headers that describe one connection, not the request (RFC 9110 §7.6.1): never forwarded.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "proxy-connection",
    "te",
];

#[derive(Clone)]
struct Forward {
    target: SocketAddr,
    client: IpAddr,
    http: reqwest::Client,
}

/// A running load balancer.
pub struct LoadBalancer {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl LoadBalancer {
    /// Forwards to `target`, saying the request came from `client`.
    pub async fn start(target: SocketAddr, client: IpAddr) -> LoadBalancer {
        let http = reqwest::Client::builder()
            .no_proxy()
            // Bodies pass through as the proxy encoded them, for pip to decode.
            .no_gzip()
            .no_brotli()
            .no_zstd()
            .no_deflate()
            // Redirects go back to pip as they are.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        let state = Forward {
            target,
            client,
            http,
        };
        let router = Router::new().fallback(forward).with_state(state);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the load balancer");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("load balancer");
        });
        LoadBalancer { addr, task }
    }

    /// `http://127.0.0.1:<port>/simple/`: the index URL pip is given.
    pub fn simple_url(&self) -> String {
        format!("http://{}/simple/", self.addr)
    }
}

impl Drop for LoadBalancer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(State(state): State<Forward>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", axum::http::uri::PathAndQuery::as_str);
    let url = format!("http://{}{path}", state.target);
    let Ok(body) = to_bytes(body, MAX_REQUEST_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let mut headers = parts.headers.clone();
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers.remove(axum::http::header::HOST);
    // Appended to whatever the client sent, as a real balancer does: wheelgate reads it right to
    // left, so a value the client wrote itself stays left of this one.
    let forwarded_for = HeaderName::from_static("x-forwarded-for");
    let value = match headers.get(&forwarded_for).and_then(|v| v.to_str().ok()) {
        Some(earlier) => format!("{earlier}, {}", state.client),
        None => state.client.to_string(),
    };
    headers.insert(
        forwarded_for,
        HeaderValue::from_str(&value).expect("an address is a valid header value"),
    );
    let response = match state
        .http
        .request(parts.method.clone(), &url)
        .headers(headers)
        .body(body)
        .send()
        .await
    {
        Ok(response) => response,
        Err(err) => return (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
    };
    let status = response.status();
    let mut headers = response.headers().clone();
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    // Streamed back as it arrives: wheels are not held in memory.
    let mut forwarded = Response::new(Body::from_stream(response.bytes_stream()));
    *forwarded.status_mut() = status;
    *forwarded.headers_mut() = headers;
    forwarded
}
