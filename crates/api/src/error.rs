//! Errors as responses: `{success: false, message, code}` with the status from the code table.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;
use webpilot_core::{ApiError, ErrorCode};

/// Wrapper that turns an `ApiError` into the spec's error body.
pub struct ErrorResponse(pub ApiError);

impl From<ApiError> for ErrorResponse {
    fn from(e: ApiError) -> Self {
        ErrorResponse(e)
    }
}

/// The errors of the layers below rise through handlers with `?`, by their code (`webpilot_core::Coded`).
macro_rules! coded_into_response {
    ($($t:ty),*) => {$(
        impl From<$t> for ErrorResponse {
            fn from(e: $t) -> Self {
                ErrorResponse(ApiError::from(e))
            }
        }
    )*};
}

coded_into_response!(webpilot_store::StoreError, webpilot_sessions::devtools::DevtoolsError);

/// The spec's error body `{success: false, message, code}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody<'a> {
    /// The error-table code, e.g. `INVALID_API_KEY`.
    #[schema(value_type = String)]
    code: ErrorCode,
    message: &'a str,
    /// Always false.
    success: bool,
}

impl<'a> From<&'a ApiError> for ErrorBody<'a> {
    fn from(e: &'a ApiError) -> Self {
        ErrorBody { code: e.code, message: &e.message, success: false }
    }
}

/// The error body as JSON: also the ack and tool-result shape of the WebSocket and MCP channels.
pub fn error_json(e: &ApiError) -> serde_json::Value {
    json!({ "success": false, "message": e.message, "code": e.code })
}

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(ErrorBody::from(&self.0))).into_response()
    }
}

pub type ApiResult<T> = Result<T, ErrorResponse>;
