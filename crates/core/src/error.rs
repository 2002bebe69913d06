//! The one error-code table: every error the API can return is a row (code, HTTP status, default message).
//! Internal details go to the log, never to the client.

use serde::Serialize;
use std::fmt;

macro_rules! codes {
    ($($variant:ident => ($status:expr, $msg:expr)),* $(,)?) => {
        /// Every coded error of the interface (see the spec's Errors part) plus the few the service adds;
        /// docs/api.md (Errors) gives the statuses the spec leaves open and documents the added codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $($variant),* }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The HTTP status this code is returned with.
            pub fn status(self) -> u16 {
                match self { $(ErrorCode::$variant => $status),* }
            }
            /// The default client-facing message.
            pub fn default_message(self) -> &'static str {
                match self { $(ErrorCode::$variant => $msg),* }
            }
        }
    };
}

codes! {
    InvalidParams => (400, "invalid request parameters"),
    MissingRequiredField => (400, "a required field is missing"),
    InvalidParameter => (400, "a parameter is out of bounds"),
    InvalidTaskDetails => (400, "invalid taskDetails"),
    Unauthorized => (401, "missing or malformed Authorization header"),
    InvalidApiKey => (401, "invalid or revoked API key"),
    ApiKeyExpired => (401, "API key expired"),
    InsufficientBalance => (402, "insufficient balance"),
    // Listed by the spec but never raised: webpilot charges a stored balance and takes no payments.
    PaymentFailed => (402, "payment did not go through"),
    AccountDeactivated => (403, "account is deactivated"),
    SessionNotFound => (404, "session not found"),
    TaskNotFound => (404, "task not found"),
    NotFound => (404, "not found"),
    WebhookNotFound => (404, "webhook not found"),
    RecordingNotFound => (404, "recording not found"),
    FileNotFound => (404, "file not found in this session"),
    ProfileNotFound => (404, "profile not found"),
    MethodNotAllowed => (405, "method not allowed"),
    TaskAlreadyRunning => (409, "a task is running; wait or stop it with newState stop"),
    InvalidState => (409, "this action is not allowed in the session's current state"),
    ProfileInUse => (409, "another live session holds this profile with persistProfile"),
    SessionExpired => (410, "session ended after maxDuration"),
    PayloadTooLarge => (413, "request body too large"),
    FileTooLarge => (413, "the file is over the per-file or per-session size cap"),
    StorageQuotaExceeded => (413, "the user's files and recordings take their whole storage quota"),
    UnsupportedMediaType => (415, "request body must be JSON (Content-Type: application/json)"),
    RateLimitExceeded => (429, "rate limit exceeded, try again later"),
    SessionLimitReached => (429, "too many sessions"),
    InternalError => (500, "internal server error"),
    // Never raised at present: every endpoint is implemented. Kept as the code for a future stub.
    NotImplemented => (501, "not implemented yet"),
    NoInstancesAvailable => (503, "no available instances"),
    InstanceUnavailable => (503, "instance not available"),
    // Task failure codes: reported on poll and events as `{error, code}`, never as an HTTP status
    // of their own; the status column is what they would map to if ever raised by a request.
    TaskTimeout => (504, "task exceeded maxDuration"),
    TaskStopped => (409, "task was stopped"),
    TaskInterrupted => (500, "task was interrupted by a server restart"),
    NavigationTimeout => (504, "page navigation timed out"),
    PageHttpError => (502, "the page answered with an HTTP error status"),
    PageCrash => (500, "browser page crashed"),
    ElementNotFound => (404, "element not found"),
    TokenLimitExceeded => (400, "token limit exceeded"),
    ModelUnavailable => (502, "the model could not be reached"),
    TaskFailed => (422, "the agent gave up on the task"),
    AgentLoop => (422, "the agent kept repeating itself without progress"),
    SecretNotAllowed => (403, "a secret may not be typed on this domain"),
    OutputInvalid => (422, "the final answer did not satisfy the task's outputSchema"),
    // Chat completions and MCP (docs/api.md says where each appears).
    ModelNotFound => (404, "model not found; the only model is svc-browser-1"),
    McpInvalidRequest => (400, "the request lacks jsonrpc = \"2.0\""),
    McpMethodNotFound => (404, "unknown method"),
    McpSessionNotFound => (404, "session not found"),
}

