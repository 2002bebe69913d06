//! Entries for the routes that speak a protocol of their own rather than JSON request/response: the live
//! view (MJPEG, WHEP), its share and take-over calls, MCP (Streamable HTTP), Prometheus metrics and the
//! console's files. Their handlers are mounted by `routes/mod.rs`; these functions only describe them
//! (never called). Node-to-node `/internal/*` calls are left out on purpose: they answer 404 to everyone
//! without the nodes' shared key.

#![allow(dead_code)]

use crate::error::ErrorBody;
use crate::openapi::errors::{AuthErrorsBrief, BodyErrors};

pub const LIVE_VIEW: &str = "live view";
pub const PROTOCOLS: &str = "protocols";

const TOKEN: &str = "The live-view token in `webViewURL` / `webRTCURL` (or a share link's)";

/// The live view as MJPEG (`multipart/x-mixed-replace` of JPEG frames) until the session ends.
#[utoipa::path(get, path = "/stream/{sessionId}/view", operation_id = "viewStream", tag = LIVE_VIEW,
    params(("sessionId" = String, Path), ("token" = String, Query, description = TOKEN)),
    responses(
        (status = 200, description = "JPEG frames", content_type = "multipart/x-mixed-replace", body = crate::openapi::Binary),
        (status = 400, description = "`INVALID_PARAMS` (a malformed query string: a repeated or unreadable parameter)", body = ErrorBody),
        (status = 401, description = "`UNAUTHORIZED` (no, wrong or expired token; a DevTools token)", body = ErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND` (ended)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that holds the session cannot be reached)", body = ErrorBody),
    ))]
fn view() {}

/// A read-only view link for the owner to hand out (`ttlSeconds`, 1 to 86400, default 300).
#[utoipa::path(post, path = "/stream/{sessionId}/share", operation_id = "shareStream", tag = LIVE_VIEW,
    security(("apiKey" = [])),
    params(("sessionId" = String, Path)),
    request_body(content = Object, description = "`{ttlSeconds?}`; an empty body is `{}`"),
    responses(
        AuthErrorsBrief, BodyErrors,
        (status = 200, description = "`{success, sessionId, webViewURL, expiresAt, readOnly: true}`", body = Object),
        (status = 400, description = "`INVALID_PARAMS`, `INVALID_PARAMETER` (ttlSeconds out of range)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED`", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that holds the session cannot be reached)", body = ErrorBody),
    ))]
fn share() {}

/// Manual control through the owner's (control) view link: an interaction `action` (`CLICK`, `TYPE`,
/// `KEY_PRESS`, `SCROLL`, `UPLOAD`, …).
#[utoipa::path(post, path = "/stream/{sessionId}/interaction", operation_id = "interactStream", tag = LIVE_VIEW,
    params(("sessionId" = String, Path), ("token" = String, Query, description = TOKEN)),
    request_body(content = webpilot_core::params::InteractionRequest, description = "An interaction action"),
    responses(
        BodyErrors,
        (status = 200, description = "`{success, message}`", body = Object),
        (status = 400, description = "`INVALID_PARAMS` (also a malformed query string), `MISSING_REQUIRED_FIELD`", body = ErrorBody),
        (status = 401, description = "`UNAUTHORIZED` (no token, or a read-only one)", body = ErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 409, description = "`INVALID_STATE`", body = ErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED` (8 manual interactions in flight per session)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that holds the session cannot be reached)", body = ErrorBody),
    ))]
fn interaction() {}

/// A WebRTC viewer (WHEP): an SDP offer in, the SDP answer out, `Location` naming the viewer's resource.
#[utoipa::path(post, path = "/stream/{sessionId}/whep", operation_id = "whepOffer", tag = LIVE_VIEW,
    params(("sessionId" = String, Path), ("token" = String, Query, description = TOKEN)),
    request_body(content = String, content_type = "application/sdp", description = "The SDP offer"),
    responses(
        (status = 201, description = "The SDP answer (VP8 video)", content_type = "application/sdp", body = String),
        (status = 400, description = "`INVALID_PARAMS` (a malformed query string: a repeated or unreadable parameter)", body = ErrorBody),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 415, description = "`UNSUPPORTED_MEDIA_TYPE` (not `application/sdp`)", body = ErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED` (too many viewers of the session or being watched)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (no UDP port for the viewer, or the session's node cannot be reached)", body = ErrorBody),
    ))]
