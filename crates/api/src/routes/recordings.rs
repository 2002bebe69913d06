//! The caller's session recordings: `GET /recordings` (newest first, `?limit=&offset=`),
//! `GET /recordings/{sessionId}`, `GET /recordings/{sessionId}/video.webm` (with `Range`),
//! `GET /recordings/{sessionId}/events` (the timeline) and `DELETE /recordings/{sessionId}`. Another
//! user's recording answers 404 like a missing one. Recording itself is the service's recorders';
//! where the files are read from (here, the object store, or the node that recorded them) is
//! `recording_files`'.

use super::recording_files::{self, Place};
use crate::auth::AuthUser;
use crate::body::Valid;
use crate::error::{ErrorBody, ErrorResponse};
use crate::openapi::errors::{AuthErrors, BodyErrors};
use crate::openapi::RECORDINGS;
use crate::paging::Page;
use crate::path::Path;
use crate::query::Query;
use crate::state::AppState;
use crate::stream_token::Scope;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use webpilot_core::params::LinkRequest;
use webpilot_core::{ApiError, ErrorCode, UserId};
use webpilot_liveview::recording_files as stored;
use webpilot_liveview::timeline::Entry;
use webpilot_store::{RecordingRecord, RecordingStatus};

/// A session's recording.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordingView {
    session_id: String,
    /// `recording`, `ready` or `failed`.
    status: &'static str,
    started_at: String,
    ended_at: Option<String>,
    duration_ms: i64,
    bytes: i64,
    frames: i64,
    #[serde(rename = "videoURL")]
    video_url: String,
    #[serde(rename = "eventsURL")]
    events_url: String,
}

/// Body of `GET /recordings/{sessionId}`.
#[derive(Serialize, ToSchema)]
pub struct RecordingAnswer {
    success: bool,
    #[serde(flatten)]
    recording: RecordingView,
}

/// Body of `GET /recordings`.
#[derive(Serialize, ToSchema)]
pub struct RecordingList {
    success: bool,
    recordings: Vec<RecordingView>,
    storage: RecordingStorage,
}

/// What the caller's recordings take of their quota.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordingStorage {
    /// Bytes all the caller's recordings take.
    used_bytes: i64,
    /// Bytes they may take (`--recording-quota`); `null` when there is no quota. At or over it, new
    /// sessions are not recorded (their start answer's `recordingSkipped`).
    quota_bytes: Option<i64>,
}

/// A recording's timeline: what happened, with the time into the video.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    success: bool,
    session_id: String,
    status: &'static str,
    #[schema(value_type = Vec<Object>)]
    events: Vec<Entry>,
}

/// A deletion's answer.
#[derive(Serialize, ToSchema)]
#[schema(as = RecordingDeleted)]
pub struct Done {
    success: bool,
    message: &'static str,
}

use webpilot_store::rfc3339;

fn view(state: &AppState, r: RecordingRecord) -> RecordingView {
    let base = format!("{}/recordings/{}", state.config.public_url, r.session_id);
    RecordingView {
        status: r.status.as_str(),
        started_at: rfc3339(r.started_at),
        ended_at: r.ended_at.map(rfc3339),
        duration_ms: r.totals.duration_ms,
        bytes: r.totals.bytes,
        frames: r.totals.frames,
        video_url: format!("{base}/video.webm"),
        events_url: format!("{base}/events"),
        session_id: r.session_id,
    }
}

/// A share link's token (`POST /recordings/{sessionId}/share`).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LinkQuery {
    /// A share link's token; without it, the owner's API key is needed.
    token: Option<String>,
}

/// The recording of `session_id` for whoever holds a share link's token for it, or the owner's key.
async fn readable(
    state: &AppState,
    session_id: &str,
    token: Option<&str>,
    parts: &mut Parts,
) -> Result<RecordingRecord, ErrorResponse> {
    if let Some(token) = token {
        let now = chrono::Utc::now().timestamp();
        if state.stream_key.check(session_id, token, now) != Ok(Scope::Recording) {
            return Err(ApiError::new(ErrorCode::Unauthorized, "the link is not valid for this recording").into());
        }
        let found = state.store.recording_of_session(session_id).await?;
        let found = found.ok_or_else(|| ApiError::code(ErrorCode::RecordingNotFound))?;
        // A deactivated account's links stop working, like its live-view and DevTools links.
        let owner = state.store.get_user(&UserId::from_string(&found.user_id)).await?;
        if owner.is_some_and(|u| !u.is_active()) {
            return Err(ApiError::code(ErrorCode::AccountDeactivated).into());
        }
        return Ok(found);
    }
    let AuthUser(user) = AuthUser::from_request_parts(parts, state).await?;
    Ok(owned(state, &user, session_id).await?)
}

