//! Events a session publishes: task events (the WebSocket `message` payloads of the spec's Events part)
//! and connection events (`end_session`, `instance:*`). Serialised exactly as the spec shows them.

use crate::error::ErrorCode;
use serde::Serialize;
use serde_json::{json, Value};

/// The result data object of a completed task (spec: Result data object). Fields in the alphabetical
/// order the responses have always had.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ResultData {
    /// What the action cache did (`hit`, `healed`, `miss`, `off`); absent when no model is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
    /// Seconds.
    pub completion_time: f64,
    pub completion_tokens: u64,
    pub message: String,
    /// The structured answer of a task with an outputSchema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    pub prompt_tokens: u64,
    /// What a replay (`replayOf`) did: `{of, steps, replayed, tokensSaved, handedOverAt?}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub replay: Option<Value>,
    pub total_tokens: u64,
}

/// The guardrail type of a human check waiting for a person.
pub const HUMAN_VERIFICATION_NEEDED: &str = "human_verification_needed";

/// A guardrail: the agent needs a human's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Guardrail {
    /// `human_input_needed` (the agent asks a question), or `human_verification_needed` (a CAPTCHA or
    /// challenge page waits for a person: take over, pass it, release control, then answer).
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

impl Guardrail {
    pub fn human_input_needed(question: impl Into<String>) -> Self {
        Guardrail { kind: "human_input_needed".into(), value: question.into() }
    }

    /// A human check (a CAPTCHA or challenge page) waits for a person: `value` says what, where and how to go on.
    pub fn human_verification_needed(value: impl Into<String>) -> Self {
        Guardrail { kind: HUMAN_VERIFICATION_NEEDED.into(), value: value.into() }
    }
}

/// A task-level event, published on the session's bus and sent as a WebSocket `message`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEvent {
    /// Live agent reasoning.
    Agent { content: String },
    /// A browser action was performed; `detail` holds extra fields next to `name`.
    Action { name: String, detail: Value },
    /// A status update.
    ResponseUpdate { message: String },
    /// The task finished successfully; `cost` in USD.
    Completed { data: ResultData, cost: f64 },
    /// Human input needed.
    GuardrailTrigger(Guardrail),
    /// The task failed.
    Error { error: String, code: ErrorCode },
}

impl TaskEvent {
    /// The `message` payload as the spec shows it, with the task id added to every kind.
    pub fn to_json(&self, task_id: &str) -> Value {
        match self {
            TaskEvent::Agent { content } => {
                json!({"type": "agent", "taskId": task_id, "content": content})
            }
            TaskEvent::Action { name, detail } => {
                let mut data = match detail {
                    Value::Object(m) => m.clone(),
                    _ => serde_json::Map::new(),
                };
                data.insert("name".into(), Value::String(name.clone()));
                json!({"type": "action", "taskId": task_id, "data": data})
            }
            TaskEvent::ResponseUpdate { message } => {
                json!({"type": "response_update", "taskId": task_id, "data": {"message": message}})
            }
            TaskEvent::Completed { data, cost } => {
                let mut d = serde_json::to_value(data).unwrap_or_else(|_| json!({}));
                d["usage"] = json!({"cost": cost});
                json!({"type": "task_completed", "taskId": task_id, "data": d})
            }
            TaskEvent::GuardrailTrigger(g) => {
                json!({"type": "guardrail_trigger", "taskId": task_id, "data": g})
            }
            TaskEvent::Error { error, code } => {
                json!({"type": "error", "taskId": task_id, "error": error, "code": code})
            }
        }
    }
}

/// Why a session ended (the `reason` of `end_session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub enum EndReason {
    #[serde(rename = "completed")]
    Completed,
    #[serde(rename = "terminated")]
    Terminated,
    #[serde(rename = "expired")]
    Expired,
    #[serde(rename = "terminateOnCompletion")]
    TerminateOnCompletion,
    #[serde(rename = "instance_lost")]
    InstanceLost,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Completed => "completed",
            EndReason::Terminated => "terminated",
            EndReason::Expired => "expired",
            EndReason::TerminateOnCompletion => "terminateOnCompletion",
            EndReason::InstanceLost => "instance_lost",
        }
    }
}

/// A file a session's page downloaded (`name` and the rest), or one refused (`error`, `code`): the
/// `download` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadEvent {
    /// Always `download`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
}

impl DownloadEvent {
    pub fn saved(name: String, bytes: u64, sha256: String, mime_type: String) -> Self {
        DownloadEvent {
            kind: "download",
            name: Some(name),
            bytes: Some(bytes),
            sha256: Some(sha256),
            mime_type: Some(mime_type),
            error: None,
            code: None,
        }
    }
    pub fn refused(error: String, code: ErrorCode) -> Self {
        DownloadEvent {
            kind: "download",
            name: None,
            bytes: None,
            sha256: None,
            mime_type: None,
            error: Some(error),
            code: Some(code),
        }
    }
}

/// Everything a session publishes.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    Task {
        task_id: String,
        event: TaskEvent,
    },
    /// A file landed in the session's area (or was refused).
    Download(DownloadEvent),
    EndSession {
        reason: EndReason,
    },
    InstanceDisconnected {
        grace_period_ms: u64,
    },
    InstanceReconnected,
    /// A DevTools client connected to the session's `cdpURL` or left: how many are connected now.
    Devtools {
        connections: usize,
    },
}

impl SessionEvent {
    /// The Socket.IO event name and payload.
    pub fn wire(&self) -> (&'static str, Value) {
        match self {
            SessionEvent::Task { task_id, event } => ("message", event.to_json(task_id)),
            SessionEvent::EndSession { reason } => ("end_session", json!({"reason": reason.as_str()})),
            SessionEvent::InstanceDisconnected { grace_period_ms } => {
                ("instance:disconnected", json!({"gracePeriod": grace_period_ms}))
            }
            SessionEvent::InstanceReconnected => ("instance:reconnected", json!({})),
            SessionEvent::Devtools { connections } => ("devtools", json!({ "connections": connections })),
            SessionEvent::Download(d) => ("download", serde_json::to_value(d).unwrap_or_else(|_| json!({}))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_have_the_spec_shapes() {
        let e = TaskEvent::Action { name: "click".into(), detail: json!({"text": "Next"}) };
        assert_eq!(
            e.to_json("t1"),
            json!({"type": "action", "taskId": "t1", "data": {"name": "click", "text": "Next"}})
        );
        let e = TaskEvent::Error { error: "boom".into(), code: ErrorCode::PageCrash };
        assert_eq!(e.to_json("t1")["code"], "PAGE_CRASH");
        let done = TaskEvent::Completed {
            data: ResultData {
                message: "ok".into(),
                prompt_tokens: 1,
                completion_tokens: 2,
                total_tokens: 3,
                completion_time: 0.5,
                output: None,
                replay: None,
                cache: None,
            },
            cost: 0.25,
        };
        assert_eq!(done.to_json("t")["data"]["usage"]["cost"], 0.25);
        assert_eq!(
            SessionEvent::EndSession { reason: EndReason::TerminateOnCompletion }.wire().1["reason"],
            "terminateOnCompletion"
        );
    }
}
