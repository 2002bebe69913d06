//! The delivery worker: claims due messages from the store's outbox, sends each as a signed POST (10 s
//! timeout, no redirects followed, to the addresses the egress check allowed), and records the attempt:
//! delivered on a 2xx, otherwise retried after the schedule's next wait with the same `webhook-id`, or
//! marked failed when the schedule is spent. At most `per_endpoint` requests go to one endpoint at once,
//! at most `per_user` to one user's endpoints, and at most `in_flight` in all. A message is claimed only
//! once all three have room for it (others stay pending for the next look), so one user's slow receivers
//! hold at most their user's share of a node, never another user's deliveries.

use crate::schedule::RetrySchedule;
use crate::sign::signature_headers;
use crate::target::check_url;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use webpilot_core::egress::AllowEntry;
use webpilot_store::{now_ms, AttemptOutcome, DueMessage, OutboxMessage, Store};
use webpilot_tasks::Tasks;

/// How the worker delivers.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub schedule: RetrySchedule,
    /// The operator's `--egress-allow` entries (the only loopback or private targets allowed).
    pub allow: Arc<[AllowEntry]>,
    pub timeout: Duration,
    /// How often the outbox is looked at.
    pub poll_every: Duration,
    pub per_endpoint: usize,
    /// At most this many requests to one user's endpoints at once (a share below `in_flight`).
    pub per_user: usize,
    pub in_flight: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            schedule: RetrySchedule::default(),
            allow: Arc::from(Vec::new()),
            timeout: Duration::from_secs(10),
            poll_every: Duration::from_millis(500),
            per_endpoint: 4,
            per_user: 4,
            in_flight: 16,
        }
    }
}

/// Starts the worker in `tasks`, its deliveries too; it ends when `tasks` is told to stop (deliveries in
/// flight end on their own, within their timeout).
pub fn spawn_worker(store: Store, config: WorkerConfig, tasks: &Tasks) {
    let worker = Arc::new(Worker { store, config, endpoints: Slots::default(), users: Slots::default() });
    let inner = tasks.clone();
    tasks.spawn("webhook worker", async move {
        let budget = Arc::new(Semaphore::new(worker.config.in_flight.max(1)));
        let mut tick = tokio::time::interval(worker.config.poll_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = inner.stopping() => return,
                _ = tick.tick() => {}
            }
            let free = budget.available_permits();
            if free == 0 {
                continue;
            }
            // Longer than the most a claimed message can wait here (its share of the in-flight budget
            // at its endpoint's concurrency) plus its own timeout, so no other node takes it meanwhile.
            let lease = worker.config.timeout.as_millis() as i64 * (worker.config.in_flight as i64 + 2);
            // More candidates than free slots: those whose user or endpoint is full are passed over.
            let per_user = worker.config.per_user.max(1) as i64 * 2;
            let due = match worker.store.due_webhook_messages(free as i64 * 4, per_user).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the webhook outbox failed");
                    continue;
                }
            };
            for candidate in due {
                let Some(slots) = worker.slots_for(&candidate, &budget) else { continue };
                let message = match worker.store.claim_webhook_message(&candidate.id, lease).await {
                    Ok(Some(message)) => message,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "claiming a webhook message failed");
                        continue;
                    }
                };
                let worker = worker.clone();
                inner.spawn("webhook delivery", async move {
                    worker.deliver(message).await;
                    drop(slots);
                });
            }
        }
    });
}

/// Semaphores by key (an endpoint's id, a user's id), each made with `size` permits on first use.
#[derive(Default)]
struct Slots(Mutex<HashMap<String, Arc<Semaphore>>>);

impl Slots {
    fn try_take(&self, key: &str, size: usize) -> Option<OwnedSemaphorePermit> {
        let mut map = self.0.lock();
        // Idle keys are forgotten, so the map holds only endpoints and users with deliveries in flight.
        map.retain(|_, s| s.available_permits() < size.max(1));
        let slot = map.entry(key.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(size.max(1))));
        slot.clone().try_acquire_owned().ok()
    }
}

/// What one delivery in flight holds: a place of the node's budget, its user's and its endpoint's.
struct Held(#[allow(dead_code)] [OwnedSemaphorePermit; 3]);

struct Worker {
    store: Store,
    config: WorkerConfig,
    /// Each endpoint's deliveries in flight (at most `per_endpoint`).
    endpoints: Slots,
    /// Each user's deliveries in flight (at most `per_user`).
    users: Slots,
}

impl Worker {
    /// The three places a delivery of `due` needs, if all have room now.
    fn slots_for(&self, due: &DueMessage, budget: &Arc<Semaphore>) -> Option<Held> {
        let node = budget.clone().try_acquire_owned().ok()?;
        let user = self.users.try_take(&due.user_id, self.config.per_user)?;
        let endpoint = self.endpoints.try_take(&due.webhook_id, self.config.per_endpoint)?;
        Some(Held([node, user, endpoint]))
    }

    async fn deliver(&self, message: OutboxMessage) {
        let began = Instant::now();
        let (status, error) = match self.send(&message).await {
            Ok(status) => (Some(status), None),
            Err(e) => (None, Some(e)),
        };
        let latency = began.elapsed().as_millis() as i64;
        let delivered = status.is_some_and(|s| (200..300).contains(&s));
        let outcome = if delivered {
            AttemptOutcome::Delivered
        } else {
            match self.config.schedule.next_wait(message.attempts as u64 + 1) {
                Some(wait) => AttemptOutcome::RetryAt(now_ms() + wait.as_millis() as i64),
                None => AttemptOutcome::Failed,
            }
        };
        tracing::info!(
            webhook = %message.webhook_id, message = %message.id, event = %message.event_type,
            attempt = message.attempts + 1, status = ?status, outcome = ?outcome, "webhook attempt"
        );
        if let Err(e) = self.store.record_webhook_attempt(&message, status, error.as_deref(), latency, outcome).await {
            // The lease runs out and the message is tried again: at least once, never lost.
            tracing::warn!(error = %e, "recording a webhook attempt failed");
        }
    }

    /// One POST; the receiver's status, or why there was none.
    async fn send(&self, message: &OutboxMessage) -> Result<u16, String> {
        let target = check_url(&message.url, &self.config.allow).await.map_err(|e| e.to_string())?;
        let mut client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.config.timeout)
            .no_proxy();
        if let Some(domain) = &target.domain {
            client = client.resolve_to_addrs(domain, &target.addrs);
        }
        let client = client.build().map_err(|e| format!("building the HTTP client failed: {e}"))?;
        let timestamp = now_ms() / 1000;
        let mut request = client
            .post(target.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::USER_AGENT, "webpilot-webhooks/1");
        for (name, value) in signature_headers(&message.id, timestamp, &message.body, &message.secrets) {
            request = request.header(name, value);
        }
        match request.body(message.body.clone()).send().await {
            Ok(response) => Ok(response.status().as_u16()),
            Err(e) if e.is_timeout() => Err("the endpoint did not answer within the timeout".into()),
            Err(e) if e.is_connect() => Err("the endpoint refused the connection".into()),
            Err(_) => Err("the request failed".into()),
        }
    }
}
