//! Response bodies in the spec's shapes, built from domain results as typed views (their schemas are
//! the OpenAPI document's). Fields are declared in the order the bodies have always had on the wire
//! (alphabetical: they were `json!` objects), so responses stay byte-for-byte the same.

use crate::state::ApiConfig;
use crate::stream_token::{Scope, StreamKey};
use chrono::SecondsFormat;
use serde::Serialize;
use utoipa::ToSchema;
use webpilot_core::events::{Guardrail, ResultData};
use webpilot_core::geometry::{FRAME_HEIGHT, FRAME_WIDTH};
use webpilot_core::usage::{micros_to_usd, usd_to_micros, Prices, UsageView};
use webpilot_core::ErrorCode;
use webpilot_sessions::{Recording, StartedSession, StartedTask, TaskView};

pub fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn poll_url(config: &ApiConfig, task: &StartedTask) -> String {
    format!("{}/task/{}/{}", config.public_url, task.session_id, task.task_id)
}

/// How long past the session's own end its stream URLs stay valid (a clock-skew margin).
const STREAM_TOKEN_MARGIN_SECONDS: i64 = 60;

/// The `streaming` object of a session.
#[derive(Serialize, ToSchema)]
pub struct Streaming {
    dimensions: Dimensions,
    /// The WHEP endpoint (with the owner's live-view token).
    #[serde(rename = "webRTCURL")]
    web_rtc_url: String,
    /// The live-view page (with the owner's live-view token).
    #[serde(rename = "webViewURL")]
    web_view_url: String,
}

/// The browser viewport, 1024 x 600.
#[derive(Serialize, ToSchema)]
pub struct Dimensions {
    height: u32,
    width: u32,
}

/// The `streaming` object of a session: its owner's (control) live-view URLs, valid for `lifetime_ms`
/// more (the session's remaining life) plus a margin.
pub fn streaming(config: &ApiConfig, stream_key: &StreamKey, session_id: &str, lifetime_ms: u64) -> Streaming {
    let base = &config.public_url;
    let lifetime = i64::try_from(lifetime_ms / 1000).unwrap_or(i64::MAX / 2);
    let expires = chrono::Utc::now().timestamp() + lifetime + STREAM_TOKEN_MARGIN_SECONDS;
    let token = stream_key.issue(session_id, Scope::Control, expires);
    Streaming {
        dimensions: Dimensions { height: FRAME_HEIGHT, width: FRAME_WIDTH },
        web_rtc_url: format!("{base}/stream/{session_id}/whep?token={token}"),
        web_view_url: format!("{base}/stream/{session_id}/view?token={token}"),
    }
}

/// The session's DevTools endpoint (`ws://` or `wss://` as the public URL is `http://` or `https://`),
/// with `token` when given.
pub fn cdp_url(config: &ApiConfig, session_id: &str, token: Option<&str>) -> String {
    let base = &config.public_url;
    let ws = match base.strip_prefix("https://") {
        Some(rest) => format!("wss://{rest}"),
        None => format!("ws://{}", base.strip_prefix("http://").unwrap_or(base)),
    };
    match token {
        Some(t) => format!("{ws}/cdp/{session_id}?token={t}"),
        None => format!("{ws}/cdp/{session_id}"),
    }
}

/// The owner's DevTools endpoint of a session, with a `cdp` token valid for `lifetime_ms` more plus a margin.
pub fn owner_cdp_url(config: &ApiConfig, stream_key: &StreamKey, session_id: &str, lifetime_ms: u64) -> String {
    let lifetime = i64::try_from(lifetime_ms / 1000).unwrap_or(i64::MAX / 2);
    let expires = chrono::Utc::now().timestamp() + lifetime + STREAM_TOKEN_MARGIN_SECONDS;
    let token = stream_key.issue(session_id, Scope::Devtools, expires);
    cdp_url(config, session_id, Some(&token))
}

/// Body of start-session.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStarted {
    /// The account balance, USD.
    balance: f64,
    /// Session lifetime, ms.
    expires_in: u64,
    initial_prompt: String,
    message: &'static str,
    /// Present when an initial task was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    poll_url: Option<String>,
    session_id: String,
    #[serde(rename = "socketURL")]
    socket_url: String,
    /// The session's DevTools endpoint for Playwright, Puppeteer or any CDP client (docs/cdp.md).
    #[serde(rename = "cdpURL")]
    cdp_url: String,
    streaming: Streaming,
    success: bool,
    /// Present when an initial task was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
    /// Whether the session is recorded (`GET /recordings/{sessionId}` once it is).
    recording: bool,
    /// Present when the session asked to be recorded and is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    recording_skipped: Option<RecordingSkipped>,
}

/// Why a session that asked to be recorded is not.
#[derive(Serialize, ToSchema)]
pub struct RecordingSkipped {
    /// `RECORDING_QUOTA_EXCEEDED`: the user's recordings take their whole storage quota.
    code: &'static str,
    message: &'static str,
}

