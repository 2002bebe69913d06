//! Where a webhook may be delivered: an `http`/`https` URL whose host resolves to an address the egress
//! policy allows (never loopback or private networks unless `--egress-allow` names them), by the browser's
//! rule (`webpilot_core::egress::allowed_addrs`: the other addresses are dropped). Checked at registration
//! and again at each delivery, and the delivery connects only to the addresses that passed, so a DNS answer
//! that changes in between (rebinding) cannot reach a private address.

use std::net::{IpAddr, SocketAddr};
use webpilot_core::egress::{allowed_addrs, AllowEntry, SessionPolicy};
use webpilot_core::policy::canonical_host;
use webpilot_egress::resolve;

/// Why a URL is not a webhook target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("the webhook url is not a valid absolute URL")]
    BadUrl,
    #[error("the webhook url must use http or https")]
    Scheme,
    #[error("the webhook url must not carry credentials")]
    Credentials,
    #[error("the webhook url's host {host} is refused: {why}")]
    Refused { host: String, why: String },
    #[error("the webhook url's host {host} could not be resolved")]
    Unresolvable { host: String },
}

/// A checked target: the URL, and the addresses its host may be reached at.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: url::Url,
    /// The canonical host name (for pinning its resolution); None for an IP literal.
    pub domain: Option<String>,
    pub addrs: Vec<SocketAddr>,
}

/// Checks `raw` against the policy (`allow`: the operator's `--egress-allow` entries).
pub async fn check_url(raw: &str, allow: &[AllowEntry]) -> Result<Target, TargetError> {
    let url = url::Url::parse(raw.trim()).map_err(|_| TargetError::BadUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TargetError::Scheme);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Credentials);
    }
    let raw_host = url.host_str().ok_or(TargetError::BadUrl)?;
    let host = canonical_host(raw_host).ok_or(TargetError::BadUrl)?;
    let port = url.port_or_known_default().ok_or(TargetError::BadUrl)?;
    let ips = resolve(&host, port).await.map_err(|_| TargetError::Unresolvable { host: host.clone() })?;
    if ips.is_empty() {
        return Err(TargetError::Unresolvable { host });
    }
    let policy = SessionPolicy { allow, avoid: &[] };
    // The browser's rule: the allowed addresses are the ones delivery connects to (it is pinned to them),
    // so `localhost` under `--egress-allow 127.0.0.1:PORT` is reached at 127.0.0.1 and never at ::1.
    let allowed = match allowed_addrs(&host, &ips, port, policy) {
        Ok(allowed) => allowed,
        Err(reason) => return Err(TargetError::Refused { host, why: reason.to_string() }),
    };
    let domain = host.parse::<IpAddr>().is_err().then_some(host);
    Ok(Target { url, domain, addrs: allowed.into_iter().map(|ip| SocketAddr::new(ip, port)).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_private_and_odd_urls_are_refused_unless_allowed() {
        for url in ["http://127.0.0.1:9/", "http://localhost/x", "http://[::1]/", "http://10.0.0.1/", "http://0x7f.1/"]
        {
            assert!(matches!(check_url(url, &[]).await, Err(TargetError::Refused { .. })), "{url}");
        }
        assert_eq!(check_url("ftp://example.com/", &[]).await.err(), Some(TargetError::Scheme));
        assert_eq!(check_url("not a url", &[]).await.err(), Some(TargetError::BadUrl));
        assert_eq!(check_url("http://u:p@example.com/", &[]).await.err(), Some(TargetError::Credentials));
        let allow = AllowEntry::parse_list("127.0.0.1:9").expect("allow entry");
        let target = check_url("http://127.0.0.1:9/hook", &allow).await.expect("allowed by --egress-allow");
        assert_eq!(target.addrs, vec!["127.0.0.1:9".parse().expect("addr")]);
        assert!(check_url("http://127.0.0.1:10/hook", &allow).await.is_err(), "another port is not allowed");
        // One rule with the browser's egress: localhost is reached at its allowed address only.
        let target = check_url("http://localhost:9/hook", &allow).await.expect("localhost under 127.0.0.1:9");
        assert_eq!(target.addrs, vec!["127.0.0.1:9".parse().expect("addr")]);
        let refused = check_url("http://localhost:10/", &allow).await.expect_err("another port");
        assert!(refused.to_string().contains("--egress-allow"), "{refused}");
    }
}
