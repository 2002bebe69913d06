//! Provider-neutral chat types: messages with text, images and tool calls; tool specs; usage.

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call (`tool_call_id` says which).
    Tool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ContentPart {
    Text(String),
    /// A JPEG or PNG image, base64-encoded, with its media type.
    Image {
        media_type: String,
        base64: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed JSON arguments (an object; `{}` when the model sent none or garbage).
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    pub role: Role,
    pub content: Vec<ContentPart>,
    /// Tool calls made by an assistant message.
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this answers.
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        ChatMessage { role, content: vec![ContentPart::Text(text.into())], tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Tool,
            content: vec![ContentPart::Text(text.into())],
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
    /// All text parts joined.
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text(t) => Some(t.as_str()),
                ContentPart::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A tool the model may call: a name, what it does, and a JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The model's text (its reasoning or answer), if any.
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
}

/// Parses tool-call arguments sent as a JSON string; anything unusable becomes `{}`.
pub(crate) fn parse_arguments(raw: &Value) -> Value {
    match raw {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Default::default())),
        Value::Object(_) => raw.clone(),
        _ => Value::Object(Default::default()),
    }
}
