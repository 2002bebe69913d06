//! The session layer's error: a refusal with a code and words the caller may see, or a failure below (the
//! store, the browser) or inside the service. It knows its place in the one code table ([`Coded`]), so the
//! API turns it into its error body with `?`; a 5xx cause is logged there once and never shown.

use webpilot_browser::BrowserError;
use webpilot_core::{ApiError, Coded, ErrorCode};
use webpilot_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Refused, with a code and words the caller sees as they are (a 503 "retry" included).
    #[error("{message}")]
    Refused { code: ErrorCode, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Browser(#[from] BrowserError),
    /// `what` failed inside the service: the caller is told only `INTERNAL_ERROR`.
    #[error("{what} failed: {cause}")]
    Internal { what: &'static str, cause: String },
}

impl SessionError {
    /// A refusal with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SessionError::Refused { code, message: message.into() }
    }

    /// A refusal with `code` and its default message.
    pub fn refused(code: ErrorCode) -> Self {
        Self::new(code, code.default_message())
    }

    /// `what` failed inside the service because of `cause` (logged when it reaches the caller).
    pub fn internal(what: &'static str, cause: impl std::fmt::Display) -> Self {
        SessionError::Internal { what, cause: cause.to_string() }
    }
}

/// The validation and state-machine refusals of `core` keep their code and words.
impl From<ApiError> for SessionError {
    fn from(e: ApiError) -> Self {
        SessionError::Refused { code: e.code, message: e.message }
    }
}

impl Coded for SessionError {
    fn code(&self) -> ErrorCode {
        match self {
            SessionError::Refused { code, .. } => *code,
            SessionError::Store(e) => Coded::code(e),
            SessionError::Browser(e) => Coded::code(e),
            SessionError::Internal { .. } => ErrorCode::InternalError,
        }
    }

    fn public_message(&self) -> String {
        match self {
            SessionError::Refused { message, .. } => message.clone(),
            SessionError::Store(e) => e.public_message(),
            SessionError::Browser(e) => e.public_message(),
            SessionError::Internal { .. } => ErrorCode::InternalError.default_message().to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_their_words_and_internal_failures_hide_theirs() {
        let retry = ApiError::from(SessionError::new(ErrorCode::InstanceUnavailable, "lost; retry later"));
        assert_eq!((retry.code, retry.message.as_str()), (ErrorCode::InstanceUnavailable, "lost; retry later"));
        let gone = ApiError::from(SessionError::refused(ErrorCode::SessionNotFound));
        assert_eq!(gone, ApiError::code(ErrorCode::SessionNotFound));
        let failed = ApiError::from(SessionError::internal("reading a profile", "disk on fire"));
        assert_eq!(failed, ApiError::code(ErrorCode::InternalError));
        let parsed = SessionError::from(ApiError::new(ErrorCode::InvalidParams, "x must be a number"));
        assert_eq!(ApiError::from(parsed), ApiError::new(ErrorCode::InvalidParams, "x must be a number"));
    }
}
