//! The MCP endpoint at `/mcp` (rmcp Streamable HTTP with MCP sessions), behind the `guard` middleware
//! (authentication, session ownership and caps, request checks). Sessions live in rmcp's in-memory
//! manager wrapped by `sessions`, which keeps the `registry` of owners and places in step.

mod guard;
mod remote;
mod server;
mod sessions;
mod tools;

pub(crate) use remote::answer_for_node;

use crate::state::AppState;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use std::sync::Arc;
use webpilot_core::ErrorCode;

pub use server::McpServer;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

pub fn router(state: &AppState) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(state.config.mcp_allowed_hosts.clone())
        .with_cancellation_token(state.config.shutdown.child_token());
    let registry = crate::connections::mcp::Registry::new(state.config.mcp_limits.clone());
    let for_factory = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(McpServer { state: for_factory.clone() }),
        Arc::new(sessions::BoundSessions::new(registry.clone())),
        config,
    );
    let guard = guard::Guard { state: state.clone(), registry };
    Router::new().route_service(MCP_PATH, service).layer(axum::middleware::from_fn_with_state(guard, guard::guard))
}

fn jsonrpc_error(status: StatusCode, id: Value, code: i32, message: &str, data: ErrorCode) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message, "data": { "code": data.as_str() } },
    });
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body.to_string()).into_response()
}
