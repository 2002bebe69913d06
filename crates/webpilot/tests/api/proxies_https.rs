//! HTTPS pages in Chromium through each upstream proxy kind: a TLS site whose certificate no public CA
//! signed (made here with `openssl`), trusted by the operator with `--browser-trust-spki` (its key's
//! SHA-256), read through testkit's HTTP proxy (`CONNECT`) and its SOCKS5 proxy (remote DNS), each with
//! credentials; without the trust the same page fails on its certificate.

use crate::helpers::{Settings, TestApp};
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webpilot_testkit::{ProxyKind, TestProxy};

const TITLE: &str = "Secure fixture";

fn openssl(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

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

/// A TLS site on 127.0.0.1 answering every request with a page titled [`TITLE`]; its port.
async fn tls_site(dir: &Path) -> u16 {
    let certs = CertificateDer::pem_file_iter(dir.join("site.pem")).expect("pem").collect::<Result<Vec<_>, _>>();
    let key = PrivateKeyDer::from_pem_file(dir.join("site.key")).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs.expect("certs"), key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(s).await else { return };
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = format!("<!doctype html><title>{TITLE}</title><p>over TLS</p>");
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    port
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
    let port = tls_site(dir.path()).await;
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
