//! Which model to talk to, and how patiently.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Any OpenAI-compatible Chat Completions server.
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
}

impl Provider {
    pub fn parse(s: &str) -> Option<Provider> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" | "vllm" | "ollama" | "openrouter" | "llamacpp" | "llama.cpp" => {
                Some(Provider::OpenAi)
            }
            "anthropic" | "claude" => Some(Provider::Anthropic),
            _ => None,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com/v1",
        }
    }
}

#[derive(Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    /// Base URL ending before `/chat/completions` (OpenAI) or `/messages` (Anthropic).
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// Time allowed for one HTTP request.
    pub timeout: Duration,
    /// Retries after the first attempt on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// First backoff; doubled each retry (with jitter), capped at 8 s.
    pub backoff: Duration,
    /// Send page screenshots to the model.
    pub vision: bool,
}

impl std::fmt::Debug for LlmConfig {
    // The API key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("vision", &self.vision)
            .finish()
    }
}
