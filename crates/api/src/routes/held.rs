//! Who answers for bytes kept in a blob store (a recording's files, a session file's bytes): this node
//! from its own folder, any node from the object store, or the node that wrote them (the request is
//! forwarded to it while it runs). And how a blob is served: whole, or the one range of `Range`.

use super::byte_range::{self, Selected};
use crate::error::ErrorResponse;
use crate::forward::FORWARDED_BY;
use crate::state::AppState;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use futures::TryStreamExt;
use webpilot_blobs::Blobs;
use webpilot_core::{ApiError, ErrorCode};

/// Who answers for bytes kept in a blob store.
pub enum Holder {
    /// This node, from its own folder.
    Here,
    /// This node, from the object store.
    Shared(Blobs),
    /// Another running node (its address).
    Node(String),
}

/// Who answers for `what` (a "recording", a "file") whose bytes node `node` wrote, in the object store when
/// `in_object_store`, for a request with `headers`.
pub async fn holder(
    state: &AppState,
    node: &str,
    in_object_store: bool,
    headers: &HeaderMap,
    what: &str,
) -> Result<Holder, ApiError> {
    if in_object_store {
        return match &state.config.blobs {
            Some(blobs) => Ok(Holder::Shared(blobs.clone())),
            None => {
                tracing::warn!(what, "bytes are in an object store this node is not configured with");
                Err(ApiError::new(
                    ErrorCode::InstanceUnavailable,
                    format!("this node cannot read the {what}'s storage"),
                ))
            }
        };
    }
    // A forwarded request is never forwarded again: the node that wrote the bytes answers from its folder.
    if node == state.cluster.node_id() || headers.contains_key(FORWARDED_BY) {
        return Ok(Holder::Here);
    }
    match state.store.node_address(node).await? {
        Some(address) => Ok(Holder::Node(address)),
        None => Err(ApiError::new(
            ErrorCode::InstanceUnavailable,
            format!("the node that holds this {what} is not running; try again once it is"),
        )),
    }
}

/// Serves blob `name` of `blobs` as `content_type`: 200 with all of it, 206 with the one range asked for,
/// 416 for a range outside it. Several ranges at once get the whole blob (a server may ignore `Range`).
/// A missing blob is `missing`.
pub async fn serve_blob(
    blobs: &Blobs,
    name: &str,
    content_type: HeaderValue,
    headers: &HeaderMap,
    missing: fn() -> ApiError,
) -> Result<Response, ErrorResponse> {
    let size = blobs.size(name).await.map_err(unreadable)?.ok_or_else(missing)?;
    let asked = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (status, start, end) = match byte_range::select(asked, size) {
        Selected::Whole => (StatusCode::OK, 0, size),
        Selected::Part { start, end } => (StatusCode::PARTIAL_CONTENT, start, end),
        Selected::Unsatisfiable => return unsatisfiable(size),
    };
    let body = if start == end {
        Body::empty()
    } else {
        let stream = blobs.stream(name, start..end).await.map_err(unreadable)?;
        Body::from_stream(stream.map_err(std::io::Error::other))
    };
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"))
        .header(header::CONTENT_LENGTH, end - start);
    if status == StatusCode::PARTIAL_CONTENT {
        response = response.header(header::CONTENT_RANGE, format!("bytes {start}-{}/{size}", end - 1));
    }
    response.body(body).map_err(|_| ApiError::code(ErrorCode::InternalError).into())
}

/// 416 for a range that starts past the end of a blob of `size` bytes.
pub fn unsatisfiable(size: u64) -> Result<Response, ErrorResponse> {
    Response::builder()
        .status(StatusCode::RANGE_NOT_SATISFIABLE)
        .header(header::CONTENT_RANGE, format!("bytes */{size}"))
        .body(Body::empty())
        .map_err(|_| ApiError::code(ErrorCode::InternalError).into())
}

/// A blob store that failed (logged; the client gets `INTERNAL_ERROR`).
pub fn unreadable(e: impl std::fmt::Display) -> ApiError {
    tracing::warn!(error = %e, "stored bytes could not be read");
    ApiError::code(ErrorCode::InternalError)
}