impl ErrorCode {
    /// The wire name, e.g. `INVALID_API_KEY`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::MissingRequiredField => "MISSING_REQUIRED_FIELD",
            ErrorCode::InvalidParameter => "INVALID_PARAMETER",
            ErrorCode::InvalidTaskDetails => "INVALID_TASK_DETAILS",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::InvalidApiKey => "INVALID_API_KEY",
            ErrorCode::ApiKeyExpired => "API_KEY_EXPIRED",
            ErrorCode::InsufficientBalance => "INSUFFICIENT_BALANCE",
            ErrorCode::PaymentFailed => "PAYMENT_FAILED",
            ErrorCode::AccountDeactivated => "ACCOUNT_DEACTIVATED",
            ErrorCode::SessionNotFound => "SESSION_NOT_FOUND",
            ErrorCode::TaskNotFound => "TASK_NOT_FOUND",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::WebhookNotFound => "WEBHOOK_NOT_FOUND",
            ErrorCode::RecordingNotFound => "RECORDING_NOT_FOUND",
            ErrorCode::FileNotFound => "FILE_NOT_FOUND",
            ErrorCode::ProfileNotFound => "PROFILE_NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::TaskAlreadyRunning => "TASK_ALREADY_RUNNING",
            ErrorCode::InvalidState => "INVALID_STATE",
            ErrorCode::ProfileInUse => "PROFILE_IN_USE",
            ErrorCode::SessionExpired => "SESSION_EXPIRED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::FileTooLarge => "FILE_TOO_LARGE",
            ErrorCode::StorageQuotaExceeded => "STORAGE_QUOTA_EXCEEDED",
            ErrorCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ErrorCode::RateLimitExceeded => "RATE_LIMIT_EXCEEDED",
            ErrorCode::SessionLimitReached => "SESSION_LIMIT_REACHED",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::NotImplemented => "NOT_IMPLEMENTED",
            ErrorCode::NoInstancesAvailable => "NO_INSTANCES_AVAILABLE",
            ErrorCode::InstanceUnavailable => "INSTANCE_UNAVAILABLE",
            ErrorCode::TaskTimeout => "TASK_TIMEOUT",
            ErrorCode::TaskStopped => "TASK_STOPPED",
            ErrorCode::TaskInterrupted => "TASK_INTERRUPTED",
            ErrorCode::NavigationTimeout => "NAVIGATION_TIMEOUT",
            ErrorCode::PageHttpError => "PAGE_HTTP_ERROR",
            ErrorCode::PageCrash => "PAGE_CRASH",
            ErrorCode::ElementNotFound => "ELEMENT_NOT_FOUND",
            ErrorCode::TokenLimitExceeded => "TOKEN_LIMIT_EXCEEDED",
            ErrorCode::ModelUnavailable => "MODEL_UNAVAILABLE",
            ErrorCode::TaskFailed => "TASK_FAILED",
            ErrorCode::AgentLoop => "AGENT_LOOP",
            ErrorCode::SecretNotAllowed => "SECRET_NOT_ALLOWED",
            ErrorCode::OutputInvalid => "OUTPUT_INVALID",
            ErrorCode::ModelNotFound => "MODEL_NOT_FOUND",
            ErrorCode::McpInvalidRequest => "MCP_INVALID_REQUEST",
            ErrorCode::McpMethodNotFound => "MCP_METHOD_NOT_FOUND",
            ErrorCode::McpSessionNotFound => "MCP_SESSION_NOT_FOUND",
        }
    }

    /// Reads a wire name back (used for codes stored with failed tasks).
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A client-facing error: a code from the table and a message safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
    /// The code with its default message.
    pub fn code(code: ErrorCode) -> Self {
        Self::new(code, code.default_message())
    }
    pub fn status(&self) -> u16 {
        self.code.status()
    }
}

impl From<ErrorCode> for ApiError {
    fn from(code: ErrorCode) -> Self {
        ApiError::code(code)
    }
}

/// An error of a layer below the API (the store, the browser, …) that knows its place in the one code
/// table, so `?` turns it into an [`ApiError`] from wherever it rises. The conversion logs the cause once,
/// with its source chain, when it is the service's fault (a 5xx); the caller is told only what is safe.
pub trait Coded: std::error::Error {
    /// The code the caller gets.
    fn code(&self) -> ErrorCode;
    /// What the caller is told: the error's own words for a 4xx, the code's default message for a 5xx (the
    /// cause stays in the log).
    fn public_message(&self) -> String {
        let code = Coded::code(self);
        match code.status() >= 500 {
            true => code.default_message().to_owned(),
            false => self.to_string(),
        }
    }
}

impl<E: Coded> From<E> for ApiError {
    fn from(e: E) -> Self {
        let code = Coded::code(&e);
        if code.status() >= 500 {
            let mut chain = e.to_string();
            let mut source = e.source();
            while let Some(s) = source {
                chain.push_str(": ");
                chain.push_str(&s.to_string());
                source = s.source();
            }
            tracing::error!(code = code.as_str(), cause = %chain, "an internal error");
        }
        ApiError::new(code, e.public_message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Below {
        #[error("the disk is on fire")]
        Broken(#[source] std::io::Error),
        #[error("no such thing")]
        Missing,
    }

    impl Coded for Below {
        fn code(&self) -> ErrorCode {
            match self {
                Below::Broken(_) => ErrorCode::InternalError,
                Below::Missing => ErrorCode::SessionNotFound,
            }
        }
    }

    fn rises() -> Result<(), ApiError> {
        Err(Below::Broken(std::io::Error::other("EIO")))?;
        Ok(())
    }

    #[test]
    fn coded_errors_rise_with_their_code_and_hide_internal_causes() {
        let e = rises().expect_err("an error");
        assert_eq!(e.code, ErrorCode::InternalError);
        assert!(!e.message.contains("fire") && !e.message.contains("EIO"), "{}", e.message);
        let e = ApiError::from(Below::Missing);
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::SessionNotFound, "no such thing"));
    }

    #[test]
    fn spec_codes_have_the_spec_statuses() {
        assert_eq!(ErrorCode::InvalidParams.status(), 400);
        assert_eq!(ErrorCode::InvalidApiKey.status(), 401);
        assert_eq!(ErrorCode::InsufficientBalance.status(), 402);
        assert_eq!(ErrorCode::SessionNotFound.status(), 404);
        assert_eq!(ErrorCode::RateLimitExceeded.status(), 429);
        assert_eq!(ErrorCode::NoInstancesAvailable.status(), 503);
    }

    #[test]
    fn every_code_round_trips_through_its_wire_name() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(*c));
        }
    }
}
