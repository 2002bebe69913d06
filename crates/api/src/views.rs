//! Response bodies in the spec's shapes, built from domain results.

use crate::state::ApiConfig;
use crate::stream_token::{Scope, StreamKey};
use chrono::SecondsFormat;
use serde_json::{json, Value};
use webpilot_core::geometry::{FRAME_HEIGHT, FRAME_WIDTH};
use webpilot_core::usage::{micros_to_usd, Prices};
use webpilot_sessions::{StartedSession, StartedTask, TaskView};

pub fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn poll_url(config: &ApiConfig, task: &StartedTask) -> String {
    format!("{}/task/{}/{}", config.public_url, task.session_id, task.task_id)
}

/// How long past the session's own end its stream URLs stay valid (a clock-skew margin).
const STREAM_TOKEN_MARGIN_SECONDS: i64 = 60;

/// The `streaming` object of a session: its owner's (control) live-view URLs, valid for `lifetime_ms`
/// more (the session's remaining life) plus a margin.
pub fn streaming(config: &ApiConfig, stream_key: &StreamKey, session_id: &str, lifetime_ms: u64) -> Value {
    let base = &config.public_url;
    let lifetime = i64::try_from(lifetime_ms / 1000).unwrap_or(i64::MAX / 2);
    let expires = chrono::Utc::now().timestamp() + lifetime + STREAM_TOKEN_MARGIN_SECONDS;
    let token = stream_key.issue(session_id, Scope::Control, expires);
    json!({
        "webRTCURL": format!("{base}/stream/{session_id}/whep?token={token}"),
        "webViewURL": format!("{base}/stream/{session_id}/view?token={token}"),
        "dimensions": { "width": FRAME_WIDTH, "height": FRAME_HEIGHT },
    })
}

/// Body of start-session; `socket_url` carries the session's socket capability, and the streaming
/// URLs its owner's (control) live-view token, valid for the session's lifetime.
pub fn session_started(
    config: &ApiConfig,
    stream_key: &StreamKey,
    s: &StartedSession,
    initial_prompt: &str,
    socket_url: &str,
) -> Value {
    let mut body = json!({
        "success": true,
        "sessionId": s.session_id,
        "socketURL": socket_url,
        "streaming": streaming(config, stream_key, s.session_id.as_str(), s.expires_in_ms),
        "initialPrompt": initial_prompt,
        "expiresIn": s.expires_in_ms,
        "balance": micros_to_usd(s.balance_micros),
        "message": if s.task.is_some() { "session started; the initial task is running" } else { "session started" },
    });
    if let Some(t) = &s.task {
        body["taskId"] = json!(t.task_id);
        body["pollUrl"] = json!(poll_url(config, t));
    }
    body
}

/// Body of send-message (newTask) and run-task after the inline wait.
pub fn task_after_wait(config: &ApiConfig, prices: &Prices, task: &StartedTask, view: &TaskView) -> Value {
    let ids = json!({ "success": true, "sessionId": task.session_id, "taskId": task.task_id });
    let mut body = match view {
        TaskView::Complete { data, usage, cost_micros, .. } => json!({
            "status": "complete",
            "result": { "type": "task_completed", "data": data, "usage": { "cost": micros_to_usd(*cost_micros) } },
            "usage": usage.view(prices),
        }),
        TaskView::Failed { error, code, usage, .. } => json!({
            "success": false, "status": "failed", "error": error, "code": code, "usage": usage.view(prices),
        }),
        TaskView::Guardrail(g) => json!({
            "status": "pending", "pending": true, "pollUrl": poll_url(config, task),
            "type": "guardrail_trigger", "data": g,
            "message": "the agent needs human input; answer with a guardrail message",
        }),
        TaskView::Running { .. } => json!({
            "status": "pending", "pending": true, "pollUrl": poll_url(config, task),
            "message": "the task is still running; poll pollUrl for the result",
        }),
    };
    merge(&mut body, ids);
    body
}

/// Body of GET /task/:sessionId/:taskId.
pub fn poll(prices: &Prices, view: &TaskView) -> Value {
    match view {
        TaskView::Running { usage } => {
            json!({ "success": true, "status": "active", "pending": true, "usage": usage.view(prices) })
        }
        TaskView::Guardrail(g) => {
            json!({ "success": true, "type": "guardrail_trigger", "data": g })
        }
        TaskView::Complete { data, usage, cost_micros, completed_at } => {
            let mut u = usage.view(prices);
            u.cost = micros_to_usd(*cost_micros);
            json!({
                "success": true, "type": "task_completed", "data": data, "usage": u,
                "completedAt": completed_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            })
        }
        TaskView::Failed { error, code, usage, cost_micros } => {
            let mut u = usage.view(prices);
            u.cost = micros_to_usd(*cost_micros);
            json!({ "success": false, "status": "failed", "error": error, "code": code, "usage": u })
        }
    }
}

/// Copies `extra`'s fields into `body` where `body` has none of the same name.
fn merge(body: &mut Value, extra: Value) {
    if let (Value::Object(b), Value::Object(e)) = (body, extra) {
        for (k, v) in e {
            b.entry(k).or_insert(v);
        }
    }
}
