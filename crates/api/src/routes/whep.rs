//! The WebRTC live view, WHEP (RFC 9725): `POST /stream/:id/whep?token=…` with an SDP offer answers
//! `201` with the SDP answer and the viewer's resource in `Location`; `DELETE` on that resource ends
//! the viewer. Browsers on other origins may call both (CORS, with the preflight answered here); the
//! token in the URL, not a cookie, is what grants access, so any origin is allowed.

use super::stream::{authorize, TokenQuery};
use crate::error::ErrorResponse;
use crate::path::Path;
use crate::query::Query;
use crate::state::AppState;
use crate::stream_token::Scope;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_liveview::{ViewerScope, WhepError};

const SDP: &str = "application/sdp";

/// Adds the CORS headers a browser on another origin needs to read the answer and its `Location`.
fn with_cors(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("Location, Accept-Post"));
    response
}

fn error(e: impl Into<ErrorResponse>) -> Response {
    with_cors(e.into().into_response())
}

/// `OPTIONS` on the endpoint or a resource: the CORS preflight, and what the endpoint accepts.
pub async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("POST, DELETE, OPTIONS"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("Content-Type, Authorization"));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    headers.insert("accept-post", HeaderValue::from_static(SDP));
    with_cors(response)
}

/// `PATCH` (trickle ICE and ICE restarts) is not supported: the answer carries the only candidate.
pub async fn no_trickle() -> Response {
    error(ApiError::new(ErrorCode::MethodNotAllowed, "trickle ICE is not supported; the answer holds the candidate"))
}

/// `POST /stream/:id/whep?token=…` with `Content-Type: application/sdp`: a new WebRTC viewer.
pub async fn offer(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match answer(&state, &session_id, q.token.as_deref(), &headers, body).await {
        Ok(r) => with_cors(r),
        Err(e) => error(e),
    }
}

async fn answer(
    state: &AppState,
    session_id: &str,
    token: Option<&str>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ErrorResponse> {
    let scope = match authorize(state, session_id, token).await? {
        Scope::Control => ViewerScope::Control,
        Scope::Watch => ViewerScope::Watch,
        Scope::Devtools | Scope::Recording => return Err(ApiError::code(ErrorCode::Unauthorized).into()),
    };
    let is_sdp = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case(SDP)));
    if !is_sdp {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "a WHEP offer is an SDP body (Content-Type: application/sdp)",
        )
        .into());
    }
    let body = body.map_err(|_| ApiError::new(ErrorCode::InvalidParams, "the offer could not be read"))?;
    let offer = std::str::from_utf8(&body)
        .map_err(|_| ApiError::new(ErrorCode::InvalidParams, "the offer is not UTF-8 text"))?;
    let pages = state
        .manager
        .pages(session_id)
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound, "the session has ended"))?;
    let secrets = state
        .manager
        .shown_secrets(session_id)
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound, "the session has ended"))?;
    let feed = state.live_view.watch(session_id, pages, secrets);
    let answer = state.whep.offer(session_id, scope, feed, offer).await.map_err(|e| match e {
        WhepError::BadOffer(_) | WhepError::NoVideo | WhepError::Rtc(_) => {
            ApiError::new(ErrorCode::InvalidParams, e.to_string())
        }
        WhepError::TooMany(_) | WhepError::TooManyWatching(_) => {
            ApiError::new(ErrorCode::RateLimitExceeded, e.to_string())
        }
        WhepError::Socket(_) => {
            tracing::warn!(error = %e, "a WebRTC viewer could not be started");
            ApiError::new(ErrorCode::InstanceUnavailable, "no UDP port for a WebRTC viewer")
        }
    })?;
    let location = format!("/stream/{session_id}/whep/{}", answer.resource);
    let mut response = Response::new(Body::from(answer.sdp));
    *response.status_mut() = StatusCode::CREATED;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(SDP));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&location) {
        headers.insert(header::LOCATION, v);
    }
    Ok(response)
}

/// `DELETE /stream/:id/whep/:resource`: ends that viewer (its resource id, known only to whoever
/// made it, is what allows it).
pub async fn end(State(state): State<AppState>, Path((session_id, resource)): Path<(String, String)>) -> Response {
    if state.whep.end(&session_id, &resource) {
        with_cors(StatusCode::OK.into_response())
    } else {
        error(ApiError::new(ErrorCode::NotFound, "no such WebRTC viewer"))
    }
}
