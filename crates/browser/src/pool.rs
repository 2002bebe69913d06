//! The browser pool: a bounded number of session leases (one isolated browser context and page each)
//! spread over a few Chromium processes, served from the warm pool (`warm.rs`) when it has a context
//! ready and prepared on the spot otherwise. A dead process is replaced on the next lease; a lease's
//! context is disposed when the lease drops, by a task of the pool's group, waited for at shutdown.

use crate::config::BrowserSettings;
use crate::downloads::DownloadLimits;
use crate::error::{within, BrowserError};
use crate::lease::{BrowserLease, ContextGuard, Replacement};
use crate::page::SessionPage;
use crate::process::BrowserProcess;
use crate::tabs::TabOpener;
use crate::warm::{Waiting, Warm, WarmPool};
use crate::DomainPolicy;
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::{Mutex, Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use webpilot_egress::{EgressProxy, ProxyListen};
use webpilot_tasks::Tasks;

/// Numbers for the health endpoint and the benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Most sessions at once.
    pub capacity: usize,
    /// Sessions holding a lease now (warm contexts are free capacity, not in use).
    pub in_use: usize,
    /// Contexts ready in the warm pool.
    pub warm: usize,
    /// Chromium processes running now.
    pub processes: usize,
    /// Of which not answering their ping (stopped, hung): while every one is, no session is started.
    pub unresponsive: usize,
}

impl PoolStats {
    /// Sessions that can be started now: none while every browser process is unresponsive.
    pub fn free(&self) -> usize {
        if self.processes > 0 && self.unresponsive == self.processes {
            return 0;
        }
        self.capacity.saturating_sub(self.in_use)
    }
}

#[derive(Clone)]
pub struct BrowserPool {
    pub(crate) inner: Arc<PoolInner>,
}

pub(crate) struct PoolInner {
    settings: BrowserSettings,
    /// One per context: leased, warm or being prepared.
    pub(crate) permits: Arc<Semaphore>,
    /// Turns to prepare a context (see `BrowserSettings::max_preparing`).
    preparing: Semaphore,
    slots: Vec<Mutex<Option<Arc<BrowserProcess>>>>,
    next: AtomicUsize,
    /// The disposals of contexts whose lease dropped.
    tasks: Tasks,
    pub(crate) warm: WarmPool,
    refilling: AtomicBool,
}

impl BrowserPool {
    /// A pool under `settings`, whose disposals of contexts run in `tasks` (waited for by
    /// [`BrowserPool::shutdown`]).
    pub fn new(settings: BrowserSettings, tasks: Tasks) -> Self {
        // One slot per remote endpoint when there are any, else per local process.
        let count = if settings.endpoints.is_empty() { settings.processes.max(1) } else { settings.endpoints.len() };
        let slots = (0..count).map(|_| Mutex::new(None)).collect();
        if settings.endpoints.is_empty() {
            // Profiles a killed service left behind; the directory is read on a thread of its own.
            let run_as = settings.run_as;
            std::thread::spawn(move || crate::orphans::sweep(run_as));
        }
        BrowserPool {
            inner: Arc::new(PoolInner {
                permits: Arc::new(Semaphore::new(settings.max_sessions)),
                preparing: Semaphore::new(settings.max_preparing.max(1)),
                settings,
                slots,
                next: AtomicUsize::new(0),
                tasks,
                warm: WarmPool::default(),
                refilling: AtomicBool::new(false),
            }),
        }
    }

    pub fn settings(&self) -> &BrowserSettings {
        &self.inner.settings
    }

