//! Address ranges the browser must not reach unless an allow entry says so: loopback, private,
//! link-local, CGNAT, ULA, unspecified, multicast, broadcast and reserved space, including the IPv6 forms
//! that embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public; `None` for a public (globally routable) address.
pub fn non_public_range(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => v6_range(v6),
    }
}

fn v4_range(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, ..] = a.octets();
    if a.is_loopback() {
        Some("loopback address")
    } else if a.is_private() {
        Some("private address")
    } else if a.is_link_local() {
        Some("link-local address (cloud metadata lives here)")
    } else if o0 == 100 && (o1 & 0xc0) == 64 {
        Some("carrier-grade NAT address")
    } else if a.is_unspecified() || o0 == 0 {
        Some("unspecified address")
    } else if a.is_multicast() {
        Some("multicast address")
    } else if a.is_broadcast() || o0 >= 240 {
        Some("reserved address")
    } else if o0 == 192 && o1 == 0 && a.octets()[2] == 0 {
        Some("IETF protocol address")
    } else if (o0 == 198 && (o1 & 0xfe) == 18) || a.is_documentation() {
        Some("benchmarking or documentation address")
    } else {
        None
    }
}

fn v6_range(a: Ipv6Addr) -> Option<&'static str> {
    let seg = a.segments();
    if let Some(v4) = embedded_v4(a) {
        return v4_range(v4);
    }
    if a.is_loopback() {
        Some("loopback address")
    } else if a.is_unspecified() {
        Some("unspecified address")
    } else if a.is_multicast() {
        Some("multicast address")
    } else if (seg[0] & 0xfe00) == 0xfc00 {
        Some("unique local (private) address")
    } else if (seg[0] & 0xffc0) == 0xfe80 || (seg[0] & 0xffc0) == 0xfec0 {
        Some("link-local address")
    } else if seg[0] == 0x2001 && seg[1] == 0 {
        // Teredo hides the IPv4 peer; nothing legitimate needs it from a browser session.
        Some("Teredo address")
    } else if seg[0] == 0x2001 && seg[1] == 0x0db8 {
        Some("documentation address")
    } else if seg[0] == 0x0100 && seg[1] == 0 && seg[2] == 0 && seg[3] == 0 {
        Some("discard-only address")
    } else {
        None
    }
}

/// The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
/// (64:ff9b::/96 and 64:ff9b:1::/48) or 6to4 (2002::/16) IPv6 address.
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let from = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = a.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1) {
        return Some(from(s[6], s[7])); // IPv4-compatible (deprecated, but still routed by some stacks)
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && (s[2..6] == [0; 4] || s[2] == 1) {
        return Some(from(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(from(s[1], s[2]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> Option<&'static str> {
        non_public_range(s.parse().expect("address"))
    }

    #[test]
    fn every_non_public_ipv4_range_is_named() {
        for a in [
            "127.0.0.1",
            "127.255.1.2",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "192.0.2.1",
        ] {
            assert!(range(a).is_some(), "{a} should not be public");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for a in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450::1"] {
            assert_eq!(range(a), None, "{a} is public");
        }
    }

    #[test]
    fn ipv6_forms_of_private_ipv4_are_caught() {
        for a in [
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::c0a8:101",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001:0:4136:e378::1",
        ] {
            assert!(range(a).is_some(), "{a} should not be public");
        }
        assert_eq!(range("::ffff:93.184.216.34"), None);
        assert_eq!(range("64:ff9b::5db8:d822"), None);
    }
}
