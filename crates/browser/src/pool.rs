//! The browser pool: a bounded number of session leases (one isolated browser context and page each)
//! spread over a few Chromium processes. A dead process is replaced on the next lease; a lease's
//! context is disposed when the lease drops, by a task the pool owns and waits for at shutdown.

use crate::config::BrowserSettings;
use crate::cookies::{self, CookieJar};
use crate::error::{within, BrowserError};
use crate::page::SessionPage;
use crate::process::BrowserProcess;
use crate::tabs::TabOpener;
use crate::DomainPolicy;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use webpilot_egress::EgressProxy;

/// Numbers for the health endpoint and the benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Most sessions at once.
    pub capacity: usize,
    /// Sessions holding a lease now.
    pub in_use: usize,
    /// Chromium processes running now.
    pub processes: usize,
}

#[derive(Clone)]
pub struct BrowserPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    settings: BrowserSettings,
    permits: Arc<Semaphore>,
    /// Turns to prepare a context (see `BrowserSettings::max_preparing`).
    preparing: Semaphore,
    slots: Vec<Mutex<Option<Arc<BrowserProcess>>>>,
    next: AtomicUsize,
    tracker: TaskTracker,
}

impl BrowserPool {
    pub fn new(settings: BrowserSettings) -> Self {
        let slots = (0..settings.processes.max(1)).map(|_| Mutex::new(None)).collect();
        BrowserPool {
            inner: Arc::new(PoolInner {
                permits: Arc::new(Semaphore::new(settings.max_sessions)),
                preparing: Semaphore::new(settings.max_preparing.max(1)),
                settings,
                slots,
                next: AtomicUsize::new(0),
                tracker: TaskTracker::new(),
            }),
        }
    }

    pub fn settings(&self) -> &BrowserSettings {
        &self.inner.settings
    }

    /// Takes a session slot now or fails with `NoCapacity`; then prepares a fresh context and page.
    pub async fn lease(&self, policy: DomainPolicy) -> Result<BrowserLease, BrowserError> {
        let permit = self.inner.permits.clone().try_acquire_owned().map_err(|_| BrowserError::NoCapacity)?;
        let Replacement { page, guard } = self.replacement(policy).await?;
        Ok(BrowserLease { page, guard, _permit: permit })
    }

    /// A fresh context and page without taking a slot: for a lease whose browser died (install it with
    /// [`BrowserLease::install`]). A dead process is relaunched here.
    pub async fn replacement(&self, policy: DomainPolicy) -> Result<Replacement, BrowserError> {
        // Waiting for a turn is not under the DevTools timeouts; only the preparation itself is.
        let _turn = self.inner.preparing.acquire().await.map_err(|_| BrowserError::NoCapacity)?;
        let process = self.process().await?;
        let timeout = self.inner.settings.cdp_timeout;
        // Every request of the context goes through its own egress proxy; `<-loopback>` stops Chromium
        // from sending loopback destinations around it.
        let proxy = EgressProxy::start(self.inner.settings.egress_allow.clone(), policy.clone(), timeout)
            .await
            .map_err(|e| BrowserError::Launch(format!("egress proxy: {e}")))?;
        let params = CreateBrowserContextParams {
            proxy_server: Some(proxy.proxy_server()),
            proxy_bypass_list: Some("<-loopback>".into()),
            ..Default::default()
        };
        let context = within(timeout, "create browser context", process.browser.create_browser_context(params)).await?;
        process.contexts.fetch_add(1, Ordering::SeqCst);
        // From here on the guard disposes the context if anything fails.
        let guard = ContextGuard { process, context, tracker: self.inner.tracker.clone(), timeout, _proxy: proxy };
        // Nothing a page offers for download is written anywhere.
        let mut downloads = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny);
        downloads.browser_context_id = Some(guard.context.clone());
        within(timeout, "deny downloads", guard.process.browser.execute(downloads)).await?;
        let mut target = CreateTargetParams::new("about:blank");
        target.browser_context_id = Some(guard.context.clone());
        let page = within(timeout, "create page", guard.process.browser.new_page(target)).await?;
        let opener = TabOpener { process: guard.process.clone(), context: guard.context.clone() };
        let page = SessionPage::new(page, opener, &self.inner.settings, policy).await?;
        Ok(Replacement { page, guard })
    }

    /// A live process to host the next context: round robin over the slots, launching where a slot is
    /// empty or its process died.
    async fn process(&self) -> Result<Arc<BrowserProcess>, BrowserError> {
        let n = self.inner.slots.len();
        let i = self.inner.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut slot = self.inner.slots[i].lock().await;
        if let Some(p) = slot.as_ref().filter(|p| p.is_alive()) {
            return Ok(p.clone());
        }
        if slot.take().is_some() {
            tracing::warn!(slot = i, "replacing a dead chromium process");
            metrics::counter!("webpilot_chromium_restarts_total").increment(1);
        }
        let p = BrowserProcess::launch(&self.inner.settings).await?;
        *slot = Some(p.clone());
        Ok(p)
    }

    /// Launches every process now instead of at the first lease.
    pub async fn warm_up(&self) -> Result<(), BrowserError> {
        for _ in 0..self.inner.slots.len() {
            self.process().await?;
        }
        Ok(())
    }

    pub fn stats(&self) -> PoolStats {
        let processes = self
            .inner
            .slots
            .iter()
            .filter_map(|s| s.try_lock().ok())
            .filter(|s| s.as_ref().is_some_and(|p| p.is_alive()))
            .count();
        PoolStats {
            capacity: self.inner.settings.max_sessions,
            in_use: self.inner.settings.max_sessions - self.inner.permits.available_permits(),
            processes,
        }
    }

    /// Process ids of the running Chromium processes (for leak checks).
    pub async fn pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for slot in &self.inner.slots {
            if let Some(pid) = slot.lock().await.as_ref().and_then(|p| p.pid) {
                out.push(pid);
            }
        }
        out
    }

    /// Waits for pending context disposals, then stops every process.
    pub async fn shutdown(&self) {
        self.inner.tracker.close();
        self.inner.tracker.wait().await;
        for slot in &self.inner.slots {
            slot.lock().await.take();
        }
    }
}

/// Disposes its browser context when dropped, and stops the context's egress proxy.
struct ContextGuard {
    process: Arc<BrowserProcess>,
    context: BrowserContextId,
    tracker: TaskTracker,
    timeout: std::time::Duration,
    _proxy: EgressProxy,
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
        self.tracker.spawn(async move {
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

/// A new context and page for a lease whose browser died; disposed on drop unless installed.
pub struct Replacement {
    page: SessionPage,
    guard: ContextGuard,
}

/// One session's hold on the pool: its page, its context and its capacity slot, all released on drop.
pub struct BrowserLease {
    page: SessionPage,
    guard: ContextGuard,
    _permit: OwnedSemaphorePermit,
}

impl BrowserLease {
    pub fn page(&self) -> &SessionPage {
        &self.page
    }
    /// False once the hosting Chromium process died or its connection dropped.
    pub fn is_alive(&self) -> bool {
        self.guard.process.is_alive()
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
    /// Every cookie of the lease's browser context (fails once the browser is dead).
    pub async fn cookies(&self) -> Result<CookieJar, BrowserError> {
        cookies::read(&self.guard.process.browser, &self.guard.context, self.guard.timeout).await
    }
    /// Sets the cookies of `jar` in the lease's browser context.
    pub async fn set_cookies(&self, jar: &CookieJar) -> Result<(), BrowserError> {
        cookies::write(&self.guard.process.browser, &self.guard.context, jar, self.guard.timeout).await
    }
}
