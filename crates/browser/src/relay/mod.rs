//! A DevTools endpoint for one session on a shared Chromium. The client (Playwright, Puppeteer, any CDP
//! client) sees a browser whose only context is its session's: the relay talks to Chromium through a
//! browser session of its own (`Target.attachToBrowserTarget`), keeps the context's targets from its own
//! discovery, answers the browser-wide Target calls for that context alone (auto-attach is done by the
//! relay, never by Chromium, so no other context's new target waits for this client), and checks every
//! command against the allow-list (`rules.rs`) before anything reaches Chromium. Target ids pass unchanged.

mod rules;
mod scope;

use crate::error::BrowserError;
use crate::process::BrowserProcess;
use rules::{Emulated, Level, Verdict};
use scope::{filter_allows, ClientScope};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What a DevTools client of one session reaches: the session's context in its browser.
pub struct DevtoolsScope {
    pub(crate) process: Arc<BrowserProcess>,
    pub(crate) context: String,
    pub(crate) files_dir: Option<PathBuf>,
    pub(crate) max_tabs: usize,
    pub(crate) timeout: Duration,
}

/// Why a relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayEnd {
    /// The client closed its connection.
    ClientLeft,
    /// The client sent `Browser.close`: its connection ends, the session lives on.
    ClientClosedBrowser,
    /// The session ended (terminated, expired, or moved to another browser).
    SessionEnded,
    /// The browser's connection ended.
    BrowserGone,
}

impl DevtoolsScope {
    /// `Browser.getVersion` of the session's browser (for `/json/version`).
    pub async fn version(&self) -> Result<Value, BrowserError> {
        let v = crate::error::within(self.timeout, "browser version", self.process.browser.version()).await?;
        Ok(json!({
            "Browser": v.product,
            "Protocol-Version": v.protocol_version,
            "User-Agent": v.user_agent,
            "V8-Version": v.js_version,
            "WebKit-Version": v.revision,
        }))
    }

    /// Relays `from_client` to the session's context and its answers and events to `to_client` until the
    /// client leaves, closes the browser, the browser goes, or `ended` completes.
    pub async fn run(
        self,
        mut from_client: mpsc::Receiver<String>,
        to_client: mpsc::Sender<String>,
        ended: impl Future<Output = ()>,
    ) -> Result<RelayEnd, BrowserError> {
        let (to_browser, mut from_browser, _tasks) = match self.process.link.get().and_then(crate::pipe::Link::attach) {
            Some((tx, rx)) => (tx, rx, Vec::new()),
            None => {
                let (tx, rx, tasks) =
                    crate::frames::ws_channels(self.process.browser.websocket_address(), self.timeout).await?;
                (tx, rx, tasks.into_iter().map(crate::tabs::AbortOnDrop).collect())
            }
        };
        let scope = ClientScope::new(self.context, self.files_dir, self.max_tabs);
        let mut relay = Relay::new(scope, to_browser, to_client);
        crate::error::within(self.timeout, "open the DevTools relay", relay.start(&mut from_browser)).await?;
        tokio::pin!(ended);
        let end = loop {
            tokio::select! {
                () = &mut ended => break RelayEnd::SessionEnded,
                m = from_client.recv() => match m {
                    Some(text) => relay.on_client(&text).await,
                    None => break RelayEnd::ClientLeft,
                },
                m = from_browser.recv() => match m {
                    Some(text) => relay.on_browser(text).await,
                    None => break RelayEnd::BrowserGone,
                },
            }
            if let Some(end) = relay.end {
                break end;
            }
        };
        relay.detach_all();
        Ok(end)
    }
}

/// What an answer from Chromium is for.
enum Pending {
    /// A client's command: its own id, and what to do with the answer.
    Client { id: Value, then: Then },
    /// The relay attaching the client to a target (auto-attach).
    AutoAttach { target: String },
    /// The relay's own call, whose answer is not needed.
    Own,
}

