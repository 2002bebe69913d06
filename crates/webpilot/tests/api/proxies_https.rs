//! HTTPS pages in Chromium through each upstream proxy kind: a TLS site whose certificate no public CA
//! signed (made here with `openssl`), trusted by the operator with `--browser-trust-spki` (its key's
//! SHA-256), read through testkit's HTTP proxy (`CONNECT`) and its SOCKS5 proxy (remote DNS), each with
//! credentials; without the trust the same page fails on its certificate.

use crate::helpers::{Settings, TestApp};
use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::Path;
use webpilot_testkit::tls::openssl;
use webpilot_testkit::{ProxyKind, TestProxy, TlsSite};

const TITLE: &str = "Secure fixture";

/// A self-signed certificate for localhost and 127.0.0.1 (`site.pem`, `site.key`); the base64 SHA-256 of
/// its SubjectPublicKeyInfo.
fn certificate(dir: &Path) -> String {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            "site.key",
            "-out",
            "site.pem",
            "-days",
            "2",
        ],
    );
    let public = openssl(dir, &["x509", "-pubkey", "-noout", "-in", "site.pem"]);
    std::fs::write(dir.join("public.pem"), public).expect("write the public key");
    let spki = openssl(dir, &["pkey", "-pubin", "-in", "public.pem", "-outform", "der"]);
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(spki))
}

/// The harness's settings with `extra` added to its `--egress-allow`.
fn also_allow(mut s: Settings, extra: &str) -> Settings {
    let i = s.args.iter().position(|a| a == "--egress-allow").expect("the harness allows its site");
    s.args[i + 1] = format!("{},{extra}", s.args[i + 1]);
    s
}

/// A session whose pages on 127.0.0.1 go through `http` and on localhost through `socks`.
async fn session_through(app: &TestApp, key: &str, http: &TestProxy, socks: &TestProxy) -> String {
    let body = json!({ "proxies": [
        {"server": http.server(), "username": "alice", "password": "a-pass", "domains": ["127.0.0.1"]},
        {"server": socks.server(), "username": "bob", "password": "b-pass", "domains": ["localhost"]},
    ]});
    let r = app.post("/start/start-session", key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["sessionId"].as_str().expect("sessionId").to_owned()
}

#[tokio::test]
async fn an_https_page_with_a_trusted_key_is_read_through_each_proxy_kind_and_refused_untrusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spki = certificate(dir.path());
    let body = format!("<!doctype html><title>{TITLE}</title><p>over TLS</p>");
    let site = TlsSite::start(dir.path(), "text/html", &body).await;
    let port = site.port;
    let http = TestProxy::start(ProxyKind::Http, "alice", "a-pass").await;
    let socks = TestProxy::start(ProxyKind::Socks5, "bob", "b-pass").await;
    let allowed =
        format!("127.0.0.1:{},127.0.0.1:{},127.0.0.1:{port},localhost:{port}", http.addr.port(), socks.addr.port());

    let app = TestApp::spawn_with(|s| also_allow(s, &allowed).arg("browser-trust-spki", &spki)).await;
    let key = app.key().await;
    let sid = session_through(&app, &key, &http, &socks).await;
    for host in ["127.0.0.1", "localhost"] {
        let done = app.run_in(&key, &sid, &format!("open https://{host}:{port}/ then report the title")).await;
        assert_eq!((&done["type"], &done["data"]["message"]), (&json!("task_completed"), &json!(TITLE)), "{done}");
    }
    // Each through its own proxy, as a tunnel carrying the host, with that proxy's credentials.
    let tunnels = http.hits_for(&format!("127.0.0.1:{port}"));
    assert!(!tunnels.is_empty(), "{:?}", http.hits());
    assert!(tunnels.iter().all(|h| h.method == "CONNECT" && h.path.is_none() && h.accepted), "{tunnels:?}");
    assert!(tunnels.iter().all(|h| h.credentials.as_deref() == Some("alice:a-pass")), "{tunnels:?}");
    let by_socks = socks.hits_for(&format!("localhost:{port}"));
    assert!(!by_socks.is_empty() && by_socks.iter().all(|h| h.by_name && h.accepted), "{:?}", socks.hits());
    app.state(&key, &sid, "terminate").await;
    app.stop().await;

    // Without the operator's trust the certificate is refused, through the same proxy.
    let untrusting = TestApp::spawn_with(|s| also_allow(s, &allowed)).await;
    let key = untrusting.key().await;
    let sid = session_through(&untrusting, &key, &http, &socks).await;
    let failed = untrusting.run_in(&key, &sid, &format!("open https://127.0.0.1:{port}/ then report the title")).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains("net::ERR_CERT_AUTHORITY_INVALID"), "a certificate error: {failed}");
    untrusting.stop().await;
}
