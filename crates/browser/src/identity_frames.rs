//! The identity in new pages and in cross-origin frames, before their first request. chromiumoxide
//! attaches to a new page only after Chromium has sent its first request, and resumes a new frame (a
//! target of its own, whose script reads its own language, time zone and user agent) at once; so a session
//! with an identity keeps one more DevTools client (over the browser's pipe, or its endpoint when remote).
//! In a browser session of its own it auto-attaches every new page of the browser, paused
//! (`waitForDebuggerOnStart`): a popup (`window.open`, a form with a target, a link) and a page a DevTools
//! client opens wait until the overrides are set on them; a page of another context is let run and let go
//! at once. On each page of the session it also auto-attaches its frames, paused, and gives each the
//! overrides the same way; nested frames too, and dedicated workers (whose `navigator.language` is
//! Chromium's own otherwise). Chromium sends a page created with a URL its first request
//! before it is paused, so the relay opens such pages blank and navigates them after (`relay`).

use crate::error::BrowserError;
use crate::process::BrowserProcess;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;
/// Pages the client auto-attached, paused, with their frames watched already (by target id).
type Watched = Arc<Mutex<HashSet<String>>>;

/// The DevTools commands that give a target the identity, in order.
pub(crate) type Overrides = Vec<(&'static str, Value)>;

/// A DevTools client that gives the session's new pages and the frames of its pages the identity.
pub(crate) struct FrameIdentity {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
    watched: Watched,
    /// The client's browser session (its auto-attach to new pages); detached when the client is dropped.
    browser_session: String,
    _tasks: Vec<AbortOnDropHandle<()>>,
}

impl FrameIdentity {
    /// Starts the client for the pages of browser context `context`, and its auto-attach to new pages.
    pub async fn start(
        process: &BrowserProcess,
        overrides: Overrides,
        context: &str,
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
        let watched: Watched = Arc::default();
        let shared = Shared { overrides, context: context.to_owned(), watched: watched.clone() };
        let reader = read(answers, out.clone(), pending.clone(), next.clone(), Arc::new(shared));
        tasks.push(webpilot_tasks::spawn_abort_on_drop("frame identity reader", reader));
        let mut client = FrameIdentity { out, pending, next, watched, browser_session: String::new(), _tasks: tasks };
        let attached = client.call("Target.attachToBrowserTarget", json!({}), None, timeout).await?;
        client.browser_session = attached.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let pages = json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
                            "filter": [{ "type": "page" }] });
        client.call("Target.setAutoAttach", pages, Some(&client.browser_session), timeout).await?;
        Ok(client)
    }

    /// Watches the frames of page `target`: each new one waits for the overrides before it runs. A page
    /// the client auto-attached when it opened is watched already.
    pub async fn watch(&self, target: &str, timeout: Duration) -> Result<(), BrowserError> {
        if self.watched.lock().is_ok_and(|w| w.contains(target)) {
            return Ok(());
        }
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

impl Drop for FrameIdentity {
    /// Ends the auto-attach to new pages: detaching the browser session (sent before the channel closes)
    /// lets Chromium resume any page still waiting for this client. Over the pipe that must be said, as
    /// the pipe outlives the client; over a WebSocket of its own, closing it does the same.
    fn drop(&mut self) {
        if !self.browser_session.is_empty() {
            let session = json!({ "sessionId": self.browser_session });
            send(&self.out, self.next.fetch_add(1, Ordering::Relaxed), "Target.detachFromTarget", session, None);
        }
    }
}

/// What the reader needs: the overrides, the session's context, and the pages it watches.
struct Shared {
    overrides: Overrides,
    context: String,
    watched: Watched,
}

/// Frames and dedicated workers only, each paused until it is told to run.
fn auto_attach() -> Value {
    json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
            "filter": [{ "type": "iframe" }, { "type": "worker" }] })
}

fn send(out: &mpsc::UnboundedSender<String>, id: u64, method: &str, params: Value, session: Option<&str>) {
    let mut msg = json!({ "id": id, "method": method, "params": params });
    if let Some(s) = session {
        msg["sessionId"] = json!(s);
    }
    let _ = out.send(msg.to_string());
}

/// Hands answers to their callers, and gives each new page of the session's context and each frame
/// attached under a watched page the overrides, then auto-attaches its frames, then lets it run (commands
/// of one session run in order, so they are sent without waiting for their answers: a page paused before
/// its first navigation answers some only once it runs).
///
/// Every target attached here is resumed (`Runtime.runIfWaitingForDebugger`) whatever else happens: the
/// command is sent for each `Target.attachedToTarget` without a condition, after commands that are only
/// queued (their failures come back as answers nobody waits for), so no error path leaves a tab paused.
/// If the connection itself is gone, Chromium (or the client's `Drop`, over the pipe) detaches the
/// sessions, which resumes their targets too.
async fn read(
    mut answers: crate::inbox::Inbox,
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
    shared: Arc<Shared>,
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
        match v.get("method").and_then(Value::as_str) {
            Some("Target.attachedToTarget") => {}
            Some("Target.detachedFromTarget") => {
                if let Some(target) = v.pointer("/params/targetId").and_then(Value::as_str) {
                    if let Ok(mut w) = shared.watched.lock() {
                        w.remove(target);
                    }
                }
                continue;
            }
            _ => continue,
        }
        let Some(child) = v.pointer("/params/sessionId").and_then(Value::as_str) else { continue };
        let info = v.pointer("/params/targetInfo").cloned().unwrap_or_default();
        let kind = info.get("type").and_then(Value::as_str).unwrap_or_default();
        let waiting = v.pointer("/params/waitingForDebugger").and_then(Value::as_bool).unwrap_or(false);
        let own = info.get("browserContextId").and_then(Value::as_str) == Some(shared.context.as_str());
        let mut commands: Vec<(&str, Value)> = Vec::new();
        let mut let_go = false;
        match kind {
            "iframe" => {
                commands.extend(shared.overrides.iter().map(|(m, p)| (*m, p.clone())));
                commands.push(("Target.setAutoAttach", auto_attach()));
            }
            // A dedicated worker takes its language from the user agent override's `acceptLanguage`; the
            // locale override is refused in it (its page's is in force), which changes nothing.
            "worker" => commands.extend(shared.overrides.iter().map(|(m, p)| (*m, p.clone()))),
            // A new page of the session (a page open already is watched through `watch`).
            "page" if own && waiting => {
                if let (Some(target), Ok(mut w)) = (info.get("targetId").and_then(Value::as_str), shared.watched.lock())
                {
                    w.insert(target.to_owned());
                }
                commands.extend(shared.overrides.iter().map(|(m, p)| (*m, p.clone())));
                commands.push(("Target.setAutoAttach", auto_attach()));
                tracing::debug!("a new page got the session's identity before its first request");
            }
            // Another context's page, or one open before: run, and let go.
            "page" => let_go = true,
            _ => {}
        }
        commands.push(("Runtime.runIfWaitingForDebugger", json!({})));
        for (method, params) in commands {
            // Answers nobody waits for are dropped above.
            send(&out, next.fetch_add(1, Ordering::Relaxed), method, params, Some(child));
        }
        if let_go {
            let parent = v.get("sessionId").and_then(Value::as_str);
            let detach = json!({ "sessionId": child });
            send(&out, next.fetch_add(1, Ordering::Relaxed), "Target.detachFromTarget", detach, parent);
        }
    }
}
