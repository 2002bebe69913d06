//! HTTPS through an upstream proxy, end to end: a TLS site with a certificate from a test CA, reached
//! inside the egress proxy's `CONNECT` tunnel chained through testkit's HTTP and SOCKS5 proxies. The TLS
//! session runs between the client and the site; the proxies carry bytes and see only the `host:port`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use webpilot_core::egress::AllowEntry;
use webpilot_core::proxies::{ProxyRoute, ProxyServer};
use webpilot_egress::{DomainPolicy, EgressProxy, Upstream};
use webpilot_testkit::tls::{openssl, provider};
use webpilot_testkit::{ProxyKind, TestProxy, TlsSite};

/// A test CA (`ca.pem`) and a certificate for localhost signed by it (`site.pem`, `site.key`).
fn certificates(dir: &Path) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    let ca =
        ["req", "-x509", "-subj", "/CN=webpilot proxy test CA", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2"];
    openssl(dir, &[&ca[..], &ec[..]].concat());
    std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").expect("write");
    openssl(
        dir,
        &[&["req", "-subj", "/CN=localhost", "-keyout", "site.key", "-out", "site.csr"][..], &ec[..]].concat(),
    );
    let sign = ["x509", "-req", "-in", "site.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"];
    openssl(dir, &[&sign[..], &["-days", "2", "-extfile", "san.ext", "-out", "site.pem"][..]].concat());
}

#[tokio::test]
async fn an_https_page_is_fetched_through_each_proxy_kind_inside_connect() {
    let dir = tempfile::tempdir().expect("tempdir");
    certificates(dir.path());
    let site = TlsSite::start(dir.path(), "text/plain", "secure page").await;
    let port = site.port;
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(dir.path().join("ca.pem")).expect("ca")).expect("trust the test CA");
    let client = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    for kind in [ProxyKind::Http, ProxyKind::Socks5] {
        let up = TestProxy::start(kind, "tls-user", "tls-pass").await;
        let mut server = ProxyServer::parse(&up.server()).expect("server");
        server.username = Some("tls-user".into());
        server.password = Some("tls-pass".into());
        let policy = DomainPolicy::new(vec![]);
        policy.set_routes(vec![ProxyRoute { target: Arc::new(Upstream::user(server)), domains: vec![] }].into());
        let allow: Arc<[AllowEntry]> = AllowEntry::parse_list("127.0.0.1").expect("allow").into();
        let egress = EgressProxy::start(allow, policy, Duration::from_secs(5)).await.expect("egress");

        let mut s = tokio::net::TcpStream::connect(egress.addr()).await.expect("egress");
        let target = format!("localhost:{port}");
        s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.expect("write");
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(s.read_u8().await.expect("read"));
        }
        assert!(head.starts_with(b"HTTP/1.1 200"), "{kind:?}: {}", String::from_utf8_lossy(&head));
        let name = ServerName::try_from("localhost").expect("name");
        let mut tls = connector.connect(name, s).await.expect("TLS with the site through both proxies");
        tls.write_all(format!("GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.expect("write");
        let mut page = Vec::new();
        let _ = tls.read_to_end(&mut page).await;
        let page = String::from_utf8_lossy(&page);
        assert!(page.starts_with("HTTP/1.1 200") && page.ends_with("secure page"), "{kind:?}: {page}");
        let hits = up.hits_for(&target);
        assert_eq!(hits.len(), 1, "{kind:?}: {:?}", up.hits());
        assert!(hits[0].accepted && hits[0].by_name && hits[0].credentials.as_deref() == Some("tls-user:tls-pass"));
        assert_eq!(hits[0].path, None, "the proxy carried a tunnel and saw no request");
    }
}
