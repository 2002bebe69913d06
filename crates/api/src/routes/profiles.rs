//! The caller's profiles: `GET /profiles`, `GET /profiles/{name}` and `DELETE /profiles/{name}` (never the
//! content), `GET /profiles/{name}/export` (the decrypted storage state, to the owner alone) and
//! `PUT /profiles/{name}/export` (import one). Another user's profile answers 404 like a missing one.
//! Profiles live in the store, so any node serves them.

use crate::auth::AuthUser;
use crate::error::{ErrorBody, ErrorResponse};
use crate::openapi::errors::AuthErrors;
use crate::openapi::PROFILES;
use crate::path::Path;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use webpilot_core::profile::{check_profile_name, StorageState};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::ProfileRecord;

/// A profile, never its content.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileView {
    name: String,
    /// Stored size (sealed), what the caps count.
    bytes: i64,
    origins: Vec<String>,
    cookies: i64,
    created_at: String,
    updated_at: String,
}

/// Body of `GET /profiles/{name}` and of an import.
#[derive(Serialize, ToSchema)]
pub struct ProfileAnswer {
    success: bool,
    #[serde(flatten)]
    profile: ProfileView,
}

/// Body of `GET /profiles`.
#[derive(Serialize, ToSchema)]
pub struct ProfileList {
    success: bool,
    profiles: Vec<ProfileView>,
}

/// A deletion's answer.
#[derive(Serialize, ToSchema)]
#[schema(as = ProfileDeleted)]
pub struct Done {
    success: bool,
    message: &'static str,
}

use webpilot_store::rfc3339;

fn view(r: ProfileRecord) -> ProfileView {
    ProfileView {
        name: r.name,
        bytes: r.bytes,
        origins: r.origins,
        cookies: r.cookies,
        created_at: rfc3339(r.created_at),
        updated_at: rfc3339(r.updated_at),
    }
}

/// A profile name from the path: a name that could never exist is simply not found.
fn named(name: &str) -> Result<&str, ApiError> {
    check_profile_name(name).map_err(|_| ApiError::code(ErrorCode::ProfileNotFound))?;
    Ok(name)
}

/// The caller's profiles (name, size, origins, cookie count, times; never the content).
#[utoipa::path(get, path = "/profiles", operation_id = "listProfiles", tag = PROFILES, security(("apiKey" = [])),
    responses(
        AuthErrors,
        (status = 200, description = "The caller's profiles", body = ProfileList),
    ))]
pub async fn list(State(state): State<AppState>, AuthUser(user): AuthUser) -> Result<Json<ProfileList>, ErrorResponse> {
    let profiles = state.manager.profiles().list(&user.id).await.map_err(webpilot_core::ApiError::from)?;
    Ok(Json(ProfileList { success: true, profiles: profiles.into_iter().map(view).collect() }))
}

/// One profile (never its content).
#[utoipa::path(get, path = "/profiles/{name}", operation_id = "getProfile", tag = PROFILES, security(("apiKey" = [])),
    params(("name" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "The profile", body = ProfileAnswer),
        (status = 404, description = "`PROFILE_NOT_FOUND` (none, or another user's)", body = ErrorBody),
    ))]
pub async fn get(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(name): Path<String>,
) -> Result<Json<ProfileAnswer>, ErrorResponse> {
    let record = state.manager.profiles().get(&user.id, named(&name)?).await.map_err(webpilot_core::ApiError::from)?;
    Ok(Json(ProfileAnswer { success: true, profile: view(record) }))
}

/// Deletes a profile (409 while a `persistProfile` session holds it).
#[utoipa::path(delete, path = "/profiles/{name}", operation_id = "deleteProfile", tag = PROFILES, security(("apiKey" = [])),
    params(("name" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "Deleted", body = Done),
        (status = 404, description = "`PROFILE_NOT_FOUND` (none, or another user's)", body = ErrorBody),
        (status = 409, description = "`PROFILE_IN_USE`", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(name): Path<String>,
) -> Result<Json<Done>, ErrorResponse> {
    state.manager.profiles().delete(&user.id, named(&name)?).await.map_err(webpilot_core::ApiError::from)?;
    Ok(Json(Done { success: true, message: "profile deleted" }))
}

/// The profile's storage state in clear (cookies, localStorage, IndexedDB), to its owner alone.
#[utoipa::path(get, path = "/profiles/{name}/export", operation_id = "exportProfile", tag = PROFILES, security(("apiKey" = [])),
    params(("name" = String, Path)),
    responses(
        AuthErrors,
        (status = 200, description = "`{cookies, origins}`: Playwright's `storageState`, with `indexedDB` per origin", body = Object),
        (status = 404, description = "`PROFILE_NOT_FOUND` (none, or another user's)", body = ErrorBody),
    ))]
pub async fn export(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(name): Path<String>,
) -> Result<Json<StorageState>, ErrorResponse> {
    Ok(Json(state.manager.profiles().export(&user.id, named(&name)?).await.map_err(webpilot_core::ApiError::from)?))
}

/// `PUT /profiles/{name}/export`: stores a storage state (as exported, or Playwright's `storageState`)
/// as the profile, created or replaced.
#[utoipa::path(put, path = "/profiles/{name}/export", operation_id = "importProfile", tag = PROFILES, security(("apiKey" = [])),
    params(("name" = String, Path)),
    request_body(content = Object, description = "A storage state, as exported or Playwright's `storageState`"),
    responses(
        AuthErrors,
        (status = 200, description = "Stored", body = ProfileAnswer),
        (status = 400, description = "`INVALID_PARAMS` (a bad name or storage state)", body = ErrorBody),
        (status = 409, description = "`PROFILE_IN_USE`", body = ErrorBody),
        (status = 413, description = "`FILE_TOO_LARGE` (over the profile or user cap), `PAYLOAD_TOO_LARGE`", body = ErrorBody),
    ))]
pub async fn import(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ProfileAnswer>, ErrorResponse> {
    check_profile_name(&name).map_err(|e| ApiError::new(ErrorCode::InvalidParams, e))?;
    let bytes = body.map_err(|e| match e.status() {
        axum::http::StatusCode::PAYLOAD_TOO_LARGE => ApiError::code(ErrorCode::PayloadTooLarge),
        _ => ApiError::new(ErrorCode::InvalidParams, "the request body could not be read"),
    })?;
    let imported = StorageState::parse_import(&bytes).map_err(|e| ApiError::new(ErrorCode::InvalidParams, e))?;
    let record =
        state.manager.profiles().import(&user.id, &name, &imported).await.map_err(webpilot_core::ApiError::from)?;
    Ok(Json(ProfileAnswer { success: true, profile: view(record) }))
}
