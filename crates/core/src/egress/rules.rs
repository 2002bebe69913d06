//! Operator allow entries (`--egress-allow`): a hostname, an IP or a CIDR, optionally with `:port`.
//! An entry allows a destination when the hostname equals it or the resolved address falls in it, and
//! the port matches when the entry names one.

use crate::policy::canonical_host;
use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Host(String),
    Net(IpNet),
}

/// One parsed allow entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    target: Target,
    port: Option<u16>,
}

impl AllowEntry {
    /// Parses `host`, `host:port`, `10.0.0.0/8`, `10.0.0.0/8:443`, `127.0.0.1:8080`, `::1`, `[::1]:8080`,
    /// `[fd00::/8]:443`.
    pub fn parse(raw: &str) -> Result<AllowEntry, String> {
        let s = raw.trim();
        let bad = || format!("egress allow entry {raw:?} is not a hostname, IP or CIDR with an optional :port");
        if s.is_empty() {
            return Err(bad());
        }
        let (target, port) = if let Some(rest) = s.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(bad)?),
            };
            (inside, port)
        } else if s.matches(':').count() > 1 {
            (s, None) // a bare IPv6 address or CIDR cannot carry a port without brackets
        } else if let Some((h, p)) = s.rsplit_once(':') {
            (h, Some(p))
        } else {
            (s, None)
        };
        let port = port.map(|p| p.parse::<u16>().map_err(|_| bad())).transpose()?;
        let target = if let Ok(net) = target.parse::<IpNet>() {
            Target::Net(net.trunc())
        } else if let Ok(ip) = target.parse::<IpAddr>() {
            Target::Net(IpNet::from(ip.to_canonical()))
        } else {
            let host = canonical_host(target).ok_or_else(bad)?;
            if host.contains(['/', '*', ' ']) {
                return Err(bad());
            }
            Target::Host(host)
        };
        Ok(AllowEntry { target, port })
    }

    /// Parses a comma-separated list; empty items are skipped.
    pub fn parse_list(raw: &str) -> Result<Vec<AllowEntry>, String> {
        raw.split(',').filter(|s| !s.trim().is_empty()).map(AllowEntry::parse).collect()
    }

    /// True when this entry allows `host` (already canonical) resolved to `addr` on `port`.
    pub fn allows(&self, host: &str, addr: IpAddr, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.target {
            Target::Host(h) => h == host,
            Target::Net(net) => net.contains(&addr.to_canonical()),
        }
    }
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.target, self.port) {
            (Target::Host(h), None) => write!(f, "{h}"),
            (Target::Host(h), Some(p)) => write!(f, "{h}:{p}"),
            (Target::Net(n), None) => write!(f, "{n}"),
            (Target::Net(n @ IpNet::V6(_)), Some(p)) => write!(f, "[{n}]:{p}"),
            (Target::Net(n), Some(p)) => write!(f, "{n}:{p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn entries_of_every_form_parse() {
        for (raw, shown) in [
            ("intranet.example", "intranet.example"),
            ("Intranet.Example.:8443", "intranet.example:8443"),
            ("127.0.0.1:8080", "127.0.0.1/32:8080"),
            ("10.0.0.0/8", "10.0.0.0/8"),
            ("10.1.2.3/8:443", "10.0.0.0/8:443"),
            ("::1", "::1/128"),
            ("[::1]:8080", "[::1/128]:8080"),
            ("[fd00::/8]:443", "[fd00::/8]:443"),
            ("bücher.example", "xn--bcher-kva.example"),
        ] {
            assert_eq!(AllowEntry::parse(raw).expect(raw).to_string(), shown, "{raw}");
        }
        for bad in ["", " ", "host:port", "10.0.0.0/33", "[::1", "[::1]x", "a b", "*.example.com", "h:99999"] {
            assert!(AllowEntry::parse(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(AllowEntry::parse_list("a.example, 127.0.0.1:1,").expect("list").len(), 2);
    }

    #[test]
    fn an_entry_matches_by_host_or_address_and_port() {
        let site = AllowEntry::parse("127.0.0.1:8080").expect("entry");
        assert!(site.allows("localhost", ip("127.0.0.1"), 8080));
        assert!(site.allows("x", ip("::ffff:127.0.0.1"), 8080));
        assert!(!site.allows("localhost", ip("127.0.0.1"), 8081));
        assert!(!site.allows("localhost", ip("127.0.0.2"), 8080));
        let host = AllowEntry::parse("wiki.corp").expect("entry");
        assert!(host.allows("wiki.corp", ip("10.0.0.5"), 443));
        assert!(!host.allows("other.corp", ip("10.0.0.5"), 443));
        let net = AllowEntry::parse("10.0.0.0/8").expect("entry");
        assert!(net.allows("anything", ip("10.200.0.1"), 80));
        assert!(!net.allows("anything", ip("11.0.0.1"), 80));
    }
}