/// The caller's recording of `session_id`, or 404.
async fn owned(state: &AppState, user: &webpilot_store::User, session_id: &str) -> Result<RecordingRecord, ApiError> {
    state.store.get_recording(&user.id, session_id).await?.ok_or_else(|| ApiError::code(ErrorCode::RecordingNotFound))
}

/// The caller's recordings, newest first.
#[utoipa::path(get, path = "/recordings", operation_id = "listRecordings", tag = RECORDINGS, security(("apiKey" = [])),
    params(Page),
    responses(
        AuthErrors,
        (status = 200, description = "The caller's recordings", body = RecordingList),
        (status = 400, description = "`INVALID_PARAMETER` (limit or offset out of range), `INVALID_PARAMS` (a malformed query string: a repeated parameter, a number that does not fit)", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Query(page): Query<Page>,
) -> Result<Json<RecordingList>, ErrorResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.list_recordings(&user.id, limit, offset).await?;
    let storage = RecordingStorage {
        used_bytes: state.store.recording_bytes(&user.id).await?,
        quota_bytes: state.manager.config().recording_quota_bytes,
    };
    let recordings = rows.into_iter().map(|r| view(&state, r)).collect();
    Ok(Json(RecordingList { success: true, recordings, storage }))
}

/// One recording.
#[utoipa::path(get, path = "/recordings/{sessionId}", operation_id = "getRecording", tag = RECORDINGS, security(("apiKey" = [])),
    params(("sessionId" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "The recording", body = RecordingAnswer),
        (status = 404, description = "`RECORDING_NOT_FOUND` (none, or another user's)", body = ErrorBody),
    ))]
pub async fn get(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(session_id): Path<String>,
) -> Result<Json<RecordingAnswer>, ErrorResponse> {
    let r = owned(&state, &user, &session_id).await?;
    Ok(Json(RecordingAnswer { success: true, recording: view(&state, r) }))
}

/// The video (VP8 in WebM) as written so far, with `Range` support.
#[utoipa::path(get, path = "/recordings/{sessionId}/video.webm", operation_id = "getRecordingVideo", tag = RECORDINGS, security(("apiKey" = []), ()),
    params(("sessionId" = String, Path), LinkQuery),
    responses(
        AuthErrors,
        (status = 200, description = "The video", content_type = "video/webm", body = crate::openapi::Binary),
        (status = 206, description = "The requested range", content_type = "video/webm", body = crate::openapi::Binary),
        (status = 416, description = "A range that starts past the end of the video"),
        (status = 400, description = "`INVALID_PARAMS` (a malformed query string: a repeated or unreadable parameter)", body = ErrorBody),
        (status = 404, description = "`RECORDING_NOT_FOUND` (none, or another user's)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that keeps the recording is not running)", body = ErrorBody),
    ))]
pub async fn video(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(link): Query<LinkQuery>,
    request: Request,
) -> Result<Response, ErrorResponse> {
    let (mut parts, body) = request.into_parts();
    // The stored id, not the path's text, names the files.
    let r = readable(&state, &session_id, link.token.as_deref(), &mut parts).await?;
    recording_files::video(&state, &r, Request::from_parts(parts, body)).await
}

/// The timeline (so far, while it is recording).
#[utoipa::path(get, path = "/recordings/{sessionId}/events", operation_id = "getRecordingEvents", tag = RECORDINGS, security(("apiKey" = []), ()),
    params(("sessionId" = String, Path), LinkQuery),
    responses(
        AuthErrors,
        (status = 200, description = "The timeline", body = Timeline),
        (status = 400, description = "`INVALID_PARAMS` (a malformed query string: a repeated or unreadable parameter)", body = ErrorBody),
        (status = 404, description = "`RECORDING_NOT_FOUND` (none, or another user's)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that keeps the recording is not running)", body = ErrorBody),
    ))]
