//! Requests for a session that another node holds are forwarded to that node, so a client behind a load
//! balancer can reach any node: the poll (`/task/{session}/…`), the live view (`/stream/{session}/…`) and
//! `send-message` (the session id is in its JSON body), and an upload into a live session's files (the
//! node running it keeps the bytes where its page can be given them). The owner answers as if it had been asked
//! directly: it checks the caller's key or token and counts the rate limit itself. A forwarded request
//! carries `x-webpilot-forwarded-by`, and is never forwarded again.

use crate::error::ErrorResponse;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;
use webpilot_core::{params, ApiError, ErrorCode};

/// Set on a request one node forwards to another (its value: the forwarding node's id).
pub const FORWARDED_BY: &str = "x-webpilot-forwarded-by";

/// The largest body read to find a session id (axum's default body limit, which the handlers apply).
const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Headers that belong to one hop and are not passed on.
const HOP_BY_HOP: [HeaderName; 6] =
    [header::CONNECTION, header::HOST, header::TRANSFER_ENCODING, header::TE, header::TRAILER, header::UPGRADE];

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    // No overall timeout: an inline task wait lasts up to 50 s, a live view as long as it is watched.
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default()
    })
}

/// The session a path names: `/task/{session}/…`, `/stream/{session}/…` and `/cdp/{session}/…`.
fn session_in_path(path: &str) -> Option<&str> {
    let mut parts = path.trim_start_matches('/').split('/');
    match (parts.next(), parts.next()) {
        (Some("task" | "stream" | "cdp"), Some(id)) if !id.is_empty() => Some(id),
        _ => None,
    }
}

/// The session an upload (`POST /sessions/{session}/files`) goes into.
fn upload_session<'a>(method: &axum::http::Method, path: &'a str) -> Option<&'a str> {
    let mut parts = path.trim_start_matches('/').split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("sessions"), Some(id), Some("files"), None) if method == axum::http::Method::POST && !id.is_empty() => {
            Some(id)
        }
        _ => None,
    }
}

/// Middleware: forwards the request when its session is held by another alive node.
pub async fn to_owner(State(state): State<AppState>, req: Request, next: Next) -> Response {
    // A WebSocket upgrade (the DevTools endpoint) is carried to the owner by its handler (`cdp_forward`).
    if req.headers().contains_key(FORWARDED_BY) || req.headers().contains_key(header::UPGRADE) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let in_path = session_in_path(parts.uri.path()).or_else(|| upload_session(&parts.method, parts.uri.path()));
    let (session, body) = match in_path {
        Some(id) => (Some(id.to_owned()), body),
        None if parts.uri.path() == "/start/send-message" => {
            let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
                Ok(bytes) => bytes,
                Err(_) => return ErrorResponse(ApiError::code(ErrorCode::PayloadTooLarge)).into_response(),
            };
            let id = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v.get("sessionId").and_then(Value::as_str).map(|id| params::id_text(id).to_owned()));
            (id, Body::from(bytes))
        }
        None => (None, body),
    };
    if let Some(id) = session {
        if let Some(owner) = owner_elsewhere(&state, &id).await {
            return forward(&state, &owner, parts, body).await;
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

pub(crate) fn this_node(state: &AppState) -> Option<axum::http::HeaderValue> {
    state.cluster.node_id().parse().ok()
}

/// Sends the request to the node at `owner` and passes its answer on.
pub(crate) async fn forward(state: &AppState, owner: &str, parts: axum::http::request::Parts, body: Body) -> Response {
    let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut headers = passed_on(&parts.headers);
    if let Ok(me) = state.cluster.node_id().parse() {
        headers.insert(HeaderName::from_static(FORWARDED_BY), me);
    }
    let sent = client()
        .request(parts.method, format!("{owner}{path}"))
        .headers(headers)
        .body(reqwest::Body::wrap_stream(body.into_data_stream()))
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(owner, error = %e, "forwarding to the session's node failed");
            return ErrorResponse(owner_unreachable()).into_response();
        }
    };
    let mut response = Response::builder().status(answer.status());
    if let Some(h) = response.headers_mut() {
        *h = passed_on(answer.headers());
    }
    let stream = answer.bytes_stream().map_err(std::io::Error::other);
    response
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| ErrorResponse(ApiError::code(ErrorCode::InternalError)).into_response())
}

/// Posts `body` to another node's internal `path` with the node key and returns its JSON answer; an
/// unreachable node is 503 `INSTANCE_UNAVAILABLE`.
pub(crate) async fn to_node(state: &AppState, owner: &str, path: &str, body: &Value) -> Result<Value, ApiError> {
    let sent = client()
        .post(format!("{owner}{path}"))
        .header(webpilot_cluster::NODE_KEY_HEADER, state.node_key.value())
        .json(body)
        .send()
        .await
        .and_then(|r| r.error_for_status());
    let answer = match sent {
        Ok(answer) => answer.json::<Value>().await,
        Err(e) => Err(e),
    };
    answer.map_err(|e| {
        tracing::warn!(owner, path, error = %e, "an internal call to the session's node failed");
        owner_unreachable()
    })
}

fn owner_unreachable() -> ApiError {
    ApiError::new(ErrorCode::InstanceUnavailable, "the node holding this session cannot be reached; try again")
}

/// Whether a request carries the node key (internal calls; anyone else gets the ordinary 404).
pub(crate) fn from_a_node(state: &AppState, headers: &HeaderMap) -> bool {
    let presented = headers.get(webpilot_cluster::NODE_KEY_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
    state.node_key.verify(presented)
}

/// The node holding open session `session` when it is another alive node; `None` for this node's own,
/// ended or unknown sessions. A node alone answers without asking the store (polls of finished tasks are
/// a hot path).
pub(crate) async fn owner_elsewhere(state: &AppState, session: &str) -> Option<String> {
    if state.manager.is_live(session) || !state.cluster.has_peers() {
        return None;
    }
    match state.store.session_place(session, state.cluster.node_id()).await {
        Ok(place) => place.map(|p| p.address),
        Err(e) => {
            tracing::warn!(error = %e, "looking up a session's node failed");
            None
        }
    }
}

fn passed_on(headers: &HeaderMap) -> HeaderMap {
    let mut out = headers.clone();
    for name in &HOP_BY_HOP {
        out.remove(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{session_in_path, upload_session};
    use axum::http::Method;

    #[test]
    fn sessions_are_found_in_poll_and_stream_paths_only() {
        assert_eq!(session_in_path("/task/ses_1/task_2"), Some("ses_1"));
        assert_eq!(session_in_path("/stream/ses_1/whep/r"), Some("ses_1"));
        assert_eq!(session_in_path("/cdp/ses_1/json/version"), Some("ses_1"));
        assert_eq!(session_in_path("/stream/"), None);
        assert_eq!(session_in_path("/start/send-message"), None);
        assert_eq!(session_in_path("/start/health"), None);
    }

    #[test]
    fn uploads_are_found_by_their_method_and_path() {
        assert_eq!(upload_session(&Method::POST, "/sessions/ses_1/files"), Some("ses_1"));
        assert_eq!(upload_session(&Method::GET, "/sessions/ses_1/files"), None);
        assert_eq!(upload_session(&Method::POST, "/sessions/ses_1/files/a.txt"), None);
        assert_eq!(upload_session(&Method::POST, "/sessions//files"), None);
    }
}
