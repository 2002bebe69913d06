//! POST /start/start-session, /start/send-message and /start/run-task; GET /start/sessions, a session's
//! tasks (GET /start/sessions/{sessionId}/tasks) and GET /proxies.

use crate::auth::AuthUser;
use crate::body::Valid;
use crate::calls::{self, Sent};
use crate::error::{ApiResult, ErrorBody};
use crate::openapi::errors::{AuthErrors, BodyErrors};
use crate::openapi::SESSIONS;
use crate::paging::Page;
use crate::path::Path;
use crate::query::Query;
use crate::ratelimit::LimitedUser;
use crate::state::AppState;
use crate::views;
use crate::views::{SendMessageResponse, SessionStarted, TaskAfterWait};
use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use chrono::SecondsFormat;
use serde::Serialize;
use utoipa::ToSchema;
use webpilot_core::params::{RunTaskRequest, SendMessage, StartSessionRequest, MAX_DURATION_MS};
use webpilot_core::proxies::ShownProxy;
use webpilot_core::ApiError;
use webpilot_sessions::{Activity, TaskEntry, TaskView};
use webpilot_store::rfc3339;

/// Starts a session (and its initial task when `taskDetails` is given, without waiting for it).
#[utoipa::path(post, path = "/start/start-session", operation_id = "startSession", tag = SESSIONS, security(("apiKey" = [])),
    request_body(content = StartSessionRequest, description = "Session parameters; all optional; an empty body is `{}`"),
    responses(
        AuthErrors, BodyErrors,
        (status = 200, description = "The session started", body = SessionStarted),
        (status = 400, description = "`INVALID_PARAMS`, `INVALID_PARAMETER` (out of bounds), `INVALID_TASK_DETAILS`", body = ErrorBody),
        (status = 402, description = "`INSUFFICIENT_BALANCE`", body = ErrorBody),
        (status = 404, description = "`TASK_NOT_FOUND` (`replayOf` names no task of the caller's)", body = ErrorBody),
        (status = 409, description = "`PROFILE_IN_USE` (another live session persists this profile)", body = ErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED` (10 a minute per user), `SESSION_LIMIT_REACHED`", body = ErrorBody),
        (status = 503, description = "`NO_INSTANCES_AVAILABLE`", body = ErrorBody),
    ))]
pub async fn start_session(
    State(state): State<AppState>,
    LimitedUser(user): LimitedUser,
    Valid(StartSessionRequest(params)): Valid<StartSessionRequest>,
) -> ApiResult<Json<SessionStarted>> {
    Ok(Json(calls::start_session(&state, &user, params).await?))
}

/// Starts a session with one task, waits up to 50 s for the task, and ends the session when the task does.
#[utoipa::path(post, path = "/start/run-task", operation_id = "runTask", tag = SESSIONS, security(("apiKey" = [])),
    request_body(content = RunTaskRequest, description = "Session parameters with a required `taskDetails`"),
    responses(
        AuthErrors, BodyErrors,
        (status = 200, description = "The task's outcome, or `pending` with its `pollUrl`", body = TaskAfterWait,
            headers(("x-webpilot-recording" = String, description = "`on`, `off`, or `skipped; code=RECORDING_QUOTA_EXCEEDED`"))),
        (status = 400, description = "`MISSING_REQUIRED_FIELD` (taskDetails), `INVALID_PARAMS`, `INVALID_PARAMETER`, `INVALID_TASK_DETAILS`", body = ErrorBody),
        (status = 402, description = "`INSUFFICIENT_BALANCE`", body = ErrorBody),
        (status = 404, description = "`TASK_NOT_FOUND` (`replayOf` names no task of the caller's)", body = ErrorBody),
        (status = 409, description = "`PROFILE_IN_USE` (another live session persists this profile)", body = ErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED` (10 a minute per user), `SESSION_LIMIT_REACHED`", body = ErrorBody),
        (status = 503, description = "`NO_INSTANCES_AVAILABLE`", body = ErrorBody),
    ))]
pub async fn run_task(
    State(state): State<AppState>,
    LimitedUser(user): LimitedUser,
    Valid(RunTaskRequest(params)): Valid<RunTaskRequest>,
) -> ApiResult<impl IntoResponse> {
    let (outcome, recording) = calls::run_task(&state, &user, params).await?;
    Ok((views::recording_header(recording), Json(outcome)))
}

