//! Real upstream proxies for tests, speaking the real protocols over TCP: an HTTP proxy (`CONNECT` and
//! absolute-form requests) that requires `Proxy-Authorization: Basic`, and a SOCKS5 proxy (RFC 1928)
//! that requires username/password (RFC 1929). Each logs every request it was asked to carry, with the
//! credentials offered, before it connects anywhere; a refused one is logged too.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request a test proxy was asked to carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyHit {
    /// `CONNECT`, `GET` (...) for the HTTP proxy; `SOCKS5` for the SOCKS proxy.
    pub method: String,
    /// The destination as the client named it: `host:port`.
    pub target: String,
    /// The path of an absolute-form HTTP request (`None` for a tunnel).
    pub path: Option<String>,
    /// Whether the destination came as a name (SOCKS5 `DOMAINNAME`; always true for a name over HTTP).
    pub by_name: bool,
    /// The credentials offered, `user:password` (`None`: none).
    pub credentials: Option<String>,
    /// Whether they were the right ones.
    pub accepted: bool,
}

/// The protocol a [`TestProxy`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    Http,
    Socks5,
}

/// A running test proxy; stops when dropped.
pub struct TestProxy {
    pub addr: SocketAddr,
    pub kind: ProxyKind,
    hits: Arc<Mutex<Vec<ProxyHit>>>,
    task: JoinHandle<()>,
}

impl TestProxy {
    /// Starts a proxy of `kind` on 127.0.0.1 that takes `user` / `password` and nothing else.
    ///
    /// # Panics
    /// Panics if no port can be bound (a broken test environment).
    pub async fn start(kind: ProxyKind, user: &str, password: &str) -> TestProxy {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind test proxy");
        let addr = listener.local_addr().expect("test proxy address");
        let hits = Arc::new(Mutex::new(Vec::new()));
        let log = hits.clone();
        let expected = format!("{user}:{password}");
        let task = webpilot_tasks::spawn_owned("test proxy", async move {
            while let Ok((s, _)) = listener.accept().await {
                let (log, expected) = (log.clone(), expected.clone());
                webpilot_tasks::spawn_owned("test proxy connection", async move {
                    let _ = match kind {
                        ProxyKind::Http => serve_http(s, &log, &expected).await,
                        ProxyKind::Socks5 => serve_socks5(s, &log, &expected).await,
                    };
                });
            }
        });
        TestProxy { addr, kind, hits, task }
    }

