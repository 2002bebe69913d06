//! The domain policy as a pure function: is a request to `host` allowed for a session that must avoid
//! some domains? The egress proxy applies it through
//! `egress::decide`.

/// Normalises a caller-given domain (`Example.COM.`, `https://example.com/x`, `*.example.com`, `[::1]:80`)
/// to a bare canonical host (see [`canonical_host`]); `None` when nothing usable is left.
pub fn normalize_domain(raw: &str) -> Option<String> {
    let mut s = raw.trim().to_lowercase();
    if let Some(rest) = s.split("://").nth(1).map(str::to_owned) {
        s = rest;
    }
    let s = s.split(['/', '?', '#']).next().unwrap_or("");
    let s = s.rsplit('@').next().unwrap_or("");
    // Strip a port; a bracketed IPv6 literal keeps what is inside the brackets.
    let s = match s.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None if s.matches(':').count() > 1 => s,
        None => s.split(':').next().unwrap_or(""),
    };
    let s = s.trim_start_matches("*.").trim_start_matches('.');
    canonical_host(s)
}

/// The one spelling of a host that comparisons use: lowercase, no trailing dot, IDN as punycode
/// (`bücher.de` is `xn--bcher-kva.de`), IP literals in their canonical text (`[0:0::1]` is `::1`,
/// `::ffff:7f00:1` is `127.0.0.1`). `None` for something that is not a host.
pub fn canonical_host(raw: &str) -> Option<String> {
    let s = raw.trim().trim_matches(['[', ']']).trim_end_matches('.');
    if s.is_empty() || s.contains(char::is_whitespace) {
        return None;
    }
    if let Ok(v6) = s.parse::<std::net::Ipv6Addr>() {
        return Some(std::net::IpAddr::V6(v6).to_canonical().to_string());
    }
    match url::Host::parse(s).ok()? {
        url::Host::Domain(d) => Some(d),
        url::Host::Ipv4(a) => Some(a.to_string()),
        url::Host::Ipv6(a) => Some(a.to_string()),
    }
}

/// True when `host` is one of `avoid` or a subdomain of one.
pub fn is_blocked(host: &str, avoid: &[String]) -> bool {
    let Some(host) = canonical_host(host) else { return false };
    avoid.iter().any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

/// The host of a URL the browser is about to request; `None` for URLs without one (data:, about:).
pub fn url_host(raw_url: &str) -> Option<String> {
    url::Url::parse(raw_url).ok()?.host_str().map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_normalised() {
        assert_eq!(normalize_domain(" Example.COM. ").as_deref(), Some("example.com"));
        assert_eq!(normalize_domain("https://ads.example.com:8443/x?y").as_deref(), Some("ads.example.com"));
        assert_eq!(normalize_domain("*.tracker.net").as_deref(), Some("tracker.net"));
        assert_eq!(normalize_domain("  "), None);
        assert_eq!(normalize_domain("Bücher.Example").as_deref(), Some("xn--bcher-kva.example"));
        assert_eq!(normalize_domain("[0:0::1]:8080").as_deref(), Some("::1"));
        assert_eq!(normalize_domain("::1").as_deref(), Some("::1"));
        assert_eq!(normalize_domain("http://[::ffff:127.0.0.1]/").as_deref(), Some("127.0.0.1"));
    }

    #[test]
    fn subdomains_are_blocked_but_lookalikes_are_not() {
        let avoid = vec!["example.com".to_owned()];
        assert!(is_blocked("example.com", &avoid));
        assert!(is_blocked("a.b.EXAMPLE.com", &avoid));
        assert!(!is_blocked("notexample.com", &avoid));
        assert!(!is_blocked("example.com.evil.org", &avoid));
    }

    #[test]
    fn url_hosts_are_read() {
        assert_eq!(url_host("http://Sub.Example.com:81/a").as_deref(), Some("sub.example.com"));
        assert_eq!(url_host("data:text/html,hi"), None);
    }
}
