//! A DevTools endpoint for one session on a shared Chromium. The client (Playwright, Puppeteer, any CDP
//! client) sees a browser whose only context is its session's: the relay talks to Chromium through a
//! browser session of its own (`Target.attachToBrowserTarget`), keeps the context's targets from its own
//! discovery, answers the browser-wide Target calls for that context alone (auto-attach is done by the
//! relay, never by Chromium, so no other context's new target waits for this client), and checks every
//! command against the allow-list (`rules.rs`) before anything reaches Chromium. Target ids pass unchanged.

mod budget;
mod connection;
mod emulate;
pub mod queue;
mod rules;
pub(crate) mod scope;
pub(crate) mod tabs;
mod viewport;

/// The JSON-RPC error numbers the relay answers with, the ones Chromium uses for the same faults.
pub(crate) mod codes {
    /// The message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// No integer `id`, or no string `method`.
    pub const INVALID_REQUEST: i64 = -32600;
    /// A `sessionId` the client was never given.
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// A command refused or not available (Chromium's generic server error).
    pub const SERVER_ERROR: i64 = -32000;
}

use crate::error::BrowserError;
use crate::process::BrowserProcess;
use connection::Relay;
use queue::{QueueReceiver, QueueSender};
use scope::ClientScope;
use serde_json::{json, Value};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What a DevTools client of one session reaches: the session's context in its browser.
pub struct DevtoolsScope {
    pub(crate) process: Arc<BrowserProcess>,
    /// The session's tabs: a page the client opens becomes one before the client hears of it.
    pub(crate) tabs: tabs::SessionTabs,
    pub(crate) context: String,
    pub(crate) files_dir: Option<PathBuf>,
    /// The context's download events, for a client that enables them (Playwright's `download` event).
    pub(crate) downloads: Option<tokio::sync::broadcast::Sender<String>>,
    pub(crate) max_tabs: usize,
    /// What the session's DevTools connections have under way with its pages (one cap for all of them).
    pub(crate) claims: Arc<scope::TabClaims>,
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
    /// The client did not read what was sent to it: its queue held `CONNECTION_BUDGET` bytes.
    ClientTooSlow,
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
    /// client leaves, closes the browser, the browser goes, `to_client` is full (the client does not read),
    /// or `ended` completes (with its reason). It never waits on the client: whatever Chromium sends is
    /// read at once, so it never piles up unseen in the shared connection to the browser.
    pub async fn run(
        self,
        mut from_client: QueueReceiver,
        to_client: QueueSender,
        ended: impl Future<Output = RelayEnd>,
    ) -> Result<RelayEnd, BrowserError> {
        let (to_browser, mut from_browser, _tasks) = match self.process.link.get().and_then(crate::pipe::Link::attach) {
            Some((tx, rx)) => (tx, rx, Vec::new()),
            None => {
                let (tx, rx, tasks) =
                    crate::frames::ws_channels(self.process.browser.websocket_address(), self.timeout).await?;
                (tx, rx, tasks.into_iter().map(tokio_util::task::AbortOnDropHandle::new).collect())
            }
        };
        let session = self.tabs.clone();
        let session_tabs: scope::SessionTabs =
            Box::new(move || session.upgrade().map(|t| t.tab_ids()).unwrap_or_default());
        let scope = ClientScope::new(self.context, self.files_dir, self.max_tabs, (self.claims, session_tabs));
        let (adopted_tx, mut adopted) = mpsc::unbounded_channel();
        let tabs = self.tabs.clone();
        let mut downloads = self.downloads.as_ref().map(tokio::sync::broadcast::Sender::subscribe);
        let mut relay = Relay::new(scope, to_browser, to_client, self.tabs, adopted_tx);
        crate::error::within(self.timeout, "open the DevTools relay", relay.start(&mut from_browser)).await?;
        tokio::pin!(ended);
        let end = loop {
            tokio::select! {
                end = &mut ended => break end,
                m = from_client.recv(), if relay.may_read_client() => match m {
                    // Its bytes count against the client's queue until the relay has handed it on.
                    Some(queued) => {
                        if let Some(queued) = relay.budget.hold(queued) {
                            relay.on_client(queued.text).await;
                        }
                    }
                    None => break RelayEnd::ClientLeft,
                },
                m = from_browser.recv() => match m {
                    Some(text) => relay.on_browser(text).await,
                    None if from_browser.fell_behind() => break RelayEnd::ClientTooSlow,
                    None => break RelayEnd::BrowserGone,
                },
                Some((target, answer)) = adopted.recv() => relay.created(target, answer).await,
                Some(event) = next_download(&mut downloads), if relay.download_events => relay.send_client(event).await,
            }
            if let Some(held) = relay.budget.release() {
                relay.on_client(held.text).await;
            }
            if let Some(end) = relay.end {
                break end;
            }
        };
        // The client's sessions detached (their answers awaited), then the session's own viewport again.
        let detached = crate::error::within(self.timeout, "detach the DevTools client", async {
            relay.detach_all(&mut from_browser).await;
            Ok::<(), BrowserError>(())
        });
        if detached.await.is_ok() {
            if let Some(inner) = tabs.upgrade() {
                viewport::restore(&*inner).await;
            }
        }
        Ok(end)
    }
}

/// The next download event of the session's context (pending forever when there are none to follow; an
/// event lost to a slow client is skipped).
async fn next_download(events: &mut Option<tokio::sync::broadcast::Receiver<String>>) -> Option<String> {
    let Some(events) = events else { return std::future::pending().await };
    loop {
        match events.recv().await {
            Ok(event) => return Some(event),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}
