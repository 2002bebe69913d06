//! The latency an upstream proxy adds per request: the same small page fetched through a session's egress
//! proxy going direct, and chained through a local HTTP proxy and a local SOCKS5 proxy (testkit's, with
//! credentials), both as a plain-http request and inside a `CONNECT` tunnel. Everything is on loopback,
//! so the figures are the service's own cost, not the network's. Prints a table; asserts nothing.
//!
//! `cargo bench -p webpilot-egress --bench upstream` (`WEBPILOT_BENCH_REQUESTS`, default 500 per row).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webpilot_core::egress::AllowEntry;
use webpilot_core::proxies::{ProxyRoute, ProxyServer};
use webpilot_egress::{DomainPolicy, EgressProxy, Upstream};
use webpilot_testkit::{Decoy, ProxyKind, TestProxy};

async fn egress(upstream: Option<&TestProxy>) -> EgressProxy {
    let allow: Arc<[AllowEntry]> = AllowEntry::parse_list("127.0.0.1").expect("allow").into();
    let policy = DomainPolicy::new(vec![]);
    if let Some(up) = upstream {
        let mut server = ProxyServer::parse(&up.server()).expect("server");
        server.username = Some("bench".into());
        server.password = Some("bench-pass".into());
        policy.set_routes(vec![ProxyRoute { target: Arc::new(Upstream::user(server)), domains: vec![] }].into());
    }
    EgressProxy::start(allow, policy, Duration::from_secs(5)).await.expect("egress proxy")
}

/// One plain-http GET through the egress proxy (absolute form), read to the end.
async fn plain(egress: &EgressProxy, site: &str) {
    let mut s = tokio::net::TcpStream::connect(egress.addr()).await.expect("egress");
    let req = format!("GET http://{site}/ HTTP/1.1\r\nHost: {site}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("read");
    assert!(out.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&out));
}

/// `CONNECT` then a GET inside the tunnel, read to the end.
async fn tunnel(egress: &EgressProxy, site: &str) {
    let mut s = tokio::net::TcpStream::connect(egress.addr()).await.expect("egress");
    s.write_all(format!("CONNECT {site} HTTP/1.1\r\nHost: {site}\r\n\r\n").as_bytes()).await.expect("write");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.expect("read"));
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    s.write_all(format!("GET / HTTP/1.1\r\nHost: {site}\r\n\r\n").as_bytes()).await.expect("write");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("read");
    assert!(out.starts_with(b"HTTP/1.1 200"));
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::var("WEBPILOT_BENCH_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let site = Decoy::on("127.0.0.1").await;
    let site = site_addr(&site);
    let http = TestProxy::start(ProxyKind::Http, "bench", "bench-pass").await;
    let socks = TestProxy::start(ProxyKind::Socks5, "bench", "bench-pass").await;
    let rows: [(&str, Option<&TestProxy>); 3] =
        [("direct", None), ("HTTP proxy", Some(&http)), ("SOCKS5 proxy", Some(&socks))];
    println!("| request ({n} each, sequential) | p50 | p95 | p50 added |");
    println!("|---|---:|---:|---:|");
    for kind in ["plain http", "CONNECT tunnel"] {
        let mut base = None;
        for (name, up) in rows {
            let e = egress(up).await;
            let mut times = Vec::with_capacity(n);
            for i in 0..n + n / 10 {
                let began = Instant::now();
                match kind {
                    "plain http" => plain(&e, &site).await,
                    _ => tunnel(&e, &site).await,
                }
                if i >= n / 10 {
                    times.push(began.elapsed());
                }
            }
            times.sort();
            let p50 = percentile(&times, 0.5);
            let added = base.map_or("–".to_owned(), |b: f64| format!("+{:.3} ms", p50 - b));
            base.get_or_insert(p50);
            println!("| {kind}, {name} | {p50:.3} ms | {:.3} ms | {added} |", percentile(&times, 0.95));
        }
    }
}

fn site_addr(d: &Decoy) -> String {
    d.addr.to_string()
}
