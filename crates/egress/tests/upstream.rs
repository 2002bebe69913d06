//! The egress proxy chained to real upstream proxies (testkit's HTTP and SOCKS5 servers): requests go
//! through the route's proxy with its credentials, the policy decides before the upstream hears of a
//! destination, and a failed proxy is named.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webpilot_core::egress::AllowEntry;
use webpilot_core::proxies::{ProxyRoute, ProxyServer};
use webpilot_egress::{DomainPolicy, EgressProxy, Upstream, EGRESS_DENIED_HEADER};
use webpilot_testkit::{Decoy, ProxyKind, TestProxy};

async fn egress(allow: &str, routes: Vec<ProxyRoute<Arc<Upstream>>>) -> (EgressProxy, DomainPolicy) {
    let allow: Arc<[AllowEntry]> = AllowEntry::parse_list(allow).expect("allow").into();
    let policy = DomainPolicy::new(vec![]);
    policy.set_routes(routes.into());
    let p = EgressProxy::start(allow, policy.clone(), Duration::from_secs(5)).await.expect("proxy");
    (p, policy)
}

fn user_proxy(server: &str, credentials: Option<(&str, &str)>, domains: &[&str]) -> ProxyRoute<Arc<Upstream>> {
    let mut s = ProxyServer::parse(server).expect("server");
    s.username = credentials.map(|c| c.0.to_owned());
    s.password = credentials.map(|c| c.1.to_owned());
    ProxyRoute { target: Arc::new(Upstream::user(s)), domains: domains.iter().map(|d| (*d).to_owned()).collect() }
}

fn client(p: &EgressProxy) -> reqwest::Client {
    let proxy = reqwest::Proxy::all(p.proxy_server()).expect("proxy url");
    reqwest::Client::builder().proxy(proxy).build().expect("client")
}

