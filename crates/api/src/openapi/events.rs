//! Socket.IO events and webhook payloads as component schemas. They are built by
//! `webpilot_core::events` (Socket.IO) and the sessions/store crates (webhooks); these types describe
//! those shapes for the OpenAPI document only (an OpenAPI document has no operation for a socket).
#![allow(dead_code)]

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use webpilot_core::events::{EndReason, Guardrail as GuardrailData, ResultData};

/// A string enum with one value: the tag of one member of a discriminated union, so every generator
/// sees the member's tag as a required property.
macro_rules! tag {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Serialize, ToSchema)]
        pub enum $name {
            #[serde(rename = $value)]
            Value,
        }
    };
}

/// A task-level Socket.IO `message` event, selected by `type`; every kind carries its `taskId`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(discriminator(property_name = "type", mapping(
    ("agent" = "#/components/schemas/AgentEvent"),
    ("action" = "#/components/schemas/ActionEvent"),
    ("response_update" = "#/components/schemas/ResponseUpdateEvent"),
    ("task_completed" = "#/components/schemas/TaskCompletedEvent"),
    ("guardrail_trigger" = "#/components/schemas/GuardrailTriggerEvent"),
    ("error" = "#/components/schemas/TaskErrorEvent"),
)))]
pub enum SocketMessage {
    Agent(AgentEvent),
    Action(ActionEvent),
    ResponseUpdate(ResponseUpdateEvent),
    TaskCompleted(TaskCompletedEvent),
    GuardrailTrigger(GuardrailTriggerEvent),
    Error(TaskErrorEvent),
}

tag!(AgentType = "agent");
tag!(ActionType = "action");
tag!(ResponseUpdateType = "response_update");
tag!(TaskCompletedType = "task_completed");
tag!(GuardrailTriggerType = "guardrail_trigger");
tag!(TaskErrorType = "error");

/// Live agent reasoning.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    #[serde(rename = "type")]
    kind: AgentType,
    task_id: String,
    content: String,
}

/// A browser action was performed: `data.name` plus the action's own fields.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionEvent {
    #[serde(rename = "type")]
    kind: ActionType,
    task_id: String,
    /// `{name, ...}`: the action's name and its own fields. A human check met on a page is the action
    /// `human_verification` with `kind` (`recaptcha_v2`, `recaptcha_v3`, `hcaptcha`, `turnstile`,
    /// `cloudflare_interstitial`, `generic`), `url` and `outcome` (`detected`, `solved_by_solver`,
    /// `solver_failed` or `solver_timed_out` with a `reason`, `solved_by_person`, `timed_out`, `stopped`).
    #[schema(value_type = Object)]
    data: Value,
}

/// A status update.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseUpdateEvent {
    #[serde(rename = "type")]
    kind: ResponseUpdateType,
    task_id: String,
    data: MessageText,
}

#[derive(Serialize, ToSchema)]
pub struct MessageText {
    message: String,
}

/// The task finished successfully.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompletedEvent {
    #[serde(rename = "type")]
    kind: TaskCompletedType,
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

/// Human input needed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailTriggerEvent {
    #[serde(rename = "type")]
    kind: GuardrailTriggerType,
    task_id: String,
    data: GuardrailData,
}

/// The task failed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskErrorEvent {
    #[serde(rename = "type")]
    kind: TaskErrorType,
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

/// A webhook delivery's body (Standard Webhooks): `{type, timestamp, data}`, `data` by `type`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(discriminator(property_name = "type", mapping(
    ("task.completed" = "#/components/schemas/TaskCompletedMessage"),
    ("task.failed" = "#/components/schemas/TaskFailedMessage"),
    ("task.guardrail" = "#/components/schemas/TaskGuardrailMessage"),
    ("session.ended" = "#/components/schemas/SessionEndedMessage"),
    ("file.created" = "#/components/schemas/FileCreatedMessage"),
    ("recording.ready" = "#/components/schemas/RecordingReadyMessage"),
)))]
pub enum WebhookMessage {
    TaskCompleted(TaskCompletedMessage),
    TaskFailed(TaskFailedMessage),
    TaskGuardrail(TaskGuardrailMessage),
    SessionEnded(SessionEndedMessage),
    FileCreated(FileCreatedMessage),
    RecordingReady(RecordingReadyMessage),
}

/// One webhook message type: its tag, and the struct of the message with its `data`.
macro_rules! webhook_message {
    ($(#[$doc:meta])* $name:ident, $tag:ident = $value:literal, $data:ty) => {
        tag!($tag = $value);

        $(#[$doc])*
        #[derive(Serialize, ToSchema)]
        pub struct $name {
            #[serde(rename = "type")]
            kind: $tag,
            /// RFC 3339 time of the event (UTC, milliseconds).
            timestamp: String,
            data: $data,
        }
    };
}

webhook_message!(
    /// `task.completed`: a task finished successfully.
    TaskCompletedMessage, TaskCompletedMessageType = "task.completed", TaskCompletedWebhook
);
webhook_message!(
    /// `task.failed`: a task failed.
    TaskFailedMessage, TaskFailedMessageType = "task.failed", TaskFailedWebhook
);
webhook_message!(
    /// `task.guardrail`: a task waits for a person's answer.
    TaskGuardrailMessage, TaskGuardrailMessageType = "task.guardrail", GuardrailWebhook
);
webhook_message!(
    /// `session.ended`: a session ended.
    SessionEndedMessage, SessionEndedMessageType = "session.ended", SessionEndedWebhook
);
webhook_message!(
    /// `file.created`: a session stored a file (a download or an upload).
    FileCreatedMessage, FileCreatedMessageType = "file.created", FileCreatedWebhook
);
webhook_message!(
    /// `recording.ready`: a session's recording can be fetched.
    RecordingReadyMessage, RecordingReadyMessageType = "recording.ready", RecordingReadyWebhook
);

/// `task.completed`'s `data`: the `task_completed` Socket.IO message with the session's id.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompletedWebhook {
    session_id: String,
    #[serde(flatten)]
    event: TaskCompletedEvent,
}

/// `task.failed`'s `data`: the `error` Socket.IO message with the session's id.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskFailedWebhook {
    session_id: String,
    #[serde(flatten)]
    event: TaskErrorEvent,
}

/// `task.guardrail`'s `data`: the `guardrail_trigger` message, the session's id, and the call that
/// answers it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailWebhook {
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
