//! The warm pool: contexts prepared ahead (page, viewport, scripts, egress proxy, tab handling all set)
//! so a session start only takes one and applies its policy. Each warm context holds a capacity slot,
//! so the pool never has more contexts than `max_sessions`; one is handed to one session only, never
//! back. A background task (`pool.rs`: `refill_loop`) refills it after each lease and each release.

use crate::lease::Replacement;

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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
        let mut ready = self.ready.lock();
        while let Some(w) = ready.pop_front() {
            if w.replacement.is_usable() {
                return Some(w);
            }
            tracing::debug!("dropping a warm context that is no longer usable");
        }
        None
    }

    pub fn ready(&self) -> usize {
        self.ready.lock().len()
    }

    pub fn put(&self, warm: Warm) {
        let mut ready = self.ready.lock();
        ready.push_back(warm);
    }

    /// Lets every ready context go (their contexts are disposed, their slots freed).
    pub fn drain(&self) -> usize {
        let drained: Vec<Warm> = self.ready.lock().drain(..).collect();
        drained.len()
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
