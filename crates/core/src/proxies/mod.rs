//! Upstream proxies as pure values: a session's `proxies` list (its own servers, or an operator's proxy by
//! name, each with the `domains` it serves), the operator's named proxies (`--proxy NAME=URL`), and the
//! routing rule (the first entry whose `domains` match the host; an entry without `domains` is the
//! default; with no default, other hosts go direct). Credentials never leave these types in text: `Debug`
//! and [`ProxyServer::shown`] leave them out.

use crate::error::ApiError;
use crate::fields::{invalid_params, out_of_bounds, Fields};
use crate::policy::canonical_host;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Most entries in a session's `proxies`.
pub const MAX_PROXIES: usize = 10;
/// Most `domains` of one entry.
pub const MAX_PROXY_DOMAINS: usize = 100;
/// Longest username or password (RFC 1929 allows 255 bytes).
pub const MAX_CREDENTIAL_BYTES: usize = 255;

/// How the service talks to an upstream proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyScheme {
    /// An HTTP proxy: `CONNECT` for tunnels, absolute-form requests for plain http.
    Http,
    /// An HTTP proxy reached over TLS.
    Https,
    /// SOCKS5 (RFC 1928) with username/password (RFC 1929) and the name resolved by the proxy.
    Socks5,
}

impl ProxyScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyScheme::Http => "http",
            ProxyScheme::Https => "https",
            ProxyScheme::Socks5 => "socks5",
        }
    }
}

/// One upstream proxy's address and credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyServer {
    pub scheme: ProxyScheme,
    /// Canonical host (see [`canonical_host`]).
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
}

impl fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the credentials, whatever prints this.
        write!(f, "ProxyServer({})", self.shown())
    }
}

impl ProxyServer {
    /// Reads `scheme://[user[:password]@]host:port` (a trailing `/` is allowed; nothing else after it).
    pub fn parse(raw: &str) -> Result<ProxyServer, String> {
        let url = url::Url::parse(raw.trim()).map_err(|_| "must be a URL like http://host:port".to_owned())?;
        let scheme = match url.scheme() {
            "http" => ProxyScheme::Http,
            "https" => ProxyScheme::Https,
            "socks5" | "socks5h" => ProxyScheme::Socks5,
            other => return Err(format!("scheme {other}: is not one of http, https, socks5")),
        };
        let host = url.host_str().and_then(canonical_host).ok_or("has no host")?;
        let port = url.port_or_known_default().ok_or("needs a port (scheme://host:port)")?;
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err("must be scheme://host:port with nothing after the port".to_owned());
        }
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let username = (!url.username().is_empty()).then(|| decode(url.username()));
        let password = url.password().map(decode);
        Ok(ProxyServer { scheme, host, port, username, password })
    }

    /// `scheme://host:port`, without any credentials: what answers and logs show.
    pub fn shown(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.authority())
    }

    /// `host:port` (an IPv6 host in brackets): what failures name.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What a session's entry names: a server of its own, or an operator's proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyTarget {
    Server(ProxyServer),
    Named(String),
}

/// One entry of a session's `proxies`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRoute<T = ProxyTarget> {
    pub target: T,
    /// Host patterns (`example.com`, `*.example.org`), canonical; empty for the default entry.
    pub domains: Vec<String>,
}

/// Whether `host` (canonical) matches `pattern`: `example.com` is that host only; `*.example.org` is any
/// host under `example.org`, not `example.org` itself.
pub fn domain_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(parent) => host.ends_with(&format!(".{parent}")),
        None => host == pattern,
    }
}

/// The routing rule: the first entry whose `domains` match `host`, else the first entry without
/// `domains`; `None` means direct.
pub fn route_for<'a, T>(routes: &'a [ProxyRoute<T>], host: &str) -> Option<&'a ProxyRoute<T>> {
    let host = canonical_host(host)?;
    routes
        .iter()
        .find(|r| r.domains.iter().any(|p| domain_matches(p, &host)))
        .or_else(|| routes.iter().find(|r| r.domains.is_empty()))
}

/// Reads a session's `proxies` field (`None` when absent). Errors name the entry (`proxies[1].server`).
pub fn parse_proxies(raw: Option<&Value>) -> Result<Vec<ProxyRoute>, ApiError> {
    let Some(raw) = raw.filter(|v| !v.is_null()) else { return Ok(Vec::new()) };
    let list = raw.as_array().ok_or_else(|| invalid_params("proxies must be an array of objects"))?;
    if list.len() > MAX_PROXIES {
        return Err(out_of_bounds(format!("proxies may hold at most {MAX_PROXIES} entries")));
    }
    list.iter().enumerate().map(|(i, entry)| parse_entry(i, entry)).collect()
}

