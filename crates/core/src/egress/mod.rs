//! The egress decision as a pure function: may a session's browser open a connection to `host`, resolved
//! to `addr`, on `port`? One decision point for every request of a session (the egress proxy calls it
//! for each connection, after resolving, so DNS rebinding cannot slip a private address past it).
//!
//! Order: the session's avoidDomains deny; then an operator allow entry allows; then any non-public
//! address is denied; everything else is allowed.

mod ranges;
mod rules;

pub use ranges::non_public_range;
pub use rules::AllowEntry;

use crate::policy::{canonical_host, is_blocked};
use std::fmt;
use std::net::IpAddr;

/// Why a destination was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// The host is in the session's avoidDomains.
    AvoidedDomain,
    /// The resolved address is loopback, private, link-local, ... (the range is named).
    NonPublicAddress(&'static str),
    /// The host name could not be read.
    BadHost,
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DenyReason::AvoidedDomain => f.write_str("the domain is in avoidDomains; do not visit it"),
            DenyReason::NonPublicAddress(range) => write!(
                f,
                "it resolves to a {range}, which the egress policy refuses unless the operator allows it with \
                 --egress-allow (a host, address or CIDR, optionally with :port)"
            ),
            DenyReason::BadHost => f.write_str("the host name is not valid"),
        }
    }
}

/// The outcome of [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(DenyReason),
}

/// What a session's egress is decided by: the operator's allow entries and the session's avoidDomains
/// (normalised host names).
#[derive(Debug, Clone, Copy)]
pub struct SessionPolicy<'a> {
    pub allow: &'a [AllowEntry],
    pub avoid: &'a [String],
}

/// Decides on the host alone, before resolving it: `Some(deny)` when avoidDomains refuses the host.
pub fn decide_host(host: &str, policy: SessionPolicy<'_>) -> Option<DenyReason> {
    let Some(host) = canonical_host(host) else { return Some(DenyReason::BadHost) };
    is_blocked(&host, policy.avoid).then_some(DenyReason::AvoidedDomain)
}

/// Decides one connection: `host` as the browser asked for it, `addr` the address it resolved to (the
/// one that will be connected to), `port` the destination port.
pub fn decide(host: &str, addr: IpAddr, port: u16, policy: SessionPolicy<'_>) -> Decision {
    if let Some(deny) = decide_host(host, policy) {
        return Decision::Deny(deny);
    }
    let host = canonical_host(host).unwrap_or_default();
    if policy.allow.iter().any(|e| e.allows(&host, addr, port)) {
        return Decision::Allow;
    }
    match non_public_range(addr.to_canonical()) {
        Some(range) => Decision::Deny(DenyReason::NonPublicAddress(range)),
        None => Decision::Allow,
    }
}

/// The one rule for a host that resolved to several addresses (the browser's egress proxy and webhook
/// targets both use it): the allowed addresses, in order, are the ones that may be connected to; the host
/// is refused only when none is allowed (with the first address's reason). So `localhost` (127.0.0.1 and
/// ::1) under `--egress-allow 127.0.0.1:PORT` is reached at 127.0.0.1, never at ::1.
pub fn allowed_addrs(
    host: &str,
    addrs: &[IpAddr],
    port: u16,
    policy: SessionPolicy<'_>,
) -> Result<Vec<IpAddr>, DenyReason> {
    let mut denied = None;
    let mut allowed = Vec::new();
    for addr in addrs {
        match decide(host, *addr, port, policy) {
            Decision::Allow => allowed.push(*addr),
            Decision::Deny(reason) => {
                denied.get_or_insert(reason);
            }
        }
    }
    match (allowed.is_empty(), denied) {
        (true, Some(reason)) => Err(reason),
        _ => Ok(allowed),
    }
}

/// Whether the browser may be sent to `url` at all: only `http:`/`https:` and the internal `about:blank`.
pub fn navigable_url(url: &str) -> Result<(), String> {
    if url == "about:blank" {
        return Ok(());
    }
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        Ok(u) => Err(format!("only http and https pages may be opened, not {}: URLs", u.scheme())),
        Err(_) => Err("that is not an absolute http(s) URL".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn loopback_private_and_metadata_are_denied_by_default() {
        let p = SessionPolicy { allow: &[], avoid: &[] };
        for (host, addr) in [
            ("127.0.0.1", "127.0.0.1"),
            ("localhost", "::1"),
            ("metadata", "169.254.169.254"),
            ("rebind.example", "10.0.0.1"),
            ("mapped", "::ffff:192.168.0.1"),
        ] {
            assert!(matches!(decide(host, ip(addr), 80, p), Decision::Deny(DenyReason::NonPublicAddress(_))));
        }
        assert_eq!(decide("example.com", ip("93.184.216.34"), 443, p), Decision::Allow);
    }

    #[test]
    fn an_allow_entry_opens_only_its_port() {
        let allow = AllowEntry::parse_list("127.0.0.1:4000").expect("entries");
        let p = SessionPolicy { allow: &allow, avoid: &[] };
        assert_eq!(decide("127.0.0.1", ip("127.0.0.1"), 4000, p), Decision::Allow);
        assert!(matches!(decide("127.0.0.1", ip("127.0.0.1"), 8080, p), Decision::Deny(_)));
        assert!(matches!(decide("127.0.0.2", ip("127.0.0.2"), 4000, p), Decision::Deny(_)));
    }

    #[test]
    fn avoid_domains_win_over_allow_entries_and_match_idn_and_ipv6_forms() {
        let allow = AllowEntry::parse_list("127.0.0.1").expect("entries");
        let avoid = vec!["tracker.localhost".to_owned(), "xn--bcher-kva.example".to_owned(), "::1".to_owned()];
        let p = SessionPolicy { allow: &allow, avoid: &avoid };
        assert_eq!(decide_host("a.Tracker.LOCALHOST.", p), Some(DenyReason::AvoidedDomain));
        assert_eq!(decide("tracker.localhost", ip("127.0.0.1"), 80, p), Decision::Deny(DenyReason::AvoidedDomain));
        assert_eq!(decide_host("bücher.example", p), Some(DenyReason::AvoidedDomain));
        assert_eq!(decide_host("[0:0::1]", p), Some(DenyReason::AvoidedDomain));
        assert_eq!(decide_host("example.org", p), None);
    }

    #[test]
    fn a_host_is_reached_at_its_allowed_addresses_and_refused_when_none_is_allowed() {
        let allow = AllowEntry::parse_list("127.0.0.1:4000").expect("entries");
        let p = SessionPolicy { allow: &allow, avoid: &[] };
        let both = [ip("127.0.0.1"), ip("::1")];
        assert_eq!(allowed_addrs("localhost", &both, 4000, p), Ok(vec![ip("127.0.0.1")]));
        assert_eq!(allowed_addrs("127.0.0.1", &both[..1], 4000, p), Ok(vec![ip("127.0.0.1")]));
        let refused = allowed_addrs("localhost", &both, 4001, p).expect_err("another port");
        assert!(refused.to_string().contains("--egress-allow"), "{refused}");
        assert_eq!(allowed_addrs("example.com", &[], 80, p), Ok(vec![]));
    }

    #[test]
    fn only_web_urls_are_navigable() {
        assert!(navigable_url("https://example.com/").is_ok());
        assert!(navigable_url("about:blank").is_ok());
        for bad in [
            "file:///etc/passwd",
            "chrome://settings",
            "view-source:http://x",
            "data:text/html,hi",
            "javascript:1",
            "x",
        ] {
            assert!(navigable_url(bad).is_err(), "{bad}");
        }
    }
}
