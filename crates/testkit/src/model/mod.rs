//! A scripted model server: speaks the OpenAI Chat Completions (`/v1/chat/completions`) and the Anthropic
//! Messages (`/v1/messages`) wire formats over real HTTP, images included, and answers each request with the
//! next scripted reply (tool calls, text, an HTTP error, a delay). Tool-call arguments may name an element by
//! its text — `"@Pricing"` — and the server replaces that with the element's [index] from the latest
//! observation it received, as a model reading the page would; `"@pixel:RRGGBB:x"` (or `:y`) becomes the
//! centre of that colour in the latest picture it received, as a model looking at the page would, and
//! `"@mark:RRGGBB"` the number on the mark (set-of-marks label) at that colour's top-left.

pub mod marks;
mod pixels;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Tool calls `(name, arguments)`, with optional reasoning text.
    Tools { text: Option<String>, calls: Vec<(String, Value)> },
    /// A plain text answer with no tool call.
    Text(String),
    /// An HTTP error status with a small error body.
    Status(u16),
    /// Waits, then gives the inner reply.
    Delay(Duration, Box<Reply>),
}

impl Reply {
    /// One tool call.
    pub fn call(name: &str, arguments: Value) -> Reply {
        Reply::Tools { text: None, calls: vec![(name.to_owned(), arguments)] }
    }
    /// One tool call with reasoning text.
    pub fn think(text: &str, name: &str, arguments: Value) -> Reply {
        Reply::Tools { text: Some(text.to_owned()), calls: vec![(name.to_owned(), arguments)] }
    }
    pub fn done(message: &str) -> Reply {
        Reply::call("done", json!({ "message": message }))
    }
    pub fn delayed(ms: u64, reply: Reply) -> Reply {
        Reply::Delay(Duration::from_millis(ms), Box::new(reply))
    }
}

#[derive(Default)]
struct ModelState {
    script: VecDeque<Reply>,
    requests: Vec<Value>,
}

type Shared = Arc<Mutex<ModelState>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, ModelState> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running scripted model; stops when dropped.
pub struct ScriptedModel {
    state: Shared,
    port: u16,
    task: JoinHandle<()>,
}

impl ScriptedModel {
    pub async fn start(script: Vec<Reply>) -> ScriptedModel {
        let state: Shared = Arc::new(Mutex::new(ModelState { script: script.into(), requests: Vec::new() }));
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/v1/messages", post(complete_anthropic))
            .with_state(state.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind scripted model");
        let port = listener.local_addr().expect("local addr").port();
        let task = webpilot_tasks::spawn_owned("scripted model", async move {
            let _ = axum::serve(listener, app).await;
        });
        ScriptedModel { state, port, task }
    }

    /// The base URL to configure (`WEBPILOT_LLM_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state).requests.clone()
    }

    /// Appends replies to the script.
    pub fn push(&self, replies: Vec<Reply>) {
        lock(&self.state).script.extend(replies);
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        lock(&self.state).script.len()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The text of a message's content (a string or an array of parts).
pub fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// The latest observation in a request (the last user message that is one).
pub fn last_observation(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .filter(|m| m["role"] == "user")
        .map(content_text)
        .find(|t| t.starts_with("Observation"))
        .unwrap_or_default()
}

/// Replaces `"@text"` string arguments by the index of the first element (`[N label]` in the
/// observation) whose label contains `text`, and `"@line:TEXT:K"` by the K-th element index (from 1) of
/// the first line containing TEXT; 9999 when there is none.
fn resolve(arguments: &Value, observation: &str, picture: Option<&image::RgbImage>) -> Value {
    match arguments {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), resolve(v, observation, picture))).collect())
        }
        Value::String(s) if s.starts_with("@pixel:") => {
            let spec = &s["@pixel:".len()..];
            let found = spec.split_once(':').and_then(|(rgb, axis)| {
                let (x, y) = pixels::centre_of(picture?, rgb)?;
                match axis {
                    "x" => Some(x),
                    "y" => Some(y),
                    _ => None,
                }
            });
            json!(found.unwrap_or(9999))
        }
        Value::String(s) if s.starts_with("@mark:") => {
            json!(picture.and_then(|p| marks::mark_on(p, &s["@mark:".len()..])).unwrap_or(9999))
        }
        Value::String(s) if s.starts_with("@line:") => {
            let spec = &s["@line:".len()..];
            let found = spec.rsplit_once(':').and_then(|(text, k)| line_index(observation, text, k.parse().ok()?));
            json!(found.unwrap_or(9999))
        }
        Value::String(s) if s.starts_with('@') => json!(element_index(observation, &s[1..]).unwrap_or(9999)),
        other => other.clone(),
    }
}

/// The `nth` element index (from 1; `[N]` or `[N label]`) of the first line of `observation` that
/// contains `want`.
pub fn line_index(observation: &str, want: &str, nth: usize) -> Option<u64> {
    let line = observation.lines().find(|l| l.contains(want))?;
    line.split('[')
        .skip(1)
        .filter_map(|chunk| chunk.split([']', ' ']).next()?.parse::<u64>().ok())
        .nth(nth.checked_sub(1)?)
}

