//! TLS to the shared services: a node reaches PostgreSQL (`sslmode=require`) and a TLS-only Redis
//! (`rediss://`, verified against the trust store, here a test CA given by `SSL_CERT_FILE`).

use crate::cluster::Cluster;
use crate::helpers::{free_port, Server, TestApp};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use webpilot_store::Store;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA (`ca.pem`) and a server certificate for 127.0.0.1 signed by it (`server.pem`, `server.key`).
fn certificates(dir: &Path) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    openssl(
        dir,
        &[
            &["req", "-x509"],
            &ec[..],
            &["-subj", "/CN=webpilot test CA", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2"],
        ]
        .concat(),
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("write");
    let subject = ["-subj", "/CN=127.0.0.1"];
    openssl(dir, &[&["req"], &ec[..], &subject[..], &["-keyout", "server.key", "-out", "server.csr"]].concat());
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// `redis-server` answering on a TLS port only; killed when dropped.
struct TlsRedis {
    child: Child,
    port: u16,
}

impl TlsRedis {
    async fn start(dir: &Path) -> TlsRedis {
        let port = free_port();
        let child = Command::new("redis-server")
            .current_dir(dir)
            .args(["--port", "0", "--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
            .args(["--tls-cert-file", "server.pem", "--tls-key-file", "server.key", "--tls-ca-cert-file", "ca.pem"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server");
        let redis = TlsRedis { child, port };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return redis;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not listen on its TLS port");
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_node_reaches_postgres_and_redis_over_tls() {
    let certs = tempfile::tempdir().expect("tempdir");
    certificates(certs.path());
    let redis = TlsRedis::start(certs.path()).await;
    let redis_url = format!("rediss://127.0.0.1:{}", redis.port);
    let cluster = Cluster::new().await;
    let app_name = format!("webpilot-tls-{}", uuid::Uuid::new_v4().simple());
    let database_url = format!("{}&sslmode=require&application_name={app_name}", cluster.db.url);

    // The CA is not trusted by this process: the node refuses to start rather than skip verification.
    let err = TestApp::start_error(&["--redis-url", &redis_url]).await;
    assert!(err.starts_with("Redis:"), "{err}");

    let data = tempfile::tempdir().expect("tempdir");
    let ca = certs.path().join("ca.pem");
    let ca = ca.to_str().expect("utf-8 path");
    let node = Server::start_with_env(
        data.path(),
        &["--database-url", &database_url, "--redis-url", &redis_url, "--redis-prefix", &cluster.prefix],
        &[("SSL_CERT_FILE", ca)],
    )
    .await;
    let health: serde_json::Value =
        reqwest::get(format!("{}/start/health", node.base)).await.expect("health").json().await.expect("JSON");
    assert_eq!(health["redis"], "connected", "{health}");

    // A request that uses both: the key is looked up in PostgreSQL, the rate window kept in Redis.
    let store = Store::open_url(&cluster.db.url).await.expect("store");
    let user = store.create_user("tls", 1_000_000).await.expect("user");
    let (_, key) = store.create_api_key(&user.id, "tls", None).await.expect("key");
    let r = reqwest::Client::new()
        .post(format!("{}/start/send-message", node.base))
        .bearer_auth(&key)
        .json(&serde_json::json!({ "sessionId": "ses_missing", "message": { "actionType": "state", "newState": "stop" } }))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 404);
    assert!(r.headers().contains_key("x-ratelimit-remaining"));
    let health: serde_json::Value =
        reqwest::get(format!("{}/start/health", node.base)).await.expect("health").json().await.expect("JSON");
    assert_eq!(health["redis"], "connected", "{health}");

    // Every connection the node holds to PostgreSQL is encrypted.
    let (all, encrypted) = cluster.db.tls_connections(&app_name).await.expect("pg_stat_ssl");
    assert!(all > 0 && encrypted == all, "{encrypted} of {all} connections use TLS");
    drop(node);
    drop(redis);
}
