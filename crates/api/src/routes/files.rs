//! `GET /sessions/{id}/files`, `GET|DELETE /sessions/{id}/files/{name}` and `POST /sessions/{id}/files?name=`:
//! a session's files, listed from the database and their bytes served from the blob store (with `Range`),
//! during the session and after it ended (until the files are purged). Any node answers: one that does not
//! keep a file's bytes forwards the call to the node that does (an upload into a live session goes to the
//! node running it). Another user's session is `SESSION_NOT_FOUND`, as on every session call.

use super::held::{self, Holder};
use crate::auth::AuthUser;
use crate::error::{ErrorBody, ErrorResponse};
use crate::openapi::errors::AuthErrors;
use crate::openapi::FILES;
use crate::path::Path;
use crate::query::Query;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use webpilot_core::files::{check_name, mime_for, FileSource};
use webpilot_core::{ApiError, ErrorCode, SessionId};
use webpilot_sessions::{FileStoreError, Kept};
use webpilot_store::{FileData, FilePlace, FileRecord, StoreError, User};

/// A file of a session's area.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    name: String,
    bytes: i64,
    sha256: String,
    mime_type: String,
    /// RFC 3339, UTC.
    created_at: String,
    /// `download` or `upload`.
    source: String,
}

impl From<FileRecord> for FileView {
    fn from(r: FileRecord) -> Self {
        FileView {
            name: r.name,
            bytes: r.bytes,
            sha256: r.sha256,
            mime_type: r.mime_type,
            created_at: webpilot_store::rfc3339(r.created_at),
            source: r.source,
        }
    }
}

/// Body of `GET /sessions/{sessionId}/files`.
#[derive(Serialize, ToSchema)]
pub struct FileList {
    success: bool,
    files: Vec<FileView>,
}

/// Body of an upload.
#[derive(Serialize, ToSchema)]
pub struct FileStored {
    success: bool,
    file: FileView,
}

/// A deletion's answer.
#[derive(Serialize, ToSchema)]
#[schema(as = FileDeleted)]
pub struct Done {
    success: bool,
    message: &'static str,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadQuery {
    /// The file's name in the session's area (a taken one is numbered).
    name: Option<String>,
}

fn valid_name(name: &str) -> Result<(), ApiError> {
    check_name(name).map_err(|e| ApiError::new(ErrorCode::InvalidParams, e.to_string()))
}

/// The session `id` when it is `user`'s (live or ended); SESSION_NOT_FOUND otherwise.
async fn owned(state: &AppState, user: &User, id: &str) -> Result<SessionId, ApiError> {
    let id = SessionId::from_string(id);
    match state.store.get_session(&id).await? {
        Some(s) if s.user_id == user.id => Ok(id),
        _ => Err(ApiError::code(ErrorCode::SessionNotFound)),
    }
}

/// The session `id` when it is `user`'s and has not ended: an ended session takes no more files (its
/// area is only read and purged), SESSION_NOT_FOUND as for every call that needs a live session.
async fn owned_live(state: &AppState, user: &User, id: &str) -> Result<SessionId, ApiError> {
    let id = SessionId::from_string(id);
    match state.store.get_session(&id).await? {
        Some(s) if s.user_id == user.id && s.ended_at.is_none() => Ok(id),
        Some(s) if s.user_id == user.id => Err(ended()),
        _ => Err(ApiError::code(ErrorCode::SessionNotFound)),
    }
}

fn ended() -> ApiError {
    ApiError::new(
        ErrorCode::SessionNotFound,
        "the session has ended: files can no longer be uploaded into it (its files can still be read)",
    )
}

/// The session's files, oldest first (also after the session ended, until they are purged).
#[utoipa::path(get, path = "/sessions/{sessionId}/files", operation_id = "listFiles", tag = FILES, security(("apiKey" = [])),
    params(("sessionId" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "The session's files", body = FileList),
        (status = 404, description = "`SESSION_NOT_FOUND` (unknown, or another user's)", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(session): Path<String>,
) -> Result<Json<FileList>, ErrorResponse> {
    let session = owned(&state, &user, &session).await?;
    let files = state.store.list_files(&session).await?;
    Ok(Json(FileList { success: true, files: files.into_iter().map(FileView::from).collect() }))
}

/// A file's bytes, with its MIME type and a `Content-Disposition: attachment`.
#[utoipa::path(get, path = "/sessions/{sessionId}/files/{name}", operation_id = "getFile", tag = FILES, security(("apiKey" = [])),
    params(("sessionId" = String, Path), ("name" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "The file's bytes", content_type = "application/octet-stream", body = crate::openapi::Binary),
        (status = 206, description = "The one byte range `Range` asked for", content_type = "application/octet-stream", body = crate::openapi::Binary),
        (status = 400, description = "`INVALID_PARAMS` (a name with a path in it)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND`, `FILE_NOT_FOUND`", body = ErrorBody),
        (status = 416, description = "A range past the file's end (`Content-Range: bytes */<size>`)"),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that keeps the file's bytes is not running)", body = ErrorBody),
    ))]
