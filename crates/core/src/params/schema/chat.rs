//! The body of chat completions (`POST /v1/chat/completions`), declared once: OpenAI's field names (snake
//! case), each read by its type in `crate::chat` in declaration order and documented by the same declaration.

use crate::chat::{ChatMessages, ChatModel, MaxTokens, Metadata, ResponseFormat};
use crate::params::decl::body;

body! {
    /// The body of `POST /v1/chat/completions`.
    pub struct ChatCompletionRequest {
        /// Only `svc-browser-1`.
        req "model" model: ChatModel,
        /// true answers with Server-Sent Events.
        opt "stream" stream: bool,
        /// Default 2000; clamped into maxOutputTokens' bounds.
        opt "max_tokens" max_tokens: MaxTokens,
        /// Accepted, ignored.
        opt "temperature" temperature: f64,
        req "messages" messages: ChatMessages,
        // Not in the published document (yet): OpenAI's `text`, `json_object` or `json_schema`.
        hidden "response_format" response_format: ResponseFormat,
        /// OpenAI's metadata (string values): `recording: "true"` records the session (docs/api.md, Recordings);
        /// `cache: "auto" | "off"` and `vision: "off" | "auto" | "on"` set the task's (docs/agent.md). Other keys
        /// are accepted and ignored.
        opt "metadata" metadata: Metadata,
    }
}
