//! Live usage of one task: tokens as reported by the model, and wall-clock compute time. Token
//! budgets are enforced here so every agent gets the same rule.

use crate::AgentError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use webpilot_core::usage::Usage;
use webpilot_core::ErrorCode;

#[derive(Clone, Debug)]
pub struct UsageMeter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    input: AtomicU64,
    output: AtomicU64,
    started: Instant,
    max_input: u64,
    max_output: u64,
}

impl UsageMeter {
    pub fn new(max_input: u64, max_output: u64) -> Self {
        UsageMeter {
            inner: Arc::new(Inner {
                input: AtomicU64::new(0),
                output: AtomicU64::new(0),
                started: Instant::now(),
                max_input,
                max_output,
            }),
        }
    }

    /// Adds one model call's tokens; fails with TOKEN_LIMIT_EXCEEDED once a budget is passed.
    pub fn add_tokens(&self, input: u64, output: u64) -> Result<(), AgentError> {
        let i = self.inner.input.fetch_add(input, Ordering::SeqCst) + input;
        let o = self.inner.output.fetch_add(output, Ordering::SeqCst) + output;
        if i > self.inner.max_input {
            return Err(AgentError::new(
                ErrorCode::TokenLimitExceeded,
                format!("input tokens {i} exceed maxInputTokens {}", self.inner.max_input),
            ));
        }
        if o > self.inner.max_output {
            return Err(AgentError::new(
                ErrorCode::TokenLimitExceeded,
                format!("output tokens {o} exceed maxOutputTokens {}", self.inner.max_output),
            ));
        }
        Ok(())
    }

    /// Usage so far, compute time counted from the meter's creation.
    pub fn snapshot(&self) -> Usage {
        Usage {
            input_tokens: self.inner.input.load(Ordering::SeqCst),
            output_tokens: self.inner.output.load(Ordering::SeqCst),
            compute_ms: self.inner.started.elapsed().as_millis() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_enforced() {
        let m = UsageMeter::new(100, 10);
        assert!(m.add_tokens(60, 5).is_ok());
        assert_eq!(m.add_tokens(50, 1).unwrap_err().code, ErrorCode::TokenLimitExceeded);
        assert_eq!(m.snapshot().input_tokens, 110);
    }
}
