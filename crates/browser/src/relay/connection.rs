//! One DevTools client's connection through the relay: its commands checked and sent in the relay's
//! browser session or the client's own sessions, Chromium's answers and the context's events sent back.

use super::budget::{Budget, LARGE};
use super::queue::{QueueSender, Refused};
use super::rules::{self, Emulated, Level, Verdict};
use super::scope::{self, filter_allows, ClientScope};
use super::tabs::{blank_first, SessionTabs};
use super::{codes, RelayEnd};
use crate::error::BrowserError;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use tokio::sync::mpsc;

/// What an answer from Chromium is for.
pub(super) enum Pending {
    /// A client's command: its own id, and what to do with the answer.
    Client { id: Value, then: Then },
    /// The relay attaching the client to a target (auto-attach).
    AutoAttach { target: String },
    /// The relay's own call, whose answer is not needed.
    Own,
}

pub(super) enum Then {
    Pass,
    /// `Target.getTargets`: only the context's targets, through the client's filter.
    Targets(Option<Value>),
    /// `Browser.getWindowForTarget`: the window becomes the client's.
    Window,
    /// `Target.createTarget`: answered once the new page is one of the session's tabs; with the URL it was
    /// opened blank instead of (`tabs::blank_first`), navigated there before the answer.
    Created(Option<String>),
    /// `Target.closeTarget` or `Page.close` of this page: it counts as gone unless the close fails.
    Closing(String),
}

/// Waits for an auto-attach to be answered.
pub(super) enum Waiter {
    /// A `Target.setAutoAttach` answered once all its targets are attached.
    Batch(u64),
    /// An answer held back until then.
    Reply(String),
}

pub(super) struct Relay {
    pub(super) scope: ClientScope,
    /// The relay's browser session: the client's browser-level commands are sent in it.
    pub(super) browser_session: String,
    pub(super) browser_info: Option<Value>,
    pub(super) to_browser: mpsc::UnboundedSender<String>,
    pub(super) to_client: QueueSender,
    pub(super) next: u64,
    pub(super) pending: HashMap<u64, Pending>,
    /// The client's browser-level auto-attach filter, when it auto-attaches.
    pub(super) auto: Option<Option<Value>>,
    /// The client's discovery filter, when it discovers targets.
    pub(super) discover: Option<Option<Value>>,
    pub(super) auto_attached: HashSet<String>,
    pub(super) waiting: HashMap<String, Vec<Waiter>>,
    pub(super) batches: HashMap<u64, (usize, Value)>,
    /// Sessions attached in the relay's browser session (detached when the relay ends).
    pub(super) top_sessions: HashSet<String>,
    pub(super) end: Option<RelayEnd>,
    /// The client asked for download events (`Browser.setDownloadBehavior` with `eventsEnabled`).
    pub(super) download_events: bool,
    pub(super) tabs: SessionTabs,
    /// `Target.createTarget` answers, sent back once the new page is one of the session's tabs.
    pub(super) adopted: mpsc::UnboundedSender<(String, Value)>,
    /// The client's large commands in front of the others' (`budget.rs`).
    pub(super) budget: Budget,
}