fn recording_skipped(recording: Recording) -> Option<RecordingSkipped> {
    match recording {
        Recording::OverQuota => Some(RecordingSkipped {
            code: "RECORDING_QUOTA_EXCEEDED",
            message: "your recordings use up your recording storage quota; delete some to record new sessions",
        }),
        Recording::On | Recording::Off => None,
    }
}

/// The header run-task and chat completions answer with, since their bodies keep the spec's and OpenAI's
/// shapes: `on`, `off`, or `skipped; code=RECORDING_QUOTA_EXCEEDED` (what start-session's
/// `recording` and `recordingSkipped` say).
pub const RECORDING_HEADER: &str = "x-webpilot-recording";

/// The value of [`RECORDING_HEADER`] for a session's recording.
pub fn recording_header(recording: Recording) -> [(axum::http::HeaderName, axum::http::HeaderValue); 1] {
    let value = match recording {
        Recording::On => "on",
        Recording::Off => "off",
        Recording::OverQuota => "skipped; code=RECORDING_QUOTA_EXCEEDED",
    };
    [(axum::http::HeaderName::from_static(RECORDING_HEADER), axum::http::HeaderValue::from_static(value))]
}

/// Body of start-session; `socket_url` carries the session's socket capability, and the streaming
/// URLs its owner's (control) live-view token, valid for the session's lifetime.
pub fn session_started(
    config: &ApiConfig,
    stream_key: &StreamKey,
    s: &StartedSession,
    initial_prompt: &str,
    socket_url: &str,
) -> SessionStarted {
    SessionStarted {
        balance: micros_to_usd(s.balance_micros),
        expires_in: s.expires_in_ms,
        initial_prompt: initial_prompt.to_owned(),
        message: if s.task.is_some() { "session started; the initial task is running" } else { "session started" },
        poll_url: s.task.as_ref().map(|t| poll_url(config, t)),
        session_id: s.session_id.to_string(),
        socket_url: socket_url.to_owned(),
        cdp_url: owner_cdp_url(config, stream_key, s.session_id.as_str(), s.expires_in_ms),
        streaming: streaming(config, stream_key, s.session_id.as_str(), s.expires_in_ms),
        success: true,
        task_id: s.task.as_ref().map(|t| t.task_id.to_string()),
        recording: s.recording == Recording::On,
        recording_skipped: recording_skipped(s.recording),
    }
}

/// A task's status in a response.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    Complete,
    Pending,
    Active,
    Failed,
}

/// The `type` of a final poll or inline result.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    TaskCompleted,
    GuardrailTrigger,
}

/// The task's cost alone.
#[derive(Serialize, ToSchema)]
pub struct CostOnly {
    /// USD.
    cost: f64,
}

/// `result` of a task completed within the inline wait.
#[derive(Serialize, ToSchema)]
pub struct InlineResult {
    data: ResultData,
    #[serde(rename = "type")]
    kind: ResultType,
    usage: CostOnly,
}

/// Body of send-message (newTask) and run-task after the inline wait, one shape per outcome.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum TaskAfterWait {
    Complete(TaskCompleteInline),
    Failed(TaskFailedInline),
    Guardrail(TaskGuardrailInline),
    Running(TaskRunningInline),
}

/// The task completed within the wait.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskCompleteInline {
    result: InlineResult,
    session_id: String,
    status: TaskStatus,
    success: bool,
    task_id: String,
    usage: UsageView,
}

/// The task failed within the wait.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskFailedInline {
    /// An error-table code, or null.
    #[schema(value_type = Option<String>)]
    code: Option<ErrorCode>,
    error: String,
    session_id: String,
    status: TaskStatus,
    success: bool,
    task_id: String,
    usage: UsageView,
}

/// The agent needs a human's input: answer with a guardrail message, then poll `pollUrl`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskGuardrailInline {
    data: Guardrail,
    message: &'static str,
    pending: bool,
    poll_url: String,
    session_id: String,
    status: TaskStatus,
    success: bool,
    task_id: String,
    #[serde(rename = "type")]
    kind: ResultType,
}

/// The task still runs after the wait: poll `pollUrl`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRunningInline {
    message: &'static str,
    pending: bool,
    poll_url: String,
    session_id: String,
    status: TaskStatus,
    success: bool,
    task_id: String,
}

impl TaskAfterWait {
    /// Whether the task ended (so a session that ends with it has ended too, or is about to).
    pub fn ended_with_session(&self) -> bool {
        match self {
            TaskAfterWait::Complete(_) => true,
            // A task the caller stopped leaves its session open for a new one.
            TaskAfterWait::Failed(f) => f.code != Some(ErrorCode::TaskStopped),
            TaskAfterWait::Guardrail(_) | TaskAfterWait::Running(_) => false,
        }
    }

