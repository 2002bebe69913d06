//! The MCP endpoint at `/mcp` (rmcp Streamable HTTP), behind a middleware that authenticates with the
//! API keys (401 in the spec's error body), refuses messages without `jsonrpc: "2.0"` as
//! `MCP_INVALID_REQUEST`, and turns rmcp's plain-text "session not found" into a JSON-RPC error with
//! `MCP_SESSION_NOT_FOUND`.

mod remote;
mod server;

pub(crate) use remote::answer_for_node;

use crate::auth::AuthUser;
use crate::error::ErrorResponse;
use crate::state::AppState;
use axum::body::{to_bytes, Body};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use std::sync::Arc;
use webpilot_core::{ApiError, ErrorCode};

pub use server::{McpCaller, McpServer};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";
/// Largest MCP request body (rmcp's own default).
const MAX_BODY: usize = 4 * 1024 * 1024;

pub fn router(state: &AppState) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(state.config.mcp_allowed_hosts.clone())
        .with_cancellation_token(state.config.shutdown.child_token());
    let for_factory = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(McpServer { state: for_factory.clone() }),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new().route_service(MCP_PATH, service).layer(axum::middleware::from_fn_with_state(state.clone(), guard))
}

fn jsonrpc_error(status: StatusCode, id: Value, code: i32, message: &str, data: ErrorCode) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message, "data": { "code": data.as_str() } },
    });
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body.to_string()).into_response()
}

/// The first message of a body that lacks `jsonrpc: "2.0"`, with its id.
fn lacks_jsonrpc(body: &Value) -> Option<Value> {
    let bad = |m: &Value| m.get("jsonrpc").and_then(Value::as_str) != Some("2.0");
    match body {
        Value::Array(items) => items.iter().find(|m| bad(m)).map(|m| m.get("id").cloned().unwrap_or(Value::Null)),
        other if bad(other) => Some(other.get("id").cloned().unwrap_or(Value::Null)),
        _ => None,
    }
}

async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let user = match AuthUser::from_request_parts(&mut parts, &state).await {
        Ok(AuthUser(user)) => user,
        Err(e) => return e.into_response(),
    };
    parts.extensions.insert(McpCaller(user));
    let body = if parts.method == Method::POST {
        let bytes = match to_bytes(body, MAX_BODY).await {
            Ok(b) => b,
            Err(_) => return ErrorResponse(ApiError::code(ErrorCode::PayloadTooLarge)).into_response(),
        };
        // Bodies that are not JSON at all are left to rmcp (a JSON-RPC parse error).
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            if let Some(id) = lacks_jsonrpc(&value) {
                let msg = "invalid request: every message must carry jsonrpc = \"2.0\"";
                return jsonrpc_error(StatusCode::BAD_REQUEST, id, -32600, msg, ErrorCode::McpInvalidRequest);
            }
        }
        Body::from(bytes)
    } else {
        body
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    if response.status() == StatusCode::NOT_FOUND && !is_json {
        // rmcp's answer to an unknown or ended Mcp-Session-Id (plain text).
        let msg = "MCP session not found (ended or unknown Mcp-Session-Id); initialize a new one";
        return jsonrpc_error(
            StatusCode::NOT_FOUND,
            Value::Null,
            server::JSONRPC_SESSION_NOT_FOUND,
            msg,
            ErrorCode::McpSessionNotFound,
        );
    }
    response
}
