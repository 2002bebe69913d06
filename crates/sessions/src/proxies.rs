//! A session's upstream proxies: its `proxies` entries made into the egress proxy's routes at start. An
//! operator's proxy is looked up by name (an unknown name is a 400); a caller's own proxy must sit at an
//! address the egress policy allows, checked like a webhook URL (loopback and private networks refused
//! unless `--egress-allow` names them), so a proxy cannot be a way into the service's own network.

use crate::error::SessionError;
use std::sync::Arc;
use webpilot_core::egress::{allowed_addrs, AllowEntry, SessionPolicy};
use webpilot_core::proxies::{OperatorProxies, ProxyRoute, ProxyTarget};
use webpilot_core::ErrorCode;
use webpilot_egress::{Routes, Upstream};

/// The routes for `entries`, or a 400 `INVALID_PARAMETER` naming the entry that cannot be used.
pub(crate) async fn routes(
    entries: &[ProxyRoute],
    operator: &OperatorProxies,
    allow: &[AllowEntry],
) -> Result<Routes, SessionError> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let bad = |why: String| SessionError::new(ErrorCode::InvalidParameter, format!("proxies[{i}]: {why}"));
        let upstream = match &entry.target {
            ProxyTarget::Named(name) => match operator.get(name) {
                Some(server) => Upstream::operator(name, server.clone()),
                None => return Err(bad(format!("there is no proxy named {name:?} (GET /proxies lists them)"))),
            },
            ProxyTarget::Server(server) => {
                let shown = server.authority();
                let addrs = match webpilot_egress::resolve(&server.host, server.port).await {
                    Ok(addrs) if !addrs.is_empty() => addrs,
                    _ => return Err(bad(format!("the proxy {shown} could not be resolved"))),
                };
                let policy = SessionPolicy { allow, avoid: &[] };
                if let Err(reason) = allowed_addrs(&server.host, &addrs, server.port, policy) {
                    return Err(bad(format!("the proxy {shown} is refused: {reason}")));
                }
                Upstream::user(server.clone())
            }
        };
        out.push(ProxyRoute { target: Arc::new(upstream), domains: entry.domains.clone() });
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use webpilot_core::proxies::parse_proxies;

    fn entries(v: serde_json::Value) -> Vec<ProxyRoute> {
        parse_proxies(Some(&v)).expect("valid entries")
    }

    #[tokio::test]
    async fn names_are_looked_up_and_private_proxies_refused_unless_allowed() {
        let ops = OperatorProxies::parse(&["de=http://u:p@10.1.2.3:3128".to_owned()]).expect("operator");
        let ok = routes(&entries(serde_json::json!([{"name": "de"}])), &ops, &[]).await.expect("trusted");
        assert!(!ok[0].target.checked, "an operator's proxy is trusted, even on a private network");
        assert_eq!(ok[0].target.label, "\"de\"");
        let unknown =
            routes(&entries(serde_json::json!([{"server": "http://93.184.216.34:1"}, {"name": "nl"}])), &ops, &[])
                .await
                .expect_err("unknown");
        let unknown = webpilot_core::ApiError::from(unknown);
        assert_eq!(unknown.code, ErrorCode::InvalidParameter);
        assert!(unknown.message.starts_with("proxies[1]: there is no proxy named \"nl\""), "{}", unknown.message);
        for server in ["http://127.0.0.1:3128", "socks5://10.0.0.1:1080", "http://localhost:8080", "http://[::1]:1"] {
            let e = routes(&entries(serde_json::json!([{"server": server, "password": null}])), &ops, &[])
                .await
                .expect_err(server);
            let e = webpilot_core::ApiError::from(e);
            assert_eq!(e.code, ErrorCode::InvalidParameter, "{server}");
            assert!(
                e.message.starts_with("proxies[0]: the proxy ") && e.message.contains("--egress-allow"),
                "{}",
                e.message
            );
        }
        let allow = AllowEntry::parse_list("127.0.0.1:3128").expect("allow");
        let mine = routes(
            &entries(serde_json::json!([{"server": "http://127.0.0.1:3128", "domains": ["a.example"]}])),
            &ops,
            &allow,
        )
        .await
        .expect("allowed by --egress-allow");
        assert!(mine[0].target.checked && mine[0].domains == vec!["a.example".to_owned()]);
    }
}
