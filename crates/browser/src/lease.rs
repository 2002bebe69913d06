//! What a session holds of the pool: its context (disposed on drop, with its egress proxy stopped), its
//! page and its capacity slot.

use crate::cookies::{self, CookieJar};
use crate::downloads::{DownloadArea, DownloadOutcome};
use crate::error::{within, BrowserError};
use crate::page::SessionPage;
use crate::process::BrowserProcess;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use webpilot_egress::EgressProxy;
use webpilot_tasks::Tasks;

/// Disposes its browser context when dropped, and stops the context's egress proxy.
pub(crate) struct ContextGuard {
    pub(crate) process: Arc<BrowserProcess>,
    pub(crate) context: BrowserContextId,
    /// The pool's group, which runs the disposal.
    pub(crate) tasks: Tasks,
    pub(crate) timeout: std::time::Duration,
    pub(crate) _proxy: EgressProxy,
    /// Where the context's downloads land (none on a remote browser, where they are denied).
    pub(crate) downloads: Option<DownloadArea>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        self.process.contexts.fetch_sub(1, Ordering::SeqCst);
        let process = self.process.clone();
        let context = self.context.clone();
        let timeout = self.timeout;
        if tokio::runtime::Handle::try_current().is_err() {
            return; // no runtime left: the process itself is going away
        }
        self.tasks.spawn("context disposal", async move {
            if !process.is_alive() {
                return;
            }
            match within(timeout, "dispose browser context", process.browser.dispose_browser_context(context)).await {
                Ok(()) => tracing::debug!("browser context disposed"),
                Err(e) => tracing::warn!(error = %e, "disposing a browser context failed"),
            }
        });
    }
}

/// A new context and page (for a lease whose browser died, or kept warm); disposed on drop unless
/// installed in a lease.
pub struct Replacement {
    pub(crate) page: SessionPage,
    pub(crate) guard: ContextGuard,
}

impl Replacement {
    /// Still usable: its process is alive and its page has not crashed.
    pub(crate) fn is_usable(&self) -> bool {
        self.guard.process.is_alive() && self.page.page().is_ok()
    }
}

/// One session's hold on the pool: its page, its context and its capacity slot, all released on drop.
pub struct BrowserLease {
    pub(crate) page: SessionPage,
    pub(crate) guard: ContextGuard,
    pub(crate) permit: Option<OwnedSemaphorePermit>,
    /// Told when the slot is given back, so the warm pool can refill.
    pub(crate) released: Arc<Notify>,
}

impl Drop for BrowserLease {
    fn drop(&mut self) {
        self.release_slot();
    }
}

impl BrowserLease {
    pub fn page(&self) -> &SessionPage {
        &self.page
    }
    /// False once the hosting Chromium process died or its connection dropped.
    pub fn is_alive(&self) -> bool {
        self.guard.process.is_alive()
    }
    /// Resolves once the hosting Chromium process dies or its connection drops (at once if it has).
    pub async fn died(&self) {
        self.guard.process.died().await
    }
    /// The hosting process id.
    pub fn pid(&self) -> Option<u32> {
        self.guard.process.pid
    }
    /// Moves the lease onto a replacement context and page, keeping its slot; the old context is let go.
    pub fn install(&mut self, replacement: Replacement) {
        self.page = replacement.page;
        self.guard = replacement.guard;
    }
    /// The next download of the lease's context that finished or was refused; pending while there is
    /// none (forever on a remote browser, whose downloads are denied).
    pub async fn next_download(&self) -> DownloadOutcome {
        match &self.guard.downloads {
            Some(area) => area.next().await,
            None => std::future::pending().await,
        }
    }
    /// Gives the lease's capacity slot back now (the context stays until the lease drops): for a
    /// session that ended and only waits for its downloads.
    pub fn release_slot(&mut self) {
        // The slot first, then the news: the refill task must find the permit free.
        if let Some(permit) = self.permit.take() {
            drop(permit);
            self.released.notify_one();
        }
    }
    /// Downloads of the lease's context begun and not yet reported by [`Self::next_download`].
    pub fn downloads_in_flight(&self) -> usize {
        self.guard.downloads.as_ref().map_or(0, |a| a.in_flight())
    }
    /// Every cookie of the lease's browser context (fails once the browser is dead).
    pub async fn cookies(&self) -> Result<CookieJar, BrowserError> {
        cookies::read(&self.guard.process.browser, &self.guard.context, self.guard.timeout).await
    }
    /// Sets the cookies of `jar` in the lease's browser context.
    pub async fn set_cookies(&self, jar: &CookieJar) -> Result<(), BrowserError> {
        cookies::write(&self.guard.process.browser, &self.guard.context, jar, self.guard.timeout).await
    }
}
