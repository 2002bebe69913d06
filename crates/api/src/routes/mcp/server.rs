//! The MCP server (rmcp `ServerHandler`): tools `run_task`, `start_session`, `send_message`, `get_task`
//! (`tools`) and resources `webpilot://sessions`, `webpilot://task/{sessionId}/{taskId}`. Tools take the
//! REST bodies' fields and answer the REST bodies (the same request types and views), so both interfaces
//! agree.

use super::tools::{tools, GetTaskRequest};
use crate::calls::{self, Call, Via, Wait};
use crate::error::error_json;
use crate::state::AppState;
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use webpilot_core::params::{RequestBody, RunTaskRequest, SendMessage, StartSessionRequest};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::User;

/// The authenticated caller, put into the request's extensions by the auth middleware.
#[derive(Clone)]
pub struct McpCaller(pub User);

pub const SESSIONS_URI: &str = "webpilot://sessions";
const TASK_URI_PREFIX: &str = "webpilot://task/";
/// The JSON-RPC error code used for session-related errors (as the MCP reference servers do).
pub const JSONRPC_SESSION_NOT_FOUND: i32 = -32001;

#[derive(Clone)]
pub struct McpServer {
    pub state: AppState,
}

/// The `data` of JSON-RPC errors: `{code: <webpilot error code>}`.
pub fn error_data(code: ErrorCode) -> Option<Value> {
    Some(json!({ "code": code.as_str() }))
}

/// On the MCP interface, an unknown session or task is `MCP_SESSION_NOT_FOUND`.
fn mcp_code(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::SessionNotFound | ErrorCode::TaskNotFound => ErrorCode::McpSessionNotFound,
        other => other,
    }
}

fn tool_error(e: ApiError) -> CallToolResult {
    CallToolResult::structured_error(error_json(&ApiError::new(mcp_code(e.code), e.message)))
}

fn caller(ctx: &RequestContext<RoleServer>) -> Result<User, McpError> {
    ctx.extensions
        .get::<Parts>()
        .and_then(|p| p.extensions.get::<McpCaller>())
        .map(|c| c.0.clone())
        .ok_or_else(|| McpError::internal_error("the caller is not authenticated", None))
}

impl McpServer {
    /// Counts one request against the caller's rate limit (work-starting tools only).
    async fn rate(&self, user: &User) -> Result<(), ApiError> {
        let d = self.state.rate.hit(&user.id).await;
        if d.allowed {
            Ok(())
        } else {
            let msg = format!("rate limit exceeded, try again in {} seconds", d.retry_after);
            Err(ApiError::new(ErrorCode::RateLimitExceeded, msg))
        }
    }

    pub(super) async fn call(&self, user: &User, name: &str, args: &Value) -> Result<Value, ApiError> {
        let state = &self.state;
        // A session another node holds: the call runs there.
        if let Some(owner) = super::remote::owner(state, name, args).await {
            return super::remote::call(state, &owner, user, name, args).await;
        }
        let call = match name {
            "run_task" => Call::RunTask(RunTaskRequest::from_json(args)?.0),
            "start_session" => Call::StartSession(StartSessionRequest::from_json(args)?.0),
            "send_message" => Call::Send { message: SendMessage::from_json(args)?, wait: Wait::ForTask },
            "get_task" => {
                let GetTaskRequest { session_id, task_id } = GetTaskRequest::from_json(args)?;
                Call::GetTask { session_id, task_id }
            }
            other => return Err(ApiError::new(ErrorCode::InvalidParams, format!("unknown tool {other:?}"))),
        };
        if calls::counts_toward_limit(&call, Via::Request) {
            self.rate(user).await?;
        }
        let outcome = calls::execute(state, user, call).await?;
        serde_json::to_value(outcome).map_err(|_| ApiError::code(ErrorCode::InternalError))
    }
}

fn json_contents(uri: &str, body: &Value) -> ReadResourceResponse {
    let contents = ResourceContents::text(body.to_string(), uri).with_mime_type("application/json");
    ReadResourceResult::new(vec![contents]).into()
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("webpilot", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "webpilot runs an agent in a real browser. run_task does one task end to end; start_session and \
                 send_message drive a persistent session; get_task polls a task.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let user = caller(&context)?;
        let name = request.name.as_ref();
        if !tools().iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!("unknown tool {name:?}"),
                error_data(ErrorCode::InvalidParams),
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = match self.call(&user, name, &args).await {
            Ok(body) => CallToolResult::structured(body),
            Err(e) => tool_error(e),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let sessions = Resource::new(SESSIONS_URI, "sessions")
            .with_description("The caller's live sessions")
            .with_mime_type("application/json");
        Ok(ListResourcesResult::with_all_items(vec![sessions]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let task = ResourceTemplate::new(format!("{TASK_URI_PREFIX}{{sessionId}}/{{taskId}}"), "task")
            .with_description("A task's state or result (as GET /task/:sessionId/:taskId)")
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![task]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let user = caller(&context)?;
        let uri = request.uri.as_str();
        if uri == SESSIONS_URI {
            let sessions: Vec<Value> = self
                .state
                .manager
                .live_sessions(&user.id)
                .into_iter()
                .map(|id| json!({ "sessionId": id, "taskResourceTemplate": format!("{TASK_URI_PREFIX}{id}/{{taskId}}") }))
                .collect();
            return Ok(json_contents(uri, &json!({ "sessions": sessions, "count": sessions.len() })));
        }
        let Some((session_id, task_id)) = uri.strip_prefix(TASK_URI_PREFIX).and_then(|r| r.split_once('/')) else {
            return Err(McpError::resource_not_found(format!("no resource {uri}"), error_data(ErrorCode::NotFound)));
        };
        match calls::get_task(&self.state, session_id, task_id).await {
            Ok(view) => Ok(json_contents(uri, &json!(view))),
            Err(e) => {
                let code = mcp_code(e.code);
                Err(McpError::resource_not_found(e.message, error_data(code)))
            }
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(method_not_found(&request.method))
    }
}

/// JSON-RPC -32601 with `data.code` `MCP_METHOD_NOT_FOUND`.
pub fn method_not_found(method: &str) -> McpError {
    McpError::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!(
            "unknown method {method:?}; known methods: initialize, ping, tools/list, tools/call, resources/list, \
             resources/templates/list, resources/read"
        ),
        error_data(ErrorCode::McpMethodNotFound),
    )
}
