//! Chaining a connection the egress policy already allowed to a session's upstream proxy: an HTTP(S)
//! proxy through `CONNECT` with `Proxy-Authorization: Basic`, or SOCKS5 with username/password (RFC
//! 1929) and the destination sent by name, so the proxy resolves it. A failure names the proxy (by its
//! `host:port`, or an operator proxy's name), never its credentials.

use crate::failure::EgressFailure;
use base64::Engine;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use webpilot_core::egress::{allowed_addrs, AllowEntry, SessionPolicy};
use webpilot_core::proxies::{ProxyRoute, ProxyScheme, ProxyServer};

/// Longest answer head taken from an HTTP proxy to `CONNECT`.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// A byte stream to a destination: direct TCP, or through a proxy (maybe over TLS).
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
pub(crate) type Stream = Box<dyn Io>;

/// One upstream proxy of a session, as the egress proxy uses it.
#[derive(Debug)]
pub struct Upstream {
    pub server: ProxyServer,
    /// How failures name it: `host:port`, or an operator proxy's name (its address is not shown).
    pub label: String,
    /// Whether its own address must pass the egress policy at each connection (a user's proxy); an
    /// operator's proxy is trusted.
    pub checked: bool,
}

impl Upstream {
    /// A user's proxy: checked, and named by its address.
    pub fn user(server: ProxyServer) -> Upstream {
        Upstream { label: server.authority(), server, checked: true }
    }

    /// An operator's proxy: trusted, and named by its name only.
    pub fn operator(name: &str, server: ProxyServer) -> Upstream {
        Upstream { label: format!("\"{name}\""), server, checked: false }
    }
}

/// A session's routes: which upstream each host leaves through (see `webpilot_core::proxies::route_for`).
pub type Routes = Arc<[ProxyRoute<Arc<Upstream>>]>;

/// A tunnel to `host:port` through `up` (`host` canonical; a name is resolved by the proxy).
pub(crate) async fn tunnel(
    up: &Upstream,
    host: &str,
    port: u16,
    allow: &[AllowEntry],
    timeout: Duration,
) -> Result<Stream, EgressFailure> {
    let stream = connect(up, allow, timeout).await?;
    let handshake = async {
        match up.server.scheme {
            ProxyScheme::Http | ProxyScheme::Https => http_connect(stream, up, host, port).await,
            ProxyScheme::Socks5 => socks5(stream, up, host, port).await,
        }
    };
    tokio::time::timeout(timeout, handshake).await.unwrap_or_else(|_| {
        Err(EgressFailure::ProxyNoRoute { proxy: up.label.clone(), why: "it did not answer in time".into() })
    })
}

/// A connection to the proxy itself (TLS for `https://`). A user's proxy is connected only at an address
/// the policy allows, checked again here so a DNS answer that changed since the start cannot slip past.
pub(crate) async fn connect(up: &Upstream, allow: &[AllowEntry], timeout: Duration) -> Result<Stream, EgressFailure> {
    let s = &up.server;
    let unreachable = || EgressFailure::ProxyUnreachable { proxy: up.label.clone() };
    let addrs = match tokio::time::timeout(timeout, crate::resolve::resolve(&s.host, s.port)).await {
        Ok(Ok(addrs)) if !addrs.is_empty() => addrs,
        _ => return Err(unreachable()),
    };
    let addrs = if up.checked {
        let policy = SessionPolicy { allow, avoid: &[] };
        allowed_addrs(&s.host, &addrs, s.port, policy).map_err(|reason| {
            tracing::warn!(proxy = %up.label, reason = %reason, "an upstream proxy's address is refused");
            unreachable()
        })?
    } else {
        addrs
    };
    let mut tcp = None;
    for addr in addrs {
        if let Ok(Ok(stream)) = tokio::time::timeout(timeout, TcpStream::connect((addr, s.port))).await {
            tcp = Some(stream);
            break;
        }
    }
    let tcp = tcp.ok_or_else(unreachable)?;
    if s.scheme != ProxyScheme::Https {
        return Ok(Box::new(tcp));
    }
    let name = rustls::pki_types::ServerName::try_from(s.host.clone()).map_err(|_| unreachable())?;
    let tls = tokio_rustls::TlsConnector::from(tls_config());
    match tokio::time::timeout(timeout, tls.connect(name, tcp)).await {
        Ok(Ok(stream)) => Ok(Box::new(stream)),
        Ok(Err(e)) => {
            tracing::info!(proxy = %up.label, error = %e, "TLS to an upstream proxy failed");
            Err(unreachable())
        }
        Err(_) => Err(unreachable()),
    }
}

/// The TLS client settings for `https://` proxies: the web's public roots.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("ring supports rustls's default protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// `Proxy-Authorization: Basic ...` for `server`'s credentials, when it has any.
pub(crate) fn basic_auth(server: &ProxyServer) -> Option<String> {
    let user = server.username.as_deref()?;
    let pass = server.password.as_deref().unwrap_or("");
    Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))))
}

/// `CONNECT host:port` and the proxy's answer: 2xx opens the tunnel, 407 is refused credentials, anything
/// else is the proxy not reaching the destination.
async fn http_connect(mut stream: Stream, up: &Upstream, host: &str, port: u16) -> Result<Stream, EgressFailure> {
    let authority = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = basic_auth(&up.server) {
        head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    let closed = |why: &str| EgressFailure::ProxyNoRoute { proxy: up.label.clone(), why: why.to_owned() };
    stream.write_all(head.as_bytes()).await.map_err(|_| closed("it closed the connection"))?;
    // Byte by byte up to the blank line, so nothing of the tunnel is read here.
    let mut answer = Vec::with_capacity(256);
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_HEAD_BYTES {
            return Err(closed("its answer to CONNECT was too long"));
        }
        let byte = stream.read_u8().await.map_err(|_| closed("it closed the connection"))?;
        answer.push(byte);
    }
    let status = std::str::from_utf8(&answer)
        .ok()
        .and_then(|a| a.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| closed("it did not answer CONNECT in HTTP"))?;
    match status {
        200..=299 => Ok(stream),
        407 => Err(EgressFailure::ProxyAuth { proxy: up.label.clone(), detail: "407".into() }),
        other => Err(closed(&format!("it answered {other}"))),
    }
}

/// The SOCKS5 handshake, the destination given by name (remote DNS).
async fn socks5(stream: Stream, up: &Upstream, host: &str, port: u16) -> Result<Stream, EgressFailure> {
    use tokio_socks::tcp::Socks5Stream;
    use tokio_socks::Error as E;
    let result = match (up.server.username.as_deref(), up.server.password.as_deref()) {
        (Some(user), pass) => {
            Socks5Stream::connect_with_password_and_socket(stream, (host, port), user, pass.unwrap_or("")).await
        }
        (None, _) => Socks5Stream::connect_with_socket(stream, (host, port)).await,
    };
    let label = up.label.clone();
    match result {
        Ok(s) => Ok(Box::new(s)),
        Err(E::PasswordAuthFailure(_)) | Err(E::NoAcceptableAuthMethods) => {
            Err(EgressFailure::ProxyAuth { proxy: label, detail: "SOCKS5 username/password".into() })
        }
        Err(E::Io(_)) => Err(EgressFailure::ProxyNoRoute { proxy: label, why: "it closed the connection".into() }),
        Err(other) => Err(EgressFailure::ProxyNoRoute { proxy: label, why: other.to_string() }),
    }
}
