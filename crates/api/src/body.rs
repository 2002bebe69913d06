//! JSON request bodies read by hand, so every malformed body gets the spec's error body (axum's own
//! rejections answer in plain text).

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use serde_json::Value;
use webpilot_core::{ApiError, ErrorCode};

/// Parses a request body as JSON; an empty body is an empty object.
pub fn parse_json(body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
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
