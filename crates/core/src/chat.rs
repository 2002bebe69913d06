//! The chat-completions request (`POST /v1/chat/completions`) validated into session parameters: the
//! last `user` message is the task, every other message is context, `max_tokens` becomes the task's
//! maxOutputTokens (clamped into its bounds; docs/api.md).

use crate::error::{ApiError, ErrorCode};
use crate::output::OutputSchema;
use crate::params::decl::{component, plain, reference, typed, BodyField, BodyGroup, Components};
use crate::params::{parse_task_details, CacheMode, ChatCompletionRequest, ChatMessage, Fields, SessionParams};
use crate::params::{TaskLimits, MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS};
use crate::vision::VisionMode;
use serde_json::Value;
use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, Schema, SchemaFormat, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// The one model the service offers.
pub const CHAT_MODEL: &str = "svc-browser-1";
/// `max_tokens` when the request gives none (spec).
pub const DEFAULT_MAX_TOKENS: u64 = 2_000;
/// Most messages accepted in one request.
pub const MAX_MESSAGES: usize = 200;

/// A validated chat-completions request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub stream: bool,
    /// The session to open: the last user message as its task, terminateOnCompletion set.
    pub params: SessionParams,
    /// Every other message, oldest first, as `(role, content)`.
    pub context: Vec<(String, String)>,
}

fn invalid(code: ErrorCode, msg: impl Into<String>) -> ApiError {
    ApiError::new(code, msg)
}

/// Maps `max_tokens` (0 or more, no maximum) to maxOutputTokens (100..=50000).
pub fn max_output_tokens(max_tokens: u64) -> u64 {
    max_tokens.clamp(MIN_OUTPUT_TOKENS, MAX_OUTPUT_TOKENS)
}

impl crate::fields::RequestBody for ChatRequest {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        ChatRequest::parse(body)
    }
}

impl ChatRequest {
    /// Reads the body as [`ChatCompletionRequest`] declares it, then opens a session on its task.
    pub fn parse(body: &Value) -> Result<Self, ApiError> {
        let f = Fields::of(body, "request body")?;
        let wire = ChatCompletionRequest::read(&f)?;
        let max_tokens = wire.max_tokens.map_or(DEFAULT_MAX_TOKENS, |t| t.0);
        let Metadata { recording, cache, vision } = wire.metadata.unwrap_or_default();
        let limits = TaskLimits {
            max_output_tokens: max_output_tokens(max_tokens),
            output_schema: wire.response_format.and_then(|r| r.0),
            cache: cache.unwrap_or_default(),
            vision: vision.unwrap_or_default(),
            ..TaskLimits::default()
        };
        Ok(ChatRequest {
            model: wire.model.0,
            stream: wire.stream.unwrap_or(false),
            params: SessionParams {
                task_details: Some(wire.messages.task),
                limits,
                terminate_on_completion: true,
                recording,
                profile: None,
                persist_profile: false,
                identity: Default::default(),
                proxies: Vec::new(),
            },
            context: wire.messages.context,
        })
    }
}

/// `model`: only [`CHAT_MODEL`]; another is `MODEL_NOT_FOUND`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatModel(pub String);

impl BodyField for ChatModel {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        let Some(model) = f.opt_str(name)? else { return Ok(None) };
        if model != CHAT_MODEL {
            let msg = format!("{name} {model:?} does not exist; the only model is {CHAT_MODEL:?}");
            return Err(invalid(ErrorCode::ModelNotFound, msg));
        }
        Ok(Some(ChatModel(model.to_owned())))
    }
}

/// `max_tokens`: a whole number of at least `MIN` (0); no maximum, it is clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxTokens<const MIN: u64 = 0>(pub u64);

impl<const MIN: u64> BodyField for MaxTokens<MIN> {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let format = SchemaFormat::KnownFormat(KnownFormat::Int64);
        plain(Type::Integer, nullable, description).format(Some(format)).minimum(Some(MIN as f64)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_f64(name)? {
            None => Ok(None),
            Some(t) if t.fract() != 0.0 => {
                Err(invalid(ErrorCode::InvalidParams, format!("{name} must be a whole number")))
            }
            Some(t) if t < MIN as f64 => {
                Err(invalid(ErrorCode::InvalidParameter, format!("{name} must be at least {MIN}")))
            }
            Some(t) => Ok(Some(MaxTokens(t.min(u64::MAX as f64) as u64))),
        }
    }
}

