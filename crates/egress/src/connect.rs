//! Resolve, decide, connect: the destination is resolved once, each resolved address is put to the
//! egress decision, and only an allowed address is connected to — the one that was checked, so a DNS
//! answer that changes between check and use (rebinding) cannot reach a private address.

use crate::failure::EgressFailure;
use crate::policy::DomainPolicy;
use crate::resolve::resolve;
use crate::upstream::{Stream, Upstream};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use webpilot_core::egress::{allowed_addrs, decide_host, AllowEntry, DenyReason, SessionPolicy};
use webpilot_core::policy::canonical_host;
use webpilot_core::proxies::{route_for, ProxyScheme};

/// How a plain-http request is to be sent on an opened connection.
pub(crate) enum Hop {
    /// To the site itself (direct, or through a tunnel): in origin form.
    Site,
    /// To this HTTP proxy, in absolute form with its `Proxy-Authorization`.
    Proxy(Arc<Upstream>),
}

/// What one session's proxy connects with.
pub(crate) struct Connector {
    pub allow: std::sync::Arc<[AllowEntry]>,
    pub policy: DomainPolicy,
    pub timeout: Duration,
}

impl Connector {
    /// Opens a connection to `host:port` if the session's policy allows it (through the session's
    /// upstream proxy for the host, if any), logging why not.
    pub async fn open(&self, host: &str, port: u16) -> Result<Stream, EgressFailure> {
        self.open_as(host, port, false).await.map(|(stream, _)| stream)
    }

    /// As [`Connector::open`] for a plain-http request: through an HTTP proxy, the connection is to the
    /// proxy itself and the request is to be sent to it in absolute form ([`Hop::Proxy`]).
    pub async fn open_for_request(&self, host: &str, port: u16) -> Result<(Stream, Hop), EgressFailure> {
        self.open_as(host, port, true).await
    }

    async fn open_as(&self, host: &str, port: u16, request: bool) -> Result<(Stream, Hop), EgressFailure> {
        let result = self.try_open(host, port, request).await;
        if let Err(failure) = &result {
            let shown = canonical_host(host).unwrap_or_else(|| "(invalid)".to_owned());
            match failure {
                EgressFailure::Denied(reason) => {
                    tracing::info!(host = %shown, port, reason = %reason, "egress refused")
                }
                other => tracing::info!(host = %shown, port, failure = ?other, "egress destination not reached"),
            }
            self.policy.record_failure(&shown, port, failure.clone());
        }
        result
    }

    /// Logs a failure met after the connection was opened (the site did not answer).
    pub fn record(&self, host: &str, port: u16, failure: EgressFailure) {
        let shown = canonical_host(host).unwrap_or_else(|| "(invalid)".to_owned());
        self.policy.record_failure(&shown, port, failure);
    }

    async fn try_open(&self, host: &str, port: u16, request: bool) -> Result<(Stream, Hop), EgressFailure> {
        let avoid = self.policy.domains();
        let policy = SessionPolicy { allow: &self.allow, avoid: &avoid };
        if let Some(deny) = decide_host(host, policy) {
            return Err(EgressFailure::Denied(deny));
        }
        let canonical = canonical_host(host).ok_or(EgressFailure::Denied(DenyReason::BadHost))?;
        let routes = self.policy.routes();
        if let Some(route) = route_for(&routes, &canonical) {
            let up = route.target.clone();
            // Decided here as for a direct connection, so the upstream never hears of a destination the
            // policy refuses: an address, `localhost`, or a name that resolves here to loopback or a private
            // network (an internal name, through a proxy that could reach it). The name itself goes to
            // the proxy, which resolves it on its side; a name unknown here is left to the proxy.
            if let Ok(Ok(addrs)) = tokio::time::timeout(self.timeout, resolve(&canonical, port)).await {
                allowed_addrs(&canonical, &addrs, port, policy).map_err(EgressFailure::Denied)?;
            }
            if request && matches!(up.server.scheme, ProxyScheme::Http | ProxyScheme::Https) {
                let stream = crate::upstream::connect(&up, &self.allow, self.timeout).await?;
                return Ok((stream, Hop::Proxy(up)));
            }
            let stream = crate::upstream::tunnel(&up, &canonical, port, &self.allow, self.timeout).await?;
            return Ok((stream, Hop::Site));
        }
        let addrs = tokio::time::timeout(self.timeout, resolve(&canonical, port))
            .await
            .map_err(|_| EgressFailure::Unresolved)??;
        let allowed = allowed_addrs(&canonical, &addrs, port, policy).map_err(EgressFailure::Denied)?;
        let mut last_error = None;
        for addr in allowed {
            match tokio::time::timeout(self.timeout, TcpStream::connect((addr, port))).await {
                Ok(Ok(stream)) => return Ok((Box::new(stream), Hop::Site)),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    last_error = Some(EgressFailure::Refused)
                }
                Ok(Err(e)) => last_error = Some(EgressFailure::Unreachable(e.to_string())),
                Err(_) => last_error = Some(EgressFailure::Unreachable("connecting timed out".to_owned())),
            }
        }
        Err(last_error.unwrap_or(EgressFailure::Unresolved))
    }
}
