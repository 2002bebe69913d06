//! The browser-wide Target calls the relay answers itself for the session's context: auto-attach (never
//! pausing a target), discovery, target listing and `Browser.close`, and the answers held back until the
//! client is attached to a new page.

use super::connection::{Pending, Relay, Then, Waiter};
use super::rules::Emulated;
use super::scope::filter_allows;
use super::{codes, RelayEnd};
use serde_json::{json, Value};

impl Relay {
    pub(super) async fn emulate(&mut self, what: Emulated, id: Value, params: Value) {
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
            Emulated::DownloadEvents => {
                self.download_events = true;
                self.reply(id, None, json!({})).await;
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
            Emulated::Nested => self.reply_error(id, None, codes::SERVER_ERROR, "not available").await,
        }
    }

    /// Attaches the client to one of the context's targets (flattened, never paused), once; `waiter` waits
    /// for that attach, and is handed back when there is nothing to wait for (attached already).
    pub(super) fn auto_attach(&mut self, target: &str, waiter: Option<Waiter>) -> Option<Waiter> {
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

    pub(super) async fn release(&mut self, waiter: Waiter) {
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

    /// A `Target.createTarget` answer whose page is now a tab of the session: sent once the client is
    /// attached to the page when it auto-attaches pages (Playwright looks the page up as soon as the answer
    /// arrives).
    pub(super) async fn created(&mut self, target: String, answer: Value) {
        self.scope.adopted(&target);
        if let Some(filter) = self.auto.clone() {
            let kind = self.scope.kind_of(&target).unwrap_or("page").to_owned();
            if filter_allows(filter.as_ref(), &kind) {
                if let Some(now) = self.auto_attach(&target, Some(Waiter::Reply(answer.to_string()))) {
                    self.release(now).await;
                }
                return;
            }
        }
        self.send_client(answer.to_string()).await;
    }
}
