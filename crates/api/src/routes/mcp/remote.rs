//! MCP tool calls for a session another node holds (`send_message`, `get_task`): passed to that node's
//! internal `POST /internal/mcp-call` with the node key and the caller's user id, run there by the same
//! `McpServer::call` as a local call, and its answer (or error) returned as if made here.

use super::McpServer;
use crate::error::error_json;
use crate::state::AppState;
use serde_json::{json, Value};
use webpilot_core::{ApiError, ErrorCode, UserId};
use webpilot_store::User;

/// The tools that name a session in their arguments.
const SESSION_TOOLS: [&str; 2] = ["send_message", "get_task"];

/// The node to pass this call to: another node holding the session the arguments name.
pub(super) async fn owner(state: &AppState, name: &str, args: &Value) -> Option<String> {
    if !SESSION_TOOLS.contains(&name) {
        return None;
    }
    let session = webpilot_core::params::id_text(args.get("sessionId")?.as_str()?);
    crate::forward::owner_elsewhere(state, session).await
}

/// Runs the call on `owner` for `user`.
pub(super) async fn call(
    state: &AppState,
    owner: &str,
    user: &User,
    name: &str,
    args: &Value,
) -> Result<Value, ApiError> {
    let body = json!({ "userId": user.id, "name": name, "arguments": args });
    let answer = crate::forward::to_node(state, owner, "/internal/mcp-call", &body).await?;
    if answer["ok"] == true {
        return Ok(answer["result"].clone());
    }
    let error = &answer["error"];
    let code = error["code"].as_str().and_then(ErrorCode::parse).unwrap_or(ErrorCode::InternalError);
    Err(ApiError::new(code, error["message"].as_str().unwrap_or_default().to_owned()))
}

/// A tool call another node received for a session this node holds, for the user it authenticated
/// (`POST /internal/mcp-call`): run by the same code as a local call.
pub(crate) async fn answer_for_node(state: &AppState, body: &Value) -> Value {
    match run(state, body).await {
        Ok(result) => json!({ "ok": true, "result": result }),
        Err(e) => json!({ "ok": false, "error": error_json(&e) }),
    }
}

async fn run(state: &AppState, body: &Value) -> Result<Value, ApiError> {
    let (Some(user), Some(name)) = (body["userId"].as_str(), body["name"].as_str()) else {
        return Err(ApiError::code(ErrorCode::InvalidParams));
    };
    let user = state
        .store
        .get_user(&UserId::from_string(user.to_owned()))
        .await
        .map_err(|_| ApiError::code(ErrorCode::InternalError))?
        .filter(User::is_active)
        .ok_or_else(|| ApiError::code(ErrorCode::Unauthorized))?;
    McpServer { state: state.clone() }.call(&user, name, &body["arguments"]).await
}