enum Then {
    Pass,
    /// `Target.getTargets`: only the context's targets, through the client's filter.
    Targets(Option<Value>),
    /// `Browser.getWindowForTarget`: the window becomes the client's.
    Window,
    /// `Target.createTarget`: answered once the new page is attached, when the client auto-attaches pages.
    Created,
}

/// Waits for an auto-attach to be answered.
enum Waiter {
    /// A `Target.setAutoAttach` answered once all its targets are attached.
    Batch(u64),
    /// An answer held back until then.
    Reply(String),
}

struct Relay {
    scope: ClientScope,
    /// The relay's browser session: the client's browser-level commands are sent in it.
    browser_session: String,
    browser_info: Option<Value>,
    to_browser: mpsc::UnboundedSender<String>,
    to_client: mpsc::Sender<String>,
    next: u64,
    pending: HashMap<u64, Pending>,
    /// The client's browser-level auto-attach filter, when it auto-attaches.
    auto: Option<Option<Value>>,
    /// The client's discovery filter, when it discovers targets.
    discover: Option<Option<Value>>,
    auto_attached: HashSet<String>,
    waiting: HashMap<String, Vec<Waiter>>,
    batches: HashMap<u64, (usize, Value)>,
    /// Sessions attached in the relay's browser session (detached when the relay ends).
    top_sessions: HashSet<String>,
    end: Option<RelayEnd>,
}

impl Relay {
    fn new(scope: ClientScope, to_browser: mpsc::UnboundedSender<String>, to_client: mpsc::Sender<String>) -> Self {
        Relay {
            scope,
            browser_session: String::new(),
            browser_info: None,
            to_browser,
            to_client,
            next: 0,
            pending: HashMap::new(),
            auto: None,
            discover: None,
            auto_attached: HashSet::new(),
            waiting: HashMap::new(),
            batches: HashMap::new(),
            top_sessions: HashSet::new(),
            end: None,
        }
    }

    fn send_browser(&mut self, method: &str, params: Value, session: Option<&str>, pending: Pending) {
        self.next += 1;
        let id = self.next;
        self.pending.insert(id, pending);
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        if self.to_browser.send(msg.to_string()).is_err() {
            self.end = Some(RelayEnd::BrowserGone);
        }
    }

    async fn send_client(&mut self, text: String) {
        if self.to_client.send(text).await.is_err() {
            self.end = Some(RelayEnd::ClientLeft);
        }
    }

    async fn reply(&mut self, id: Value, session: Option<&str>, result: Value) {
        let mut msg = json!({ "id": id, "result": result });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        self.send_client(msg.to_string()).await;
    }

    async fn reply_error(&mut self, id: Value, session: Option<&str>, code: i64, message: &str) {
        let mut msg = json!({ "id": id, "error": { "code": code, "message": message } });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        self.send_client(msg.to_string()).await;
    }