    /// A context and page for a new session that avoids `avoid_domains`: a warm one when ready, else a
    /// slot taken now (or `NoCapacity`) and a context prepared for it. A start that finds every free slot
    /// held by a warm context still being prepared waits for that one instead of failing.
    pub async fn lease(&self, avoid_domains: Vec<String>) -> Result<BrowserLease, BrowserError> {
        let stats = self.stats();
        if stats.processes > 0 && stats.unresponsive == stats.processes {
            return Err(BrowserError::Unresponsive);
        }
        self.start_refill();
        let warm = &self.inner.warm;
        loop {
            let settled = warm.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if let Some(w) = warm.take() {
                w.replacement.page.policy().set(avoid_domains);
                metrics::counter!("webpilot_session_contexts_total", "source" => "warm").increment(1);
                metrics::gauge!("webpilot_pool_warm").set(warm.ready() as f64);
                warm.wake.notify_one();
                let Replacement { page, guard } = w.replacement;
                return Ok(BrowserLease { page, guard, permit: Some(w.permit), released: warm.wake.clone() });
            }
            // A context already being prepared is ready sooner than one begun now: wait for it when there
            // are fewer starts waiting than contexts in preparation.
            let preparing = warm.preparing.load(Ordering::SeqCst);
            if preparing > warm.waiting.load(Ordering::SeqCst) {
                let _waiting = Waiting::new(&warm.waiting);
                settled.await;
                continue;
            }
            if let Ok(permit) = self.inner.permits.clone().try_acquire_owned() {
                let Replacement { page, guard } = self.replacement(DomainPolicy::new(avoid_domains)).await?;
                metrics::counter!("webpilot_session_contexts_total", "source" => "cold").increment(1);
                return Ok(BrowserLease { page, guard, permit: Some(permit), released: warm.wake.clone() });
            }
            if preparing == 0 {
                return Err(BrowserError::NoCapacity);
            }
            let _waiting = Waiting::new(&warm.waiting);
            settled.await;
        }
    }

    /// Starts the background refill of the warm pool (once; a no-op when it is sized 0).
    fn start_refill(&self) {
        if self.inner.settings.warm_contexts == 0 || self.inner.refilling.swap(true, Ordering::SeqCst) {
            return;
        }
        let warm = &self.inner.warm;
        webpilot_tasks::spawn_owned(
            "warm refill",
            refill_loop(Arc::downgrade(&self.inner), warm.wake.clone(), warm.stop.clone()),
        );
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
        let ip = self.inner.settings.egress_listen;
        // A proxy off loopback serves its own browser only: the remote host, or this host for a local one.
        let peers = match (&process.remote_peers, ip.is_loopback()) {
            (Some(remote), _) => Some(remote.clone()),
            (None, true) => None,
            (None, false) => {
                Some(Arc::from([ip, std::net::Ipv4Addr::LOCALHOST.into(), std::net::Ipv6Addr::LOCALHOST.into()]))
            }
        };
        let listen = ProxyListen { ip, peers };
        let proxy = EgressProxy::start_on(listen, self.inner.settings.egress_allow.clone(), policy.clone(), timeout)
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
        let mut guard =
            ContextGuard { process, context, tasks: self.inner.tasks.clone(), timeout, _proxy: proxy, downloads: None };
        // Downloads land in the context's own directory, under the caps (denied on a remote browser).
        let settings = &self.inner.settings;
        let limits = DownloadLimits { per_file: settings.max_file_bytes, per_session: settings.max_session_file_bytes };
        guard.downloads =
            crate::downloads::open(&guard.process, &guard.context, settings.run_as, limits, timeout).await?;
        let mut target = CreateTargetParams::new("about:blank");
        target.browser_context_id = Some(guard.context.clone());
        let page = within(timeout, "create page", guard.process.browser.new_page(target)).await?;
        let opener = TabOpener { process: guard.process.clone(), context: guard.context.clone() };
        let files_dir = guard.downloads.as_ref().map(|a| a.dir().join(crate::upload::FILES_DIR));
        let events = guard.downloads.as_ref().map(|a| a.events());
        let page = SessionPage::new(page, opener, &self.inner.settings, policy, (files_dir, events)).await?;
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
        let p = match self.inner.settings.endpoints.get(i) {
            Some(endpoint) => crate::remote::connect(endpoint, &self.inner.settings).await?,
            None => BrowserProcess::launch(&self.inner.settings).await?,
        };
        *slot = Some(p.clone());
        Ok(p)
    }

    /// Launches every process now instead of at the first lease, and starts filling the warm pool.
    pub async fn warm_up(&self) -> Result<(), BrowserError> {
        for _ in 0..self.inner.slots.len() {
            self.process().await?;
        }
        self.start_refill();
        Ok(())
    }

