//! An HTTPS server on 127.0.0.1 for the private-upstream tests: a CA made at test time (rcgen),
//! a server certificate it signs for `127.0.0.1`, and rustls serving an axum router. No system
//! trust store knows the CA, so a client reaches the server only when given the CA's PEM.
//! Shut down on drop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority for one test.
pub struct TestCa {
    /// The CA certificate, PEM: what a `ca_bundle` file holds.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "wheelgate test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        TestCa {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A rustls server configuration with a certificate for `names` (host names or IP
    /// addresses) signed by this CA.
    fn server_config(&self, names: &[&str]) -> Arc<ServerConfig> {
        let names: Vec<String> = names.iter().map(ToString::to_string).collect();
        let params = CertificateParams::new(names).unwrap();
        let key = KeyPair::generate().unwrap();
        let certificate = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let chain: Vec<CertificateDer<'static>> = vec![certificate.der().clone()];
        Arc::new(
            ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap(),
        )
    }
}

/// An HTTPS server; counts the handshakes its clients refused.
pub struct TlsServer {
    pub addr: SocketAddr,
    failed_handshakes: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsServer {
    /// Serves `router` with a certificate for `127.0.0.1` and the other `names` given.
    pub async fn start(ca: &TestCa, names: &[&str], router: Router) -> TlsServer {
        let mut all = vec!["127.0.0.1"];
        all.extend_from_slice(names);
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let failed_handshakes = Arc::new(AtomicUsize::new(0));
        let listener = TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(ca.server_config(&all)),
            failed_handshakes: Arc::clone(&failed_handshakes),
        };
        let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        TlsServer {
            addr,
            failed_handshakes,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Connections whose TLS handshake failed (a client that did not trust the certificate).
    pub fn failed_handshakes(&self) -> usize {
        self.failed_handshakes.load(Ordering::SeqCst)
    }
}

/// TCP accept, then the TLS handshake (bounded, so a silent client cannot hold the loop).
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    failed_handshakes: Arc<AtomicUsize>,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, peer)) = self.tcp.accept().await else {
                continue;
            };
            match tokio::time::timeout(Duration::from_secs(5), self.acceptor.accept(stream)).await {
                Ok(Ok(tls)) => return (tls, peer),
                _ => {
                    self.failed_handshakes.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}