/// `messages`: 1 to [`MAX_MESSAGES`] of `{role, content}`; the last `user` message is the task, the others
/// its context.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessages {
    pub task: String,
    /// Every other message, oldest first, as `(role, content)`.
    pub context: Vec<(String, String)>,
}

impl BodyField for ChatMessages {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let item = reference(&ChatMessage::name(), false, None);
        let list = ArrayBuilder::new().schema_type(typed(Type::Array, nullable)).items(item).description(description);
        list.min_items(Some(1)).max_items(Some(MAX_MESSAGES)).into()
    }
    fn components(out: &mut Components) {
        component::<ChatMessage>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        let Some(raw) = f.get(name) else { return Ok(None) };
        let messages = parse_messages(Some(raw))?;
        let last_user = messages
            .iter()
            .rposition(|(role, _)| role == "user")
            .ok_or_else(|| invalid(ErrorCode::InvalidParams, "messages must contain at least one user message"))?;
        let task = parse_task_details(&messages[last_user].1)
            .map_err(|e| ApiError::new(e.code, e.message.replace("taskDetails", "the last user message's content")))?;
        let context = messages.into_iter().enumerate().filter(|(i, _)| *i != last_user).map(|(_, m)| m).collect();
        Ok(Some(ChatMessages { task, context }))
    }
}

/// `response_format`: the task's outputSchema, if it asks for one.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFormat(pub Option<OutputSchema>);

impl BodyField for ResponseFormat {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::Object, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(|raw| parse_response_format(Some(raw)).map(ResponseFormat)).transpose()
    }
}

/// What the service reads of `metadata` (OpenAI's metadata values are strings). Other keys are accepted and
/// ignored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// `recording`: whether the session records (`"true"` or `"false"`; a boolean is taken too).
    pub recording: Option<bool>,
    /// `cache`: `"auto"` or `"off"`, the task's action cache (docs/agent.md).
    pub cache: Option<CacheMode>,
    /// `vision`: `"off"`, `"auto"` or `"on"`, when the model sees a screenshot (docs/agent.md).
    pub vision: Option<VisionMode>,
}

impl BodyField for Metadata {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::Object, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(|raw| parse_metadata(Some(raw))).transpose()
    }
}

fn parse_metadata(raw: Option<&Value>) -> Result<Metadata, ApiError> {
    let metadata = match raw {
        None | Some(Value::Null) => return Ok(Metadata::default()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(invalid(ErrorCode::InvalidParams, "metadata must be an object")),
    };
    let recording = match metadata.get("recording") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::String(s)) if s == "true" => Some(true),
        Some(Value::String(s)) if s == "false" => Some(false),
        Some(_) => return Err(invalid(ErrorCode::InvalidParams, "metadata.recording must be \"true\" or \"false\"")),
    };
    let cache = match metadata.get("cache") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(CacheMode::parse(s).map_err(|e| in_metadata(e, "cache"))?),
        Some(_) => return Err(invalid(ErrorCode::InvalidParams, "metadata.cache must be \"auto\" or \"off\"")),
    };
    let vision = match metadata.get("vision") {
        None | Some(Value::Null) => None,
        Some(v) => Some(VisionMode::parse(v).map_err(|e| in_metadata(e, "vision"))?),
    };
    Ok(Metadata { recording, cache, vision })
}

/// A field's error as a `metadata.` field's.
fn in_metadata(e: ApiError, field: &str) -> ApiError {
    ApiError::new(e.code, e.message.replacen(field, &format!("metadata.{field}"), 1))
}

