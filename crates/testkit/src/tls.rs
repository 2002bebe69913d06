//! A TLS site for the proxy tests: certificates made with `openssl` in a test's own folder, and a server on
//! 127.0.0.1 that answers every request with one fixed body. The egress crate's tunnel test and the
//! black-box HTTPS-through-proxies test both use it.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_util::task::AbortOnDropHandle;

/// Runs `openssl args…` in `dir`; its standard output.
///
/// # Panics
/// Panics when `openssl` fails (a broken test environment or a wrong call).
pub fn openssl(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The ring crypto provider, which the TLS configurations of these tests use.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS server on 127.0.0.1, stopped when dropped.
pub struct TlsSite {
    pub port: u16,
    _task: AbortOnDropHandle<()>,
}

impl TlsSite {
    /// Serves with `dir`'s `site.pem` and `site.key`, answering each request (once its head is read
    /// whole) with `body` as `content_type`, then closing.
    ///
    /// # Panics
    /// Panics when the certificate or key cannot be read, or no port can be bound.
    pub async fn start(dir: &Path, content_type: &str, body: &str) -> TlsSite {
        let certs = CertificateDer::pem_file_iter(dir.join("site.pem")).expect("pem").collect::<Result<Vec<_>, _>>();
        let key = PrivateKeyDer::from_pem_file(dir.join("site.key")).expect("key");
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(certs.expect("certs"), key)
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let answer: Arc<str> = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into();
        let task = webpilot_tasks::spawn_abort_on_drop("tls site", async move {
            while let Ok((s, _)) = listener.accept().await {
                let (acceptor, answer) = (acceptor.clone(), answer.clone());
                webpilot_tasks::spawn_owned("tls site connection", async move {
                    let Ok(mut tls) = acceptor.accept(s).await else { return };
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        TlsSite { port, _task: task }
    }
}
