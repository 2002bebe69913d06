//! The per-context HTTP proxy: `CONNECT host:port` tunnels (HTTPS, WebSocket) and absolute-form plain
//! HTTP requests, each destination decided by the session's policy before a byte is sent to it. It
//! listens on 127.0.0.1 on a port of its own (or, for a remote browser, on an address that browser's host
//! reaches, accepting that host alone) and stops, with every connection it carries, when dropped.

use crate::connect::{Connector, Hop};
use crate::failure::EgressFailure;
use crate::policy::DomainPolicy;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use webpilot_core::egress::AllowEntry;

/// Response header on the proxy's own error answers (`denied`, `unresolved`, `refused`, `unreachable`), so
/// they can be told apart from the site's own 403 or 502.
pub const EGRESS_DENIED_HEADER: &str = "x-webpilot-egress";

type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// Where a proxy listens and whom it serves.
#[derive(Debug, Clone)]
pub struct ProxyListen {
    /// The address to listen on (and to hand to the browser).
    pub ip: IpAddr,
    /// The only peers served (a remote browser's host); `None` serves any, for a loopback listener.
    pub peers: Option<Arc<[IpAddr]>>,
}

impl Default for ProxyListen {
    fn default() -> Self {
        ProxyListen { ip: IpAddr::V4(Ipv4Addr::LOCALHOST), peers: None }
    }
}

/// A running proxy for one browser context.
pub struct EgressProxy {
    addr: SocketAddr,
    cancel: CancellationToken,
}

impl EgressProxy {
    /// Starts a proxy deciding by `allow` (the operator's entries) and `policy` (the session's).
    /// `timeout` bounds resolving and connecting.
    pub async fn start(
        allow: Arc<[AllowEntry]>,
        policy: DomainPolicy,
        timeout: Duration,
    ) -> std::io::Result<EgressProxy> {
        Self::start_on(ProxyListen::default(), allow, policy, timeout).await
    }

    /// As [`EgressProxy::start`], listening and serving as `listen` says.
    pub async fn start_on(
        listen: ProxyListen,
        allow: Arc<[AllowEntry]>,
        policy: DomainPolicy,
        timeout: Duration,
    ) -> std::io::Result<EgressProxy> {
        let listener = TcpListener::bind(SocketAddr::from((listen.ip, 0))).await?;
        let addr = listener.local_addr()?;
        let cancel = CancellationToken::new();
        let connector = Arc::new(Connector { allow, policy, timeout });
        webpilot_tasks::spawn_owned("egress accept", accept_loop(listener, listen.peers, connector, cancel.clone()));
        Ok(EgressProxy { addr, cancel })
    }

    /// The value for `Target.createBrowserContext`'s `proxyServer`.
    pub fn proxy_server(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn accept_loop(
    listener: TcpListener,
    peers: Option<Arc<[IpAddr]>>,
    connector: Arc<Connector>,
    cancel: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "egress proxy accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if peers.as_ref().is_some_and(|p| !p.contains(&peer.ip().to_canonical())) {
            tracing::warn!(peer = %peer.ip(), "egress proxy refused a connection from another host than its browser's");
            continue;
        }
        let connector = connector.clone();
        let cancel = cancel.clone();
        webpilot_tasks::spawn_owned("egress connection", async move {
            let svc_cancel = cancel.clone();
            let svc = service_fn(move |req| handle(req, connector.clone(), svc_cancel.clone()));
            let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).with_upgrades();
            tokio::select! {
                _ = cancel.cancelled() => {}
                r = conn => if let Err(e) = r { tracing::debug!(error = %e, "egress proxy connection ended") },
            }
        });
    }
    tracing::debug!("egress proxy stopped");
}

async fn handle(
    req: Request<Incoming>,
    connector: Arc<Connector>,
    cancel: CancellationToken,
) -> Result<Response<ProxyBody>, Infallible> {
    if req.method() == Method::CONNECT {
        Ok(tunnel(req, &connector, cancel).await)
    } else {
        Ok(forward(req, &connector, cancel).await)
    }
}