/// Sends a message to a session: a new task (answered after up to 50 s, like run-task), a state
/// command, an interaction or a guardrail answer (answered at once).
#[utoipa::path(post, path = "/start/send-message", operation_id = "sendMessage", tag = SESSIONS, security(("apiKey" = [])),
    request_body(content = SendMessage),
    responses(
        AuthErrors, BodyErrors,
        (status = 200, description = "An ack, or the new task's outcome", body = SendMessageResponse),
        (status = 400, description = "`MISSING_REQUIRED_FIELD` (sessionId, message, fields of the message), `INVALID_PARAMS`, `INVALID_PARAMETER`, `INVALID_TASK_DETAILS`", body = ErrorBody),
        (status = 402, description = "`INSUFFICIENT_BALANCE` (newTask)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND` (unknown, ended, or another user's), `TASK_NOT_FOUND` (a newTask's `replayOf` names no task of the caller's)", body = ErrorBody),
        (status = 409, description = "`TASK_ALREADY_RUNNING`, `INVALID_STATE` (not allowed in the session's state)", body = ErrorBody),
        (status = 410, description = "`SESSION_EXPIRED`", body = ErrorBody),
        (status = 429, description = "`RATE_LIMIT_EXCEEDED` (10 a minute per user)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE`", body = ErrorBody),
    ))]
pub async fn send_message(
    State(state): State<AppState>,
    LimitedUser(user): LimitedUser,
    Valid(msg): Valid<SendMessage>,
) -> ApiResult<Json<SendMessageResponse>> {
    Ok(Json(match calls::send(&state, &user, msg).await? {
        Sent::Task(task) => SendMessageResponse::Task(Box::new(calls::finish(&state, &task).await?)),
        Sent::Ack(ack) => SendMessageResponse::Ack(ack),
    }))
}

/// `GET /start/sessions`: the caller's live sessions, each with its socket and live-view URLs (what
/// start-session answered), so a console opened later can watch and drive them, and with what each is
/// doing (its start, state, page address and title).
#[utoipa::path(get, path = "/start/sessions", operation_id = "listSessions", tag = SESSIONS, security(("apiKey" = [])),
    responses(
        AuthErrors,
        (status = 200, description = "The caller's live sessions", body = SessionList),
    ))]
pub async fn list(State(state): State<AppState>, AuthUser(user): AuthUser) -> Json<SessionList> {
    let base = &state.config.public_url;
    let ids = state.manager.live_sessions(&user.id);
    let overviews = futures::future::join_all(ids.iter().map(|id| state.manager.session_overview(&user.id, id))).await;
    let sessions: Vec<LiveSession> = ids
        .iter()
        .zip(overviews)
        // A session that ended while the list was read is left out.
        .filter_map(|(id, overview)| overview.map(|o| (id, o)))
        .map(|(id, o)| LiveSession {
            session_id: id.to_string(),
            socket_url: state.sockets.socket_url(base, id.as_str()),
            cdp_url: views::owner_cdp_url(&state.config, &state.stream_key, id.as_str(), MAX_DURATION_MS),
            // The remaining life is not tracked here; no session outlives the longest maxDuration.
            streaming: views::streaming(&state.config, &state.stream_key, id.as_str(), MAX_DURATION_MS),
            proxies: state.manager.session_proxies(&user.id, id),
            created_at: o.created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            state: SessionActivity::from(o.activity),
            url: o.url,
            title: o.title,
        })
        .collect();
    Json(SessionList { count: sessions.len(), sessions, success: true })
}

/// Body of `GET /start/sessions`.
#[derive(Serialize, ToSchema)]
pub struct SessionList {
    count: usize,
    sessions: Vec<LiveSession>,
    success: bool,
}

/// A live session with its socket and live-view URLs, and what it is doing.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveSession {
    session_id: String,
    #[serde(rename = "socketURL")]
    socket_url: String,
    /// The session's DevTools endpoint (docs/cdp.md).
    #[serde(rename = "cdpURL")]
    cdp_url: String,
    streaming: views::Streaming,
    /// The session's upstream proxies: `server` without credentials, or an operator proxy's `name`.
    proxies: Vec<ShownProxy>,
    /// When the session started (ISO 8601).
    created_at: String,
    state: SessionActivity,
    /// The active tab's address; `null` when the browser did not tell it within 2 s. Always sent.
    #[schema(required = true)]
    url: Option<String>,
    /// The active tab's title; `null` when the browser did not tell it within 2 s. Always sent.
    #[schema(required = true)]
    title: Option<String>,
}

/// What a live session is doing: `idle` (no task runs), `running`, `paused` (its task waits for `resume`) or
/// `guardrail` (its task waits for an answer).
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum SessionActivity {
    Idle,
    Running,
    Paused,
    Guardrail,
}

impl From<Activity> for SessionActivity {
    fn from(a: Activity) -> Self {
        match a {
            Activity::Idle => SessionActivity::Idle,
            Activity::Running => SessionActivity::Running,
            Activity::Paused => SessionActivity::Paused,
            Activity::Guardrail => SessionActivity::Guardrail,
        }
    }
}

