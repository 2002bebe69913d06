//! The request bodies of the HTTP interface, each read through [`RequestBody`] by the same validators
//! MCP's tools and the socket's messages use, and each documented (`ToSchema`) by its wire shape in
//! `params::schema`: start-session, run-task, send-message and its messages, a live-view interaction,
//! chat completions, and a link's lifetime.

use super::{schema, Fields, Message, SendMessage, SessionOrigin, SessionParams};
use crate::chat::ChatRequest;
use crate::error::ApiError;
use crate::fields::RequestBody;
use serde_json::{json, Value};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// `$request`'s schema is `$wire`'s: its name, its schema and the components it refers to.
macro_rules! documented_by {
    ($($request:ty => $wire:ty),* $(,)?) => {$(
        impl PartialSchema for $request {
            fn schema() -> RefOr<Schema> {
                <$wire as PartialSchema>::schema()
            }
        }
        impl ToSchema for $request {
            fn name() -> Cow<'static, str> {
                <$wire as ToSchema>::name()
            }
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                <$wire as ToSchema>::schemas(schemas)
            }
        }
    )*};
}

documented_by!(
    StartSessionRequest => schema::StartSessionRequest,
    RunTaskRequest => schema::RunTaskRequest,
    SendMessage => schema::SendMessageRequest,
    Message => schema::Message,
    InteractionRequest => schema::Interaction,
    ChatRequest => schema::ChatCompletionRequest,
);

/// The body of `POST /start/start-session`: session parameters, every one optional.
#[derive(Debug, Clone, PartialEq)]
pub struct StartSessionRequest(pub SessionParams);

impl RequestBody for StartSessionRequest {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        SessionParams::parse(body, SessionOrigin::StartSession).map(Self)
    }
}

/// The body of `POST /start/run-task`: session parameters with a required task; terminateOnCompletion is
/// forced to true.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTaskRequest(pub SessionParams);

impl RequestBody for RunTaskRequest {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        SessionParams::parse(body, SessionOrigin::RunTask).map(Self)
    }
}

impl RequestBody for SendMessage {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        SendMessage::parse(body)
    }
}

/// The body of `POST /stream/{sessionId}/interaction`: an interaction `action` alone, read as the message
/// `{actionType: "interaction", action}` (so its errors name `action.` fields). Like send-message's, a bad
/// action is answered once the session is known to be the caller's.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionRequest(pub Result<Message, ApiError>);

impl RequestBody for InteractionRequest {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        Ok(Self(Message::parse(&json!({ "actionType": "interaction", "action": body }))))
    }
}

/// The body of a call that makes a link (`{ttlSeconds?}`): how long the link lives, in seconds, within
/// `1..=MAX` (`DEFAULT` when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkRequest<const DEFAULT: u64, const MAX: u64> {
    pub ttl_seconds: u64,
}

impl<const DEFAULT: u64, const MAX: u64> RequestBody for LinkRequest<DEFAULT, MAX> {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        let ttl = Fields::of(body, "request body")?.opt_u64_in("ttlSeconds", 1, MAX)?.unwrap_or(DEFAULT);
        Ok(Self { ttl_seconds: ttl })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn code<T: RequestBody>(v: Value) -> ErrorCode {
        match T::from_json(&v) {
            Ok(_) => ErrorCode::InternalError,
            Err(e) => e.code,
        }
    }

    #[test]
    fn each_body_answers_with_its_validators_codes() {
        assert_eq!(code::<RunTaskRequest>(json!({})), ErrorCode::MissingRequiredField);
        assert_eq!(code::<StartSessionRequest>(json!([])), ErrorCode::InvalidParams);
        assert_eq!(code::<SendMessage>(json!({"sessionId": "s"})), ErrorCode::MissingRequiredField);
        assert_eq!(code::<LinkRequest<300, 86400>>(json!({"ttlSeconds": 0})), ErrorCode::InvalidParameter);
        assert_eq!(code::<LinkRequest<300, 86400>>(json!({"ttlSeconds": "1"})), ErrorCode::InvalidParams);
        let run = RunTaskRequest::from_json(&json!({"taskDetails": "x"})).map(|r| r.0.terminate_on_completion);
        assert_eq!(run, Ok(true));
        assert_eq!(LinkRequest::<300, 86400>::from_json(&json!({})).map(|l| l.ttl_seconds), Ok(300));
    }

    #[test]
    fn an_interaction_is_read_as_an_interaction_message() {
        let click = InteractionRequest::from_json(&json!({"type": "CLICK", "x": 10, "y": 200}));
        assert!(matches!(click, Ok(InteractionRequest(Ok(Message::Interaction(_))))));
        let missing = InteractionRequest::from_json(&json!({"type": "CLICK"})).map(|i| i.0.map_err(|e| e.message));
        assert_eq!(missing, Ok(Err("action.x is required".to_owned())));
        let null = InteractionRequest::from_json(&Value::Null).map(|i| i.0.map_err(|e| e.code));
        assert_eq!(null, Ok(Err(ErrorCode::MissingRequiredField)));
    }
}
