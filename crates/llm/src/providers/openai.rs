//! OpenAI-compatible Chat Completions with tool calling (`POST {base}/chat/completions`).

use crate::retry::post_json;
use crate::types::parse_arguments;
use crate::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, ContentPart, LlmConfig, LlmError, Role, TokenUsage, ToolCall,
};
use async_trait::async_trait;
use serde_json::{json, Value};

pub struct OpenAiChat {
    client: reqwest::Client,
    config: LlmConfig,
}

impl OpenAiChat {
    pub fn new(client: reqwest::Client, config: LlmConfig) -> Self {
        OpenAiChat { client, config }
    }
}

fn content_json(parts: &[ContentPart]) -> Value {
    if let [ContentPart::Text(t)] = parts {
        return json!(t);
    }
    Value::Array(
        parts
            .iter()
            .map(|p| match p {
                ContentPart::Text(t) => json!({ "type": "text", "text": t }),
                ContentPart::Image { media_type, base64 } => {
                    json!({ "type": "image_url", "image_url": { "url": format!("data:{media_type};base64,{base64}") } })
                }
            })
            .collect(),
    )
}

fn message_json(m: &ChatMessage) -> Value {
    match m.role {
        Role::System => json!({ "role": "system", "content": m.joined_text() }),
        Role::User => json!({ "role": "user", "content": content_json(&m.content) }),
        Role::Tool => json!({ "role": "tool", "tool_call_id": m.tool_call_id, "content": m.joined_text() }),
        Role::Assistant => {
            let mut v = json!({ "role": "assistant", "content": m.joined_text() });
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": c.arguments.to_string() } }))
                    .collect();
            }
            v
        }
    }
}

/// The request body for `request`.
pub fn request_body(model: &str, request: &ChatRequest) -> Value {
    let mut body = json!({
        "model": model,
        "messages": request.messages.iter().map(message_json).collect::<Vec<_>>(),
        "max_tokens": request.max_output_tokens,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "function": { "name": t.name, "description": t.description, "parameters": t.parameters } }))
            .collect();
        body["tool_choice"] = json!("auto");
    }
    body
}

/// Reads a Chat Completions response.
pub fn parse_response(v: &Value) -> Result<ChatResponse, LlmError> {
    let message = v
        .pointer("/choices/0/message")
        .ok_or_else(|| LlmError::Decode("no choices[0].message in the answer".into()))?;
    let text = message.get("content").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_owned);
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let f = c.get("function")?;
                    Some(ToolCall {
                        id: c
                            .get("id")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_else(|| format!("call_{i}")),
                        name: f.get("name")?.as_str()?.to_owned(),
                        arguments: parse_arguments(f.get("arguments").unwrap_or(&Value::Null)),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let usage = TokenUsage {
        prompt_tokens: v.pointer("/usage/prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        completion_tokens: v.pointer("/usage/completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    };
    Ok(ChatResponse { text, tool_calls, usage })
}

#[async_trait]
impl ChatModel for OpenAiChat {
    fn name(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    fn supports_images(&self) -> bool {
        self.config.vision
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = request_body(&self.config.model, request);
        let v = post_json(&self.client, &self.config, "chat/completions", &body, |req| match &self.config.api_key {
            Some(key) => req.bearer_auth(key),
            None => req,
        })
        .await?;
        parse_response(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;

    #[test]
    fn requests_and_tool_calls_use_the_chat_completions_shapes() {
        let mut assistant = ChatMessage::text(Role::Assistant, "");
        assistant.tool_calls.push(ToolCall { id: "c1".into(), name: "click".into(), arguments: json!({"index": 3}) });
        let req = ChatRequest {
            messages: vec![
                ChatMessage::text(Role::System, "rules"),
                ChatMessage {
                    role: Role::User,
                    content: vec![
                        ContentPart::Text("look".into()),
                        ContentPart::Image { media_type: "image/jpeg".into(), base64: "AAA".into() },
                    ],
                    tool_calls: vec![],
                    tool_call_id: None,
                },
                assistant,
                ChatMessage::tool_result("c1", "clicked"),
            ],
            tools: vec![ToolSpec {
                name: "click".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: 500,
        };
        let body = request_body("m", &req);
        assert_eq!(body["messages"][1]["content"][1]["image_url"]["url"], "data:image/jpeg;base64,AAA");
        assert_eq!(body["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"index\":3}");
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "click");

        let answer = json!({
            "choices": [{ "message": { "role": "assistant", "content": "thinking",
                "tool_calls": [{ "id": "x", "type": "function", "function": { "name": "navigate", "arguments": "{\"url\": \"http://a.test\"}" } },
                               { "id": "y", "type": "function", "function": { "name": "done", "arguments": "not json" } }] } }],
            "usage": { "prompt_tokens": 120, "completion_tokens": 30 }
        });
        let r = parse_response(&answer).unwrap();
        assert_eq!(r.text.as_deref(), Some("thinking"));
        assert_eq!(r.tool_calls[0].arguments["url"], "http://a.test");
        assert_eq!(r.tool_calls[1].arguments, json!({}));
        assert_eq!(r.usage, TokenUsage { prompt_tokens: 120, completion_tokens: 30 });
    }
}
