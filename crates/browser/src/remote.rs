//! Remote browsers: Chromium running on another host, reached over its DevTools endpoint
//! (`--browser-endpoint`). The pool connects instead of launching; contexts, their egress proxies, tab
//! handling and recovery are the same. The host runs its own Chromium (sandbox, profile preferences,
//! memory): this node neither starts nor kills it, and has no per-renderer memory cap on it.

use crate::config::BrowserSettings;
use crate::error::BrowserError;
use crate::process::BrowserProcess;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::Browser;
use std::net::IpAddr;
use std::sync::Arc;

/// Connects to the browser at `endpoint` (`ws://…/devtools/browser/<id>`, or `http://host:port`, whose
/// `/json/version` names the WebSocket at each connection, so a restarted browser is found again), by the
/// IP address its host name resolves to.
pub(crate) async fn connect(endpoint: &str, settings: &BrowserSettings) -> Result<Arc<BrowserProcess>, BrowserError> {
    let url = url::Url::parse(endpoint).map_err(|e| BrowserError::Launch(format!("browser endpoint: {e}")))?;
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Err(BrowserError::Launch("a browser endpoint needs a host and port".into()));
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let peers: Vec<IpAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| BrowserError::Launch(format!("resolving the browser endpoint's host: {e}")))?
        .map(|a| a.ip().to_canonical())
        .collect();
    let endpoint = match peers.first() {
        Some(ip) => by_ip(&url, &host, *ip)?,
        None => return Err(BrowserError::Launch("the browser endpoint's host has no address".into())),
    };
    let config = HandlerConfig {
        ignore_https_errors: false,
        request_timeout: settings.cdp_timeout,
        viewport: Some(crate::process::page_viewport()),
        ..HandlerConfig::default()
    };
    let (browser, handler) = crate::error::within(settings.launch_timeout, "connect to the browser endpoint", async {
        Browser::connect_with_config(endpoint, config).await.map_err(|e| BrowserError::Launch(e.to_string()))
    })
    .await?;
    tracing::info!(host = %host, port, "connected to a remote browser");
    Ok(BrowserProcess::drive(browser, handler, None, None, Some(peers.into()), None))
}

/// `url` with its host `host` replaced by `ip`, unless it is an IP or localhost already: Chromium's DevTools
/// answers only requests whose Host is one of those (a Kubernetes pod name is not).
fn by_ip(url: &url::Url, host: &str, ip: IpAddr) -> Result<String, BrowserError> {
    if host.parse::<IpAddr>().is_ok() || host == "localhost" {
        return Ok(url.as_str().to_owned());
    }
    let mut url = url.clone();
    url.set_ip_host(ip).map_err(|()| BrowserError::Launch("the browser endpoint's address cannot be used".into()))?;
    Ok(url.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::by_ip;

    #[test]
    fn endpoints_named_by_host_are_reached_by_address() {
        let ip = "10.1.2.3".parse().unwrap();
        let named = url::Url::parse("http://webpilot-chromium-0.webpilot-chromium:9223").unwrap();
        assert_eq!(by_ip(&named, "webpilot-chromium-0.webpilot-chromium", ip).unwrap(), "http://10.1.2.3:9223/");
        let ws = url::Url::parse("ws://chromium:9222/devtools/browser/abc").unwrap();
        assert_eq!(by_ip(&ws, "chromium", ip).unwrap(), "ws://10.1.2.3:9222/devtools/browser/abc");
        let literal = url::Url::parse("http://127.0.0.1:9222").unwrap();
        assert_eq!(by_ip(&literal, "127.0.0.1", ip).unwrap(), "http://127.0.0.1:9222/");
    }
}
