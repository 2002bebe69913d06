//! The path-parameter extractor every route uses: axum's `Path` answers a segment that is not valid
//! percent-encoded UTF-8 (`%FF`) in plain text; this one answers with the spec's error body and `INVALID_PARAMS`.

use crate::error::ErrorResponse;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use webpilot_core::{ApiError, ErrorCode};

/// Deserialized path parameters; a malformed segment is a 400 `INVALID_PARAMS` in the error body.
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ErrorResponse;

    // The one place axum's extractor is used (clippy.toml disallows it elsewhere).
    #[allow(clippy::disallowed_types)]
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            // Every route's parameters are plain strings, so the only failure a caller can cause is the encoding.
            Err(e) => Err(ApiError::new(ErrorCode::InvalidParams, format!("invalid path: {}", e.body_text())).into()),
        }
    }
}
