//! POST /start/start-session, /start/send-message and /start/run-task; GET /start/sessions.

use super::rate_limited;
use crate::auth::AuthUser;
use crate::body::parse_json;
use crate::error::ErrorResponse;
use crate::state::AppState;
use crate::views;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::Response;
use axum::Json;
use serde_json::{json, Value};
use webpilot_core::params::{SendMessage, SessionOrigin, SessionParams, MAX_DURATION_MS};
use webpilot_sessions::SendOutcome;

pub async fn start_session(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    rate_limited(&state, &user, async {
        let params = SessionParams::parse(&parse_json(body)?, SessionOrigin::StartSession)?;
        let prompt = params.task_details.clone().unwrap_or_default();
        let started = state.manager.start_session(&user, params).await?;
        let socket_url = state.sockets.socket_url(&state.config.public_url, started.session_id.as_str());
        Ok(Json(views::session_started(&state.config, &state.stream_key, &started, &prompt, &socket_url)))
    })
    .await
}

pub async fn run_task(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    rate_limited(&state, &user, async {
        let params = SessionParams::parse(&parse_json(body)?, SessionOrigin::RunTask)?;
        let started = state.manager.start_session(&user, params).await?;
        let task = started
            .task
            .ok_or_else(|| ErrorResponse(webpilot_core::ApiError::code(webpilot_core::ErrorCode::InternalError)))?;
        let view = state.manager.wait_task(&task).await?;
        Ok(Json(views::task_after_wait(&state.config, &state.manager.config().prices, &task, &view)))
    })
    .await
}

pub async fn send_message(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    rate_limited(&state, &user, async {
        let msg = SendMessage::parse(&parse_json(body)?)?;
        let body: Value = match state.manager.send(&user, &msg.session_id, &msg.message).await? {
            SendOutcome::Task(task) => {
                let view = state.manager.wait_task(&task).await?;
                views::task_after_wait(&state.config, &state.manager.config().prices, &task, &view)
            }
            SendOutcome::Ack(message) => json!({ "success": true, "message": message }),
        };
        Ok(Json(body))
    })
    .await
}

/// `GET /start/sessions`: the caller's live sessions, each with its socket and live-view URLs (what
/// start-session answered), so a console opened later can watch and drive them.
pub async fn list(State(state): State<AppState>, AuthUser(user): AuthUser) -> Json<Value> {
    let base = &state.config.public_url;
    let sessions: Vec<Value> = state
        .manager
        .live_sessions(&user.id)
        .iter()
        .map(|id| {
            json!({
                "sessionId": id,
                "socketURL": state.sockets.socket_url(base, id.as_str()),
                // The remaining life is not tracked here; no session outlives the longest maxDuration.
                "streaming": views::streaming(&state.config, &state.stream_key, id.as_str(), MAX_DURATION_MS),
            })
        })
        .collect();
    Json(json!({ "success": true, "count": sessions.len(), "sessions": sessions }))
}
