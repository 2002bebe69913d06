//! POST /v1/chat/completions: one session per request, its task run to the end (bounded by the task's
//! maxDuration, not the inline wait), then terminated. A `SessionGuard` ends the session on every path,
//! including a client that disconnects mid-request (its future, or stream, is dropped).

use super::openai::error_body;
use super::openai::OpenAiErrorBody;
use crate::body::Valid;
use crate::error::ErrorResponse;
use crate::openapi::OPENAI;
use crate::ratelimit::LimitedUser;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use utoipa::ToSchema;
use webpilot_core::chat::ChatRequest;
use webpilot_core::usage::{micros_to_usd, usd_to_micros};
use webpilot_core::{ErrorCode, SessionId};
use webpilot_sessions::{SessionManager, StartedTask, TaskView};
use webpilot_store::User;

/// Extra wait beyond the task's maxDuration, for the outcome to be recorded.
const WAIT_SLACK: Duration = Duration::from_secs(10);

/// Runs one task in a new session, OpenAI-style; with `stream: true` the answer is Server-Sent Events
/// (`data: <chunk>` lines, then `data: [DONE]`).
#[utoipa::path(post, path = "/v1/chat/completions", operation_id = "chatCompletions", tag = OPENAI, security(("apiKey" = [])),
    request_body(content = ChatRequest),
    responses(
        (status = 200, description = "The completion; with `stream: true`, `text/event-stream` chunks (`chat.completion.chunk`)",
            content((ChatCompletion = "application/json"), (String = "text/event-stream")),
            headers(("x-webpilot-recording" = String, description = "`on`, `off`, or `skipped; code=RECORDING_QUOTA_EXCEEDED`"))),
        (status = 400, description = "`INVALID_PARAMS`, `MISSING_REQUIRED_FIELD`, `INVALID_PARAMETER`, `INVALID_TASK_DETAILS`; \
            a guardrail answers 400 with `{error: {message, type: guardrail_error, code: guardrail_triggered}}`", body = OpenAiErrorBody),
        (status = 401, description = "`UNAUTHORIZED`, `INVALID_API_KEY`, `API_KEY_EXPIRED`", body = OpenAiErrorBody),
        (status = 402, description = "`INSUFFICIENT_BALANCE`", body = OpenAiErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = OpenAiErrorBody),
        (status = 404, description = "`MODEL_NOT_FOUND`", body = OpenAiErrorBody),
        (status = 413, description = "`PAYLOAD_TOO_LARGE`", body = OpenAiErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED` (10 a minute per user), `SESSION_LIMIT_REACHED`", body = OpenAiErrorBody),
        (status = 500, description = "`INTERNAL_ERROR`", body = OpenAiErrorBody),
        (status = 502, description = "The task failed: the code is the task's (e.g. `NAVIGATION_TIMEOUT`)", body = OpenAiErrorBody),
        (status = 503, description = "`NO_INSTANCES_AVAILABLE`", body = OpenAiErrorBody),
    ))]
pub async fn completions(
    State(state): State<AppState>,
    LimitedUser(user): LimitedUser,
    Valid(req): Valid<ChatRequest>,
) -> Result<Response, ErrorResponse> {
    chat(&state, &user, req).await
}

/// Ends its session when told to, or when dropped (in the background, owned by the manager).
struct SessionGuard {
    manager: SessionManager,
    session_id: Option<SessionId>,
}

impl SessionGuard {
    async fn terminate(&mut self) {
        if let Some(id) = &self.session_id {
            self.manager.terminate(id).await;
            self.session_id = None;
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        if let Some(id) = self.session_id.take() {
            self.manager.terminate_detached(id);
        }
    }
}

/// The fields every response and chunk repeats.
struct Meta {
    id: String,
    created: u64,
    model: String,
    session_id: String,
    task_id: String,
}

/// How the task ended, as the chat endpoint reports it.
enum Outcome {
    Complete { content: String, prompt_tokens: u64, completion_tokens: u64, cost: f64, session_cost: Option<f64> },
    Guardrail { value: String },
    Failed { message: String, code: String },
}

async fn chat(state: &AppState, user: &User, req: ChatRequest) -> Result<Response, ErrorResponse> {
    let max_wait = Duration::from_millis(req.params.limits.max_duration_ms) + WAIT_SLACK;
    let (task, recording) = crate::calls::start_task(state, user, req.params, req.context).await?;
    let guard = SessionGuard { manager: state.manager.clone(), session_id: Some(task.session_id.clone()) };
    let meta = Meta {
        id: format!("chatcmpl-{}", task.task_id),
        created: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        model: req.model,
        session_id: task.session_id.to_string(),
        task_id: task.task_id.to_string(),
    };
    tracing::info!(session = %meta.session_id, task = %meta.task_id, stream = req.stream, "chat completion started");
    let run = run_to_end(state.manager.clone(), task, guard, max_wait);
    let response = if req.stream {
        stream_response(meta, run, state.config.chat_keep_alive)
    } else {
        json_response(&meta, run.await)
    };
    Ok((crate::views::recording_header(recording), response).into_response())
}

/// Waits for the task's end (or a guardrail), then terminates the session.
async fn run_to_end(
    manager: SessionManager,
    task: StartedTask,
    mut guard: SessionGuard,
    max_wait: Duration,
) -> Outcome {
    let view = manager.wait_task_for(&task, max_wait).await;
    guard.terminate().await;
    match view {
        Ok(TaskView::Complete { data, cost_micros, .. }) => Outcome::Complete {
            content: data.message,
            prompt_tokens: data.prompt_tokens,
            completion_tokens: data.completion_tokens,
            cost: micros_to_usd(cost_micros),
            session_cost: manager
                .ended_session_cost(&task.session_id, crate::calls::SESSION_END_WAIT)
                .await
                .map(micros_to_usd),
        },
        Ok(TaskView::Guardrail(g)) => Outcome::Guardrail { value: g.value },
        Ok(TaskView::Failed { error, code, .. }) => {
            Outcome::Failed { message: error, code: code.unwrap_or(ErrorCode::InternalError).as_str().to_owned() }
        }
        Ok(TaskView::Running { .. }) => Outcome::Failed {
            message: "the task did not finish within its maxDuration".into(),
            code: ErrorCode::TaskTimeout.as_str().into(),
        },
        Err(e) => {
            let e = webpilot_core::ApiError::from(e);
            Outcome::Failed { message: e.message, code: e.code.as_str().into() }
        }
    }
}

fn guardrail_error(value: &str) -> Value {
    json!({ "error": {
        "message": format!("Guardrail triggered: {value}"),
        "type": "guardrail_error",
        "code": "guardrail_triggered",
    }})
}

fn failure_error(message: &str, code: &str) -> Value {
    error_body(StatusCode::BAD_GATEWAY, &format!("the task failed: {message}"), code)
}

/// Body of a non-streaming chat completion.
#[derive(Serialize, ToSchema)]
pub struct ChatCompletion {
    choices: Vec<Choice>,
    /// Unix time (s).
    created: u64,
    id: String,
    model: String,
    /// `chat.completion`.
    object: &'static str,
    svc: Svc,
    usage: ChatUsage,
}

#[derive(Serialize, ToSchema)]
pub struct Choice {
    /// `stop`.
    finish_reason: &'static str,
    index: u32,
    message: AssistantMessage,
}

#[derive(Serialize, ToSchema)]
pub struct AssistantMessage {
    content: String,
    /// `assistant`.
    role: &'static str,
}

/// Token usage in OpenAI's names.
#[derive(Serialize, ToSchema)]
pub struct ChatUsage {
    completion_tokens: u64,
    prompt_tokens: u64,
    total_tokens: u64,
}

impl ChatUsage {
    fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        ChatUsage { completion_tokens, prompt_tokens, total_tokens: prompt_tokens + completion_tokens }
    }
}

/// The service's metadata: the session and task that ran, and the cost (USD).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Svc {
    /// Everything the call charged: the task's usage and the open time of the session it ended.
    cost: f64,
    /// What the session's open time cost; part of `cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_cost: Option<f64>,
    session_id: String,
    task_id: String,
}

fn svc(meta: &Meta, cost: f64, session_cost: Option<f64>) -> Svc {
    let total = session_cost.map_or(cost, |s| micros_to_usd(usd_to_micros(cost) + usd_to_micros(s)));
    Svc { cost: total, session_cost, session_id: meta.session_id.clone(), task_id: meta.task_id.clone() }
}

fn json_response(meta: &Meta, outcome: Outcome) -> Response {
    match outcome {
        Outcome::Complete { content, prompt_tokens, completion_tokens, cost, session_cost } => Json(ChatCompletion {
            choices: vec![Choice {
                finish_reason: "stop",
                index: 0,
                message: AssistantMessage { content, role: "assistant" },
            }],
            created: meta.created,
            id: meta.id.clone(),
            model: meta.model.clone(),
            object: "chat.completion",
            svc: svc(meta, cost, session_cost),
            usage: ChatUsage::new(prompt_tokens, completion_tokens),
        })
        .into_response(),
        Outcome::Guardrail { value } => (StatusCode::BAD_REQUEST, Json(guardrail_error(&value))).into_response(),
        Outcome::Failed { message, code } => {
            let mut r = (StatusCode::BAD_GATEWAY, Json(failure_error(&message, &code))).into_response();
            // A failed task was billed; OpenAI SDKs must not re-run it on their own.
            r.headers_mut().insert("x-should-retry", HeaderValue::from_static("false"));
            r
        }
    }
}

fn chunk(meta: &Meta, delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }],
    })
}

