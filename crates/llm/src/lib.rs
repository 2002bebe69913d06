//! webpilot-llm: chat models with tool calling, behind one provider-neutral `ChatModel` trait.
//! Providers: any OpenAI-compatible Chat Completions server (OpenAI, vLLM, Ollama, llama.cpp,
//! OpenRouter, ...) and Anthropic's Messages API. Retries with backoff on 429/5xx and connection
//! errors; every request has a timeout.

mod config;
mod error;
pub mod providers;
mod retry;
mod types;

pub use config::{LlmConfig, Provider};
pub use error::LlmError;
pub use types::{ChatMessage, ChatRequest, ChatResponse, ContentPart, Role, TokenUsage, ToolCall, ToolSpec};

use async_trait::async_trait;
use std::sync::Arc;

/// A chat model that can call tools.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// A name for logs, e.g. `openai:gpt-4o-mini`.
    fn name(&self) -> String;
    /// Whether image parts may be sent.
    fn supports_images(&self) -> bool;
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// Builds the configured model.
pub fn build(config: &LlmConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    let client = reqwest::Client::builder()
        .timeout(config.timeout)
        .connect_timeout(config.timeout.min(std::time::Duration::from_secs(10)))
        .build()
        .map_err(|e| LlmError::Config(e.to_string()))?;
    Ok(match config.provider {
        Provider::OpenAi => Arc::new(providers::openai::OpenAiChat::new(client, config.clone())),
        Provider::Anthropic => Arc::new(providers::anthropic::AnthropicChat::new(client, config.clone())),
    })
}
