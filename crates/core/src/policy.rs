//! The domain policy as a pure function: is a request to `host` allowed for a session that must avoid
//! some domains? Kept free of I/O so it can move into an egress proxy later (see the roadmap).

/// Normalises a caller-given domain (`Example.COM.`, `https://example.com/x`, `*.example.com`) to a bare
/// lowercase host name; `None` when nothing usable is left.
pub fn normalize_domain(raw: &str) -> Option<String> {
    let mut s = raw.trim().to_ascii_lowercase();
    if let Some(rest) = s.split("://").nth(1).map(str::to_owned) {
        s = rest;
    }
    let s = s.split(['/', '?', '#']).next().unwrap_or("");
    let s = s.rsplit('@').next().unwrap_or("");
    // Strip a port, but not from a bracketed IPv6 literal.
    let s = if s.starts_with('[') { s } else { s.split(':').next().unwrap_or("") };
    let s = s.trim_start_matches("*.").trim_start_matches('.').trim_end_matches('.');
    if s.is_empty() || s.contains(char::is_whitespace) {
        None
    } else {
        Some(s.to_owned())
    }
}

/// True when `host` is one of `avoid` or a subdomain of one.
pub fn is_blocked(host: &str, avoid: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
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
