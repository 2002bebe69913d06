//! Tables for the proxy entries, the operator's list and the routing rule.

use super::*;
use serde_json::json;

fn routes(v: Value) -> Result<Vec<ProxyRoute>, ApiError> {
    parse_proxies(Some(&v))
}

#[test]
fn entries_are_read_with_their_credentials_and_domains() {
    let r = routes(json!([
        {"server": "http://Proxy.Example:3128", "username": "u", "password": "p@ss", "domains": ["Example.COM", "*.example.org"]},
        {"server": "socks5://[::1]:1080"},
        {"name": "de"},
    ]))
    .expect("valid");
    let ProxyTarget::Server(s) = &r[0].target else { panic!("a server") };
    assert_eq!((s.scheme, s.host.as_str(), s.port), (ProxyScheme::Http, "proxy.example", 3128));
    assert_eq!((s.username.as_deref(), s.password.as_deref()), (Some("u"), Some("p@ss")));
    assert_eq!(r[0].domains, vec!["example.com".to_owned(), "*.example.org".to_owned()]);
    let ProxyTarget::Server(s) = &r[1].target else { panic!("a server") };
    assert_eq!((s.scheme, s.authority()), (ProxyScheme::Socks5, "[::1]:1080".to_owned()));
    assert_eq!(r[2].target, ProxyTarget::Named("de".into()));
    assert!(parse_proxies(None).expect("absent").is_empty());
}

#[test]
fn bad_entries_are_refused_naming_the_entry() {
    for (body, code, names) in [
        (json!({"server": "x"}), "INVALID_PARAMS", "proxies must be an array"),
        (json!([{}]), "INVALID_PARAMS", "proxies[0] needs server"),
        (json!([{"server": "http://a:1", "name": "b"}]), "INVALID_PARAMS", "proxies[0] takes either"),
        (json!([{"server": "ftp://a:1"}]), "INVALID_PARAMETER", "proxies[0].server scheme ftp"),
        (json!([{"server": "http://a:1/path"}]), "INVALID_PARAMETER", "proxies[0].server must be"),
        (json!([{"server": "http://u:secret@a:1"}]), "INVALID_PARAMS", "proxies[0].server must not carry"),
        (json!([{"server": "http://a:1", "password": "p"}]), "INVALID_PARAMS", "proxies[0].password needs"),
        (json!([{"server": "http://a:1", "username": ""}]), "INVALID_PARAMETER", "proxies[0].username"),
        (json!([{"server": "http://a:1", "domains": []}]), "INVALID_PARAMETER", "proxies[0].domains must not"),
        (json!([{"server": "http://a:1", "domains": ["a b"]}]), "INVALID_PARAMETER", "proxies[0].domains entry"),
        (json!([{"server": "http://a:1", "port": 2}]), "INVALID_PARAMS", "proxies[0].port is not"),
        (json!([{"name": "x", "password": "p"}]), "INVALID_PARAMS", "takes no credentials"),
        (json!([{"server": 5}]), "INVALID_PARAMS", "proxies[0].server must be a string"),
    ] {
        let e = routes(body.clone()).expect_err("refused");
        assert_eq!(e.code.as_str(), code, "{body}: {}", e.message);
        assert!(e.message.contains(names), "{body}: {}", e.message);
        assert!(!e.message.contains("secret"), "{}", e.message);
    }
    let many: Vec<Value> = (0..=MAX_PROXIES).map(|_| json!({"name": "a"})).collect();
    assert_eq!(routes(Value::Array(many)).expect_err("too many").code.as_str(), "INVALID_PARAMETER");
}

#[test]
fn a_host_takes_the_first_matching_entry_then_the_default_then_goes_direct() {
    let r = |target: &str, domains: &[&str]| ProxyRoute {
        target: target.to_owned(),
        domains: domains.iter().map(|d| (*d).to_owned()).collect(),
    };
    let table = [r("a", &["example.com"]), r("b", &["*.example.org", "127.0.0.1"]), r("c", &["example.com"])];
    let pick = |routes: &[ProxyRoute<String>], host: &str| route_for(routes, host).map(|r| r.target.clone());
    assert_eq!(pick(&table, "Example.com."), Some("a".into()));
    assert_eq!(pick(&table, "www.example.com"), None, "a bare domain is that host only");
    assert_eq!(pick(&table, "a.b.example.org"), Some("b".into()));
    assert_eq!(pick(&table, "example.org"), None, "*. is the subdomains only");
    assert_eq!(pick(&table, "127.0.0.1"), Some("b".into()));
    assert_eq!(pick(&table, "badexample.org"), None);
    let with_default = [r("a", &["example.com"]), r("d", &[]), r("e", &[])];
    assert_eq!(pick(&with_default, "example.com"), Some("a".into()));
    assert_eq!(pick(&with_default, "other.net"), Some("d".into()), "the first default");
}

#[test]
fn operator_proxies_are_named_and_never_print_their_credentials() {
    let ops =
        OperatorProxies::parse(&["de=http://user:pa%3Ass@10.0.0.5:3128".into(), " us = socks5://u:p@h:1080 ".into()])
            .expect("valid");
    let de = ops.get("de").expect("de");
    assert_eq!((de.username.as_deref(), de.password.as_deref()), (Some("user"), Some("pa:ss")));
    assert_eq!(de.shown(), "http://10.0.0.5:3128");
    assert_eq!(format!("{de:?}"), "ProxyServer(http://10.0.0.5:3128)");
    assert_eq!(ops.names().collect::<Vec<_>>(), vec!["de", "us"]);
    for bad in ["de", "=http://a:1", "d e=http://a:1", "x=ftp://a:1"] {
        assert!(OperatorProxies::parse(&[bad.into()]).is_err(), "{bad}");
    }
    let twice = OperatorProxies::parse(&["a=http://a:1".into(), "a=http://b:1".into()]).expect_err("twice");
    assert!(twice.contains("twice"), "{twice}");
    let e = OperatorProxies::parse(&["a=http://u:topsecret@a:1/x".into()]).expect_err("a path");
    assert!(!e.contains("topsecret"), "{e}");
}

#[test]
fn an_entry_is_shown_without_its_credentials() {
    let r = routes(json!([{"server": "socks5://h:1080", "username": "u", "password": "pw", "domains": ["a.example"]}, {"name": "de"}]))
        .expect("valid");
    let shown = serde_json::to_value(r.iter().map(ShownProxy::of).collect::<Vec<_>>()).expect("json");
    assert_eq!(shown, json!([{"server": "socks5://h:1080", "domains": ["a.example"]}, {"name": "de"}]));
}