pub async fn fetch(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((session, name)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ErrorResponse> {
    let session = owned(&state, &user, &session).await?;
    valid_name(&name)?;
    let Some(meta) = state.store.get_file(&session, &name).await? else {
        return Err(ApiError::code(ErrorCode::FileNotFound).into());
    };
    let (meta, kept) = match state.manager.files().kept(&session, &meta).await.map_err(unreadable)? {
        Kept::Bytes(content) => (meta, Some(content)),
        Kept::Row(now) => (now, None),
        Kept::Gone => return Err(gone().into()),
    };
    let mime = HeaderValue::from_str(&meta.mime_type).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    // The name is sent percent-encoded (RFC 6266 `filename*`), so no character of it can break the header.
    let encoded: String = url::form_urlencoded::byte_serialize(meta.name.as_bytes()).collect();
    let disposition = HeaderValue::from_str(&format!("attachment; filename*=UTF-8''{}", encoded.replace('+', "%20")))
        .unwrap_or(HeaderValue::from_static("attachment"));
    let mut served = match kept {
        Some(content) => ([(CONTENT_TYPE, mime)], content).into_response(),
        None => match holder(&state, &meta, request.headers()).await? {
            Holder::Node(address) => {
                let (parts, body) = request.into_parts();
                return Ok(crate::forward::forward(&state, &address, parts, body).await);
            }
            Holder::Here | Holder::Shared(_) => {
                let (blobs, key) = state.manager.files().holder(&meta).map_err(unreadable)?.ok_or_else(gone)?;
                held::serve_blob(blobs, key, mime, request.headers(), gone).await?
            }
        },
    };
    served.headers_mut().insert(CONTENT_DISPOSITION, disposition);
    Ok(served)
}

/// Who answers for `meta`'s bytes (this node for a row that keeps them).
async fn holder(state: &AppState, meta: &FileRecord, headers: &HeaderMap) -> Result<Holder, ApiError> {
    match meta.place() {
        FilePlace::Database => Ok(Holder::Here),
        FilePlace::ObjectStore { .. } => held::holder(state, &meta.node_id, true, headers, "file").await,
        FilePlace::Node { node, .. } => held::holder(state, node, false, headers, "file").await,
    }
}

/// A file whose row is there but whose bytes are not (deleted meanwhile).
fn gone() -> ApiError {
    ApiError::code(ErrorCode::FileNotFound)
}

fn unreadable(e: FileStoreError) -> ApiError {
    match e {
        FileStoreError::Store(e) => e.into(),
        // Only a request that says it was forwarded, wrongly, reaches a node that does not keep the bytes.
        e @ (FileStoreError::Elsewhere(_) | FileStoreError::NoObjectStore) => {
            ApiError::new(ErrorCode::InstanceUnavailable, format!("this node cannot read the file: {e}"))
        }
        e => held::unreadable(e),
    }
}

/// Deletes a file of the session's area.
#[utoipa::path(delete, path = "/sessions/{sessionId}/files/{name}", operation_id = "deleteFile", tag = FILES, security(("apiKey" = [])),
    params(("sessionId" = String, Path), ("name" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "Deleted", body = Done),
        (status = 400, description = "`INVALID_PARAMS` (a name with a path in it)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND`, `FILE_NOT_FOUND`", body = ErrorBody),
        (status = 503, description = "`INSTANCE_UNAVAILABLE` (the node that keeps the file's bytes is not running)", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((session, name)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ErrorResponse> {
    let session = owned(&state, &user, &session).await?;
    valid_name(&name)?;
    let Some(meta) = state.store.get_file(&session, &name).await? else {
        return Err(ApiError::code(ErrorCode::FileNotFound).into());
    };
    // The node that keeps the bytes deletes the file; one that is gone cannot, so nothing is deleted.
    if let Holder::Node(address) = holder(&state, &meta, request.headers()).await? {
        let (parts, body) = request.into_parts();
        return Ok(crate::forward::forward(&state, &address, parts, body).await);
    }
    match state.manager.files().delete(&session, &name).await.map_err(unreadable)? {
        Some(_) => Ok(Json(Done { success: true, message: "file deleted" }).into_response()),
        None => Err(ApiError::code(ErrorCode::FileNotFound).into()),
    }
}

/// `POST /sessions/{id}/files?name=<name>` with the file as the raw body: an upload into the session's
/// area, under the same caps and name rules as downloads (a taken name is numbered).
#[utoipa::path(post, path = "/sessions/{sessionId}/files", operation_id = "uploadFile", tag = FILES, security(("apiKey" = [])),
    params(("sessionId" = String, Path), UploadQuery),
    request_body(content = crate::openapi::Binary, content_type = "application/octet-stream", description = "The file's bytes; or `multipart/form-data` whose first file part is the file (its filename names it when `name` is not given)"),
    responses(
        AuthErrors,
        (status = 200, description = "Stored", body = FileStored),
        (status = 400, description = "`MISSING_REQUIRED_FIELD` (name), `INVALID_PARAMS` (a name with a path in it, an unreadable body, a malformed query string)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND` (unknown, another user's, or ended)", body = ErrorBody),
        (status = 413, description = "`FILE_TOO_LARGE` (the per-file or per-session cap), `STORAGE_QUOTA_EXCEEDED` (the user's files and recordings)", body = ErrorBody),
    ))]
pub async fn upload(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(session): Path<String>,
    Query(query): Query<UploadQuery>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<FileStored>, ErrorResponse> {
    let session = owned_live(&state, &user, &session).await?;
    let settings = state.manager.pool().settings();
    let (per_file, per_session) = (settings.max_file_bytes, settings.max_session_file_bytes);
    let too_large = || ApiError::new(ErrorCode::FileTooLarge, format!("a file may have at most {per_file} bytes"));
    let body = body.map_err(|e| match e.status() {
        axum::http::StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        _ => ApiError::new(ErrorCode::InvalidParams, "the request body could not be read"),
    })?;
    let (content, sent_name) = match multipart_boundary(&headers) {
        Some(boundary) => first_file(body, boundary).await?,
        None => (body, None),
    };
    let Some(name) = query.name.or(sent_name) else {
        let msg = "name the file: the query parameter name, or a multipart part's filename";
        return Err(ApiError::new(ErrorCode::MissingRequiredField, msg).into());
    };
    valid_name(&name)?;
    if content.len() as u64 > per_file {
        return Err(too_large().into());
    }
    let used = u64::try_from(state.store.session_file_bytes(&session).await?).unwrap_or(0);
    if used.saturating_add(content.len() as u64) > per_session {
        let msg = format!("the session's files may have at most {per_session} bytes in all; delete one first");
        return Err(ApiError::new(ErrorCode::FileTooLarge, msg).into());
    }
    let quota = state.manager.config().storage_quota_bytes;
    if state.store.over_storage_quota(&user.id, content.len(), quota).await? {
        let msg = format!(
            "your files and recordings may take at most {} bytes (GET /usage shows what they take); delete some \
             first",
            quota.unwrap_or_default()
        );
        return Err(ApiError::new(ErrorCode::StorageQuotaExceeded, msg).into());
    }
    let file = FileData { name: &name, mime_type: mime_for(&name), source: FileSource::Upload, content: &content };
    // The store refuses it too when the session ended since the check above.
    let record = match state.manager.files().insert(&session, &user.id, file).await {
        Ok(record) => record,
        Err(FileStoreError::Store(StoreError::NotFound(_))) => return Err(ended().into()),
        Err(e) => return Err(unreadable(e).into()),
    };
    tracing::info!(session = %session, bytes = record.bytes, "a file was uploaded");
    Ok(Json(FileStored { success: true, file: record.into() }))
}

/// The boundary of a `multipart/form-data` body, when the request is one.
fn multipart_boundary(headers: &HeaderMap) -> Option<String> {
    let ct = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    ct.trim().to_ascii_lowercase().starts_with("multipart/form-data").then(|| multer::parse_boundary(ct).ok())?
}

/// The first file of a `multipart/form-data` body (a part with a filename, else the part named `file`),
/// and the filename it was sent with.
async fn first_file(body: Bytes, boundary: String) -> Result<(Bytes, Option<String>), ApiError> {
    let unreadable = |e: multer::Error| ApiError::new(ErrorCode::InvalidParams, format!("the multipart body: {e}"));
    let stream = futures::stream::once(async move { Ok::<Bytes, std::io::Error>(body) });
    let mut parts = multer::Multipart::new(stream, boundary);
    while let Some(part) = parts.next_field().await.map_err(unreadable)? {
        let filename = part.file_name().map(str::to_owned);
        if filename.is_some() || part.name() == Some("file") {
            let content = part.bytes().await.map_err(unreadable)?;
            return Ok((content, filename));
        }
    }
    Err(ApiError::new(ErrorCode::MissingRequiredField, "the multipart body has no file part"))
}
