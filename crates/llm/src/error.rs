//! Model-call errors. Bodies of error responses are cut short and never include request content.

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("invalid model configuration: {0}")]
    Config(String),
    #[error("the model server could not be reached: {0}")]
    Unreachable(String),
    #[error("the model server answered {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the model's answer could not be read: {0}")]
    Decode(String),
}

impl LlmError {
    /// Worth another attempt: connection problems, timeouts, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Unreachable(_) => true,
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Config(_) | LlmError::Decode(_) => false,
        }
    }

    pub(crate) fn from_reqwest(e: reqwest::Error) -> Self {
        if e.is_decode() {
            LlmError::Decode(e.to_string())
        } else {
            LlmError::Unreachable(e.to_string())
        }
    }
}
