//! Cross-origin iframes: Chromium runs them in renderer processes of their own (out-of-process
//! iframes), as DevTools targets of their own. chromiumoxide attaches to them for its bookkeeping but
//! gives no handle to send them commands, so a session keeps a second, plain DevTools connection to its
//! browser, attaches to a frame's target (flattened sessions) and evaluates scripts there.
//!
//! Written here, not taken from a crate: what is needed is a request/response loop over one WebSocket
//! (a hundred lines), and a second CDP client crate would bring its own copy of the whole protocol. The
//! identity's client (`identity_frames.rs`) is one of these too, with a handler of the browser's events.

use crate::error::BrowserError;
use crate::inbox::{inbox, Inbox};
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A plain DevTools connection used to reach the frame targets of a session's pages.
pub(crate) struct FrameClient {
    sender: Sender,
    pending: Pending,
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

/// Sends commands on a client's connection: numbered, without waiting for their answers.
#[derive(Clone)]
pub(crate) struct Sender {
    out: mpsc::UnboundedSender<String>,
    next: Arc<AtomicU64>,
}

impl Sender {
    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn send_as(&self, id: u64, method: &str, params: Value, session: Option<&str>) -> bool {
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.out.send(msg.to_string()).is_ok()
    }

    /// Sends one command whose answer nobody waits for (it is dropped as it comes).
    pub fn send(&self, method: &str, params: Value, session: Option<&str>) {
        self.send_as(self.next_id(), method, params, session);
    }
}

/// Why a command got no answer, before each client words it.
pub(crate) enum CallError {
    /// The connection took no more commands.
    NotSent,
    /// It closed before the answer came.
    Closed,
    Timeout,
    /// The browser's error message.
    Failed(String),
}

/// What a client does with each event of the browser's (a message without an id), given its sender.
pub(crate) trait OnEvent: FnMut(Value, &Sender) + Send + 'static {}
impl<F: FnMut(Value, &Sender) + Send + 'static> OnEvent for F {}

impl FrameClient {
    /// A client on a DevTools connection of its own (a remote browser's endpoint).
    pub async fn connect(ws_url: &str, timeout: Duration) -> Result<FrameClient, BrowserError> {
        Self::connect_with("frame answers", ws_url, timeout, |_, _| {}).await
    }

    /// [`FrameClient::connect`], handing the browser's events to `on_event`; its reader is named `name`.
    pub async fn connect_with(
        name: &'static str,
        ws_url: &str,
        timeout: Duration,
        on_event: impl OnEvent,
    ) -> Result<FrameClient, BrowserError> {
        let (out, answers, tasks) = ws_channels(ws_url, timeout).await?;
        let mut client = Self::over_with(name, out, answers, on_event);
        client.tasks.extend(tasks);
        Ok(client)
    }

    /// A client over `out` (commands) and `answers` (what the browser sends back): a local browser's
    /// DevTools pipe, shared through its bridge (`pipe.rs`).
    pub fn over(out: mpsc::UnboundedSender<String>, answers: Inbox) -> FrameClient {
        Self::over_with("frame answers", out, answers, |_, _| {})
    }

    /// [`FrameClient::over`], handing the browser's events to `on_event` in the order they come, between
    /// the answers; its reader is named `name`.
    pub fn over_with(
        name: &'static str,
        out: mpsc::UnboundedSender<String>,
        mut answers: Inbox,
        mut on_event: impl OnEvent,
    ) -> FrameClient {
        let sender = Sender { out, next: Arc::new(AtomicU64::new(1)) };
        let pending: Pending = Arc::default();
        let (waiting, events) = (pending.clone(), sender.clone());
        let reader = webpilot_tasks::spawn_owned(name, async move {
            while let Some(text) = answers.recv().await {
                let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
                let Some(id) = v.get("id").and_then(Value::as_u64) else {
                    on_event(v, &events);
                    continue;
                };
                let reply = match v.get("error") {
                    Some(e) => Err(e.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()),
                    None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                };
                if let Some(tx) = waiting.lock().remove(&id) {
                    let _ = tx.send(reply);
                }
            }
            // The connection is gone: fail whatever waits.
            let mut p = waiting.lock();
            p.clear();
        });
        FrameClient { sender, pending, sessions: Default::default(), tasks: vec![reader] }
    }