    /// Opens the relay's browser session and its discovery of targets, keeping the context's ones.
    async fn start(&mut self, from_browser: &mut mpsc::UnboundedReceiver<String>) -> Result<(), BrowserError> {
        let attached = self.call(from_browser, "Target.attachToBrowserTarget", json!({}), false).await?;
        self.browser_session = attached
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| BrowserError::Cdp("the browser gave the relay no session".into()))?
            .to_owned();
        let info = self.call(from_browser, "Target.getTargetInfo", json!({}), true).await?;
        self.browser_info = info.get("targetInfo").cloned();
        self.call(from_browser, "Target.setDiscoverTargets", json!({ "discover": true, "filter": [{}] }), true).await?;
        Ok(())
    }

    /// One call of the relay's own, waited for; the context's targets discovered meanwhile are kept.
    async fn call(
        &mut self,
        from_browser: &mut mpsc::UnboundedReceiver<String>,
        method: &str,
        params: Value,
        in_browser_session: bool,
    ) -> Result<Value, BrowserError> {
        let session = in_browser_session.then(|| self.browser_session.clone());
        self.send_browser(method, params, session.as_deref(), Pending::Own);
        let id = self.next;
        while let Some(text) = from_browser.recv().await {
            let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
            if v.get("id").and_then(Value::as_u64) == Some(id) {
                self.pending.remove(&id);
                return match v.get("error") {
                    Some(e) => Err(BrowserError::Cdp(format!("{method}: {e}"))),
                    None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            if v["method"] == "Target.targetCreated" {
                if let Some(info) = v.pointer("/params/targetInfo") {
                    self.scope.track(info);
                }
            }
        }
        Err(BrowserError::InstanceLost)
    }

    async fn on_client(&mut self, text: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(text) else {
            return self.reply_error(Value::Null, None, -32700, "Message must be a valid JSON").await;
        };
        let Some(id) = msg.get("id").filter(|id| id.is_u64()).cloned() else {
            return self.reply_error(Value::Null, None, -32600, "Message must have integer 'id' property").await;
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return self.reply_error(id, None, -32600, "Message must have string 'method' property").await;
        };
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        let session = msg.get("sessionId").and_then(Value::as_str);
        let level = match session {
            Some(s) if self.scope.sessions.contains(s) => Level::Session,
            Some(s) => return self.reply_error(id, Some(s), -32001, "Session with given id not found.").await,
            None => Level::Browser,
        };
        let verdict = rules::check(method, &params, level, &self.scope);
        let verdict = match verdict {
            Verdict::Emulate(Emulated::Nested) => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or_default();
                match rules::check_nested(message, &self.scope) {
                    Verdict::Forward => Verdict::Forward,
                    refused => refused,
                }
            }
            v => v,
        };
        if !matches!(verdict, Verdict::Forward | Verdict::ForwardWith(_)) {
            tracing::debug!(method, "a DevTools client's command was answered by the relay");
        }
        let then = match method {
            "Browser.getWindowForTarget" => Then::Window,
            "Target.createTarget" => Then::Created,
            _ => Then::Pass,
        };
        let target_session = session.map(str::to_owned).unwrap_or_else(|| self.browser_session.clone());
        match verdict {
            Verdict::Forward => self.send_browser(method, params, Some(&target_session), Pending::Client { id, then }),
            Verdict::ForwardWith(p) => {
                self.send_browser(method, p, Some(&target_session), Pending::Client { id, then })
            }
            Verdict::Answer(result) => self.reply(id, session, result).await,
            Verdict::Refuse(why) => self.reply_error(id, session, -32000, &why).await,
            Verdict::Emulate(e) => self.emulate(e, id, params).await,
        }
    }

    async fn emulate(&mut self, what: Emulated, id: Value, params: Value) {
        let filter = params.get("filter").cloned();
        match what {
            Emulated::AutoAttach => {
                if !params.get("autoAttach").and_then(Value::as_bool).unwrap_or(false) {
                    self.auto = None;
                    return self.reply(id, None, json!({})).await;
                }
                let targets = self.scope.attachable(filter.as_ref());
                self.auto = Some(filter);
                let batch = self.next + 1_000_000_000;
                self.batches.insert(batch, (targets.len() + 1, id));
                for target in targets {
                    if let Some(now) = self.auto_attach(&target, Some(Waiter::Batch(batch))) {
                        self.release(now).await;
                    }
                }
                self.release(Waiter::Batch(batch)).await;
            }
            Emulated::Discover => {
                if !params.get("discover").and_then(Value::as_bool).unwrap_or(false) {
                    self.discover = None;
                    return self.reply(id, None, json!({})).await;
                }
                let mut infos: Vec<Value> = self.browser_info.iter().cloned().collect();
                let mut own: Vec<&Value> = self.scope.targets.values().collect();
                own.sort_by_key(|i| i.get("targetId").and_then(Value::as_str).unwrap_or_default().to_owned());
                infos.extend(own.into_iter().cloned());
                for info in infos {
                    let kind = info.get("type").and_then(Value::as_str).unwrap_or_default();
                    if filter_allows(filter.as_ref(), kind) {
                        let event = json!({ "method": "Target.targetCreated", "params": { "targetInfo": info } });
                        self.send_client(event.to_string()).await;
                    }
                }
                self.discover = Some(filter);
                self.reply(id, None, json!({})).await;
            }
            Emulated::GetTargets => {
                let session = self.browser_session.clone();
                let all = json!({ "filter": [{}] });
                self.send_browser(
                    "Target.getTargets",
                    all,
                    Some(&session),
                    Pending::Client { id, then: Then::Targets(filter) },
                );
            }
            Emulated::CloseConnection => {
                self.reply(id, None, json!({})).await;
                self.end = Some(RelayEnd::ClientClosedBrowser);
            }
            // Resolved into Forward or Refuse in `on_client`.
            Emulated::Nested => self.reply_error(id, None, -32000, "not available").await,
        }
    }

    /// Attaches the client to one of the context's targets (flattened, never paused), once; `waiter` waits
    /// for that attach, and is handed back when there is nothing to wait for (attached already).
    fn auto_attach(&mut self, target: &str, waiter: Option<Waiter>) -> Option<Waiter> {
        if let Some(waiters) = self.waiting.get_mut(target) {
            waiters.extend(waiter);
            return None;
        }
        if self.auto_attached.contains(target) {
            return waiter;
        }
        self.auto_attached.insert(target.to_owned());
        self.waiting.insert(target.to_owned(), waiter.into_iter().collect());
        let session = self.browser_session.clone();
        let params = json!({ "targetId": target, "flatten": true });
        let pending = Pending::AutoAttach { target: target.to_owned() };
        self.send_browser("Target.attachToTarget", params, Some(&session), pending);
        None
    }

    async fn release(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::Reply(text) => self.send_client(text).await,
            Waiter::Batch(batch) => {
                let done = match self.batches.get_mut(&batch) {
                    Some((left, _)) => {
                        *left = left.saturating_sub(1);
                        *left == 0
                    }
                    None => false,
                };
                if done {
                    if let Some((_, id)) = self.batches.remove(&batch) {
                        self.reply(id, None, json!({})).await;
                    }
                }
            }
        }
    }

    async fn on_browser(&mut self, text: String) {
        let Ok(mut v) = serde_json::from_str::<Value>(&text) else { return };
        if let Some(n) = v.get("id").and_then(Value::as_u64) {
            match self.pending.remove(&n) {
                Some(Pending::Client { id, then }) => self.answer(v, id, then).await,
                Some(Pending::AutoAttach { target }) => {
                    for waiter in self.waiting.remove(&target).unwrap_or_default() {
                        self.release(waiter).await;
                    }
                }
                Some(Pending::Own) | None => {}
            }
            return;
        }
        let session = v.get("sessionId").and_then(Value::as_str).map(str::to_owned);
        match session {
            Some(s) if s == self.browser_session => {
                if let Some(o) = v.as_object_mut() {
                    o.remove("sessionId");
                }
                self.on_browser_event(v).await;
            }
            Some(s) if self.scope.sessions.contains(&s) => {
                let child = v.pointer("/params/sessionId").and_then(Value::as_str).map(str::to_owned);
                match (v["method"].as_str(), child) {
                    (Some("Target.attachedToTarget"), Some(c)) => {
                        self.scope.sessions.insert(c);
                    }
                    (Some("Target.detachedFromTarget"), Some(c)) => {
                        self.scope.sessions.remove(&c);
                    }
                    _ => {}
                }
                self.send_client(text).await;
            }
            _ => {}
        }
    }

    async fn answer(&mut self, mut v: Value, id: Value, then: Then) {
        if v.get("sessionId").and_then(Value::as_str) == Some(self.browser_session.as_str()) {
            if let Some(o) = v.as_object_mut() {
                o.remove("sessionId");
            }
        }
        v["id"] = id;
        match then {
            Then::Pass => {}
            Then::Targets(filter) => {
                if let Some(list) = v.pointer_mut("/result/targetInfos").and_then(Value::as_array_mut) {
                    list.retain(|info| {
                        let kind = info.get("type").and_then(Value::as_str).unwrap_or_default();
                        self.scope.is_own(info) && filter_allows(filter.as_ref(), kind)
                    });
                }
            }
            Then::Window => {
                if let Some(w) = v.pointer("/result/windowId").and_then(Value::as_i64) {
                    self.scope.windows.insert(w);
                }
            }
            Then::Created => {
                let target = v.pointer("/result/targetId").and_then(Value::as_str).map(str::to_owned);
                if let (Some(target), Some(filter)) = (target, self.auto.clone()) {
                    let kind = self.scope.kind_of(&target).unwrap_or("page").to_owned();
                    if filter_allows(filter.as_ref(), &kind) {
                        // Playwright looks the page up as soon as this answer arrives: it is attached first.
                        if let Some(now) = self.auto_attach(&target, Some(Waiter::Reply(v.to_string()))) {
                            self.release(now).await;
                        }
                        return;
                    }
                }
            }
        }
        self.send_client(v.to_string()).await;
    }

    async fn on_browser_event(&mut self, v: Value) {
        let method = v["method"].as_str().unwrap_or_default().to_owned();
        let params = &v["params"];
        match method.as_str() {
            "Target.targetCreated" | "Target.targetInfoChanged" => {
                let Some(info) = params.get("targetInfo") else { return };
                if !self.scope.track(info) {
                    return;
                }
                let kind = info.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
                let id = info.get("targetId").and_then(Value::as_str).unwrap_or_default().to_owned();
                if self.discover.as_ref().is_some_and(|f| filter_allows(f.as_ref(), &kind)) {
                    self.send_client(v.to_string()).await;
                }
                let wanted = self.auto.as_ref().is_some_and(|f| filter_allows(f.as_ref(), &kind));
                if method == "Target.targetCreated" && wanted && scope::attaches_at_browser_level(&kind) {
                    self.auto_attach(&id, None);
                }
            }
            "Target.targetDestroyed" | "Target.targetCrashed" => {
                let Some(id) = params.get("targetId").and_then(Value::as_str) else { return };
                let Some(kind) = self.scope.kind_of(id).map(str::to_owned) else { return };
                if method == "Target.targetDestroyed" {
                    self.scope.targets.remove(id);
                    self.auto_attached.remove(id);
                }
                if self.discover.as_ref().is_some_and(|f| filter_allows(f.as_ref(), &kind)) {
                    self.send_client(v.to_string()).await;
                }
            }
            "Target.attachedToTarget" => {
                let Some(session) = params.get("sessionId").and_then(Value::as_str) else { return };
                self.scope.sessions.insert(session.to_owned());
                self.top_sessions.insert(session.to_owned());
                self.send_client(v.to_string()).await;
            }
            "Target.detachedFromTarget" => {
                let Some(session) = params.get("sessionId").and_then(Value::as_str) else { return };
                self.scope.sessions.remove(session);
                self.top_sessions.remove(session);
                self.send_client(v.to_string()).await;
            }
            "Target.receivedMessageFromTarget" => {
                let owned =
                    params.get("sessionId").and_then(Value::as_str).is_some_and(|s| self.scope.sessions.contains(s));
                if owned {
                    self.send_client(v.to_string()).await;
                }
            }
            _ => {}
        }
    }

    /// Detaches every session the client had and the relay's browser session (nothing stays paused or
    /// reported to a gone client).
    fn detach_all(&mut self) {
        let session = self.browser_session.clone();
        let top: Vec<String> = self.top_sessions.drain().collect();
        for s in top {
            self.send_browser("Target.detachFromTarget", json!({ "sessionId": s }), Some(&session), Pending::Own);
        }
        if !session.is_empty() {
            self.send_browser("Target.detachFromTarget", json!({ "sessionId": session }), None, Pending::Own);
        }
    }
}
