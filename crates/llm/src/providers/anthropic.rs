//! Anthropic's Messages API with tool use (`POST {base}/messages`).

use crate::retry::post_json;
use crate::types::parse_arguments;
use crate::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, ContentPart, LlmConfig, LlmError, Role, TokenUsage, ToolCall,
};
use async_trait::async_trait;
use serde_json::{json, Value};

const API_VERSION: &str = "2023-06-01";

pub struct AnthropicChat {
    client: reqwest::Client,
    config: LlmConfig,
}

impl AnthropicChat {
    pub fn new(client: reqwest::Client, config: LlmConfig) -> Self {
        AnthropicChat { client, config }
    }
}

fn parts_json(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .map(|p| match p {
            ContentPart::Text(t) => json!({ "type": "text", "text": t }),
            ContentPart::Image { media_type, base64 } => {
                json!({ "type": "image", "source": { "type": "base64", "media_type": media_type, "data": base64 } })
            }
        })
        .collect()
}

/// The request body: system text apart, tool results as user messages, consecutive same-role turns merged.
pub fn request_body(model: &str, request: &ChatRequest) -> Value {
    let system: Vec<String> =
        request.messages.iter().filter(|m| m.role == Role::System).map(ChatMessage::joined_text).collect();
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    for m in request.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = match m.role {
            Role::User => ("user", parts_json(&m.content)),
            Role::Tool => (
                "user",
                vec![json!({ "type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.joined_text() })],
            ),
            _ => {
                let mut blocks: Vec<Value> = parts_json(&m.content)
                    .into_iter()
                    .filter(|b| b.get("text").and_then(Value::as_str).is_none_or(|t| !t.is_empty()))
                    .collect();
                blocks.extend(
                    m.tool_calls
                        .iter()
                        .map(|c| json!({ "type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments })),
                );
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((r, b)) if r == role => b.extend(blocks),
            _ => turns.push((role.to_owned(), blocks)),
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens,
        "messages": turns.into_iter().map(|(role, content)| json!({ "role": role, "content": content })).collect::<Vec<_>>(),
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
            .collect();
    }
    body
}

pub fn parse_response(v: &Value) -> Result<ChatResponse, LlmError> {
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::Decode("no content in the answer".into()))?;
    let text: Vec<&str> =
        blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
    let tool_calls = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| {
            Some(ToolCall {
                id: b.get("id")?.as_str()?.to_owned(),
                name: b.get("name")?.as_str()?.to_owned(),
                arguments: parse_arguments(b.get("input").unwrap_or(&Value::Null)),
            })
        })
        .collect();
    Ok(ChatResponse {
        text: Some(text.join("\n")).filter(|t| !t.trim().is_empty()),
        tool_calls,
        usage: TokenUsage {
            prompt_tokens: v.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
            completion_tokens: v.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
        },
    })
}

#[async_trait]
impl ChatModel for AnthropicChat {
    fn name(&self) -> String {
        format!("anthropic:{}", self.config.model)
    }

    fn supports_images(&self) -> bool {
        self.config.vision
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = request_body(&self.config.model, request);
        let v = post_json(&self.client, &self.config, "messages", &body, |req| {
            let req = req.header("anthropic-version", API_VERSION);
            match &self.config.api_key {
                Some(key) => req.header("x-api-key", key),
                None => req,
            }
        })
        .await?;
        parse_response(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LlmConfig, Provider, ToolSpec};
    use axum::{routing::post, Json, Router};
    use std::time::Duration;

    fn request() -> ChatRequest {
        let mut assistant = ChatMessage::text(Role::Assistant, "I will click.");
        assistant.tool_calls.push(ToolCall { id: "tu_1".into(), name: "click".into(), arguments: json!({"index": 2}) });
        ChatRequest {
            messages: vec![
                ChatMessage::text(Role::System, "rules"),
                ChatMessage::text(Role::User, "task"),
                assistant,
                ChatMessage::tool_result("tu_1", "clicked"),
                ChatMessage::text(Role::User, "new observation"),
            ],
            tools: vec![ToolSpec {
                name: "click".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: 256,
        }
    }

    #[test]
    fn tool_results_and_observations_merge_into_one_user_turn() {
        let body = request_body("claude", &request());
        assert_eq!(body["system"], "rules");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
        assert_eq!(msgs[2]["role"], "user");
        assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
        assert_eq!(msgs[2]["content"][1]["text"], "new observation");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }

    #[tokio::test]
    async fn the_client_speaks_the_messages_wire_format() {
        async fn messages(headers: axum::http::HeaderMap, Json(body): Json<Value>) -> Json<Value> {
            assert_eq!(headers["x-api-key"], "sk-test");
            assert_eq!(headers["anthropic-version"], API_VERSION);
            assert_eq!(body["model"], "claude-x");
            Json(json!({
                "content": [{ "type": "text", "text": "Done." }, { "type": "tool_use", "id": "tu_9", "name": "done", "input": { "message": "ok" } }],
                "usage": { "input_tokens": 50, "output_tokens": 7 }
            }))
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        webpilot_tasks::spawn_owned("test anthropic server", async move {
            axum::serve(listener, Router::new().route("/v1/messages", post(messages))).await
        });
        let model = crate::build(&LlmConfig {
            provider: Provider::Anthropic,
            base_url: format!("http://{addr}/v1"),
            api_key: Some("sk-test".into()),
            model: "claude-x".into(),
            timeout: Duration::from_secs(5),
            max_retries: 0,
            backoff: Duration::from_millis(10),
            vision: false,
        })
        .unwrap();
        let r = model.complete(&request()).await.unwrap();
        assert_eq!(r.text.as_deref(), Some("Done."));
        assert_eq!(r.tool_calls[0].name, "done");
        assert_eq!(r.tool_calls[0].arguments["message"], "ok");
        assert_eq!(r.usage, TokenUsage { prompt_tokens: 50, completion_tokens: 7 });
    }
}
