//! Client networks (`[[networks]]`, `trusted_proxies`) with real pip: one server, one
//! `/simple/` URL, and each network's clients install their own build with nothing configured
//! on them.
//!
//! Every client here runs on this host, so the networks are told apart honestly in two ways:
//! - by the connection's own peer address: the server listens dual-stack on `[::]`, one rule
//!   holds `127.0.0.0/8` (IPv4 clients, seen as `::ffff:127.0.0.1`) and another `::1`, and pip
//!   is pointed at `http://127.0.0.1:PORT/simple/` or `http://[::1]:PORT/simple/`;
//! - behind a load balancer: pip talks to a forwarding hop (`wheelgate_e2e::load_balancer`) that
//!   appends `X-Forwarded-For` naming a client of `10.1.0.0/16` or `10.2.0.0/16`, as nginx does;
//!   the hop's address is in `trusted_proxies`. The same hop reaching the server from an
//!   untrusted address (`::1`) has its header ignored: pip then gets the server's own machine's
//!   build, never the network it claims.

use std::net::{IpAddr, SocketAddr};

use wheelgate_config::NetworkRule;
use wheelgate_e2e::installers::{Installer, imported_version};
use wheelgate_e2e::load_balancer::LoadBalancer;
use wheelgate_e2e::machines::{self, TestMachine};
use wheelgate_e2e::proxy::Proxy;
use wheelgate_e2e::upstream::Upstreams;

use crate::support::{assert_routing_safe, install_ok, version};

/// The server's own machine: its build (cu126) is what a client no rule holds gets, distinct
/// from both networks' builds.
const SERVER_MACHINE: TestMachine = machines::GTX_1080_TI;

fn rule(name: &str, cidr: &str, machine: TestMachine) -> NetworkRule {
    NetworkRule {
        name: Some(name.to_string()),
        cidr: vec![cidr.to_string()],
        token: Some(wheelgate_resolver::token::encode(&machine.machine())),
        ..NetworkRule::default()
    }
}

/// A server on `[::]` (both loopbacks) with `rules` and `trusted_proxies`.
async fn dual_stack_proxy(
    upstreams: &Upstreams,
    rules: Vec<NetworkRule>,
    trusted_proxies: &[&str],
) -> Proxy {
    let trusted: Vec<String> = trusted_proxies.iter().map(ToString::to_string).collect();
    Proxy::start_with(upstreams, move |config| {
        config.listen = "[::]:0".parse().unwrap();
        config.machine = Some(SERVER_MACHINE.machine());
        config.networks = rules;
        config.trusted_proxies = trusted;
    })
    .await
}

/// pip installs torch through `url`; the build it got, also as imported.
async fn pip_torch(url: &str) -> String {
    let (dir, dists) = install_ok(Installer::Pip, url, &["torch"]).await;
    let installed = version(&dists, "torch").to_string();
    assert_eq!(
        imported_version(None, Some(dir.path()), "torch").await,
        installed
    );
    installed
}

/// The rule `/explain/torch/` names for a client reaching the server at `base`.
async fn explained_rule(base: &str) -> serde_json::Value {
    let body = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{base}/explain/torch/?format=json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let explanation: serde_json::Value = serde_json::from_str(&body).unwrap();
    explanation["client"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_from_two_networks_gets_each_networks_build_from_one_url() {
    let upstreams = Upstreams::start().await;
    let proxy = dual_stack_proxy(
        &upstreams,
        vec![
            rule("gpu-cluster", "127.0.0.0/8", machines::H100),
            rule("laptops", "::1/128", machines::CPU_ONLY),
        ],
        &[],
    )
    .await;
    let port = proxy.addr.port();
    let ipv4 = format!("http://127.0.0.1:{port}");
    let ipv6 = format!("http://[::1]:{port}");

    assert_eq!(
        pip_torch(&format!("{ipv4}/simple/")).await,
        machines::H100.torch()
    );
    assert_eq!(
        pip_torch(&format!("{ipv6}/simple/")).await,
        machines::CPU_ONLY.torch()
    );
    let client = explained_rule(&ipv4).await;
    assert!(client.to_string().contains("gpu-cluster"), "{client}");
    let client = explained_rule(&ipv6).await;
    assert!(client.to_string().contains("laptops"), "{client}");
    assert_routing_safe(&upstreams);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_behind_a_load_balancer_gets_the_forwarded_clients_build_only_from_a_trusted_hop() {
    let upstreams = Upstreams::start().await;
    let proxy = dual_stack_proxy(
        &upstreams,
        vec![
            rule("gpu-cluster", "10.1.0.0/16", machines::H100),
            rule("laptops", "10.2.0.0/16", machines::CPU_ONLY),
        ],
        &["127.0.0.1"],
    )
    .await;
    let port = proxy.addr.port();
    let over_ipv4 = SocketAddr::from(([127, 0, 0, 1], port));
    let over_ipv6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let gpu_client: IpAddr = "10.1.2.3".parse().unwrap();
    let laptop: IpAddr = "10.2.3.4".parse().unwrap();

    // The trusted balancer (127.0.0.1): each client's network decides.
    let balancer = LoadBalancer::start(over_ipv4, gpu_client).await;
    assert_eq!(
        pip_torch(&balancer.simple_url()).await,
        machines::H100.torch()
    );
    let client = explained_rule(&format!("http://{}", balancer.addr)).await;
    assert!(client.to_string().contains("gpu-cluster"), "{client}");
    let balancer = LoadBalancer::start(over_ipv4, laptop).await;
    assert_eq!(
        pip_torch(&balancer.simple_url()).await,
        machines::CPU_ONLY.torch()
    );

    // The same hop from an address not in trusted_proxies: its header names the GPU network,
    // and is ignored; pip gets the server's own machine's build.
    let untrusted = LoadBalancer::start(over_ipv6, gpu_client).await;
    assert_eq!(
        pip_torch(&untrusted.simple_url()).await,
        SERVER_MACHINE.torch()
    );
    let client = explained_rule(&format!("http://{}", untrusted.addr)).await;
    assert!(!client.to_string().contains("gpu-cluster"), "{client}");
    assert_routing_safe(&upstreams);
}