    /// Sends commands on this client's connection without waiting.
    pub fn sender(&self) -> &Sender {
        &self.sender
    }

    /// Sends one command and waits for its answer.
    async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, BrowserError> {
        self.request(method, params, session, timeout).await.map_err(|e| match e {
            CallError::NotSent => BrowserError::Cdp("the frame connection is closed".into()),
            CallError::Closed => BrowserError::Cdp("the frame connection closed".into()),
            CallError::Timeout => BrowserError::Timeout("a command in a frame"),
            CallError::Failed(e) => BrowserError::Cdp(format!("{method} in a frame failed: {e}")),
        })
    }

    /// Sends one command and waits (at most `timeout`) for its answer.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = self.sender.next_id();
        let (tx, rx) = oneshot::channel();
        {
            let mut p = self.pending.lock();
            p.insert(id, tx);
        }
        let sent = self.sender.send_as(id, method, params, session);
        let answer = if sent { Some(tokio::time::timeout(timeout, rx).await) } else { None };
        {
            let mut p = self.pending.lock();
            p.remove(&id);
        }
        match answer {
            None => Err(CallError::NotSent),
            Some(Err(_)) => Err(CallError::Timeout),
            Some(Ok(Err(_))) => Err(CallError::Closed),
            Some(Ok(Ok(Err(e)))) => Err(CallError::Failed(e)),
            Some(Ok(Ok(Ok(v)))) => Ok(v),
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

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex as StdMutex;

    const WAIT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn answers_go_to_their_callers_events_to_the_handler_and_a_closed_connection_fails_at_once() {
        let (out, mut rx) = mpsc::unbounded_channel();
        let (browser, answers) = inbox();
        let events = Arc::new(StdMutex::new(Vec::new()));
        let seen = events.clone();
        let client = FrameClient::over_with("test reader", out, answers, move |v, sender: &Sender| {
            seen.lock().push(v["method"].as_str().unwrap_or_default().to_owned());
            sender.send("Runtime.runIfWaitingForDebugger", json!({}), Some("child"));
        });
        let asking = client.request("Target.getTargets", json!({}), None, WAIT);
        let answering = async {
            let sent: Value = serde_json::from_str(&rx.recv().await.expect("a command")).expect("JSON");
            assert_eq!(sent["method"], "Target.getTargets");
            assert!(browser.send(json!({ "method": "Target.targetCreated", "params": {} }).to_string()));
            let reply: Value = serde_json::from_str(&rx.recv().await.expect("a command")).expect("JSON");
            assert_eq!(
                (reply["method"].as_str(), reply["sessionId"].as_str()),
                (Some("Runtime.runIfWaitingForDebugger"), Some("child"))
            );
            assert_ne!(reply["id"], sent["id"], "the handler's commands are numbered with the client's");
            assert!(browser.send(json!({ "id": sent["id"], "result": { "targetInfos": [] } }).to_string()));
        };
        let (answer, ()) = tokio::join!(asking, answering);
        assert_eq!(answer.ok(), Some(json!({ "targetInfos": [] })));
        assert_eq!(*events.lock(), ["Target.targetCreated"]);

        let failing = client.request("Target.attachToTarget", json!({}), None, WAIT);
        let refusing = async {
            let sent: Value = serde_json::from_str(&rx.recv().await.expect("a command")).expect("JSON");
            let error = json!({ "id": sent["id"], "error": { "message": "No target with given id found" } });
            assert!(browser.send(error.to_string()));
        };
        let (failed, ()) = tokio::join!(failing, refusing);
        assert!(matches!(failed, Err(CallError::Failed(m)) if m == "No target with given id found"));

        let started = tokio::time::Instant::now();
        let waiting = client.request("Target.getTargets", json!({}), None, WAIT);
        let going = async move {
            rx.recv().await.expect("a command");
            drop(browser);
            rx
        };
        let (gone, rx) = tokio::join!(waiting, going);
        assert!(matches!(gone, Err(CallError::Closed)));
        assert!(started.elapsed() < WAIT, "a connection that goes fails the call waiting on it at once");
        drop(rx);
        assert!(matches!(client.request("Target.getTargets", json!({}), None, WAIT).await, Err(CallError::NotSent)));
    }
}
