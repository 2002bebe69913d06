//! JSON request bodies: [`Valid<T>`] reads one and validates it into its request type, so a handler
//! takes a typed value and every malformed body gets the spec's error body (axum's own rejections answer
//! in plain text).

use crate::error::ErrorResponse;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use serde_json::Value;
use webpilot_core::params::RequestBody;
use webpilot_core::{ApiError, ErrorCode};

/// A request body read as JSON ([`parse_json`]'s rules) and validated into `T` with `T`'s per-field
/// error codes. A handler that must answer something else first (a token, a node key) takes
/// `Result<Valid<T>, ErrorResponse>` and raises it where the body's turn comes.
pub struct Valid<T>(pub T);

impl<S: Send + Sync, T: RequestBody + Send> FromRequest<S> for Valid<T> {
    type Rejection = ErrorResponse;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let body = parse_json(Bytes::from_request(req, state).await)?;
        Ok(Valid(T::from_json(&body)?))
    }
}

/// Parses a request body as JSON; an empty body is an empty object.
fn parse_json(body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::code(ErrorCode::PayloadTooLarge)
        } else {
            ApiError::new(ErrorCode::InvalidParams, "the request body could not be read")
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidParams,
            format!("the request body is not valid JSON (line {}, column {})", e.line(), e.column()),
        )
    })
}
