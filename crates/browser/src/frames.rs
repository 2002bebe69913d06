//! Cross-origin iframes: Chromium runs them in renderer processes of their own (out-of-process
//! iframes), as DevTools targets of their own. chromiumoxide attaches to them for its bookkeeping but
//! gives no handle to send them commands, so a session keeps a second, plain DevTools connection to its
//! browser, attaches to a frame's target (flattened sessions) and evaluates scripts there.
//!
//! Written here, not taken from a crate: what is needed is a request/response loop over one WebSocket
//! (a hundred lines), and a second CDP client crate would bring its own copy of the whole protocol.

use crate::error::BrowserError;
use crate::inbox::{inbox, Inbox};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A plain DevTools connection used to reach the frame targets of a session's pages.
pub(crate) struct FrameClient {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: AtomicU64,
    /// Flattened session per attached frame target.
    sessions: tokio::sync::Mutex<HashMap<String, String>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FrameClient {
    fn drop(&mut self) {
        self.tasks.iter().for_each(|t| t.abort());
    }
}

/// A DevTools connection of its own to `ws_url` (a remote browser's endpoint), as channels: text messages
/// to the browser, and what it sends back; the two tasks pumping them end with the connection.
pub(crate) async fn ws_channels(
    ws_url: &str,
    timeout: Duration,
) -> Result<(mpsc::UnboundedSender<String>, Inbox, [tokio::task::JoinHandle<()>; 2]), BrowserError> {
    let (ws, _) = tokio::time::timeout(timeout, tokio_tungstenite::connect_async(ws_url))
        .await
        .map_err(|_| BrowserError::Timeout("connect to the browser"))?
        .map_err(|e| BrowserError::Cdp(format!("connecting to the browser failed: {e}")))?;
    let (mut sink, mut stream) = ws.split();
    let (out, mut rx) = mpsc::unbounded_channel::<String>();
    let (answers_tx, answers) = inbox();
    let writer = webpilot_tasks::spawn_owned("frame writer", async move {
        while let Some(text) = rx.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                break;
            }
        }
    });
    let reader = webpilot_tasks::spawn_owned("frame reader", async move {
        while let Some(Ok(msg)) = stream.next().await {
            let Message::Text(text) = msg else { continue };
            // Gone, or too far behind: the connection ends (its own, so nothing else waits on it).
            if !answers_tx.send(text.as_str().to_owned()) {
                break;
            }
        }
    });
    Ok((out, answers, [writer, reader]))
}

impl FrameClient {
    /// A client on a DevTools connection of its own (a remote browser's endpoint).
    pub async fn connect(ws_url: &str, timeout: Duration) -> Result<FrameClient, BrowserError> {
        let (out, answers, tasks) = ws_channels(ws_url, timeout).await?;
        let mut client = Self::over(out, answers);
        client.tasks.extend(tasks);
        Ok(client)
    }

    /// A client over `out` (commands) and `answers` (what the browser sends back): a local browser's
    /// DevTools pipe, shared through its bridge (`pipe.rs`).
    pub fn over(out: mpsc::UnboundedSender<String>, mut answers: Inbox) -> FrameClient {
        let pending: Pending = Arc::default();
        let waiting = pending.clone();
        let reader = webpilot_tasks::spawn_owned("frame answers", async move {
            while let Some(text) = answers.recv().await {
                let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
                let Some(id) = v.get("id").and_then(Value::as_u64) else { continue };
                let reply = match v.get("error") {
                    Some(e) => Err(e.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()),
                    None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                };
                if let Some(tx) = waiting.lock().ok().and_then(|mut p| p.remove(&id)) {
                    let _ = tx.send(reply);
                }
            }
            // The connection is gone: fail whatever waits.
            if let Ok(mut p) = waiting.lock() {
                p.clear();
            }
        });
        FrameClient { out, pending, next: AtomicU64::new(1), sessions: Default::default(), tasks: vec![reader] }
    }

    /// Sends one command and waits for its answer.
    async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, BrowserError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.out.send(msg.to_string()).map_err(|_| BrowserError::Cdp("the frame connection is closed".into()))?;
        let answer = tokio::time::timeout(timeout, rx).await;
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        match answer {
            Err(_) => Err(BrowserError::Timeout("a command in a frame")),
            Ok(Err(_)) => Err(BrowserError::Cdp("the frame connection closed".into())),
            Ok(Ok(Err(e))) => Err(BrowserError::Cdp(format!("{method} in a frame failed: {e}"))),
            Ok(Ok(Ok(v))) => Ok(v),
        }
    }

    /// The iframe targets of browser context `context` (every session has its own context).
    pub async fn frames_in(&self, context: &str, timeout: Duration) -> Result<Vec<String>, BrowserError> {
        let v = self.call("Target.getTargets", json!({}), None, timeout).await?;
        let infos = v.get("targetInfos").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(infos
            .iter()
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("iframe"))
            .filter(|t| t.get("browserContextId").and_then(Value::as_str) == Some(context))
            .filter_map(|t| t.get("targetId").and_then(Value::as_str).map(str::to_owned))
            .collect())
    }

    async fn session_for(&self, target_id: &str, timeout: Duration) -> Result<String, BrowserError> {
        let mut sessions = self.sessions.lock().await;
        if let Some(s) = sessions.get(target_id) {
            return Ok(s.clone());
        }
        let v = self
            .call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true }), None, timeout)
            .await?;
        let session = v
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| BrowserError::Cdp("attaching to a frame gave no session".into()))?
            .to_owned();
        sessions.insert(target_id.to_owned(), session.clone());
        Ok(session)
    }

    /// Inserts `text` at the focus of the frame target's own widget (`Input.insertText` on its session): typed
    /// text reaches the frame itself, whichever frame the browser considers focused.
    pub async fn insert_text(&self, target_id: &str, text: &str, timeout: Duration) -> Result<(), BrowserError> {
        let session = self.session_for(target_id, timeout).await?;
        self.call("Input.insertText", json!({ "text": text }), Some(&session), timeout).await.map(|_| ())
    }

    /// Evaluates `expression` in the frame target and returns its JSON value.
    pub async fn evaluate(&self, target_id: &str, expression: &str, timeout: Duration) -> Result<Value, BrowserError> {
        let session = self.session_for(target_id, timeout).await?;
        let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let v = match self.call("Runtime.evaluate", params, Some(&session), timeout).await {
            Ok(v) => v,
            Err(e) => {
                // The frame may have navigated or gone; attach afresh next time.
                self.sessions.lock().await.remove(target_id);
                return Err(e);
            }
        };
        if let Some(ex) = v.get("exceptionDetails") {
            let text = ex.pointer("/exception/description").or_else(|| ex.get("text")).and_then(Value::as_str);
            return Err(BrowserError::Cdp(format!("script failed in a frame: {}", text.unwrap_or("exception"))));
        }
        Ok(v.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }
}