    /// Adds what the session's open time cost (micro-dollars) to what the answer says the call charged.
    pub fn add_session_cost(&mut self, micros: i64) {
        let usd = micros_to_usd(micros);
        let usage = match self {
            TaskAfterWait::Complete(c) => {
                c.result.usage.cost = micros_to_usd(usd_to_micros(c.result.usage.cost) + micros);
                &mut c.usage
            }
            TaskAfterWait::Failed(f) => &mut f.usage,
            TaskAfterWait::Guardrail(_) | TaskAfterWait::Running(_) => return,
        };
        usage.cost = micros_to_usd(usd_to_micros(usage.cost) + micros);
        usage.session_cost = Some(usd);
    }
}

/// Body of send-message (newTask) and run-task after the inline wait.
pub fn task_after_wait(config: &ApiConfig, prices: &Prices, task: &StartedTask, view: &TaskView) -> TaskAfterWait {
    let session_id = task.session_id.to_string();
    let task_id = task.task_id.to_string();
    match view {
        TaskView::Complete { data, usage, cost_micros, .. } => TaskAfterWait::Complete(TaskCompleteInline {
            result: InlineResult {
                data: data.clone(),
                kind: ResultType::TaskCompleted,
                usage: CostOnly { cost: micros_to_usd(*cost_micros) },
            },
            session_id,
            status: TaskStatus::Complete,
            success: true,
            task_id,
            usage: usage.view(prices),
        }),
        TaskView::Failed { error, code, usage, .. } => TaskAfterWait::Failed(TaskFailedInline {
            code: *code,
            error: error.clone(),
            session_id,
            status: TaskStatus::Failed,
            success: false,
            task_id,
            usage: usage.view(prices),
        }),
        TaskView::Guardrail(g) => TaskAfterWait::Guardrail(TaskGuardrailInline {
            data: g.clone(),
            message: "the agent needs human input; answer with a guardrail message",
            pending: true,
            poll_url: poll_url(config, task),
            session_id,
            status: TaskStatus::Pending,
            success: true,
            task_id,
            kind: ResultType::GuardrailTrigger,
        }),
        TaskView::Running { .. } => TaskAfterWait::Running(TaskRunningInline {
            message: "the task is still running; poll pollUrl for the result",
            pending: true,
            poll_url: poll_url(config, task),
            session_id,
            status: TaskStatus::Pending,
            success: true,
            task_id,
        }),
    }
}

/// Body of GET /task/:sessionId/:taskId, one shape per state.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum PollView {
    Running(PollRunning),
    Guardrail(PollGuardrail),
    Complete(PollComplete),
    Failed(PollFailed),
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PollRunning {
    pending: bool,
    status: TaskStatus,
    success: bool,
    usage: UsageView,
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PollGuardrail {
    data: Guardrail,
    success: bool,
    #[serde(rename = "type")]
    kind: ResultType,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PollComplete {
    /// ISO 8601.
    completed_at: String,
    data: ResultData,
    success: bool,
    #[serde(rename = "type")]
    kind: ResultType,
    usage: UsageView,
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PollFailed {
    /// An error-table code, or null.
    #[schema(value_type = Option<String>)]
    code: Option<ErrorCode>,
    error: String,
    status: TaskStatus,
    success: bool,
    usage: UsageView,
}

/// Body of GET /task/:sessionId/:taskId.
pub fn poll(prices: &Prices, view: &TaskView) -> PollView {
    match view {
        TaskView::Running { usage } => PollView::Running(PollRunning {
            pending: true,
            status: TaskStatus::Active,
            success: true,
            usage: usage.view(prices),
        }),
        TaskView::Guardrail(g) => {
            PollView::Guardrail(PollGuardrail { data: g.clone(), success: true, kind: ResultType::GuardrailTrigger })
        }
        TaskView::Complete { data, usage, cost_micros, completed_at } => {
            let mut u = usage.view(prices);
            u.cost = micros_to_usd(*cost_micros);
            PollView::Complete(PollComplete {
                completed_at: completed_at.to_rfc3339_opts(SecondsFormat::Millis, true),
                data: data.clone(),
                success: true,
                kind: ResultType::TaskCompleted,
                usage: u,
            })
        }
        TaskView::Failed { error, code, usage, cost_micros } => {
            let mut u = usage.view(prices);
            u.cost = micros_to_usd(*cost_micros);
            PollView::Failed(PollFailed {
                code: *code,
                error: error.clone(),
                status: TaskStatus::Failed,
                success: false,
                usage: u,
            })
        }
    }
}

/// The immediate answer to a state, interaction or guardrail message.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageAck {
    pub message: String,
    pub success: bool,
}

/// Body of send-message: an ack, or (newTask) the task after the inline wait.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SendMessageResponse {
    Ack(MessageAck),
    Task(Box<TaskAfterWait>),
}
