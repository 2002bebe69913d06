//! What the `/v1` (OpenAI-compatible) paths share: `GET /v1/models`, and a middleware that gives every
//! error body of these paths an OpenAI-style `error: {message, type, code}` object next to the spec's
//! `{success: false, message, code}`, so OpenAI SDKs show the real message.

use crate::auth::AuthUser;
use crate::openapi::OPENAI;
use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;
use webpilot_core::chat::CHAT_MODEL;

/// Unix time (s) the one model is listed as created at (the service's first release).
const MODEL_CREATED: u64 = 1_795_000_000;
/// Largest error body the middleware rewrites.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Body of `GET /v1/models`.
#[derive(Serialize, ToSchema)]
pub struct ModelList {
    data: Vec<Model>,
    /// `list`.
    object: &'static str,
}

#[derive(Serialize, ToSchema)]
pub struct Model {
    /// Unix time (s).
    created: u64,
    id: &'static str,
    /// `model`.
    object: &'static str,
    owned_by: &'static str,
}

/// `GET /v1/models`: authenticated, not rate limited.
#[utoipa::path(get, path = "/v1/models", operation_id = "listModels", tag = OPENAI, security(("apiKey" = [])),
    responses(
        (status = 200, description = "The one model, `svc-browser-1`", body = ModelList),
        (status = 401, description = "`UNAUTHORIZED`, `INVALID_API_KEY`, `API_KEY_EXPIRED` (with an OpenAI `error` object)", body = OpenAiErrorBody),
        (status = 403, description = "`ACCOUNT_DEACTIVATED`", body = OpenAiErrorBody),
        (status = 500, description = "`INTERNAL_ERROR`", body = OpenAiErrorBody),
    ))]
pub async fn models(AuthUser(_user): AuthUser) -> Json<ModelList> {
    Json(ModelList {
        data: vec![Model { created: MODEL_CREATED, id: CHAT_MODEL, object: "model", owned_by: "webpilot" }],
        object: "list",
    })
}

/// An error of the `/v1` paths: the spec's error body plus an OpenAI-style `error` object (a guardrail's
/// 400 carries the `error` object alone). Schema only: [`with_openai_error`] builds these bodies.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct OpenAiErrorBody {
    code: Option<String>,
    error: OpenAiError,
    message: Option<String>,
    /// Always false.
    success: Option<bool>,
}

/// `{message, type, code}`: the OpenAI error object.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct OpenAiError {
    code: String,
    message: String,
    /// e.g. `authentication_error`, `rate_limit_error`, `invalid_request_error`.
    #[serde(rename = "type")]
    kind: String,
}

/// The OpenAI error `type` for an HTTP status.
pub fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        402 => "insufficient_quota",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

/// The combined body: the spec's fields plus the OpenAI `error` object.
pub fn error_body(status: StatusCode, message: &str, code: &str) -> Value {
    json!({
        "success": false,
        "message": message,
        "code": code,
        "error": { "message": message, "type": error_type(status), "code": code },
    })
}

/// Adds `error: {message, type, code}` to JSON error bodies that have none (401, 402, 429, 503, 400 ...).
pub async fn with_openai_error(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        return (status, Json(error_body(status, "internal server error", "INTERNAL_ERROR"))).into_response();
    };
    let mut value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    if let Value::Object(map) = &mut value {
        if !map.contains_key("error") {
            let message = map.get("message").and_then(Value::as_str).unwrap_or("error").to_owned();
            let code = map.get("code").and_then(Value::as_str).unwrap_or("ERROR").to_owned();
            map.insert("error".into(), json!({ "message": message, "type": error_type(status), "code": code }));
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(value.to_string()))
}