fn sse(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// The events after the task ended: content and the final chunk, or an error chunk; then `[DONE]`.
fn closing_events(meta: &Meta, outcome: Outcome) -> Bytes {
    let mut out = String::new();
    match outcome {
        Outcome::Complete { content, prompt_tokens, completion_tokens, cost, session_cost } => {
            out.push_str(&sse(&chunk(meta, json!({ "content": content }), None)));
            let mut last = chunk(meta, json!({}), Some("stop"));
            last["usage"] = json!(ChatUsage::new(prompt_tokens, completion_tokens));
            last["svc"] = json!(svc(meta, cost, session_cost));
            out.push_str(&sse(&last));
        }
        Outcome::Guardrail { value } => out.push_str(&sse(&guardrail_error(&value))),
        Outcome::Failed { message, code } => out.push_str(&sse(&failure_error(&message, &code))),
    }
    out.push_str("data: [DONE]\n\n");
    Bytes::from(out)
}

type Run = Pin<Box<dyn Future<Output = Outcome> + Send>>;

struct StreamState {
    meta: Meta,
    run: Option<Run>,
    started: bool,
    keep_alive: Duration,
}

fn stream_response(meta: Meta, run: impl Future<Output = Outcome> + Send + 'static, keep_alive: Duration) -> Response {
    let state = StreamState { meta, run: Some(Box::pin(run)), started: false, keep_alive };
    let events = futures::stream::unfold(state, |mut s| async move {
        if !s.started {
            s.started = true;
            let first = sse(&chunk(&s.meta, json!({ "role": "assistant" }), None));
            return Some((Ok::<_, std::convert::Infallible>(Bytes::from(first)), s));
        }
        let run = s.run.as_mut()?;
        let ended = tokio::select! {
            outcome = run.as_mut() => Some(outcome),
            _ = tokio::time::sleep(s.keep_alive) => None,
        };
        match ended {
            Some(outcome) => {
                s.run = None;
                let bytes = closing_events(&s.meta, outcome);
                Some((Ok(bytes), s))
            }
            None => Some((Ok(Bytes::from_static(b": keep-alive\n\n")), s)),
        }
    });
    let mut response = Response::new(Body::from_stream(events));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
