//! The identity in new pages and in cross-origin frames, before their first request. chromiumoxide
//! attaches to a new page only after Chromium has sent its first request, and resumes a new frame (a
//! target of its own, whose script reads its own language, time zone and user agent) at once; so a session
//! with an identity keeps one more DevTools client (a [`FrameClient`] with a handler of the browser's
//! events, over the browser's pipe, or its endpoint when remote).
//! In a browser session of its own it auto-attaches every new page of the browser, paused
//! (`waitForDebuggerOnStart`): a popup (`window.open`, a form with a target, a link) and a page a DevTools
//! client opens wait until the overrides are set on them; a page of another context is let run and let go
//! at once. On each page of the session it also auto-attaches its frames, paused, and gives each the
//! overrides the same way; nested frames too, and dedicated workers (whose `navigator.language` is
//! Chromium's own otherwise). Chromium sends a page created with a URL its first request
//! before it is paused, so the relay opens such pages blank and navigates them after (`relay`).

use crate::error::BrowserError;
use crate::frames::{CallError, FrameClient, Sender};
use crate::process::BrowserProcess;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// Pages the client auto-attached, paused, with their frames watched already (by target id).
type Watched = Arc<Mutex<HashSet<String>>>;

/// The DevTools commands that give a target the identity, in order.
pub(crate) type Overrides = Vec<(&'static str, Value)>;

/// A DevTools client that gives the session's new pages and the frames of its pages the identity.
pub(crate) struct FrameIdentity {
    client: FrameClient,
    watched: Watched,
    /// The client's browser session (its auto-attach to new pages); detached when the client is dropped.
    browser_session: String,
}

impl FrameIdentity {
    /// Starts the client for the pages of browser context `context`, and its auto-attach to new pages.
    pub async fn start(
        process: &BrowserProcess,
        overrides: Overrides,
        context: &str,
        timeout: Duration,
    ) -> Result<Self, BrowserError> {
        let watched: Watched = Arc::default();
        let shared = Shared { overrides, context: context.to_owned(), watched: watched.clone() };
        let on_event = move |v: Value, sender: &Sender| on_event(&v, sender, &shared);
        let client = match process.link.get().and_then(crate::pipe::Link::attach) {
            Some((out, answers)) => FrameClient::over_with(READER, out, answers, on_event),
            None => FrameClient::connect_with(READER, process.browser.websocket_address(), timeout, on_event).await?,
        };
        let mut identity = FrameIdentity { client, watched, browser_session: String::new() };
        let attached = identity.call("Target.attachToBrowserTarget", json!({}), None, timeout).await?;
        identity.browser_session = attached.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let pages = json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
                            "filter": [{ "type": "page" }] });
        identity.call("Target.setAutoAttach", pages, Some(&identity.browser_session), timeout).await?;
        Ok(identity)
    }

    /// Watches the frames of page `target`: each new one waits for the overrides before it runs. A page
    /// the client auto-attached when it opened is watched already.
    pub async fn watch(&self, target: &str, timeout: Duration) -> Result<(), BrowserError> {
        if self.watched.lock().contains(target) {
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
        self.client.request(method, params, session, timeout).await.map_err(|e| match e {
            CallError::Timeout => BrowserError::Timeout("watch a page's frames"),
            CallError::NotSent | CallError::Closed => BrowserError::Cdp("the frame identity connection closed".into()),
            CallError::Failed(e) => BrowserError::Cdp(format!("{method} failed: {e}")),
        })
    }
}

/// The name of the client's reader task.
const READER: &str = "frame identity reader";

impl Drop for FrameIdentity {
    /// Ends the auto-attach to new pages: detaching the browser session (sent before the channel closes)
    /// lets Chromium resume any page still waiting for this client. Over the pipe that must be said, as
    /// the pipe outlives the client; over a WebSocket of its own, closing it does the same.
    fn drop(&mut self) {
        if !self.browser_session.is_empty() {
            let session = json!({ "sessionId": self.browser_session });
            self.client.sender().send("Target.detachFromTarget", session, None);
        }
    }
}

/// What the event handler needs: the overrides, the session's context, and the pages it watches.
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