/// `CONNECT host:port`: answer 200 once the allowed destination is connected, then relay bytes.
async fn tunnel(req: Request<Incoming>, connector: &Connector, cancel: CancellationToken) -> Response<ProxyBody> {
    let Some(authority) = req.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port".into());
    };
    let port = authority.port_u16().unwrap_or(443);
    let mut upstream = match connector.open(authority.host(), port).await {
        Ok(s) => s,
        Err(f) => return refusal(&f, authority.host(), port),
    };
    webpilot_tasks::spawn_owned("egress tunnel", async move {
        let upgraded = match hyper::upgrade::on(req).await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(error = %e, "egress tunnel upgrade failed");
                return;
            }
        };
        let mut client = TokioIo::new(upgraded);
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
        }
    });
    Response::new(Empty::new().map_err(|never| match never {}).boxed())
}

/// An absolute-form `GET http://host/...`: forwarded in origin form over a fresh connection.
async fn forward(mut req: Request<Incoming>, connector: &Connector, cancel: CancellationToken) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    let (Some("http"), Some(host)) = (uri.scheme_str(), uri.host()) else {
        return text(StatusCode::BAD_REQUEST, "the proxy takes CONNECT or absolute http:// requests".into());
    };
    let port = uri.port_u16().unwrap_or(80);
    let (upstream, hop) = match connector.open_for_request(host, port).await {
        Ok(pair) => pair,
        Err(f) => return refusal(&f, host, port),
    };
    let no_answer = |e: hyper::Error| {
        let failure = EgressFailure::Unreachable(format!("the site did not answer: {e}"));
        connector.record(host, port, failure.clone());
        refusal(&failure, host, port)
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
        Ok(pair) => pair,
        Err(e) => return no_answer(e),
    };
    webpilot_tasks::spawn_owned("egress forward", async move {
        tokio::select! {
            _ = cancel.cancelled() => {}
            r = conn => if let Err(e) = r { tracing::debug!(error = %e, "egress upstream connection ended") },
        }
    });
    req.headers_mut().remove("proxy-connection");
    req.headers_mut().remove("proxy-authorization");
    match &hop {
        // To an HTTP proxy the request stays in absolute form, with the proxy's own credentials.
        Hop::Proxy(up) => {
            if let Some(auth) = crate::upstream::basic_auth(&up.server).and_then(|a| HeaderValue::from_str(&a).ok()) {
                req.headers_mut().insert(hyper::header::PROXY_AUTHORIZATION, auth);
            }
        }
        Hop::Site => {
            let origin_form = uri.path_and_query().map_or("/", |pq| pq.as_str());
            match origin_form.parse() {
                Ok(u) => *req.uri_mut() = u,
                Err(_) => return text(StatusCode::BAD_REQUEST, "unreadable request target".into()),
            }
        }
    }
    match sender.send_request(req).await {
        Ok(resp) => match &hop {
            Hop::Proxy(up) if resp.status() == StatusCode::PROXY_AUTHENTICATION_REQUIRED => {
                let failure = EgressFailure::ProxyAuth { proxy: up.label.clone(), detail: "407".into() };
                connector.record(host, port, failure.clone());
                refusal(&failure, host, port)
            }
            _ => resp.map(BodyExt::boxed),
        },
        Err(e) => match &hop {
            Hop::Proxy(up) => {
                let failure =
                    EgressFailure::ProxyNoRoute { proxy: up.label.clone(), why: "it closed the connection".into() };
                connector.record(host, port, failure.clone());
                refusal(&failure, host, port)
            }
            Hop::Site => no_answer(e),
        },
    }
}

/// The proxy's own answer for a destination it did not connect to, saying which case it was in the
/// `x-webpilot-egress` header (the session's log has it too, for https, whose CONNECT answer Chromium
/// does not show).
fn refusal(failure: &EgressFailure, host: &str, port: u16) -> Response<ProxyBody> {
    let mut resp = match failure {
        EgressFailure::Denied(reason) => {
            text(StatusCode::FORBIDDEN, format!("webpilot blocked this request by its egress policy: {reason}"))
        }
        other => text(StatusCode::BAD_GATEWAY, format!("webpilot: {}", other.describe(host, port))),
    };
    resp.headers_mut().insert(EGRESS_DENIED_HEADER, HeaderValue::from_static(failure.header_value()));
    resp
}

fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut resp = Response::new(Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}
