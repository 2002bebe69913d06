//! `POST /internal/{call}`: node-to-node calls for a session this node holds (docs/scaling.md): a socket
//! message (`socket-message`) or an MCP tool call (`mcp-call`) another node received. They carry the node
//! key the nodes share; anyone without it gets the ordinary 404.

use crate::body::Valid;
use crate::error::{error_json, ErrorResponse};
use crate::path::Path;
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use webpilot_core::{ApiError, ErrorCode};

pub async fn call(
    State(state): State<AppState>,
    Path(call): Path<String>,
    headers: HeaderMap,
    body: Result<Valid<Value>, ErrorResponse>,
) -> Response {
    let not_found = || ErrorResponse(ApiError::new(ErrorCode::NotFound, "no such endpoint")).into_response();
    if !crate::forward::from_a_node(&state, &headers) {
        return not_found();
    }
    let Ok(Valid(body)) = body else {
        return Json(error_json(&ApiError::code(ErrorCode::InvalidParams))).into_response();
    };
    let answer = match call.as_str() {
        "socket-message" => crate::socket::answer_for_node(&state, &body).await.unwrap_or_else(|e| error_json(&e)),
        "mcp-call" => super::mcp::answer_for_node(&state, &body).await,
        _ => return not_found(),
    };
    Json(answer).into_response()
}