    /// `http://127.0.0.1:PORT` or `socks5://127.0.0.1:PORT`.
    pub fn server(&self) -> String {
        let scheme = match self.kind {
            ProxyKind::Http => "http",
            ProxyKind::Socks5 => "socks5",
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Everything it was asked to carry so far.
    pub fn hits(&self) -> Vec<ProxyHit> {
        self.hits.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// Requests for `target` (`host:port`).
    pub fn hits_for(&self, target: &str) -> Vec<ProxyHit> {
        self.hits().into_iter().filter(|h| h.target == target).collect()
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn log(hits: &Mutex<Vec<ProxyHit>>, hit: ProxyHit) {
    if let Ok(mut h) = hits.lock() {
        h.push(hit);
    }
}

/// Reads an HTTP head up to the blank line, byte by byte (nothing after it is consumed).
async fn read_head(s: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 {
            return Err(std::io::Error::other("head too long"));
        }
        head.push(s.read_u8().await?);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// `host:port` as the proxy dials it: `*.localhost` is loopback (RFC 6761), as browsers have it, since the
/// system resolver may not know it.
fn dialable(target: &str) -> String {
    match target.rsplit_once(':') {
        Some((host, port)) if host.ends_with(".localhost") => format!("127.0.0.1:{port}"),
        _ => target.to_owned(),
    }
}

fn decode_basic(value: &str) -> Option<String> {
    use base64::Engine;
    let b64 = value.trim().strip_prefix("Basic ")?;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?).ok()
}

async fn serve_http(mut s: TcpStream, hits: &Mutex<Vec<ProxyHit>>, expected: &str) -> std::io::Result<()> {
    let head = read_head(&mut s).await?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let credentials = headers.iter().find(|(k, _)| k == "proxy-authorization").and_then(|(_, v)| decode_basic(v));
    let accepted = credentials.as_deref() == Some(expected);
    let (authority, path) = if method == "CONNECT" {
        (target.clone(), String::new())
    } else {
        let rest = target.strip_prefix("http://").unwrap_or(&target);
        let (a, p) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let a = if a.contains(':') { a.to_owned() } else { format!("{a}:80") };
        (a, format!("/{p}"))
    };
    let logged_path = (method != "CONNECT").then(|| path.clone());
    let hit = ProxyHit {
        method: method.clone(),
        target: authority.clone(),
        path: logged_path,
        by_name: true,
        credentials,
        accepted,
    };
    log(hits, hit);
    if !accepted {
        let body = "proxy credentials required";
        let answer = format!(
            "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return s.write_all(answer.as_bytes()).await;
    }
    let Ok(mut site) = TcpStream::connect(dialable(&authority)).await else {
        return s.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
    };
    if method == "CONNECT" {
        s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
    } else {
        // Origin form to the site, without the proxy's own header, one request per connection.
        let mut forwarded = format!("{method} {path} HTTP/1.1\r\n");
        for (k, v) in headers.iter().filter(|(k, _)| !k.starts_with("proxy-") && k != "connection") {
            forwarded.push_str(&format!("{k}: {v}\r\n"));
        }
        forwarded.push_str("connection: close\r\n\r\n");
        site.write_all(forwarded.as_bytes()).await?;
    }
    tokio::io::copy_bidirectional(&mut s, &mut site).await.map(|_| ())
}

async fn serve_socks5(mut s: TcpStream, hits: &Mutex<Vec<ProxyHit>>, expected: &str) -> std::io::Result<()> {
    // Greeting: the client's methods; only username/password (2) is taken.
    let (version, n) = (s.read_u8().await?, s.read_u8().await?);
    let mut methods = vec![0u8; usize::from(n)];
    s.read_exact(&mut methods).await?;
    if version != 5 || !methods.contains(&2) {
        return s.write_all(&[5, 0xff]).await;
    }
    s.write_all(&[5, 2]).await?;
    // RFC 1929: VER ULEN UNAME PLEN PASSWD.
    let _ = s.read_u8().await?;
    let mut user = vec![0u8; usize::from(s.read_u8().await?)];
    s.read_exact(&mut user).await?;
    let mut pass = vec![0u8; usize::from(s.read_u8().await?)];
    s.read_exact(&mut pass).await?;
    let offered = format!("{}:{}", String::from_utf8_lossy(&user), String::from_utf8_lossy(&pass));
    let accepted = offered == expected;
    s.write_all(&[1, if accepted { 0 } else { 1 }]).await?;
    if !accepted {
        let hit = ProxyHit {
            method: "SOCKS5".into(),
            target: String::new(),
            path: None,
            by_name: false,
            credentials: Some(offered),
            accepted,
        };
        log(hits, hit);
        return Ok(());
    }
    // Request: VER CMD RSV ATYP DST.ADDR DST.PORT.
    let mut head = [0u8; 4];
    s.read_exact(&mut head).await?;
    let (host, by_name) = match head[3] {
        1 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await?;
            (std::net::Ipv4Addr::from(a).to_string(), false)
        }
        3 => {
            let mut name = vec![0u8; usize::from(s.read_u8().await?)];
            s.read_exact(&mut name).await?;
            (String::from_utf8_lossy(&name).into_owned(), true)
        }
        4 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await?;
            (format!("[{}]", std::net::Ipv6Addr::from(a)), false)
        }
        _ => return s.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let port = s.read_u16().await?;
    let target = format!("{host}:{port}");
    let hit = ProxyHit {
        method: "SOCKS5".into(),
        target: target.clone(),
        path: None,
        by_name,
        credentials: Some(offered),
        accepted,
    };
    log(hits, hit);
    if head[1] != 1 {
        return s.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    }
    let Ok(mut site) = TcpStream::connect(dialable(&target)).await else {
        // 5: connection refused.
        return s.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    };
    s.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    tokio::io::copy_bidirectional(&mut s, &mut site).await.map(|_| ())
}
