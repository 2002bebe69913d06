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

/// Body of start-session; `socket_url` carries the session's socket capability, and the streaming
/// URLs its owner's (control) live-view token, valid for the session's lifetime.
pub fn session_started(
    config: &ApiConfig,
    stream_key: &StreamKey,
    s: &StartedSession,
    initial_prompt: &str,
    socket_url: &str,
) -> Value {
    let base = &config.public_url;
    let expires = chrono::Utc::now().timestamp() + (s.expires_in_ms / 1000) as i64 + STREAM_TOKEN_MARGIN_SECONDS;
    let token = stream_key.issue(s.session_id.as_str(), Scope::Control, expires);
    let mut body = json!({
        "success": true,
        "sessionId": s.session_id,
        "socketURL": socket_url,
        "streaming": {
            "webRTCURL": format!("{base}/stream/{}/whep?token={token}", s.session_id),
            "webViewURL": format!("{base}/stream/{}/view?token={token}", s.session_id),
            "dimensions": { "width": FRAME_WIDTH, "height": FRAME_HEIGHT },
        },
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
