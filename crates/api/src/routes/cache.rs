//! The caller's action cache (docs/agent.md): `GET /cache` (entries most recently written first,
//! `?limit=&offset=`) and `DELETE /cache/{id}`. Another user's entry answers 404 like a missing one.

use crate::auth::AuthUser;
use crate::error::{ErrorBody, ErrorResponse};
use crate::openapi::errors::AuthErrors;
use crate::openapi::CACHE;
use crate::paging::Page;
use crate::path::Path;
use crate::query::Query;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::{rfc3339, CacheEntry};

/// A cached run (never its steps, which may name what was typed).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CacheEntryView {
    id: String,
    /// The task text it was recorded for.
    task_details: String,
    /// The start page's origin and path.
    starting_url: String,
    /// How many steps it replays.
    steps: usize,
    /// Model tokens the recorded run used (what a hit saves).
    tokens: i64,
    /// Times it was replayed.
    hits: i64,
    created_at: String,
    updated_at: String,
    expires_at: String,
}

/// Body of `GET /cache`.
#[derive(Serialize, ToSchema)]
pub struct CacheList {
    success: bool,
    entries: Vec<CacheEntryView>,
    /// The caller's entries in all.
    total: i64,
}

/// A deletion's answer.
#[derive(Serialize, ToSchema)]
#[schema(as = CacheEntryDeleted)]
pub struct Done {
    success: bool,
    message: &'static str,
}

fn view(e: CacheEntry) -> CacheEntryView {
    let steps = serde_json::from_str::<Vec<serde_json::Value>>(&e.steps).map(|s| s.len()).unwrap_or(0);
    CacheEntryView {
        id: e.id,
        task_details: e.task_text,
        starting_url: e.start_url,
        steps,
        tokens: e.tokens,
        hits: e.hits,
        created_at: rfc3339(e.created_at),
        updated_at: rfc3339(e.updated_at),
        expires_at: rfc3339(e.expires_at),
    }
}

/// The caller's cached runs that have not expired, most recently written first.
#[utoipa::path(get, path = "/cache", operation_id = "listCache", tag = CACHE, security(("apiKey" = [])),
    params(Page),
    responses(
        AuthErrors,
        (status = 200, description = "The caller's cached runs", body = CacheList),
        (status = 400, description = "`INVALID_PARAMETER` (limit or offset out of range), `INVALID_PARAMS` (a malformed query string)", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Query(page): Query<Page>,
) -> Result<Json<CacheList>, ErrorResponse> {
    let (limit, offset) = page.bounds()?;
    let (rows, total) = state.store.cache_list(&user.id, limit, offset).await?;
    Ok(Json(CacheList { success: true, entries: rows.into_iter().map(view).collect(), total }))
}

/// Removes one cached run: the next run of its task asks the model again.
#[utoipa::path(delete, path = "/cache/{id}", operation_id = "deleteCacheEntry", tag = CACHE, security(("apiKey" = [])),
    params(("id" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "Deleted", body = Done),
        (status = 404, description = "`NOT_FOUND` (no such entry, or another user's)", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<Done>, ErrorResponse> {
    if !state.store.cache_delete(&user.id, &id).await? {
        return Err(ApiError::new(ErrorCode::NotFound, "no cache entry by that id").into());
    }
    Ok(Json(Done { success: true, message: "cache entry deleted" }))
}
