//! Component schemas of the field values whose readers are written by hand beside their types (a secret
//! entry in `secrets.rs`, a proxy entry in `proxies`, a position in `identity.rs`, a chat message in `chat.rs`): the shape of a value
//! inside one field, where [`BodyField`](crate::params::decl::BodyField) documents the field itself.
// Never built: each type describes what a hand-written reader reads from JSON, for the schema derive alone.
#![allow(dead_code)]

use utoipa::ToSchema;

/// A position for `navigator.geolocation`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GeolocationOption {
    #[schema(minimum = -90, maximum = 90)]
    latitude: f64,
    #[schema(minimum = -180, maximum = 180)]
    longitude: f64,
    /// Metres (default 10).
    #[schema(minimum = 0, maximum = 100000)]
    accuracy: Option<f64>,
}

/// One entry of `secrets`: a value, a value with the domains it may be typed on, or a TOTP seed whose
/// one-time code (RFC 6238) is typed at the moment of typing (docs/agent.md).
#[derive(ToSchema)]
#[serde(untagged)]
pub enum SecretEntry {
    Value(String),
    Fixed(FixedSecret),
    Totp(TotpSecret),
}

/// A value typed only on pages of `domains` (and their subdomains).
#[derive(ToSchema)]
pub struct FixedSecret {
    #[schema(min_length = 1, max_length = 4096)]
    value: String,
    domains: Option<Vec<String>>,
}

/// A one-time code generator (RFC 6238): the code valid when `<secret:NAME>` is typed.
#[derive(ToSchema)]
pub struct TotpSecret {
    /// The base32 seed (spaces, dashes, `=` padding and case are ignored); 10 to 128 bytes decoded.
    #[schema(min_length = 16)]
    totp: String,
    /// 6 (default) or 8.
    #[schema(minimum = 6, maximum = 8)]
    digits: Option<u8>,
    /// The time step in seconds (default 30).
    #[schema(minimum = 1, maximum = 300)]
    period: Option<u64>,
    /// The HMAC hash (default SHA1).
    algorithm: Option<TotpAlgorithm>,
    domains: Option<Vec<String>>,
}

/// The HMAC hash of a one-time code.
#[derive(ToSchema)]
pub enum TotpAlgorithm {
    #[serde(rename = "SHA1")]
    Sha1,
    #[serde(rename = "SHA256")]
    Sha256,
    #[serde(rename = "SHA512")]
    Sha512,
}

/// One upstream proxy of a session (docs/proxies-and-identity.md): either `server` (with optional
/// `username` and `password`) or an operator's proxy by `name`. A request goes through the first entry
/// whose `domains` match its host; an entry without `domains` is the default; with no default, other hosts
/// go direct.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyEntry {
    /// `http://host:port`, `https://host:port` or `socks5://host:port`, without credentials. Its address
    /// must be public unless the operator's `--egress-allow` names it.
    #[schema(example = "socks5://proxy.example:1080")]
    server: Option<String>,
    /// Sent as `Proxy-Authorization: Basic` (HTTP) or RFC 1929 (SOCKS5); never shown again.
    #[schema(max_length = 255)]
    username: Option<String>,
    #[schema(max_length = 255, format = Password)]
    password: Option<String>,
    /// An operator's proxy (`GET /proxies`); takes no credentials.
    name: Option<String>,
    /// Hosts this entry serves: `example.com` (that host) or `*.example.org` (its subdomains).
    #[schema(min_items = 1, max_items = 100)]
    domains: Option<Vec<String>>,
}

// One message of a chat completion, read in `crate::chat` (no description: the document has none).
#[derive(ToSchema)]
pub struct ChatMessage {
    role: ChatRole,
    content: String,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}