    pub fn stats(&self) -> PoolStats {
        let (mut processes, mut unresponsive) = (0, 0);
        for slot in self.inner.slots.iter().filter_map(|s| s.try_lock().ok()) {
            if let Some(p) = slot.as_ref().filter(|p| p.is_alive()) {
                processes += 1;
                unresponsive += usize::from(!p.is_responsive());
            }
        }
        let warm = &self.inner.warm;
        let ready = warm.ready();
        // Slots held by warm contexts (ready or being prepared) are free capacity.
        let held = self.inner.settings.max_sessions.saturating_sub(self.inner.permits.available_permits());
        PoolStats {
            capacity: self.inner.settings.max_sessions,
            in_use: held.saturating_sub(ready + warm.preparing.load(Ordering::SeqCst)),
            warm: ready,
            processes,
            unresponsive,
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

    /// The DevTools floor of a session start, for the benchmarks: a bare context and an about:blank page
    /// made on one of this pool's processes (no egress proxy, no page set-up), timed, then disposed.
    pub async fn bare_context_round_trip(&self) -> Result<std::time::Duration, BrowserError> {
        let process = self.process().await?;
        let timeout = self.inner.settings.cdp_timeout;
        let began = std::time::Instant::now();
        let context = within(
            timeout,
            "create browser context",
            process.browser.create_browser_context(CreateBrowserContextParams::default()),
        )
        .await?;
        let mut target = CreateTargetParams::new("about:blank");
        target.browser_context_id = Some(context.clone());
        let page = within(timeout, "create page", process.browser.new_page(target)).await;
        let took = began.elapsed();
        if let Ok(page) = page.as_ref() {
            let _ = within(timeout, "close page", page.clone().close()).await;
        }
        within(timeout, "dispose browser context", process.browser.dispose_browser_context(context)).await?;
        page.map(|_| took)
    }

    /// Browser contexts open now over all processes: leased, warm and being prepared.
    pub async fn contexts(&self) -> usize {
        let mut n = 0;
        for slot in &self.inner.slots {
            n += slot.lock().await.as_ref().map_or(0, |p| p.contexts.load(Ordering::SeqCst));
        }
        n
    }

    /// Stops the refill, lets the warm contexts go, waits for pending context disposals, then stops
    /// every process.
    pub async fn shutdown(&self) {
        self.inner.warm.stop.cancel();
        self.inner.warm.drain();
        self.inner.tasks.wait().await;
        let mut profiles = Vec::new();
        for slot in &self.inner.slots {
            if let Some(process) = slot.lock().await.take() {
                if let Some(profile) = process.profile() {
                    profiles.push((profile, process.kill()));
                }
            }
        }
        // Dropping the last handle kills Chromium; its profile is gone before the service says it stopped.
        let _ = tokio::task::spawn_blocking(move || {
            for (profile, pids) in profiles {
                crate::process::remove_profile(&profile, &pids);
            }
        })
        .await;
    }
}

/// Runs until the pool is dropped or stopped: tops the pool up whenever woken.
pub(crate) async fn refill_loop(pool: Weak<PoolInner>, wake: Arc<Notify>, stop: CancellationToken) {
    loop {
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let failed = match pool.upgrade() {
            Some(inner) => top_up(BrowserPool { inner }).await,
            None => return,
        };
        if failed {
            // A browser that cannot start is not retried in a tight loop; the next wake or a few seconds.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(2)) => continue,
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = woken => {}
        }
    }
}

/// Prepares contexts one at a time until the target is met or no slot is free; true when one failed.
async fn top_up(pool: BrowserPool) -> bool {
    let target = pool.settings().warm_contexts;
    loop {
        let warm = &pool.inner.warm;
        if warm.stop.is_cancelled() || warm.ready() + warm.preparing.load(Ordering::SeqCst) >= target {
            return false;
        }
        let Ok(permit) = pool.inner.permits.clone().try_acquire_owned() else { return false };
        warm.preparing.fetch_add(1, Ordering::SeqCst);
        let result = pool.replacement(DomainPolicy::default()).await;
        let failed = match result {
            Ok(replacement) if !warm.stop.is_cancelled() => {
                warm.put(Warm { replacement, permit });
                false
            }
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(error = %e, "preparing a warm browser context failed");
                true
            }
        };
        // The context (or the freed slot) is in place before anyone waiting is told.
        warm.preparing.fetch_sub(1, Ordering::SeqCst);
        warm.settled.notify_waiters();
        metrics::gauge!("webpilot_pool_warm").set(warm.ready() as f64);
        if failed {
            return true;
        }
    }
}
