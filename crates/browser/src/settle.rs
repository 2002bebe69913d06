//! Settling after an action, driven by the browser's events and never by a fixed pause: the page's own
//! signals say whether the action started a load of the page (then it ends when the load stops) or opened a
//! tab (then it ends when the tab is adopted and loaded); otherwise it ends at once.
//!
//! How "nothing started" is known without waiting: a click's navigation is requested while the click is
//! handled, and a form submission or a `setTimeout(…, 0)` one task later. One round trip that runs after the
//! page's queued tasks (`FLUSH`) therefore comes back after the browser has sent the events of whatever they
//! started, on the same ordered connection.

use crate::error::{within, BrowserError};
use crate::page::SessionPage;
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameRequestedNavigation, EventFrameStartedLoading, EventFrameStoppedLoading,
};
use chromiumoxide::cdp::browser_protocol::target::{EventTargetCreated, TargetId};
use chromiumoxide::listeners::EventStream;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Resolves once the tasks the page had queued have run (a macrotask turn), in whatever document is current.
const FLUSH: &str = "new Promise(r => setTimeout(() => r(true), 0))";

/// Resolves true once the document has loaded, or false after half a second (the caller asks again, so a
/// page that never fires `load` is bounded by the navigation timeout and not by one evaluation).
const LOADED: &str = "new Promise(r => { if (document.readyState === 'complete') return r(true); \
     addEventListener('load', () => r(true), { once: true }); setTimeout(() => r(false), 500); })";

/// How long a requested navigation may take to start loading before the request is taken as cancelled (a
/// handler that called `preventDefault`, a `beforeunload` that refused); it ends at the event.
const REQUEST_TO_START: Duration = Duration::from_secs(1);

/// What the active tab and the context said while an action ran.
pub(crate) struct Watch {
    main: String,
    requested: EventStream<EventFrameRequestedNavigation>,
    started: EventStream<EventFrameStartedLoading>,
    stopped: EventStream<EventFrameStoppedLoading>,
    created: EventStream<EventTargetCreated>,
}

impl SessionPage {
    /// Runs `action` on the active tab, then waits for what it started: a load of the page, or a new tab
    /// (adopted, made active and loaded). Ends at once when it started neither.
    pub async fn settled<T>(&self, action: impl Future<Output = Result<T, BrowserError>>) -> Result<T, BrowserError> {
        let watch = self.watch().await?;
        let out = action.await?;
        self.settle_with(watch).await?;
        Ok(out)
    }

    /// Waits for what may have begun before this call (a person's take-over, a check that reloads the
    /// page once passed): any load under way in the active tab, and any tab being adopted.
    pub async fn settle(&self) -> Result<(), BrowserError> {
        let watch = self.watch().await?;
        self.settle_with(watch).await
    }

    async fn watch(&self) -> Result<Watch, BrowserError> {
        let page = self.page()?;
        let t = self.inner.cdp_timeout;
        Ok(Watch {
            main: page.target_id().inner().clone(),
            requested: within(t, "listen", page.event_listener::<EventFrameRequestedNavigation>()).await?,
            started: within(t, "listen", page.event_listener::<EventFrameStartedLoading>()).await?,
            stopped: within(t, "listen", page.event_listener::<EventFrameStoppedLoading>()).await?,
            created: within(t, "listen", self.inner.opener.process.browser.event_listener::<EventTargetCreated>())
                .await?,
        })
    }

    async fn settle_with(&self, mut watch: Watch) -> Result<(), BrowserError> {
        let deadline = Instant::now() + self.inner.nav_timeout;
        // Errors are expected here: the document may be on its way out.
        let _ = self.eval(FLUSH).await;
        let mut opened: Vec<TargetId> = Vec::new();
        while let Some(Some(event)) = watch.created.next().now_or_never() {
            if self.inner.owns_page(&event.target_info) {
                opened.push(event.target_info.target_id.clone());
            }
        }
        let requested = seen(&mut watch.requested, &watch.main);
        let mut loading = seen(&mut watch.started, &watch.main);
        if requested && !loading {
            loading = wait_for_frame(&mut watch.started, &watch.main, Instant::now() + REQUEST_TO_START).await;
        }
        if loading {
            let (_, crashed) = self.active()?;
            let stopped = tokio::select! {
                stopped = wait_for_frame(&mut watch.stopped, &watch.main, deadline) => stopped,
                () = crashed.crashed() => return Err(BrowserError::PageCrash),
            };
            if !stopped {
                let url = self.url().await.unwrap_or_default();
                return Err(BrowserError::NavigationTimeout(url));
            }
        }
        for target in &opened {
            self.adopted(target, deadline).await;
        }
        self.wait_loaded_until(deadline).await
    }

    /// Waits until `target` is no longer being adopted (it is a tab then, or was refused).
    async fn adopted(&self, target: &TargetId, deadline: Instant) {
        // The watch over new pages may not have begun its adoption yet: it begins on the same event.
        let begun = async {
            let mut under_way = self.inner.adoptions.subscribe();
            loop {
                if self.inner.has_tab(target) {
                    return;
                }
                if under_way.borrow_and_update().contains(target) {
                    let _ = under_way.wait_for(|set| !set.contains(target)).await;
                    return;
                }
                if under_way.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout_at(deadline, begun).await;
    }

    /// Waits until the active tab's document has loaded, up to the navigation timeout.
    pub async fn wait_loaded(&self) -> Result<(), BrowserError> {
        self.wait_loaded_until(Instant::now() + self.inner.nav_timeout).await
    }

    async fn wait_loaded_until(&self, deadline: Instant) -> Result<(), BrowserError> {
        loop {
            // During a navigation the old context is destroyed; evaluation errors then are expected.
            match self.eval(LOADED).await {
                Ok(Value::Bool(true)) => return Ok(()),
                Ok(_) => {}
                Err(BrowserError::PageCrash) => return Err(BrowserError::PageCrash),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
            if Instant::now() >= deadline {
                let url = self.url().await.unwrap_or_default();
                return Err(BrowserError::NavigationTimeout(url));
            }
        }
    }
}

/// Whether an event of `frame` is among those already received on `events` (all of them are taken).
fn seen<E, S>(events: &mut S, frame: &str) -> bool
where
    E: FrameEvent,
    S: futures::Stream<Item = std::sync::Arc<E>> + Unpin,
{
    let mut found = false;
    while let Some(Some(event)) = events.next().now_or_never() {
        found |= event.frame() == frame;
    }
    found
}

/// Waits for an event of `frame` on `events` until `deadline`; whether it came.
async fn wait_for_frame<E, S>(events: &mut S, frame: &str, deadline: Instant) -> bool
where
    E: FrameEvent,
    S: futures::Stream<Item = std::sync::Arc<E>> + Unpin,
{
    let wait = async {
        while let Some(event) = events.next().await {
            if event.frame() == frame {
                return true;
            }
        }
        false
    };
    tokio::time::timeout_at(deadline, wait).await.unwrap_or(false)
}

trait FrameEvent {
    fn frame(&self) -> &str;
}

impl FrameEvent for EventFrameRequestedNavigation {
    fn frame(&self) -> &str {
        self.frame_id.inner()
    }
}

impl FrameEvent for EventFrameStartedLoading {
    fn frame(&self) -> &str {
        self.frame_id.inner()
    }
}

impl FrameEvent for EventFrameStoppedLoading {
    fn frame(&self) -> &str {
        self.frame_id.inner()
    }
}