fn whep_offer() {}

/// Ends a WebRTC viewer (its resource id is what allows it).
#[utoipa::path(delete, path = "/stream/{sessionId}/whep/{resource}", operation_id = "whepEnd", tag = LIVE_VIEW,
    params(("sessionId" = String, Path), ("resource" = String, Path)),
    responses(
        (status = 200, description = "Ended"),
        (status = 404, description = "`NOT_FOUND`", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that holds the session cannot be reached)", body = ErrorBody),
    ))]
fn whep_end() {}

/// The Model Context Protocol (Streamable HTTP, JSON-RPC): tools `run_task`, `start_session`,
/// `send_message`, `get_task`. `GET` opens the server's event stream, `DELETE` ends the MCP session.
#[utoipa::path(post, path = "/mcp", operation_id = "mcp", tag = PROTOCOLS, security(("apiKey" = [])),
    request_body(content = Object, description = "A JSON-RPC request (batches are refused)"),
    responses(
        AuthErrorsBrief,
        (status = 200, description = "The JSON-RPC answer (JSON or `text/event-stream`)", body = Object),
        (status = 202, description = "A notification or response was accepted"),
        (status = 400, description = "`MCP_INVALID_REQUEST` (a batch, no `jsonrpc: \"2.0\"`, an id already in flight), as a JSON-RPC error", body = Object),
        (status = 404, description = "`MCP_SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 413, description = "`PAYLOAD_TOO_LARGE` (over 4 MiB)", body = ErrorBody),
        (status = 429, description = "`SESSION_LIMIT_REACHED` (MCP sessions)", body = ErrorBody),
    ))]
fn mcp() {}

/// The MCP server's event stream for an MCP session (`mcp-session-id` header).
#[utoipa::path(get, path = "/mcp", operation_id = "mcpStream", tag = PROTOCOLS, security(("apiKey" = [])),
    params(("mcp-session-id" = String, Header, description = "The MCP session, from `initialize`'s answer")),
    responses(
        AuthErrorsBrief,
        (status = 200, description = "Server-Sent Events of the MCP session", content_type = "text/event-stream", body = String),
        (status = 400, description = "`MCP_INVALID_REQUEST` (no MCP session named), as a JSON-RPC error", body = Object),
        (status = 404, description = "`MCP_SESSION_NOT_FOUND`", body = ErrorBody),
    ))]
fn mcp_stream() {}

/// Ends an MCP session and the tasks it started.
#[utoipa::path(delete, path = "/mcp", operation_id = "mcpEnd", tag = PROTOCOLS, security(("apiKey" = [])),
    params(("mcp-session-id" = String, Header, description = "The MCP session to end")),
    responses(
        AuthErrorsBrief,
        (status = 200, description = "Ended"),
        (status = 202, description = "Accepted; the MCP session ends"),
        (status = 400, description = "`MCP_INVALID_REQUEST` (no MCP session named), as a JSON-RPC error", body = Object),
        (status = 404, description = "`MCP_SESSION_NOT_FOUND`", body = ErrorBody),
    ))]
fn mcp_end() {}

/// Prometheus metrics (on the main port unless `--metrics-listen` moves them).
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = PROTOCOLS,
    responses((status = 200, description = "The text exposition format", content_type = "text/plain", body = String)))]
fn metrics() {}

/// The web console (HTML) to watch and drive your sessions.
#[utoipa::path(get, path = "/console", operation_id = "console", tag = PROTOCOLS,
    responses((status = 200, description = "The page", content_type = "text/html", body = String)))]
fn console() {}

/// The console's script, style and Socket.IO client.
#[utoipa::path(get, path = "/console/{asset}", operation_id = "consoleAsset", tag = PROTOCOLS,
    params(("asset" = String, Path, description = "One of the console's files: `console.js` (the entry module), the modules it imports, `console.css` and `socket.io.min.js`; the schema's enum lists them all")),
    responses(
        (status = 200, description = "The file", content_type = "text/javascript", body = String),
        (status = 404, description = "`NOT_FOUND`", body = ErrorBody),
    ))]
fn console_asset() {}