/// `CONNECT target` through the egress proxy, then a GET inside the tunnel: all that came back.
async fn connect_via(p: &EgressProxy, target: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(p.addr()).await.expect("proxy");
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.expect("write");
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
async fn both_proxy_kinds_carry_plain_and_tunnelled_requests_with_their_credentials() {
    let site = Decoy::on("127.0.0.1").await;
    let allow = format!("127.0.0.1:{},127.0.0.1", site.addr.port());
    for kind in [ProxyKind::Http, ProxyKind::Socks5] {
        let up = TestProxy::start(kind, "alice", "s3cret").await;
        let (p, _) = egress(&allow, vec![user_proxy(&up.server(), Some(("alice", "s3cret")), &[])]).await;
        let plain = client(&p).get(format!("http://localhost:{}/page", site.addr.port())).send().await.expect("get");
        assert_eq!(plain.status(), 200, "{kind:?}");
        assert!(plain.text().await.expect("body").contains("decoy reached"));
        let tunnelled = connect_via(&p, &site.addr.to_string()).await;
        assert!(tunnelled.contains("decoy reached"), "{kind:?}: {tunnelled}");
        let by_name = up.hits_for(&format!("localhost:{}", site.addr.port()));
        assert_eq!(by_name.len(), 1, "{kind:?}: {:?}", up.hits());
        // The name went to the proxy (remote DNS), with the right credentials.
        assert!(by_name[0].by_name && by_name[0].accepted, "{:?}", by_name[0]);
        assert_eq!(by_name[0].credentials.as_deref(), Some("alice:s3cret"));
        if kind == ProxyKind::Http {
            assert_eq!(by_name[0].method, "GET", "plain http goes in absolute form");
            assert_eq!(up.hits_for(&site.addr.to_string())[0].method, "CONNECT");
        }
        assert_eq!(up.hits_for(&site.addr.to_string()).len(), 1, "{kind:?}: {:?}", up.hits());
    }
    assert_eq!(site.hits(), 4, "every request reached the site through its proxy");
}

#[tokio::test]
async fn the_policy_decides_before_the_upstream_hears_of_a_destination() {
    let site = Decoy::on("127.0.0.1").await;
    let decoy = Decoy::on("127.0.0.2").await;
    let up = TestProxy::start(ProxyKind::Http, "u", "p").await;
    let (p, policy) =
        egress(&format!("127.0.0.1:{}", site.addr.port()), vec![user_proxy(&up.server(), Some(("u", "p")), &[])]).await;
    policy.set(vec!["avoided.example".to_owned()]);
    let c = client(&p);
    for url in [
        format!("http://{}/", decoy.addr),
        format!("http://127.0.0.1:{}/", decoy.addr.port()),
        format!("http://rebind.localhost:{}/", decoy.addr.port()),
        // A name that resolves here to a loopback address the policy refuses.
        format!("http://localhost:{}/", decoy.addr.port()),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://avoided.example/".to_owned(),
    ] {
        let r = c.get(&url).send().await.expect("answered");
        assert_eq!(r.status(), 403, "{url}");
        assert_eq!(r.headers()[EGRESS_DENIED_HEADER], "denied", "{url}");
    }
    assert!(connect_via(&p, &decoy.addr.to_string()).await.starts_with("HTTP/1.1 403"));
    assert_eq!(decoy.hits(), 0);
    assert!(up.hits().is_empty(), "the upstream heard of a refused destination: {:?}", up.hits());
}

#[tokio::test]
async fn each_host_takes_its_own_proxy_and_other_hosts_go_direct() {
    let site = Decoy::on("127.0.0.1").await;
    let a = TestProxy::start(ProxyKind::Http, "a", "pa").await;
    let b = TestProxy::start(ProxyKind::Socks5, "b", "pb").await;
    let routes = vec![
        user_proxy(&a.server(), Some(("a", "pa")), &["localhost"]),
        user_proxy(&b.server(), Some(("b", "pb")), &["*.localhost"]),
    ];
    let (p, _) = egress("127.0.0.1", routes).await;
    let c = client(&p);
    let port = site.addr.port();
    for host in ["localhost", "www.localhost", "127.0.0.1"] {
        let r = c.get(format!("http://{host}:{port}/")).send().await.expect("get");
        assert_eq!(r.status(), 200, "{host}");
    }
    assert_eq!(a.hits().iter().map(|h| h.target.clone()).collect::<Vec<_>>(), vec![format!("localhost:{port}")]);
    assert_eq!(b.hits().iter().map(|h| h.target.clone()).collect::<Vec<_>>(), vec![format!("www.localhost:{port}")]);
    assert_eq!(site.hits(), 3, "127.0.0.1 matched no entry and, with no default, went direct");
}

#[tokio::test]
async fn a_failed_proxy_is_named_for_what_went_wrong() {
    let site = Decoy::on("127.0.0.1").await;
    let allow = format!("127.0.0.1:{},127.0.0.1", site.addr.port());
    let target = format!("localhost:{}", site.addr.port());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let http = TestProxy::start(ProxyKind::Http, "u", "right").await;
    let socks = TestProxy::start(ProxyKind::Socks5, "u", "right").await;
    let unused = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let cases = [
        (format!("http://{dead}"), "right", target.clone(), format!("could not connect to the proxy {dead}")),
        (http.server(), "wrong", target.clone(), format!("the proxy {} refused the credentials (407)", http.addr)),
        (socks.server(), "wrong", target.clone(), format!("the proxy {} refused the credentials (SOCKS5", socks.addr)),
        (
            http.server(),
            "right",
            format!("localhost:{unused}"),
            format!("the proxy {} could not reach localhost", http.addr),
        ),
        (
            socks.server(),
            "right",
            format!("localhost:{unused}"),
            format!("the proxy {} could not reach localhost", socks.addr),
        ),
    ];
    for (server, password, dest, named) in cases {
        let (p, policy) = egress(&allow, vec![user_proxy(&server, Some(("u", password)), &[])]).await;
        let answer = connect_via(&p, &dest).await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{server} {dest}: {answer}");
        assert!(answer.contains("x-webpilot-egress: proxy"), "{answer}");
        let (host, port) = dest.split_once(':').expect("host:port");
        let failure = policy.failure_since(0, host, port.parse().expect("port")).expect("logged");
        let said = failure.failure.describe(&failure.host, failure.port);
        assert!(said.starts_with(&named), "{said:?} should start with {named:?}");
        assert!(!said.contains("right") && !said.contains("wrong") && !said.contains("resolve"), "{said}");
        // Plain http through the same proxy is named the same way.
        let r = client(&p).get(format!("http://{dest}/")).send().await.expect("answered");
        assert_eq!(r.status(), 502, "{server} {dest}");
    }
    assert_eq!(site.hits(), 0);
}

#[tokio::test]
async fn a_users_proxy_on_loopback_is_never_connected_unless_allowed() {
    let site = Decoy::on("127.0.0.1").await;
    let up = TestProxy::start(ProxyKind::Http, "u", "p").await;
    // The site is allowed, the proxy's port is not.
    let (p, policy) =
        egress(&format!("127.0.0.1:{}", site.addr.port()), vec![user_proxy(&up.server(), Some(("u", "p")), &[])]).await;
    let answer = connect_via(&p, &site.addr.to_string()).await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    let f = policy.failure_since(0, "127.0.0.1", site.addr.port()).expect("logged");
    assert_eq!(f.failure.describe(&f.host, f.port), format!("could not connect to the proxy {}", up.addr));
    assert!(up.hits().is_empty() && site.hits() == 0);
    // An operator's proxy is trusted.
    let server = ProxyServer::parse(&format!("http://u:p@{}", up.addr)).expect("server");
    let route = ProxyRoute { target: Arc::new(Upstream::operator("office", server)), domains: vec![] };
    policy.set_routes(vec![route].into());
    assert!(connect_via(&p, &site.addr.to_string()).await.contains("decoy reached"));
    assert_eq!(up.hits().len(), 1);
}
