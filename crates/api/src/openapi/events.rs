//! Socket.IO events and webhook payloads as component schemas. They are built by
//! `webpilot_core::events` (Socket.IO) and the sessions/store crates (webhooks); these types describe
//! those shapes for the OpenAPI document only (an OpenAPI document has no operation for a socket).
#![allow(dead_code)]

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use webpilot_core::events::{EndReason, Guardrail as GuardrailData, ResultData};

/// A task-level Socket.IO `message` event, selected by `type`; every kind carries its `taskId`.
#[derive(Serialize, ToSchema)]
#[serde(tag = "type")]
pub enum SocketMessage {
    /// Live agent reasoning.
    #[serde(rename = "agent")]
    Agent(AgentEvent),
    /// A browser action was performed: `data.name` plus the action's own fields.
    #[serde(rename = "action")]
    Action(ActionEvent),
    /// A status update.
    #[serde(rename = "response_update")]
    ResponseUpdate(ResponseUpdateEvent),
    /// The task finished successfully.
    #[serde(rename = "task_completed")]
    TaskCompleted(TaskCompletedEvent),
    /// Human input needed.
    #[serde(rename = "guardrail_trigger")]
    GuardrailTrigger(GuardrailTriggerEvent),
    /// The task failed.
    #[serde(rename = "error")]
    Error(TaskErrorEvent),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    task_id: String,
    content: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionEvent {
    task_id: String,
    /// `{name, ...}`: the action's name and its own fields. A human check met on a page is the action
    /// `human_verification` with `kind` (`recaptcha_v2`, `recaptcha_v3`, `hcaptcha`, `turnstile`,
    /// `cloudflare_interstitial`, `generic`), `url` and `outcome` (`detected`, `solved_by_solver`,
    /// `solver_failed` or `solver_timed_out` with a `reason`, `solved_by_person`, `timed_out`, `stopped`).
    #[schema(value_type = Object)]
    data: Value,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseUpdateEvent {
    task_id: String,
    data: MessageText,
}

#[derive(Serialize, ToSchema)]
pub struct MessageText {
    message: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompletedEvent {
    task_id: String,
    data: CompletedData,
}

/// The result data object with the task's cost.
#[derive(Serialize, ToSchema)]
pub struct CompletedData {
    #[serde(flatten)]
    result: ResultData,
    usage: Cost,
}

#[derive(Serialize, ToSchema)]
pub struct Cost {
    /// USD.
    cost: f64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailTriggerEvent {
    task_id: String,
    data: GuardrailData,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskErrorEvent {
    task_id: String,
    error: String,
    /// A code of the error table, e.g. `NAVIGATION_TIMEOUT`.
    code: String,
}

/// Socket.IO event `end_session`: the session ended.
#[derive(Serialize, ToSchema)]
pub struct EndSessionEvent {
    reason: EndReason,
}

/// Socket.IO event `instance:disconnected`: the session waits `gracePeriod` ms for its browser.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceDisconnectedEvent {
    grace_period: u64,
}

/// The webhook event types.
#[derive(Serialize, serde::Deserialize, ToSchema)]
pub enum WebhookEventType {
    #[serde(rename = "task.completed")]
    TaskCompleted,
    #[serde(rename = "task.failed")]
    TaskFailed,
    #[serde(rename = "task.guardrail")]
    TaskGuardrail,
    #[serde(rename = "session.ended")]
    SessionEnded,
    #[serde(rename = "file.created")]
    FileCreated,
    #[serde(rename = "recording.ready")]
    RecordingReady,
}

/// A webhook delivery's body (Standard Webhooks): `{type, timestamp, data}`; `data` by `type`.
#[derive(Serialize, ToSchema)]
pub struct WebhookMessage {
    #[serde(rename = "type")]
    kind: WebhookEventType,
    /// ISO 8601 time of the event.
    timestamp: String,
    data: WebhookData,
}

/// `data` of a webhook message: `task.completed`, `task.failed`, `task.guardrail`, `session.ended`,
/// `file.created`, `recording.ready`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum WebhookData {
    TaskCompleted(TaskCompletedWebhook),
    TaskFailed(TaskFailedWebhook),
    TaskGuardrail(GuardrailWebhook),
    SessionEnded(SessionEndedWebhook),
    FileCreated(FileCreatedWebhook),
    RecordingReady(RecordingReadyWebhook),
}

/// `task.completed`'s `data`: the `task_completed` Socket.IO message with the session's id.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompletedWebhook {
    /// `task_completed`.
    #[serde(rename = "type")]
    kind: String,
    session_id: String,
    #[serde(flatten)]
    event: TaskCompletedEvent,
}

/// `task.failed`'s `data`: the `error` Socket.IO message with the session's id.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskFailedWebhook {
    /// `error`.
    #[serde(rename = "type")]
    kind: String,
    session_id: String,
    #[serde(flatten)]
    event: TaskErrorEvent,
}

/// `task.guardrail`'s `data`: the `guardrail_trigger` message, the session's id, and the call that
/// answers it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailWebhook {
    #[serde(rename = "type")]
    kind: String,
    session_id: String,
    #[serde(flatten)]
    event: GuardrailTriggerEvent,
    answer: GuardrailAnswer,
}

/// `{method: "POST", url: <send-message URL>, body: <a send-message body with a guardrail message>}`.
#[derive(Serialize, ToSchema)]
pub struct GuardrailAnswer {
    method: String,
    url: String,
    #[schema(value_type = Object)]
    body: Value,
}

/// `session.ended`'s `data`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEndedWebhook {
    session_id: String,
    reason: EndReason,
    /// The session time charged, USD.
    cost: f64,
}

/// `file.created`'s `data`: the fields of the `download` Socket.IO event, the session's id, where the file
/// came from and when it was stored (downloads and uploads alike).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileCreatedWebhook {
    session_id: String,
    name: String,
    bytes: i64,
    sha256: String,
    mime_type: String,
    /// `download` or `upload`.
    source: String,
    /// RFC 3339, UTC.
    created_at: String,
}

/// `recording.ready`'s `data`: a session's recording can be fetched (`GET /recordings/{sessionId}`).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordingReadyWebhook {
    session_id: String,
    /// `ready`.
    status: String,
    duration_ms: i64,
    bytes: i64,
    frames: i64,
    /// Unix ms.
    ended_at: i64,
    /// The video's path on the service (`/recordings/{sessionId}/video.webm`).
    video: String,
    /// The timeline's path on the service (`/recordings/{sessionId}/events`).
    events: String,
}