/// A task's status in a session's history, in the poll's words: `active` (running or paused), `guardrail`
/// (waiting for an answer), `complete` or `failed`.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum HistoryStatus {
    Active,
    Guardrail,
    Complete,
    Failed,
}

impl HistoryStatus {
    fn of(e: &TaskEntry) -> Self {
        match e.view {
            TaskView::Running { .. } => HistoryStatus::Active,
            TaskView::Guardrail(_) => HistoryStatus::Guardrail,
            TaskView::Complete { .. } => HistoryStatus::Complete,
            TaskView::Failed { .. } => HistoryStatus::Failed,
        }
    }
}

/// `GET /start/sessions/{sessionId}/tasks`: a session's tasks (live or ended), newest first.
#[utoipa::path(get, path = "/start/sessions/{sessionId}/tasks", operation_id = "listSessionTasks", tag = SESSIONS, security(("apiKey" = [])),
    params(("sessionId" = String, Path), Page),
    responses(
        AuthErrors,
        (status = 200, description = "The session's tasks, newest first", body = SessionTaskList),
        (status = 400, description = "`INVALID_PARAMETER` (limit or offset out of range), `INVALID_PARAMS` (a malformed query string: a repeated parameter, a number that does not fit)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND` (unknown, or another user's)", body = ErrorBody),
    ))]
pub async fn tasks(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(session_id): Path<String>,
    Query(page): Query<Page>,
) -> ApiResult<Json<SessionTaskList>> {
    let bounds = page.bounds()?;
    let entries = state.manager.session_tasks(&user.id, &session_id, bounds).await.map_err(ApiError::from)?;
    let tasks: Vec<SessionTask> = entries.iter().map(SessionTask::from).collect();
    Ok(Json(SessionTaskList { success: true, session_id, tasks }))
}

/// Body of `GET /start/sessions/{sessionId}/tasks`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTaskList {
    success: bool,
    session_id: String,
    tasks: Vec<SessionTask>,
}

/// One task of a session's history.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTask {
    task_id: String,
    /// The task's text (`taskDetails`).
    task: String,
    status: HistoryStatus,
    /// The answer of a completed task (`data.message`).
    answer: Option<String>,
    /// Why a failed task failed, with its `code` when it has one.
    error: Option<String>,
    code: Option<String>,
    /// Its cost so far in USD (what it was charged, once it is over).
    cost: f64,
    /// When it started (ISO 8601).
    created_at: String,
    /// When it ended (ISO 8601); `null` while it runs.
    completed_at: Option<String>,
    /// Milliseconds from its start to its end, or to now while it runs.
    duration_ms: i64,
}

impl From<&TaskEntry> for SessionTask {
    fn from(e: &TaskEntry) -> Self {
        let (answer, error, code) = match &e.view {
            TaskView::Complete { data, .. } => (Some(data.message.clone()), None, None),
            TaskView::Failed { error, code, .. } => (None, Some(error.clone()), code.map(|c| c.as_str().to_owned())),
            _ => (None, None, None),
        };
        SessionTask {
            task_id: e.record.id.to_string(),
            task: e.record.details.clone(),
            status: HistoryStatus::of(e),
            answer,
            error,
            code,
            cost: e.cost_usd,
            created_at: rfc3339(e.record.created_at),
            completed_at: e.record.completed_at.map(rfc3339),
            duration_ms: e.duration_ms(),
        }
    }
}

/// `GET /proxies`: the operator's proxies a session may name (`{"name": ...}` in `proxies`); never their
/// address or credentials.
#[utoipa::path(get, path = "/proxies", operation_id = "listProxies", tag = SESSIONS, security(("apiKey" = [])),
    responses(
        (status = 200, description = "The operator's proxies, by name", body = ProxyList),
        (status = 401, description = "`UNAUTHORIZED` (no or malformed header), `INVALID_API_KEY`, `API_KEY_EXPIRED`", body = ErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = ErrorBody),
        (status = 500, description = "`INTERNAL_ERROR` (the key could not be checked)", body = ErrorBody),
    ))]
pub async fn proxies(State(state): State<AppState>, AuthUser(_user): AuthUser) -> Json<ProxyList> {
    let proxies = state.manager.proxy_names().into_iter().map(|name| ProxyName { name }).collect();
    Json(ProxyList { success: true, proxies })
}

/// Body of `GET /proxies`.
#[derive(Serialize, ToSchema)]
pub struct ProxyList {
    success: bool,
    proxies: Vec<ProxyName>,
}

/// An operator's proxy, by name.
#[derive(Serialize, ToSchema)]
pub struct ProxyName {
    name: String,
}
