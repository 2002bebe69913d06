//! The warm pool: contexts prepared ahead (page, viewport, scripts, egress proxy, tab handling all set)
//! so a session start only takes one and applies its policy. Each warm context holds a capacity slot,
//! so the pool never has more contexts than `max_sessions`; one is handed to one session only, never
//! back. A background task refills the pool after each lease and each release.

use crate::lease::Replacement;
use crate::pool::{BrowserPool, PoolInner};
use crate::DomainPolicy;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

/// A ready context and the slot it holds.
pub(crate) struct Warm {
    pub replacement: Replacement,
    pub permit: OwnedSemaphorePermit,
}

/// The ready contexts and the bookkeeping lease and refill share.
#[derive(Default)]
pub(crate) struct WarmPool {
    ready: Mutex<VecDeque<Warm>>,
    /// Warm contexts being prepared now (each already holds its slot).
    pub preparing: AtomicUsize,
    /// Wakes the refill task: a context was taken or a slot given back.
    pub wake: Arc<Notify>,
    /// Session starts waiting for a warm context being prepared.
    pub waiting: AtomicUsize,
    /// Tells waiting leases that a preparation ended (with a context or a free slot).
    pub settled: Notify,
    pub stop: CancellationToken,
}

impl WarmPool {
    /// The oldest usable ready context; unusable ones (dead process, crashed page) are let go.
    pub fn take(&self) -> Option<Warm> {
        let mut ready = self.ready.lock().ok()?;
        while let Some(w) = ready.pop_front() {
            if w.replacement.is_usable() {
                return Some(w);
            }
            tracing::debug!("dropping a warm context that is no longer usable");
        }
        None
    }

    pub fn ready(&self) -> usize {
        self.ready.lock().map(|r| r.len()).unwrap_or(0)
    }

    fn put(&self, warm: Warm) {
        if let Ok(mut ready) = self.ready.lock() {
            ready.push_back(warm);
        }
    }

    /// Lets every ready context go (their contexts are disposed, their slots freed).
    pub fn drain(&self) -> usize {
        let drained: Vec<Warm> = self.ready.lock().map(|mut r| r.drain(..).collect()).unwrap_or_default();
        drained.len()
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

/// Counts one waiting session start while it lives.
pub(crate) struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    pub fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
