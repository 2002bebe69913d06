//! The middleware in front of rmcp: authenticates with the API keys (401 in the spec's error body);
//! answers another user's `Mcp-Session-Id` exactly as an unknown one (404 `MCP_SESSION_NOT_FOUND`);
//! refuses an `initialize` past the caps (429 `SESSION_LIMIT_REACHED`), a batch, a message without
//! `jsonrpc: "2.0"`, and a request whose id is already in flight on its session (JSON-RPC -32600,
//! `MCP_INVALID_REQUEST`); and turns rmcp's plain-text "session not found" into the JSON-RPC error.

use super::{jsonrpc_error, server::JSONRPC_SESSION_NOT_FOUND};
use crate::auth::AuthUser;
use crate::connections::mcp::{Full, Place, Registry};
use crate::error::ErrorResponse;
use crate::state::AppState;
use axum::body::{to_bytes, Body};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;
use webpilot_core::{ApiError, ErrorCode};

use super::server::McpCaller;

/// Largest MCP request body (rmcp's own default).
const MAX_BODY: usize = 4 * 1024 * 1024;
const SESSION_HEADER: &str = "mcp-session-id";
const INVALID_REQUEST: i32 = -32600;

#[derive(Clone)]
pub struct Guard {
    pub state: AppState,
    pub registry: Arc<Registry>,
}

fn session_not_found() -> Response {
    let msg = "MCP session not found (ended or unknown Mcp-Session-Id); initialize a new one";
    jsonrpc_error(StatusCode::NOT_FOUND, Value::Null, JSONRPC_SESSION_NOT_FOUND, msg, ErrorCode::McpSessionNotFound)
}

fn invalid_request(id: Value, msg: &str) -> Response {
    jsonrpc_error(StatusCode::BAD_REQUEST, id, INVALID_REQUEST, msg, ErrorCode::McpInvalidRequest)
}

fn limit_reached(full: Full, registry: &Registry) -> Response {
    let idle = registry.limits().idle.as_secs();
    let cap = match full {
        Full::User(n) => format!("you hold {n} MCP sessions, the most one user may"),
        Full::Node(n) => format!("this node holds {n} MCP sessions, the most it keeps"),
    };
    let msg = format!("too many MCP sessions: {cap}; end one with DELETE /mcp or let one idle out ({idle} s)");
    ErrorResponse(ApiError::new(ErrorCode::SessionLimitReached, msg)).into_response()
}

/// The session a request names: `Some(None)` for a header that is not text (no session can match).
fn session_of(headers: &HeaderMap) -> Option<Option<String>> {
    headers.get(SESSION_HEADER).map(|v| v.to_str().ok().map(str::to_owned))
}

/// The first message of a body that lacks `jsonrpc: "2.0"`, with its id.
fn lacks_jsonrpc(body: &Value) -> Option<Value> {
    (body.get("jsonrpc").and_then(Value::as_str) != Some("2.0")).then(|| body.get("id").cloned().unwrap_or(Value::Null))
}

/// The id (as JSON text) of a request message (one with a method and a non-null id).
fn request_id(body: &Value) -> Option<String> {
    body.get("method")?;
    body.get("id").filter(|id| !id.is_null()).map(Value::to_string)
}

/// A request id marked in flight on a session until rmcp takes the request in (or refuses it).
struct InFlight {
    session: String,
    id: String,
}

pub async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let user = match AuthUser::from_request_parts(&mut parts, &g.state).await {
        Ok(AuthUser(user)) => user,
        Err(e) => return e.into_response(),
    };
    let session = match session_of(&parts.headers) {
        Some(Some(id)) if g.registry.owns(&id, &user.id) => Some(id),
        Some(_) => return session_not_found(),
        None => None,
    };
    let mut place: Option<Place> = None;
    let mut in_flight: Option<InFlight> = None;
    let body = if parts.method == Method::POST {
        let bytes = match to_bytes(body, MAX_BODY).await {
            Ok(b) => b,
            Err(_) => return ErrorResponse(ApiError::code(ErrorCode::PayloadTooLarge)).into_response(),
        };
        // Bodies that are not JSON at all are left to rmcp (a JSON-RPC parse error).
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            if value.is_array() {
                return invalid_request(
                    Value::Null,
                    "batches are not supported: send one JSON-RPC message per request",
                );
            }
            if let Some(id) = lacks_jsonrpc(&value) {
                return invalid_request(id, "invalid request: every message must carry jsonrpc = \"2.0\"");
            }
            match (&session, request_id(&value)) {
                (Some(session), Some(id)) => {
                    if !g.registry.begin(session, &id) {
                        let msg = "a request with this id is in flight on this MCP session; use a new id";
                        return invalid_request(value["id"].clone(), msg);
                    }
                    in_flight = Some(InFlight { session: session.clone(), id });
                }
                (None, _) if value.get("method").and_then(Value::as_str) == Some("initialize") => {
                    match g.registry.reserve(&user.id) {
                        Ok(p) => place = Some(p),
                        Err(full) => return limit_reached(full, &g.registry),
                    }
                }
                _ => {}
            }
        }
        Body::from(bytes)
    } else {
        body
    };
    parts.extensions.insert(McpCaller(user));
    let response = next.run(Request::from_parts(parts, body)).await;
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let is_stream = content_type.starts_with("text/event-stream");
    let is_json = is_stream || content_type.starts_with("application/json");
    if let Some(place) = place {
        // The session the initialize made keeps the place; without one it is given back.
        if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            g.registry.bind(place, id);
        }
    }
    if let Some(InFlight { session, id }) = in_flight {
        // A request rmcp took in is answered on its stream (the transport clears the mark then).
        if !(response.status() == StatusCode::OK && is_stream) {
            g.registry.answered(&session, &id);
        }
    }
    if response.status() == StatusCode::NOT_FOUND && !is_json {
        // rmcp's answer to an unknown or ended Mcp-Session-Id (plain text).
        return session_not_found();
    }
    response
}
