//! The errors of the session layer.

use webpilot_core::{ApiError, ErrorCode};

/// An internal failure of `what`: logged here, and the caller told only `INTERNAL_ERROR`.
pub(crate) fn internal(what: &str, e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "{what} failed");
    ApiError::code(ErrorCode::InternalError)
}
