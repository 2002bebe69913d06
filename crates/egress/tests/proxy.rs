//! The egress proxy with a real HTTP client: allowed destinations are relayed, refused ones answer 403
//! with the egress header and never receive a connection (counted by testkit decoys).

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webpilot_core::egress::AllowEntry;
use webpilot_egress::{DomainPolicy, EgressProxy, EGRESS_DENIED_HEADER};
use webpilot_testkit::Decoy;

async fn proxy(allow: &str, avoid: Vec<String>) -> (EgressProxy, DomainPolicy) {
    let allow: Arc<[AllowEntry]> = AllowEntry::parse_list(allow).expect("allow").into();
    let policy = DomainPolicy::new(avoid);
    let p = EgressProxy::start(allow, policy.clone(), Duration::from_secs(5)).await.expect("proxy");
    (p, policy)
}

fn client(p: &EgressProxy) -> reqwest::Client {
    let proxy = reqwest::Proxy::all(p.proxy_server()).expect("proxy url");
    reqwest::Client::builder().proxy(proxy).build().expect("client")
}

/// Sends `CONNECT target` to the proxy, then (if tunnelled) a GET, and returns all that came back.
async fn connect_via(p: &EgressProxy, target: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(p.addr()).await.expect("proxy");
    let head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    s.write_all(head.as_bytes()).await.expect("write");
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).await.expect("read");
    let mut out = String::from_utf8_lossy(&buf[..n]).into_owned();
    if out.starts_with("HTTP/1.1 200") {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.expect("write");
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
        out.push_str(&String::from_utf8_lossy(&rest));
    }
    out
}

#[tokio::test]
async fn an_allowed_site_is_relayed_and_loopback_neighbours_are_refused() {
    let site_server = Decoy::on("127.0.0.1").await;
    let site = site_server.addr;
    let decoy_server = Decoy::on("127.0.0.2").await;
    let decoy = decoy_server.addr;
    let (p, policy) = proxy(&format!("127.0.0.1:{}", site.port()), vec![]).await;
    let c = client(&p);

    let ok = c.get(format!("http://{site}/")).send().await.expect("allowed");
    assert_eq!(ok.status(), 200);
    assert!(ok.text().await.expect("body").contains("decoy reached"));
    let by_name = c.get(format!("http://localhost:{}/", site.port())).send().await.expect("allowed by address");
    assert_eq!(by_name.status(), 200);

    for url in [
        format!("http://{decoy}/"),
        format!("http://127.0.0.1:{}/", decoy.port()),
        format!("http://rebind.localhost:{}/", decoy.port()),
        format!("http://[::ffff:127.0.0.2]:{}/", decoy.port()),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        let r = c.get(&url).send().await.expect("refusal is an answer");
        assert_eq!(r.status(), 403, "{url}");
        assert_eq!(r.headers().get(EGRESS_DENIED_HEADER).map(|v| v.as_bytes()), Some(&b"denied"[..]), "{url}");
    }
    // HTTPS and WebSocket go through CONNECT, refused before any connection is made.
    assert!(connect_via(&p, &decoy.to_string()).await.starts_with("HTTP/1.1 403"));
    let tunnel = connect_via(&p, &site.to_string()).await;
    assert!(tunnel.starts_with("HTTP/1.1 200") && tunnel.ends_with("decoy reached"), "{tunnel}");
    assert_eq!(decoy_server.hits(), 0, "the decoy must never be reached");
    assert_eq!(site_server.hits(), 3);
    assert!(policy.denied_count() >= 6);
    assert!(policy.denial_since(0, "169.254.169.254", 80).is_some());
}

#[tokio::test]
async fn avoided_domains_are_refused_even_when_allowed_by_address() {
    let site_server = Decoy::on("127.0.0.1").await;
    let site = site_server.addr;
    let (p, policy) = proxy("127.0.0.0/8", vec!["tracker.localhost".into()]).await;
    let c = client(&p);
    let r = c.get(format!("http://ads.tracker.localhost:{}/", site.port())).send().await.expect("answer");
    assert_eq!(r.status(), 403);
    let denial = policy.denial_since(0, "ads.tracker.localhost", site.port()).expect("logged");
    assert_eq!(denial.reason, webpilot_core::egress::DenyReason::AvoidedDomain);
    assert_eq!(site_server.hits(), 0);
    // Changing the session's domains takes effect on the next connection.
    policy.set(vec![]);
    let r = c.get(format!("http://ads.tracker.localhost:{}/", site.port())).send().await.expect("answer");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_dropped_proxy_stops_listening() {
    let (p, _) = proxy("", vec![]).await;
    let addr = p.addr();
    drop(p);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
