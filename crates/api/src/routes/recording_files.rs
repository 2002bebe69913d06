//! Where a recording's files are read from: the object store once they were uploaded there, this
//! node's data directory when it recorded them, or the node that did (the request is forwarded to it
//! while it runs). The video is served with `Range` support from either place.

use super::byte_range::{self, Selected};
use super::held::{self, Holder};
use crate::error::ErrorResponse;
use crate::forward;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use std::path::PathBuf;
use tower_http::services::ServeFile;
use webpilot_blobs::Blobs;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_liveview::recording_files::{self as stored, VIDEO_FILE};
use webpilot_liveview::timeline::{self, Entry};
use webpilot_store::RecordingRecord;

/// Where a recording's files are.
pub enum Place {
    /// In this node's recordings folder.
    Here(PathBuf),
    /// In the object store.
    Blobs(Blobs),
    /// On another running node (its address).
    Node(String),
}

/// Where the files of `r` are, for a request with `headers`.
pub async fn place(state: &AppState, r: &RecordingRecord, headers: &HeaderMap) -> Result<Place, ApiError> {
    Ok(match held::holder(state, &r.node_id, r.in_object_store, headers, "recording").await? {
        Holder::Here => Place::Here(state.config.recordings_dir.join(&r.session_id)),
        Holder::Shared(blobs) => Place::Blobs(blobs),
        Holder::Node(address) => Place::Node(address),
    })
}

/// The video of `r` as the request asks for it (whole, or the one range of `Range`).
pub async fn video(state: &AppState, r: &RecordingRecord, request: Request) -> Result<Response, ErrorResponse> {
    match place(state, r, request.headers()).await? {
        Place::Node(address) => {
            let (parts, body) = request.into_parts();
            Ok(forward::forward(state, &address, parts, body).await)
        }
        Place::Here(dir) => {
            let path = dir.join(VIDEO_FILE);
            let size = match tokio::fs::metadata(&path).await {
                Ok(meta) => meta.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_video().into()),
                Err(e) => return Err(unreadable(e).into()),
            };
            // The range is decided here (RFC 9110) and handed to ServeFile in the one form it reads alike.
            let mut request = request;
            let asked = request.headers().get(header::RANGE).and_then(|v| v.to_str().ok());
            match byte_range::select(asked, size) {
                Selected::Unsatisfiable => return held::unsatisfiable(size),
                Selected::Whole => {
                    request.headers_mut().remove(header::RANGE);
                }
                Selected::Part { start, end } => {
                    let exact = HeaderValue::from_str(&format!("bytes={start}-{}", end - 1))
                        .map_err(|_| ApiError::code(ErrorCode::InternalError))?;
                    request.headers_mut().insert(header::RANGE, exact);
                }
            }
            let served = ServeFile::new(path).try_call(request).await.map_err(|e| {
                tracing::warn!(error = %e, "a recording's video could not be read");
                ApiError::code(ErrorCode::InternalError)
            })?;
            if served.status() == StatusCode::NOT_FOUND {
                return Err(no_video().into());
            }
            Ok(served.map(Body::new))
        }
        Place::Blobs(blobs) => {
            let name = stored::blob(&r.session_id, VIDEO_FILE);
            let webm = HeaderValue::from_static("video/webm");
            held::serve_blob(&blobs, &name, webm, request.headers(), no_video).await
        }
    }
}

/// The timeline of `r`, or the forwarded answer of the node that holds it.
pub async fn events(state: &AppState, r: &RecordingRecord, request: Request) -> Result<Timeline, ErrorResponse> {
    match place(state, r, request.headers()).await? {
        Place::Node(address) => {
            let (parts, body) = request.into_parts();
            Ok(Timeline::Forwarded(forward::forward(state, &address, parts, body).await))
        }
        Place::Here(dir) => Ok(Timeline::Entries(timeline::read(&dir).await.map_err(unreadable)?)),
        Place::Blobs(blobs) => {
            let stored = blobs.get(&stored::blob(&r.session_id, stored::EVENTS_FILE)).await.map_err(unreadable)?;
            let entries = match stored {
                Some(bytes) => serde_json::from_slice(&bytes).map_err(unreadable)?,
                None => Vec::new(),
            };
            Ok(Timeline::Entries(entries))
        }
    }
}

/// A timeline read here, or another node's answer.
pub enum Timeline {
    Entries(Vec<Entry>),
    Forwarded(Response),
}

fn unreadable(e: impl std::fmt::Display) -> ApiError {
    held::unreadable(e)
}

fn no_video() -> ApiError {
    ApiError::new(ErrorCode::RecordingNotFound, "the recording has no video")
}