/// The index of the first `[N label]` in `observation` whose label contains `want`.
pub fn element_index(observation: &str, want: &str) -> Option<u64> {
    observation.split('[').skip(1).find_map(|chunk| {
        let (inside, _) = chunk.split_once(']')?;
        let (number, label) = inside.split_once(' ')?;
        let index = number.parse::<u64>().ok()?;
        label.contains(want).then_some(index)
    })
}

/// Records `request` and takes the next reply of the script (after its delays); `None` when it is exhausted.
async fn next_reply(state: &Shared, request: &Value) -> Option<Reply> {
    let mut reply = {
        let mut s = lock(state);
        s.requests.push(request.clone());
        s.script.pop_front()
    }?;
    while let Reply::Delay(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    Some(reply)
}

/// A reply's tool calls with their arguments resolved against what the request shows.
fn resolved_calls(calls: &[(String, Value)], request: &Value) -> Vec<(String, String, Value)> {
    let observation = last_observation(request);
    let sees = |a: &Value| a.to_string().contains("@pixel:") || a.to_string().contains("@mark:");
    let picture = calls.iter().any(|(_, a)| sees(a)).then(|| pixels::latest_image(request));
    calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            let args = resolve(args, &observation, picture.as_ref().and_then(Option::as_ref));
            (format!("call_{i}_{}", rand_suffix()), name.clone(), args)
        })
        .collect()
}

async fn complete(State(state): State<Shared>, Json(request): Json<Value>) -> Response {
    let Some(reply) = next_reply(&state, &request).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "error": { "message": "script exhausted" } })))
            .into_response();
    };
    let prompt_tokens = prompt_tokens(&request);
    let message = match reply {
        Reply::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, Json(json!({ "error": { "message": "scripted failure" } }))).into_response();
        }
        Reply::Text(text) => json!({ "role": "assistant", "content": text }),
        Reply::Tools { text, calls } => {
            let calls: Vec<Value> = resolved_calls(&calls, &request)
                .into_iter()
                .map(|(id, name, args)| {
                    json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args.to_string() } })
                })
                .collect();
            json!({ "role": "assistant", "content": text, "tool_calls": calls })
        }
        Reply::Delay(..) => json!({ "role": "assistant", "content": "" }),
    };
    let completion_tokens = message.to_string().len() as u64 / 4;
    Json(json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": request["model"],
        "choices": [{ "index": 0, "message": message, "finish_reason": "tool_calls" }],
        "usage": { "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens },
    }))
    .into_response()
}

/// The same script in Anthropic's Messages format: text and `tool_use` blocks, `stop_reason`, and usage as
/// `input_tokens` / `output_tokens`.
async fn complete_anthropic(State(state): State<Shared>, Json(request): Json<Value>) -> Response {
    let Some(reply) = next_reply(&state, &request).await else {
        let error = json!({ "type": "error", "error": { "type": "api_error", "message": "script exhausted" } });
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(error)).into_response();
    };
    let input_tokens = prompt_tokens(&request);
    let (content, stop_reason) = match reply {
        Reply::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let error = json!({ "type": "error", "error": { "type": "api_error", "message": "scripted failure" } });
            return (status, Json(error)).into_response();
        }
        Reply::Text(text) => (vec![json!({ "type": "text", "text": text })], "end_turn"),
        Reply::Tools { text, calls } => {
            let mut blocks: Vec<Value> = text.into_iter().map(|t| json!({ "type": "text", "text": t })).collect();
            blocks.extend(
                resolved_calls(&calls, &request)
                    .into_iter()
                    .map(|(id, name, args)| json!({ "type": "tool_use", "id": id, "name": name, "input": args })),
            );
            (blocks, "tool_use")
        }
        Reply::Delay(..) => (Vec::new(), "end_turn"),
    };
    let output_tokens = Value::Array(content.clone()).to_string().len() as u64 / 4;
    Json(json!({
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": content,
        "stop_reason": stop_reason,
        "usage": { "input_tokens": input_tokens, "output_tokens": output_tokens },
    }))
    .into_response()
}

/// Input tokens an image costs, as the scripted model reports them (a fixed price per picture, as
/// providers bill a picture by its size and not by its encoding).
pub const IMAGE_TOKENS: u64 = 765;

/// A rough token count of a request's messages (4 characters a token), so token budgets behave as with
/// a real model; each image part counts [`IMAGE_TOKENS`] instead of its text, so a request costs what
/// the same request without its images costs, plus a fixed price per image.
fn prompt_tokens(request: &Value) -> u64 {
    let mut messages = request["messages"].clone();
    let mut images = 0u64;
    for message in messages.as_array_mut().into_iter().flatten() {
        let Some(parts) = message["content"].as_array_mut() else { continue };
        let before = parts.len();
        parts.retain(|p| p["type"] != "image_url" && p["type"] != "image");
        images += (before - parts.len()) as u64;
        // Without its images the message is counted as a text-only one is sent: one part is a string.
        if before > parts.len() && parts.len() == 1 {
            message["content"] = parts[0]["text"].clone();
        }
    }
    messages.to_string().len() as u64 / 4 + images * IMAGE_TOKENS
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos() as u64).unwrap_or(0)
}