impl Relay {
    pub(super) fn new(
        scope: ClientScope,
        to_browser: mpsc::UnboundedSender<String>,
        to_client: QueueSender,
        tabs: SessionTabs,
        adopted: mpsc::UnboundedSender<(String, Value)>,
    ) -> Self {
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
            download_events: false,
            tabs,
            adopted,
            budget: Budget::default(),
        }
    }

    pub(super) fn send_browser(&mut self, method: &str, params: Value, session: Option<&str>, pending: Pending) {
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

    /// Queues a message for the client, never waiting: a client whose queue is full is not reading, and
    /// is closed (`ClientTooSlow`) rather than have its messages buffered without end.
    pub(super) async fn send_client(&mut self, text: String) {
        if self.end == Some(RelayEnd::ClientTooSlow) {
            return;
        }
        match self.to_client.try_send(text) {
            Ok(()) => {}
            Err(Refused::Full) => {
                tracing::info!("a DevTools client did not read its messages; its connection is closed");
                self.end = Some(RelayEnd::ClientTooSlow);
            }
            Err(Refused::Closed) => self.end = Some(RelayEnd::ClientLeft),
        }
    }

    pub(super) async fn reply(&mut self, id: Value, session: Option<&str>, result: Value) {
        let mut msg = json!({ "id": id, "result": result });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        self.send_client(msg.to_string()).await;
    }

    pub(super) async fn reply_error(&mut self, id: Value, session: Option<&str>, code: i64, message: &str) {
        let mut msg = json!({ "id": id, "error": { "code": code, "message": message } });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        self.send_client(msg.to_string()).await;
    }

    /// Opens the relay's browser session and its discovery of targets, keeping the context's ones.
    pub(super) async fn start(&mut self, from_browser: &mut crate::inbox::Inbox) -> Result<(), BrowserError> {
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
        from_browser: &mut crate::inbox::Inbox,
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

    pub(super) async fn on_client(&mut self, text: String) {
        let bytes = text.len();
        let parsed = match bytes >= LARGE {
            // Off the runtime's threads: parsing a 50 MB command takes a while.
            true => tokio::task::spawn_blocking(move || serde_json::from_str::<Value>(&text).ok()).await.ok().flatten(),
            false => serde_json::from_str::<Value>(&text).ok(),
        };
        let Some(mut msg) = parsed else {
            return self.reply_error(Value::Null, None, codes::PARSE_ERROR, "Message must be a valid JSON").await;
        };
        let params = msg.get_mut("params").map(Value::take).unwrap_or_else(|| json!({}));
        let Some(id) = msg.get("id").filter(|id| id.is_u64()).cloned() else {
            return self
                .reply_error(Value::Null, None, codes::INVALID_REQUEST, "Message must have integer 'id' property")
                .await;
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return self
                .reply_error(id, None, codes::INVALID_REQUEST, "Message must have string 'method' property")
                .await;
        };
        let session = msg.get("sessionId").and_then(Value::as_str);
        let level = match session {
            Some(s) if self.scope.sessions.contains(s) => Level::Session,
            Some(s) => {
                return self
                    .reply_error(id, Some(s), codes::SESSION_NOT_FOUND, "Session with given id not found.")
                    .await
            }
            None => Level::Browser,
        };
        let verdict = rules::check(method, &params, level, &self.scope);
        let verdict = match verdict {
            Verdict::Emulate(Emulated::Nested) => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or_default();
                match rules::check_nested(message, &self.scope) {
                    Verdict::Forward if closes_page(message) => {
                        let inner = params.get("sessionId").and_then(Value::as_str);
                        self.last_page_refusal(inner).unwrap_or(Verdict::Forward)
                    }
                    Verdict::Forward => Verdict::Forward,
                    refused => refused,
                }
            }
            Verdict::Forward if method == "Page.close" => self.last_page_refusal(session).unwrap_or(Verdict::Forward),
            v => v,
        };
        if !verdict.forwards() {
            tracing::debug!(method, "a DevTools client's command was answered by the relay");
        }
        let then = match method {
            "Browser.getWindowForTarget" => Then::Window,
            "Target.createTarget" => Then::Created(None),
            "Target.closeTarget" => match params.get("targetId").and_then(Value::as_str) {
                Some(t) => Then::Closing(t.to_owned()),
                None => Then::Pass,
            },
            "Page.close" => match session.and_then(|s| self.scope.target_of(s)) {
                Some(t) => Then::Closing(t.to_owned()),
                None => Then::Pass,
            },
            _ => Then::Pass,
        };
        if verdict.forwards() {
            // Counted from now on, so the next command in a burst sees this one's page.
            match &then {
                Then::Created(_) => self.scope.creating(),
                Then::Closing(t) => self.scope.closing(t),
                _ => {}
            }
        }
        let target_session = session.map(str::to_owned).unwrap_or_else(|| self.browser_session.clone());
        match verdict {
            Verdict::Forward if bytes >= LARGE => {
                self.send_large(method, params, &target_session, Pending::Client { id, then }, bytes).await
            }
            Verdict::Forward => self.send_browser(method, params, Some(&target_session), Pending::Client { id, then }),
            Verdict::ForwardWith(mut p) => {
                let then = match then {
                    Then::Created(_) => Then::Created(blank_first(&self.tabs, &mut p)),
                    then => then,
                };
                self.send_browser(method, p, Some(&target_session), Pending::Client { id, then })
            }
            Verdict::ForwardAs(m, p) => self.send_browser(m, p, Some(&target_session), Pending::Client { id, then }),
            Verdict::Answer(result) => self.reply(id, session, result).await,
            Verdict::Refuse(why) => self.reply_error(id, session, codes::SERVER_ERROR, &why).await,
            Verdict::Emulate(e) => self.emulate(e, id, params).await,
        }
    }

    pub(super) async fn on_browser(&mut self, text: String) {
        // A plain answer to the client (its largest messages: evaluate results, screenshots) is passed on
        // with its id rewritten in place, not parsed.
        if let Some((n, rest)) = crate::pipe::leading_id(&text) {
            self.landed(n);
            if let Some(Pending::Client { id, then: Then::Pass }) = self.pending.get(&n) {
                let own = id.to_string();
                let suffix = format!(",\"sessionId\":\"{}\"}}", self.browser_session);
                // The relay's browser session is not the client's to see.
                let answer = match rest.strip_suffix(&suffix) {
                    Some(rest) => Some(format!("{{\"id\":{own}{rest}}}")),
                    None if !rest.contains(self.browser_session.as_str()) => Some(format!("{{\"id\":{own}{rest}")),
                    None => None,
                };
                if let Some(answer) = answer {
                    self.pending.remove(&n);
                    return self.send_client(answer).await;
                }
            }
        }
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
                    (Some("Target.attachedToTarget"), Some(_)) => self.scope.attached(&v["params"]),
                    (Some("Target.detachedFromTarget"), Some(c)) => self.session_gone(&c),
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
            Then::Closing(target) => {
                let failed = v.get("error").is_some() || v.pointer("/result/success") == Some(&Value::Bool(false));
                if failed {
                    self.scope.close_failed(&target);
                }
            }
            Then::Created(go) => {
                let made = v.pointer("/result/targetId").and_then(Value::as_str).map(str::to_owned);
                self.scope.created(made.as_deref());
                if let Some(target) = made {
                    let opened = self.scope.targets.get(&target).and_then(|i| i["url"].as_str()).unwrap_or("");
                    let url = go.clone().unwrap_or_else(|| opened.to_owned());
                    let (tabs, adopted) = (self.tabs.clone(), self.adopted.clone());
                    webpilot_tasks::spawn_owned("relay adopt tab", async move {
                        if let Some(tabs) = tabs.upgrade() {
                            tabs.adopt(target.clone(), url, go.is_some()).await;
                        }
                        let _ = adopted.send((target, v));
                    });
                    return;
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
                    self.scope.forget(id);
                    self.auto_attached.remove(id);
                }
                if self.discover.as_ref().is_some_and(|f| filter_allows(f.as_ref(), &kind)) {
                    self.send_client(v.to_string()).await;
                }
            }
            "Target.attachedToTarget" => {
                let Some(session) = params.get("sessionId").and_then(Value::as_str) else { return };
                self.scope.attached(params);
                self.top_sessions.insert(session.to_owned());
                self.send_client(v.to_string()).await;
            }
            "Target.detachedFromTarget" => {
                let Some(session) = params.get("sessionId").and_then(Value::as_str) else { return };
                let session = session.to_owned();
                self.session_gone(&session);
                self.top_sessions.remove(&session);
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

    /// Like `send_browser`, for a large client command: serialized off the runtime's threads, and its
    /// bytes counted in flight until it is answered (`budget.rs`).
    async fn send_large(&mut self, method: &str, params: Value, session: &str, pending: Pending, bytes: usize) {
        self.next += 1;
        let id = self.next;
        self.pending.insert(id, pending);
        self.budget.sent(id, bytes, session);
        let msg = json!({ "id": id, "method": method, "params": params, "sessionId": session });
        let text = tokio::task::spawn_blocking(move || msg.to_string()).await.ok();
        if text.is_none_or(|text| self.to_browser.send(text).is_err()) {
            self.end = Some(RelayEnd::BrowserGone);
        }
    }

    /// Whether the relay reads the client's next command (`budget.rs`).
    pub(super) fn may_read_client(&self) -> bool {
        self.budget.may_read()
    }

    /// Command `id` was answered.
    fn landed(&mut self, id: u64) {
        self.budget.landed(id);
    }

    /// A DevTools session detached: its unanswered commands never will be.
    fn session_gone(&mut self, session: &str) {
        self.scope.detached(session);
        self.budget.session_gone(session);
    }

    /// The refusal of a `Page.close` sent in `session` when its page is the session's last.
    fn last_page_refusal(&self, session: Option<&str>) -> Option<Verdict> {
        rules::check_page_close(session.and_then(|s| self.scope.target_of(s)), &self.scope)
    }

    /// Detaches every session the client had and the relay's browser session (nothing stays paused or
    /// reported to a gone client).
    /// Detaches every session the client attached, then the relay's browser session, each answer awaited
    /// (so what the client set on a page, its emulation among it, is gone before the relay ends).
    pub(super) async fn detach_all(&mut self, from_browser: &mut crate::inbox::Inbox) {
        let top: Vec<String> = self.top_sessions.drain().collect();
        for s in top {
            if let Err(e) = self.call(from_browser, "Target.detachFromTarget", json!({ "sessionId": s }), true).await {
                tracing::debug!(error = %e, "detaching a DevTools client's session failed");
            }
        }
        if !self.browser_session.is_empty() {
            let session = json!({ "sessionId": self.browser_session });
            if let Err(e) = self.call(from_browser, "Target.detachFromTarget", session, false).await {
                tracing::debug!(error = %e, "detaching the relay's browser session failed");
            }
        }
    }
}

/// Whether a nested message is a `Page.close`.
fn closes_page(message: &str) -> bool {
    serde_json::from_str::<Value>(message).is_ok_and(|v| v["method"] == "Page.close")
}
