//! The wire shape of chat completions (`POST /v1/chat/completions`), read by hand in `crate::chat`.
// Never built: each type describes the body its validator reads from JSON, for the schema derive alone.
#![allow(dead_code)]

use utoipa::ToSchema;

/// The body of `POST /v1/chat/completions`.
#[derive(ToSchema)]
pub struct ChatCompletionRequest {
    /// Only `svc-browser-1`.
    model: String,
    #[schema(min_items = 1, max_items = 200)]
    messages: Vec<ChatMessage>,
    /// true answers with Server-Sent Events.
    stream: Option<bool>,
    /// Default 2000; clamped into maxOutputTokens' bounds.
    #[schema(minimum = 0)]
    max_tokens: Option<u64>,
    /// Accepted, ignored.
    temperature: Option<f64>,
    /// OpenAI's metadata (string values): `recording: "true"` records the session (docs/api.md, Recordings);
    /// `cache: "auto" | "off"` and `vision: "off" | "auto" | "on"` set the task's (docs/agent.md). Other keys
    /// are accepted and ignored.
    #[schema(value_type = Option<Object>)]
    metadata: Option<serde_json::Value>,
}

#[derive(ToSchema)]
pub struct ChatMessage {
    role: ChatRole,
    content: String,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}