/// `response_format` as OpenAI defines it: `text` (the default), `json_object` (any JSON object) or
/// `json_schema` (`{json_schema: {name, schema, strict}}`); the schema becomes the task's outputSchema.
fn parse_response_format(raw: Option<&Value>) -> Result<Option<OutputSchema>, ApiError> {
    let Some(raw) = raw else { return Ok(None) };
    let f = Fields::of(raw, "response_format")?;
    match f.req_str("type")? {
        "text" => Ok(None),
        "json_object" => OutputSchema::parse(&serde_json::json!({"type": "object"})).map(Some),
        "json_schema" => {
            let schema = raw.get("json_schema").and_then(|j| j.get("schema")).ok_or_else(|| {
                invalid(ErrorCode::MissingRequiredField, "response_format.json_schema.schema is required")
            })?;
            OutputSchema::parse(schema).map(Some)
        }
        other => Err(invalid(
            ErrorCode::InvalidParams,
            format!("response_format.type {other:?} is not one of text, json_object, json_schema"),
        )),
    }
}

fn parse_messages(raw: Option<&Value>) -> Result<Vec<(String, String)>, ApiError> {
    let items = match raw {
        None | Some(Value::Null) => return Err(invalid(ErrorCode::MissingRequiredField, "messages is required")),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(invalid(ErrorCode::InvalidParams, "messages must be an array")),
    };
    if items.is_empty() {
        return Err(invalid(ErrorCode::InvalidParams, "messages must not be empty"));
    }
    if items.len() > MAX_MESSAGES {
        return Err(invalid(ErrorCode::InvalidParameter, format!("messages may hold at most {MAX_MESSAGES} entries")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let what = format!("messages[{i}]");
            let Value::Object(obj) = m else {
                return Err(invalid(ErrorCode::InvalidParams, format!("{what} must be an object")));
            };
            let role = match obj.get("role") {
                Some(Value::String(r)) if matches!(r.as_str(), "system" | "user" | "assistant") => r.clone(),
                Some(Value::String(r)) => {
                    return Err(invalid(
                        ErrorCode::InvalidParams,
                        format!("{what}.role {r:?} is not one of system, user, assistant"),
                    ))
                }
                None | Some(Value::Null) => {
                    return Err(invalid(ErrorCode::MissingRequiredField, format!("{what}.role is required")))
                }
                Some(_) => return Err(invalid(ErrorCode::InvalidParams, format!("{what}.role must be a string"))),
            };
            let content = match obj.get("content") {
                Some(Value::String(c)) => c.clone(),
                None | Some(Value::Null) => {
                    return Err(invalid(ErrorCode::MissingRequiredField, format!("{what}.content is required")))
                }
                Some(_) => return Err(invalid(ErrorCode::InvalidParams, format!("{what}.content must be a string"))),
            };
            Ok((role, content))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ChatRequest, ApiError> {
        ChatRequest::parse(&v)
    }

    #[test]
    fn the_last_user_message_is_the_task_and_the_rest_is_context() {
        let r = parse(json!({
            "model": "svc-browser-1",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": " open x then report the title "},
            ],
        }))
        .expect("valid");
        assert_eq!(r.params.task_details.as_deref(), Some("open x then report the title"));
        assert_eq!(r.context.len(), 3);
        assert_eq!(r.context[0], ("system".into(), "be brief".into()));
        assert!(r.params.terminate_on_completion);
        assert!(!r.stream);
        assert_eq!(r.params.limits.max_output_tokens, 2_000);
    }

    #[test]
    fn max_tokens_is_clamped_into_the_task_bounds() {
        assert_eq!(max_output_tokens(0), 100);
        assert_eq!(max_output_tokens(5_000), 5_000);
        assert_eq!(max_output_tokens(1_000_000), 50_000);
        let msgs = json!([{"role": "user", "content": "x"}]);
        let neg = parse(json!({"model": CHAT_MODEL, "messages": msgs, "max_tokens": -1})).unwrap_err();
        assert_eq!(neg.code, ErrorCode::InvalidParameter);
    }

    #[test]
    fn bad_requests_are_refused_with_clear_codes() {
        let user = json!([{"role": "user", "content": "x"}]);
        let code = |v: Value| parse(v).unwrap_err().code;
        assert_eq!(code(json!({"messages": user})), ErrorCode::MissingRequiredField);
        assert_eq!(code(json!({"model": "gpt-4", "messages": user})), ErrorCode::ModelNotFound);
        assert_eq!(code(json!({"model": CHAT_MODEL})), ErrorCode::MissingRequiredField);
        assert_eq!(code(json!({"model": CHAT_MODEL, "messages": []})), ErrorCode::InvalidParams);
        let only_system = json!([{"role": "system", "content": "x"}]);
        assert_eq!(code(json!({"model": CHAT_MODEL, "messages": only_system})), ErrorCode::InvalidParams);
        let tool = json!([{"role": "tool", "content": "x"}]);
        assert_eq!(code(json!({"model": CHAT_MODEL, "messages": tool})), ErrorCode::InvalidParams);
        let blank = json!([{"role": "user", "content": "  "}]);
        assert_eq!(code(json!({"model": CHAT_MODEL, "messages": blank})), ErrorCode::InvalidTaskDetails);
        assert_eq!(code(json!({"model": CHAT_MODEL, "messages": user, "stream": "yes"})), ErrorCode::InvalidParams);
        let fmt = |f: Value| json!({"model": CHAT_MODEL, "messages": user, "response_format": f});
        assert_eq!(code(fmt(json!({"type": "xml"}))), ErrorCode::InvalidParams);
        assert_eq!(code(fmt(json!({"type": "json_schema"}))), ErrorCode::MissingRequiredField);
        assert_eq!(
            code(fmt(json!({"type": "json_schema", "json_schema": {"schema": {"type": 7}}}))),
            ErrorCode::InvalidParams
        );
    }

    #[test]
    fn a_json_schema_response_format_becomes_the_output_schema() {
        let user = json!([{"role": "user", "content": "x"}]);
        let schema = json!({"type": "object", "properties": {"t": {"type": "string"}}});
        let r = parse(json!({"model": CHAT_MODEL, "messages": user,
            "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": schema, "strict": true}}}))
        .unwrap();
        assert_eq!(r.params.limits.output_schema.unwrap().schema(), &schema);
        let text = parse(json!({"model": CHAT_MODEL, "messages": user, "response_format": {"type": "text"}})).unwrap();
        assert!(text.params.limits.output_schema.is_none());
    }

    #[test]
    fn metadata_recording_asks_for_a_recording() {
        let base = json!({"model": CHAT_MODEL, "messages": [{"role": "user", "content": "report the title"}]});
        let with = |metadata: Value| {
            let mut body = base.clone();
            body["metadata"] = metadata;
            parse(body)
        };
        assert_eq!(parse(base.clone()).expect("plain").params.recording, None);
        assert_eq!(with(json!({"recording": "true"})).expect("string").params.recording, Some(true));
        assert_eq!(with(json!({"recording": false, "trace": "x"})).expect("bool").params.recording, Some(false));
        assert_eq!(with(json!({"recording": "yes"})).expect_err("refused").code, ErrorCode::InvalidParams);
        assert_eq!(with(json!(["recording"])).expect_err("refused").code, ErrorCode::InvalidParams);
    }

    #[test]
    fn metadata_sets_the_tasks_cache_and_vision() {
        let base = json!({"model": CHAT_MODEL, "messages": [{"role": "user", "content": "report the title"}]});
        let with = |metadata: Value| {
            let mut body = base.clone();
            body["metadata"] = metadata;
            parse(body)
        };
        let plain = parse(base.clone()).expect("plain").params.limits;
        assert_eq!((plain.cache, plain.vision), (CacheMode::Auto, VisionMode::Auto));
        let set = with(json!({"cache": "off", "vision": "on"})).expect("set").params.limits;
        assert_eq!((set.cache, set.vision), (CacheMode::Off, VisionMode::On));
        for bad in [json!({"cache": "never"}), json!({"cache": false}), json!({"vision": "sometimes"})] {
            let e = with(bad.clone()).expect_err("refused");
            assert_eq!(e.code, ErrorCode::InvalidParams, "{bad}");
            assert!(e.message.contains("metadata."), "{bad}: {}", e.message);
        }
    }
}
