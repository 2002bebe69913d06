//! The wire shape of the request bodies, as OpenAPI schemas: what each validated request type
//! ([`RequestBody`](crate::fields::RequestBody)) reads, field by field, with its bounds. The request types
//! take their `ToSchema` from here (`params::bodies`), the OpenAPI document and MCP's tool input schemas
//! take theirs from the request types, and the tests below hold every property named here to a field its
//! validator reads.
// Never built: each type describes a body its validator reads from JSON, for the schema derive alone.
#![allow(dead_code)]

mod messages;
#[cfg(test)]
mod tests;

pub use messages::{Interaction, Message, SendMessageRequest};
use serde_json::Value;
use utoipa::ToSchema;

/// Session parameters: the body of `POST /start/start-session` (every field optional).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartSessionRequest {
    /// The initial task; may be empty when tasks are sent later.
    #[schema(max_length = 20000)]
    task_details: Option<String>,
    #[serde(flatten)]
    options: SessionOptions,
    #[serde(flatten)]
    profile: ProfileOptions,
    #[serde(flatten)]
    identity: IdentityOptions,
    /// Terminate the session after the (first) task completes.
    terminate_on_completion: Option<bool>,
}

/// The body of `POST /start/run-task`: session parameters with a required task; terminateOnCompletion
/// is forced to true.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTaskRequest {
    #[schema(min_length = 1, max_length = 20000)]
    task_details: String,
    #[serde(flatten)]
    options: SessionOptions,
    #[serde(flatten)]
    profile: ProfileOptions,
    #[serde(flatten)]
    identity: IdentityOptions,
}

/// The browser identity of a session (start-session and run-task only; docs/proxies-and-identity.md). A
/// bad value is 400 `INVALID_PARAMETER` naming the field.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentityOptions {
    /// A BCP 47 language tag, e.g. `de-DE`: `navigator.language(s)`, `Intl` and the `Accept-Language`
    /// header (`de-DE,de;q=0.9`).
    #[schema(min_length = 1, max_length = 64, example = "de-DE")]
    locale: Option<String>,
    /// An IANA time zone name, e.g. `Europe/Berlin`: `Intl.DateTimeFormat().resolvedOptions().timeZone`
    /// and `Date`.
    #[schema(min_length = 1, max_length = 64, example = "Europe/Berlin")]
    timezone: Option<String>,
    /// `navigator.userAgent` and the `User-Agent` header: printable ASCII.
    #[schema(min_length = 1, max_length = 512, pattern = "^[ -~]{1,512}$")]
    user_agent: Option<String>,
    /// Where `navigator.geolocation` says the browser is; the permission is granted to the session.
    geolocation: Option<GeolocationOption>,
}

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

/// The profile a session starts from (start-session and run-task only; not a task's).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileOptions {
    /// A profile of the caller's to start the browser context from (docs/profiles-and-files.md):
    /// 1 to 64 of `A-Z a-z 0-9 . _ -`.
    #[schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    profile: Option<String>,
    /// Save the context's cookies and storage back into `profile` when the session ends; one live session
    /// at a time may (409 `PROFILE_IN_USE`).
    persist_profile: Option<bool>,
    /// Upstream proxies the session's requests leave through, after the egress policy allowed them
    /// (docs/proxies-and-identity.md). A proxy that cannot be used is a 400 `INVALID_PARAMETER` naming it.
    #[schema(max_items = 10)]
    proxies: Option<Vec<ProxyEntry>>,
}

/// The optional session parameters start-session and run-task share.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOptions {
    /// Session timeout in ms (default and maximum 300000).
    #[schema(minimum = 1000, maximum = 300000)]
    max_duration: Option<u64>,
    #[schema(minimum = 1000, maximum = 100000)]
    max_input_tokens: Option<u64>,
    #[schema(minimum = 100, maximum = 50000)]
    max_output_tokens: Option<u64>,
    /// An absolute http or https URL; a blank page when absent or null.
    #[schema(max_length = 2048)]
    starting_url: Option<String>,
    /// Domains the agent must not visit.
    #[schema(max_items = 100)]
    avoid_domains: Option<Vec<String>>,
    /// Only `default` is supported.
    mode: Option<Mode>,
    /// Values the agent may type without seeing them, by name (docs/api.md); a `totp` entry types a
    /// one-time code (docs/agent.md).
    secrets: Option<std::collections::BTreeMap<String, SecretEntry>>,
    /// A JSON Schema the final answer must satisfy (docs/api.md).
    #[schema(value_type = Option<Object>)]
    output_schema: Option<Value>,
    /// The taskId of an earlier task to replay (docs/api.md).
    replay_of: Option<String>,
    /// When the model sees a screenshot of the page beside the text (docs/agent.md, "Vision"): `auto`
    /// (the default) when it helps, `on` every turn, `off` never. A model the operator did not declare
    /// image-capable (`--llm-vision`) gets none either way.
    vision: Option<Vision>,
    /// The action cache (docs/agent.md): `auto` (the default) replays this user's earlier run of the same
    /// task without the model, and records a successful model run; `off` does neither.
    cache: Option<CacheMode>,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Vision {
    Off,
    Auto,
    On,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    Auto,
    Off,
}

#[derive(ToSchema)]
pub enum Mode {
    #[serde(rename = "default")]
    Default,
}

/// The body of `POST /v1/chat/completions`.
#[derive(ToSchema)]
pub struct ChatCompletionRequest {
    /// Only `svc-browser-1`.
    model: String,
    #[schema(min_items = 1, max_items = 200)]
    messages: Vec<ChatMessage>,
    /// true answers with Server-Sent Events.
    stream: Option<bool>,
    /// Default 2000; clamped into maxOutputTokens' bounds.
    #[schema(minimum = 0)]
    max_tokens: Option<u64>,
    /// Accepted, ignored.
    temperature: Option<f64>,
    /// OpenAI's metadata (string values): `recording: "true"` records the session (docs/api.md, Recordings);
    /// `cache: "auto" | "off"` and `vision: "off" | "auto" | "on"` set the task's (docs/agent.md). Other keys
    /// are accepted and ignored.
    #[schema(value_type = Option<Object>)]
    metadata: Option<serde_json::Value>,
}

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
