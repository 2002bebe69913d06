//! Bearer API-key authentication: resolves `Authorization: Bearer <key>` to an active user.
//! Keys are never logged.

use crate::error::ErrorResponse;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use webpilot_core::{ApiError, ErrorCode};
use webpilot_store::{now_ms, KeyLookup, User};

/// The authenticated caller.
pub struct AuthUser(pub User);

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(axum::http::header::AUTHORIZATION).ok_or_else(|| {
            ApiError::new(ErrorCode::Unauthorized, "missing Authorization header (expected: Bearer <API key>)")
        })?;
        let value =
            header.to_str().map_err(|_| ApiError::new(ErrorCode::Unauthorized, "malformed Authorization header"))?;
        let key = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                ApiError::new(ErrorCode::Unauthorized, "malformed Authorization header (expected: Bearer <API key>)")
            })?;
        let lookup = state.store.lookup_api_key(key, now_ms()).await.map_err(|e| {
            tracing::error!(error = %e, "API key lookup failed");
            ApiError::code(ErrorCode::InternalError)
        })?;
        match lookup {
            KeyLookup::Unknown | KeyLookup::Revoked => Err(ApiError::code(ErrorCode::InvalidApiKey).into()),
            KeyLookup::Expired => Err(ApiError::code(ErrorCode::ApiKeyExpired).into()),
            KeyLookup::Valid { user, .. } if !user.is_active() => {
                Err(ApiError::code(ErrorCode::AccountDeactivated).into())
            }
            KeyLookup::Valid { user, .. } => Ok(AuthUser(*user)),
        }
    }
}

/// The challenge every 401 carries (RFC 9110 §11.6.1), so a client such as the MCP Inspector sees that a
/// Bearer key is wanted rather than guessing at an OAuth flow.
pub const CHALLENGE: &str = "Bearer realm=\"webpilot\"";

/// Adds `WWW-Authenticate` to every 401 of the router (REST, MCP, the DevTools handshake, relayed ones).
pub async fn challenge(mut res: axum::response::Response) -> axum::response::Response {
    if res.status() == axum::http::StatusCode::UNAUTHORIZED {
        res.headers_mut()
            .entry(axum::http::header::WWW_AUTHENTICATE)
            .or_insert(axum::http::HeaderValue::from_static(CHALLENGE));
    }
    res
}
