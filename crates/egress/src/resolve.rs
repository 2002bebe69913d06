//! Host resolution, the one way the egress proxy and the webhook checks turn a host into addresses.

use crate::failure::EgressFailure;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The addresses of a canonical host: an IP literal is itself; `localhost` and `*.localhost` are
/// loopback, as in Chromium (RFC 6761), without asking DNS; anything else is resolved by the system.
/// Also what webhook targets are checked against, so both decide on the same addresses.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<IpAddr>, EgressFailure> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    if host == "localhost" || host.ends_with(".localhost") {
        return Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)]);
    }
    let found = tokio::net::lookup_host((host, port)).await.map_err(|e| {
        tracing::debug!(error = %e, "resolving a host failed");
        EgressFailure::Unresolved
    })?;
    Ok(found.map(|a| a.ip()).collect())
}