pub async fn events(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(link): Query<LinkQuery>,
    request: Request,
) -> Result<Response, ErrorResponse> {
    let (mut parts, body) = request.into_parts();
    let r = readable(&state, &session_id, link.token.as_deref(), &mut parts).await?;
    let events = match recording_files::events(&state, &r, Request::from_parts(parts, body)).await? {
        recording_files::Timeline::Entries(events) => events,
        recording_files::Timeline::Forwarded(answer) => return Ok(answer),
    };
    let timeline = Timeline { success: true, status: r.status.as_str(), session_id: r.session_id, events };
    Ok(Json(timeline).into_response())
}

/// Deletes a recording and its files; one still being written is kept (409).
#[utoipa::path(delete, path = "/recordings/{sessionId}", operation_id = "deleteRecording", tag = RECORDINGS, security(("apiKey" = [])),
    params(("sessionId" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "Deleted", body = Done),
        (status = 404, description = "`RECORDING_NOT_FOUND` (none, or another user's)", body = ErrorBody),
        (status = 409, description = "`INVALID_STATE` (still recording)", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that keeps the recording is not running)", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    request: Request,
) -> Result<Response, ErrorResponse> {
    let (mut parts, body) = request.into_parts();
    let AuthUser(user) = AuthUser::from_request_parts(&mut parts, &state).await?;
    let r = owned(&state, &user, &session_id).await?;
    if r.status == RecordingStatus::Recording {
        let msg = "the session is still being recorded; delete its recording once it ended";
        return Err(ApiError::new(ErrorCode::InvalidState, msg).into());
    }
    // The node that keeps the files deletes the recording; one that is gone cannot, so nothing is deleted.
    let place = recording_files::place(&state, &r, &parts.headers).await?;
    if let Place::Node(address) = place {
        return Ok(crate::forward::forward(&state, &address, parts, body).await);
    }
    state.store.delete_recording(&user.id, &r.session_id).await?;
    let blobs = state.config.blobs.as_ref();
    stored::remove(&state.config.recordings_dir, blobs, &r.session_id, r.in_object_store).await;
    Ok(Json(Done { success: true, message: "recording deleted" }).into_response())
}

/// Longest and default life of a recording's share link.
const MAX_LINK_SECONDS: u64 = 7 * 24 * 3600;
const DEFAULT_LINK_SECONDS: u64 = 24 * 3600;

/// A read-only link to a recording.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordingLink {
    success: bool,
    session_id: String,
    /// The video, without a key until `expiresAt`.
    #[serde(rename = "videoURL")]
    video_url: String,
    /// The timeline, without a key until `expiresAt`.
    #[serde(rename = "eventsURL")]
    events_url: String,
    expires_at: String,
}

/// A read-only link to a recording's video and timeline, served without a key until it expires
/// (`ttlSeconds`, 1 to 604800, default 86400).
#[utoipa::path(post, path = "/recordings/{sessionId}/share", operation_id = "shareRecording", tag = RECORDINGS, security(("apiKey" = [])),
    params(("sessionId" = String, Path)),
    request_body(content = Object, description = "`{ttlSeconds?}`; an empty body is `{}`"),
    responses(
        AuthErrors, BodyErrors,
        (status = 200, description = "The link", body = RecordingLink),
        (status = 400, description = "`INVALID_PARAMS`, `INVALID_PARAMETER` (ttlSeconds out of range)", body = ErrorBody),
        (status = 404, description = "`RECORDING_NOT_FOUND` (none, or another user's)", body = ErrorBody),
    ))]
pub async fn share(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(session_id): Path<String>,
    Valid(link): Valid<LinkRequest<DEFAULT_LINK_SECONDS, MAX_LINK_SECONDS>>,
) -> Result<Json<RecordingLink>, ErrorResponse> {
    let ttl = link.ttl_seconds;
    let r = owned(&state, &user, &session_id).await?;
    let expires = chrono::Utc::now().timestamp().saturating_add_unsigned(ttl);
    let token = state.stream_key.issue(&r.session_id, Scope::Recording, expires);
    let base = format!("{}/recordings/{}", state.config.public_url, r.session_id);
    Ok(Json(RecordingLink {
        success: true,
        video_url: format!("{base}/video.webm?token={token}"),
        events_url: format!("{base}/events?token={token}"),
        expires_at: rfc3339(expires.saturating_mul(1000)),
        session_id: r.session_id,
    }))
}
