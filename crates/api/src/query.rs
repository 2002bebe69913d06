//! The query-string extractor every route uses: axum's `Query` answers a bad query string (a number that
//! overflows, a repeated `token=`) in plain text; this one answers with the spec's error body and
//! `INVALID_PARAMS`.

use crate::error::ErrorResponse;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use webpilot_core::{ApiError, ErrorCode};

/// A deserialized query string; a malformed one is a 400 `INVALID_PARAMS` in the error body.
pub struct Query<T>(pub T);

impl<T, S> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ErrorResponse;

    // The one place axum's extractor is used (clippy.toml disallows it elsewhere).
    #[allow(clippy::disallowed_types)]
    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::try_from_uri(&parts.uri) {
            Ok(axum::extract::Query(value)) => Ok(Query(value)),
            // The message names the field and what was wrong with it (a repeated field, a number too large).
            Err(e) => {
                Err(ApiError::new(ErrorCode::InvalidParams, format!("invalid query string: {}", e.body_text())).into())
            }
        }
    }
}
