//! The live view over HTTP: `GET /stream/:id/view` (MJPEG, by stream token), `POST /stream/:id/share`
//! (the owner makes a read-only link), `POST /stream/:id/interaction` (clicks, typing and keys by a
//! control token). The WebRTC (WHEP) endpoint is in `whep`.

use crate::body::Valid;
use crate::error::ErrorResponse;
use crate::path::Path;
use crate::query::Query;
use crate::ratelimit::LimitedUser;
use crate::state::AppState;
use crate::stream_token::Scope;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_core::params::{InteractionRequest, LinkRequest, SendMessage};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_liveview::mjpeg;
use webpilot_sessions::SendOutcome;

/// A still picture is sent again this often, so players keep the stream and a gone viewer is noticed.
const REPEAT_STILL_FRAME: Duration = Duration::from_secs(1);
/// Longest a shared read-only link may live (a session lives at most 5 minutes; links may be made
/// ahead of a long watch by several sessions' owners, but not forever).
const MAX_SHARE_SECONDS: u64 = 24 * 3600;
/// A shared link lives as long as a session may (5 minutes) unless asked otherwise.
const DEFAULT_SHARE_SECONDS: u64 = 300;

#[derive(Deserialize)]
pub struct TokenQuery {
    pub(super) token: Option<String>,
}

fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The scope the request's token grants on `session_id`, or 401; 403 `ACCOUNT_DEACTIVATED` when the
/// session's owner was deactivated (a link is worth no more than the account that made it). Whether the
/// session is still live is for the caller's own lookup of it to say (404).
pub(super) async fn authorize(state: &AppState, session_id: &str, token: Option<&str>) -> Result<Scope, ErrorResponse> {
    let token = token.ok_or_else(|| ApiError::new(ErrorCode::Unauthorized, "the stream URL needs its token"))?;
    let scope = state
        .stream_key
        .check(session_id, token, now_unix())
        .map_err(|e| ApiError::new(ErrorCode::Unauthorized, e.to_string()))?;
    if matches!(scope, Scope::Devtools | Scope::Recording) {
        return Err(ApiError::new(ErrorCode::Unauthorized, "this token opens no live view").into());
    }
    match state.manager.owner(session_id).await {
        Ok(owner) if !owner.is_active() => Err(ApiError::code(ErrorCode::AccountDeactivated).into()),
        _ => Ok(scope),
    }
}

/// `GET /stream/:id/view?token=…`: the MJPEG stream; it ends when the session does.
pub async fn view(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(q): Query<TokenQuery>,
) -> Result<Response, ErrorResponse> {
    authorize(&state, &session_id, q.token.as_deref()).await?;
    let pages = state
        .manager
        .pages(&session_id)
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound, "the session has ended"))?;
    let secrets = state
        .manager
        .shown_secrets(&session_id)
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound, "the session has ended"))?;
    let feed = state.live_view.watch(&session_id, pages, secrets);
    let mut response = Response::new(Body::from_stream(mjpeg::stream(feed, REPEAT_STILL_FRAME)));
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&mjpeg::content_type()) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `POST /stream/:id/share {ttlSeconds?}`: a read-only view link for the owner to hand out.
pub async fn share(
    State(state): State<AppState>,
    LimitedUser(user): LimitedUser,
    Path(session_id): Path<String>,
    Valid(link): Valid<LinkRequest<DEFAULT_SHARE_SECONDS, MAX_SHARE_SECONDS>>,
) -> Result<Json<Value>, ErrorResponse> {
    let ttl = link.ttl_seconds;
    if !state.manager.owns_session(&user.id, &session_id) {
        return Err(ApiError::code(ErrorCode::SessionNotFound).into());
    }
    let expires = now_unix().saturating_add_unsigned(ttl);
    let token = state.stream_key.issue(&session_id, Scope::Watch, expires);
    let base = &state.config.public_url;
    Ok(Json(json!({
        "success": true,
        "sessionId": session_id,
        "webViewURL": format!("{base}/stream/{session_id}/view?token={token}"),
        "expiresAt": webpilot_store::rfc3339(expires.saturating_mul(1000)),
        "readOnly": true,
    })))
}

/// `POST /stream/:id/interaction?token=…` with an interaction `action` object (the spec's CLICK, TYPE,
/// KEY_PRESS, …): manual control by whoever holds the owner's (control) view link.
pub async fn interaction(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(q): Query<TokenQuery>,
    body: Result<Valid<InteractionRequest>, ErrorResponse>,
) -> Result<Json<Value>, ErrorResponse> {
    let scope = authorize(&state, &session_id, q.token.as_deref()).await?;
    let owner = state.manager.owner(&session_id).await.map_err(webpilot_core::ApiError::from)?;
    if scope != Scope::Control {
        return Err(ApiError::new(ErrorCode::Unauthorized, "this view link is read-only").into());
    }
    let Valid(InteractionRequest(message)) = body?;
    let message = SendMessage { session_id: session_id.clone(), message };
    match state.manager.send(&owner, message).await.map_err(webpilot_core::ApiError::from)? {
        SendOutcome::Ack(message) => Ok(Json(json!({ "success": true, "message": message }))),
        SendOutcome::Task(_) => Err(ApiError::code(ErrorCode::InvalidParams).into()),
    }
}