/// Gives each new page of the session's context and each frame attached under a watched page the
/// overrides, then auto-attaches its frames, then lets it run (commands of one session run in order, so
/// they are sent without waiting for their answers: a page paused before its first navigation answers
/// some only once it runs).
///
/// Every target attached here is resumed (`Runtime.runIfWaitingForDebugger`) whatever else happens: the
/// command is sent for each `Target.attachedToTarget` without a condition, after commands that are only
/// queued (their failures come back as answers nobody waits for), so no error path leaves a tab paused.
/// If the connection itself is gone, Chromium (or the client's `Drop`, over the pipe) detaches the
/// sessions, which resumes their targets too.
fn on_event(v: &Value, sender: &Sender, shared: &Shared) {
    match v.get("method").and_then(Value::as_str) {
        Some("Target.attachedToTarget") => {}
        Some("Target.detachedFromTarget") => {
            if let Some(target) = v.pointer("/params/targetId").and_then(Value::as_str) {
                let mut w = shared.watched.lock();
                w.remove(target);
            }
            return;
        }
        _ => return,
    }
    let Some(child) = v.pointer("/params/sessionId").and_then(Value::as_str) else { return };
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
            if let Some(target) = info.get("targetId").and_then(Value::as_str) {
                let mut w = shared.watched.lock();
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
        // Answers nobody waits for are dropped by the client's reader.
        sender.send(method, params, Some(child));
    }
    if let_go {
        let parent = v.get("sessionId").and_then(Value::as_str);
        sender.send("Target.detachFromTarget", json!({ "sessionId": child }), parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::inbox;
    use tokio::sync::mpsc;

    /// The next `n` commands the client sent: method, params and session.
    async fn sent(rx: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<(String, Value, Option<String>)> {
        let mut commands = Vec::new();
        for _ in 0..n {
            let text = rx.recv().await.expect("a command");
            let v: Value = serde_json::from_str(&text).expect("JSON");
            let session = v.get("sessionId").and_then(Value::as_str).map(str::to_owned);
            commands.push((v["method"].as_str().unwrap_or_default().to_owned(), v["params"].clone(), session));
        }
        commands
    }

    fn attached(parent: &str, child: &str, kind: &str, target: &str, context: &str) -> String {
        json!({ "method": "Target.attachedToTarget", "sessionId": parent, "params": {
            "sessionId": child, "waitingForDebugger": true,
            "targetInfo": { "type": kind, "targetId": target, "browserContextId": context } } })
        .to_string()
    }

    fn methods(commands: &[(String, Value, Option<String>)]) -> Vec<(&str, Option<&str>)> {
        commands.iter().map(|(m, _, s)| (m.as_str(), s.as_deref())).collect()
    }

    #[tokio::test]
    async fn each_new_target_gets_the_overrides_and_runs_and_another_contexts_page_is_let_go() {
        let (out, mut rx) = mpsc::unbounded_channel();
        let (browser, answers) = inbox();
        let watched = Watched::default();
        let tz = ("Emulation.setTimezoneOverride", json!({ "timezoneId": "Asia/Tokyo" }));
        let shared = Shared { overrides: vec![tz], context: "ctx".into(), watched: watched.clone() };
        let _client = FrameClient::over_with(READER, out, answers, move |v, s: &Sender| on_event(&v, s, &shared));

        assert!(browser.send(attached("page", "frame", "iframe", "f1", "ctx")));
        let frame = sent(&mut rx, 3).await;
        let expected = [
            ("Emulation.setTimezoneOverride", Some("frame")),
            ("Target.setAutoAttach", Some("frame")),
            ("Runtime.runIfWaitingForDebugger", Some("frame")),
        ];
        assert_eq!(methods(&frame), expected, "the overrides before the frame runs, its own frames watched");
        assert_eq!(frame[0].1, json!({ "timezoneId": "Asia/Tokyo" }));
        assert_eq!(frame[1].1, auto_attach());

        assert!(browser.send(attached("browser", "popup", "page", "p1", "ctx")));
        let popup = sent(&mut rx, 3).await;
        let expected = [
            ("Emulation.setTimezoneOverride", Some("popup")),
            ("Target.setAutoAttach", Some("popup")),
            ("Runtime.runIfWaitingForDebugger", Some("popup")),
        ];
        assert_eq!(methods(&popup), expected);
        assert!(watched.lock().contains("p1"), "a page attached paused is watched already");

        assert!(browser.send(attached("browser", "theirs", "page", "p2", "other")));
        let theirs = sent(&mut rx, 2).await;
        let expected =
            [("Runtime.runIfWaitingForDebugger", Some("theirs")), ("Target.detachFromTarget", Some("browser"))];
        assert_eq!(methods(&theirs), expected, "another context's page runs untouched and is let go");
        assert_eq!(theirs[1].1, json!({ "sessionId": "theirs" }));

        let detached = json!({ "method": "Target.detachedFromTarget", "params": { "targetId": "p1" } });
        assert!(browser.send(detached.to_string()));
        assert!(browser.send(attached("page", "worker", "worker", "w1", "ctx")));
        let worker = sent(&mut rx, 2).await;
        let expected =
            [("Emulation.setTimezoneOverride", Some("worker")), ("Runtime.runIfWaitingForDebugger", Some("worker"))];
        assert_eq!(methods(&worker), expected, "a worker gets the overrides and runs; it has no frames");
        assert!(!watched.lock().contains("p1"), "a page that went is no longer watched");
    }
}
