//! The MCP server (rmcp `ServerHandler`): tools `run_task`, `start_session`, `send_message`, `get_task`
//! and resources `webpilot://sessions`, `webpilot://task/{sessionId}/{taskId}`. Tools take the REST
//! bodies' fields and answer the REST bodies (the same parsing and views), so both interfaces agree.

use crate::calls::{self, Call, Via, Wait};
use crate::error::error_json;
use crate::state::AppState;
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult, Implementation, JsonObject,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use std::sync::Arc;
use webpilot_core::params::{SendMessage, SessionOrigin, SessionParams};
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

fn schema(v: Value) -> Arc<JsonObject> {
    Arc::new(match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    })
}

/// The task limits' properties; the bounds are the ones `SessionParams::parse` checks.
fn limit_properties() -> Value {
    use webpilot_core::params::{
        MAX_DURATION_MS, MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS, MIN_DURATION_MS, MIN_INPUT_TOKENS, MIN_OUTPUT_TOKENS,
    };
    json!({
        "maxDuration": {
            "type": "integer", "minimum": MIN_DURATION_MS, "maximum": MAX_DURATION_MS, "description": "ms"
        },
        "maxInputTokens": { "type": "integer", "minimum": MIN_INPUT_TOKENS, "maximum": MAX_INPUT_TOKENS },
        "maxOutputTokens": { "type": "integer", "minimum": MIN_OUTPUT_TOKENS, "maximum": MAX_OUTPUT_TOKENS },
        "startingUrl": { "type": ["string", "null"], "description": "absolute http(s) URL" },
        "avoidDomains": { "type": "array", "items": { "type": "string" } },
        "secrets": {
            "type": "object",
            "description": "name: value (or {value, domains}, or {totp: base32 seed, digits?, period?, algorithm?, \
                            domains?} for a one-time code); the agent types <secret:NAME> without seeing the value",
            "additionalProperties": {
                "oneOf": [
                    { "type": "string" },
                    { "type": "object", "properties": { "value": { "type": "string" },
                      "domains": { "type": "array", "items": { "type": "string" } } }, "required": ["value"] },
                    { "type": "object", "properties": { "totp": { "type": "string" },
                      "digits": { "enum": [6, 8] }, "period": { "type": "integer", "minimum": 1, "maximum": 300 },
                      "algorithm": { "enum": ["SHA1", "SHA256", "SHA512"] },
                      "domains": { "type": "array", "items": { "type": "string" } } }, "required": ["totp"] }
                ]
            }
        },
        "outputSchema": { "type": "object", "description": "a JSON Schema the final answer must satisfy (data.output)" },
        "replayOf": { "type": "string", "description": "taskId of an earlier completed task to replay without the model" },
        "vision": { "type": "string", "enum": ["off", "auto", "on"], "description": "when the model sees a screenshot of the page (default auto)" },
        "cache": { "type": "string", "enum": ["auto", "off"], "description": "auto replays a cached run of the same task without the model when there is one (default auto; docs/agent.md)" },
    })
}

fn with_task_details(required: bool) -> Value {
    let mut props = limit_properties();
    props["taskDetails"] = json!({ "type": "string", "description": "the task in natural language" });
    props["proxies"] = json!({
        "type": "array", "maxItems": webpilot_core::proxies::MAX_PROXIES,
        "description": "upstream proxies: {server, username?, password?, domains?} or {name, domains?} \
                        (docs/proxies-and-identity.md)",
        "items": { "type": "object", "properties": {
            "server": { "type": "string" }, "username": { "type": "string" }, "password": { "type": "string" },
            "name": { "type": "string" }, "domains": { "type": "array", "items": { "type": "string" } } } },
    });
    let mut s = json!({ "type": "object", "properties": props });
    if required {
        s["required"] = json!(["taskDetails"]);
    }
    s
}

/// A session's browser identity (docs/proxies-and-identity.md), for the tools that start a session.
fn with_identity(mut s: Value) -> Value {
    s["properties"]["locale"] = json!({ "type": "string", "description": "BCP 47 tag, e.g. de-DE" });
    s["properties"]["timezone"] = json!({ "type": "string", "description": "IANA zone, e.g. Europe/Berlin" });
    s["properties"]["userAgent"] = json!({ "type": "string", "maxLength": 512 });
    s["properties"]["geolocation"] = json!({ "type": "object", "properties": {
        "latitude": { "type": "number", "minimum": -90, "maximum": 90 },
        "longitude": { "type": "number", "minimum": -180, "maximum": 180 },
        "accuracy": { "type": "number", "minimum": 0, "maximum": 100000 } }, "required": ["latitude", "longitude"] });
    s
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "run_task",
            "Runs one task in a new session that ends with it. Waits up to the inline wait (50 s); returns the \
             result, or status pending with sessionId, taskId and pollUrl (then use get_task).",
            schema(with_identity(with_task_details(true))),
        ),
        Tool::new(
            "start_session",
            "Opens a persistent browser session (optionally with a first task); returns its sessionId.",
            schema({
                let mut s = with_identity(with_task_details(false));
                s["properties"]["terminateOnCompletion"] = json!({ "type": "boolean" });
                s
            }),
        ),
        Tool::new(
            "send_message",
            "Sends a message to a session: newTask (waits like run_task), state (pause, resume, stop, \
             terminate), interaction, or a guardrail answer. Same message object as POST /start/send-message.",
            schema(json!({
                "type": "object",
                "properties": {
                    "sessionId": { "type": "string" },
                    "message": { "type": "object", "properties": { "actionType": {
                        "type": "string", "enum": ["newTask", "state", "interaction", "guardrail"] } } },
                },
                "required": ["sessionId", "message"],
            })),
        ),
        Tool::new(
            "get_task",
            "The state or result of a task (same body as GET /task/:sessionId/:taskId).",
            schema(json!({
                "type": "object",
                "properties": { "sessionId": { "type": "string" }, "taskId": { "type": "string" } },
                "required": ["sessionId", "taskId"],
            })),
        ),
    ]
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
            "run_task" => Call::RunTask(SessionParams::parse(args, SessionOrigin::RunTask)?),
            "start_session" => Call::StartSession(SessionParams::parse(args, SessionOrigin::StartSession)?),
            "send_message" => Call::Send { message: SendMessage::parse(args)?, wait: Wait::ForTask },
            "get_task" => {
                let (session_id, task_id) = ids(args)?;
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

fn ids(args: &Value) -> Result<(String, String), ApiError> {
    let f = webpilot_core::params::Fields::of(args, "arguments")?;
    let id = |name| f.req_str(name).map(|v| webpilot_core::params::id_text(v).to_owned());
    Ok((id("sessionId")?, id("taskId")?))
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
        Ok(ListToolsResult::with_all_items(tools()))
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
