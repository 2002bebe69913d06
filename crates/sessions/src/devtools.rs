//! A session's DevTools relay as the transports reach it: the relay of the session's browser context
//! (`webpilot_browser::DevtoolsScope`), ended when the session ends or moves to another browser, and its
//! discovery JSON. The DevTools endpoint (`api`'s `routes/cdp.rs`) pumps a socket through it.

use crate::SessionManager;
use std::future::Future;
use tokio::sync::watch;
use webpilot_browser::{DevtoolsScope, SessionPage};

pub use webpilot_browser::devtools_queue::{queue, QueueReceiver, QueueSender, CONNECTION_BUDGET};
pub use webpilot_browser::BrowserError as DevtoolsError;
pub use webpilot_browser::RelayEnd;

/// The DevTools side of one live session on this node.
pub struct Devtools {
    scope: DevtoolsScope,
    pages: watch::Receiver<SessionPage>,
}

impl Devtools {
    /// The DevTools side of `session_id`, if it is live on this node.
    pub fn of(manager: &SessionManager, session_id: &str) -> Option<Devtools> {
        let pages = manager.pages(session_id)?;
        let scope = pages.borrow().devtools();
        Some(Devtools { scope, pages })
    }

    /// Chromium's discovery JSON (`/json/version`), without the `webSocketDebuggerUrl` the caller adds.
    pub async fn version(&self) -> Result<serde_json::Value, DevtoolsError> {
        self.scope.version().await
    }

    /// Relays `from_client` to the session's context and its answers and events to `to_client` until one
    /// side ends; the session's end ends it with `SessionEnded`, a browser replacement with `BrowserGone`
    /// (the client's targets are gone either way).
    pub fn relay(
        self,
        from_client: QueueReceiver,
        to_client: QueueSender,
    ) -> impl Future<Output = Result<RelayEnd, DevtoolsError>> + Send + 'static {
        let Devtools { scope, mut pages } = self;
        let ended = async move {
            match pages.changed().await {
                Ok(()) => RelayEnd::BrowserGone,
                Err(_) => RelayEnd::SessionEnded,
            }
        };
        scope.run(from_client, to_client, ended)
    }
}
