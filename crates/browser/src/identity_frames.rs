//! The identity in cross-origin frames. Chromium runs such a frame in a renderer of its own, as a target
//! of its own, whose script reads its own language, time zone and user agent. chromiumoxide attaches to
//! those targets but resumes them at once and gives no handle to them, so a session with an identity keeps
//! one more DevTools client (over the browser's pipe, or its endpoint when remote): it attaches to each of
//! the session's pages and auto-attaches their frames, paused, sets the overrides on each new frame and
//! only then lets it run. Nested frames are auto-attached the same way.

use crate::error::BrowserError;
use crate::process::BrowserProcess;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// The DevTools commands that give a target the identity, in order.
pub(crate) type Overrides = Vec<(&'static str, Value)>;

/// A DevTools client that gives the frames of the session's pages the identity.
pub(crate) struct FrameIdentity {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
    _tasks: Vec<AbortOnDropHandle<()>>,
}

impl FrameIdentity {
    pub async fn start(
        process: &BrowserProcess,
        overrides: Overrides,
        timeout: Duration,
    ) -> Result<Self, BrowserError> {
        let mut tasks = Vec::new();
        let (out, answers) = match process.link.get().and_then(crate::pipe::Link::attach) {
            Some(channels) => channels,
            None => {
                let (out, answers, pumps) =
                    crate::frames::ws_channels(process.browser.websocket_address(), timeout).await?;
                tasks.extend(pumps.map(AbortOnDropHandle::new));
                (out, answers)
            }
        };
        let pending: Pending = Arc::default();
        let next = Arc::new(AtomicU64::new(1));
        let reader = read(answers, out.clone(), pending.clone(), next.clone(), Arc::new(overrides));
        tasks.push(webpilot_tasks::spawn_abort_on_drop("frame identity reader", reader));
        Ok(FrameIdentity { out, pending, next, _tasks: tasks })
    }

    /// Watches the frames of page `target`: each new one waits for the overrides before it runs.
    pub async fn watch(&self, target: &str, timeout: Duration) -> Result<(), BrowserError> {
        let attach = json!({ "targetId": target, "flatten": true });
        let attached = self.call("Target.attachToTarget", attach, None, timeout).await?;
        let session = attached.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        self.call("Target.setAutoAttach", auto_attach(), Some(&session), timeout).await.map(|_| ())
    }

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
        send(&self.out, id, method, params, session);
        let answer = tokio::time::timeout(timeout, rx).await;
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        match answer {
            Err(_) => Err(BrowserError::Timeout("watch a page's frames")),
            Ok(Err(_)) => Err(BrowserError::Cdp("the frame identity connection closed".into())),
            Ok(Ok(Err(e))) => Err(BrowserError::Cdp(format!("{method} failed: {e}"))),
            Ok(Ok(Ok(v))) => Ok(v),
        }
    }
}

/// Frames only, each paused until it is told to run.
fn auto_attach() -> Value {
    json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true, "filter": [{ "type": "iframe" }] })
}

fn send(out: &mpsc::UnboundedSender<String>, id: u64, method: &str, params: Value, session: Option<&str>) {
    let mut msg = json!({ "id": id, "method": method, "params": params });
    if let Some(s) = session {
        msg["sessionId"] = json!(s);
    }
    let _ = out.send(msg.to_string());
}

/// Hands answers to their callers, and gives each frame attached under a watched page the overrides, then
/// auto-attaches its own frames, then lets it run (commands of one session run in order).
async fn read(
    mut answers: crate::inbox::Inbox,
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
    overrides: Arc<Overrides>,
) {
    while let Some(text) = answers.recv().await {
        let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
        if let Some(id) = v.get("id").and_then(Value::as_u64) {
            let reply = match v.get("error") {
                Some(e) => Err(e.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()),
                None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            };
            if let Some(tx) = pending.lock().ok().and_then(|mut p| p.remove(&id)) {
                let _ = tx.send(reply);
            }
            continue;
        }
        if v.get("method").and_then(Value::as_str) != Some("Target.attachedToTarget") {
            continue;
        }
        let Some(child) = v.pointer("/params/sessionId").and_then(Value::as_str) else { continue };
        let mut commands: Vec<(&str, Value)> = Vec::new();
        if v.pointer("/params/targetInfo/type").and_then(Value::as_str) == Some("iframe") {
            commands.extend(overrides.iter().map(|(m, p)| (*m, p.clone())));
            commands.push(("Target.setAutoAttach", auto_attach()));
        }
        commands.push(("Runtime.runIfWaitingForDebugger", json!({})));
        for (method, params) in commands {
            // Answers nobody waits for are dropped above.
            send(&out, next.fetch_add(1, Ordering::Relaxed), method, params, Some(child));
        }
        tracing::debug!("a frame got the session's identity");
    }
}