fn parse_entry(i: usize, entry: &Value) -> Result<ProxyRoute, ApiError> {
    let at = format!("proxies[{i}]");
    let f = Fields::of(entry, &at)?;
    let text = |name: &str| -> Result<Option<String>, ApiError> {
        match f.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid_params(format!("{at}.{name} must be a string"))),
        }
    };
    let target = match (text("server")?, text("name")?) {
        (Some(_), Some(_)) => return Err(invalid_params(format!("{at} takes either server or name, not both"))),
        (None, None) => return Err(invalid_params(format!("{at} needs server (a URL) or name (an operator's proxy)"))),
        (None, Some(name)) => {
            if f.has("username") || f.has("password") {
                return Err(invalid_params(format!("{at}: an operator's proxy ({name}) takes no credentials")));
            }
            ProxyTarget::Named(name.trim().to_owned())
        }
        (Some(server), None) => {
            let mut s = ProxyServer::parse(&server).map_err(|e| out_of_bounds(format!("{at}.server {e}")))?;
            if s.username.is_some() || s.password.is_some() {
                return Err(invalid_params(format!(
                    "{at}.server must not carry credentials; use username and password"
                )));
            }
            s.username = text("username")?;
            s.password = text("password")?;
            for (name, value) in [("username", &s.username), ("password", &s.password)] {
                if value.as_ref().is_some_and(|v| v.is_empty() || v.len() > MAX_CREDENTIAL_BYTES) {
                    return Err(out_of_bounds(format!("{at}.{name} must be 1 to {MAX_CREDENTIAL_BYTES} bytes")));
                }
            }
            if s.password.is_some() && s.username.is_none() {
                return Err(invalid_params(format!("{at}.password needs a username")));
            }
            ProxyTarget::Server(s)
        }
    };
    let domains = match f.get("domains") {
        None => Vec::new(),
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(out_of_bounds(format!("{at}.domains must not be empty; leave it out for the default proxy")))
        }
        Some(Value::Array(items)) if items.len() > MAX_PROXY_DOMAINS => {
            return Err(out_of_bounds(format!("{at}.domains may hold at most {MAX_PROXY_DOMAINS} entries")))
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|d| {
                d.as_str()
                    .and_then(domain_pattern)
                    .ok_or_else(|| out_of_bounds(format!("{at}.domains entry {d} is not a domain")))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid_params(format!("{at}.domains must be an array of strings"))),
    };
    for key in entry.as_object().into_iter().flat_map(|o| o.keys()) {
        if !matches!(key.as_str(), "server" | "name" | "username" | "password" | "domains") {
            return Err(invalid_params(format!("{at}.{key} is not a field of a proxy entry")));
        }
    }
    Ok(ProxyRoute { target, domains })
}

/// `example.com` or `*.example.org`, canonical; `None` when it is not one.
fn domain_pattern(raw: &str) -> Option<String> {
    let raw = raw.trim();
    match raw.strip_prefix("*.") {
        Some(rest) => canonical_host(rest).filter(|h| !h.contains('*')).map(|h| format!("*.{h}")),
        None => canonical_host(raw).filter(|h| !h.contains('*')),
    }
}

/// An entry as answers show it: `server` without credentials, or the operator proxy's `name`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ShownProxy {
    /// `scheme://host:port` of a proxy the caller gave (never its username or password).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The operator's proxy named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The hosts it serves; absent for the default entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<String>,
}

impl ShownProxy {
    pub fn of(route: &ProxyRoute) -> ShownProxy {
        let (server, name) = match &route.target {
            ProxyTarget::Server(s) => (Some(s.shown()), None),
            ProxyTarget::Named(n) => (None, Some(n.clone())),
        };
        ShownProxy { server, name, domains: route.domains.clone() }
    }
}

/// One `--proxy NAME=URL` entry (its `Debug` leaves the credentials out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedProxy {
    pub name: String,
    pub server: ProxyServer,
}

impl NamedProxy {
    /// Reads `NAME=URL`; a name is 1 to 64 of `[A-Za-z0-9._-]`. The URL is never repeated in an error.
    pub fn parse(entry: &str) -> Result<NamedProxy, String> {
        let (name, url) = entry.trim().split_once('=').ok_or("a --proxy entry is NAME=URL")?;
        let name = name.trim();
        let good = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if name.is_empty() || name.len() > 64 || !name.chars().all(good) {
            return Err(format!("--proxy name {name:?} must be 1 to 64 of A-Z a-z 0-9 . _ -"));
        }
        let server = ProxyServer::parse(url).map_err(|e| format!("--proxy {name}: the URL {e}"))?;
        Ok(NamedProxy { name: name.to_owned(), server })
    }
}

/// The operator's named proxies (`--proxy NAME=URL`), with their credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorProxies(BTreeMap<String, ProxyServer>);

impl OperatorProxies {
    /// The list, each name given once.
    pub fn new(list: &[NamedProxy]) -> Result<OperatorProxies, String> {
        let mut out = BTreeMap::new();
        for p in list {
            if out.insert(p.name.clone(), p.server.clone()).is_some() {
                return Err(format!("--proxy {} is given twice", p.name));
            }
        }
        Ok(OperatorProxies(out))
    }

    /// Reads `NAME=URL` entries (blank ones skipped).
    pub fn parse(entries: &[String]) -> Result<OperatorProxies, String> {
        let list = entries.iter().filter(|e| !e.trim().is_empty()).map(|e| NamedProxy::parse(e));
        Self::new(&list.collect::<Result<Vec<_>, _>>()?)
    }

    pub fn get(&self, name: &str) -> Option<&ProxyServer> {
        self.0.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests;
