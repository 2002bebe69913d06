//! Browser instance loss and recovery, as a part the session actor owns. While the browser lives, it
//! keeps a snapshot of the context's cookies and the page's URL. When the browser dies, the actor
//! announces `instance:disconnected` (with the spec's grace period) and fails the running task with
//! `INSTANCE_UNAVAILABLE`; an [`Attempt`] takes a new context from the pool (which relaunches a dead
//! Chromium) with backoff inside the reconnect window; [`Recovery::install`] puts it in the lease, with
//! the session's identity, the snapshot's cookies and its URL. While this runs the session still answers
//! (the actor's loop): `terminate` ends it, new tasks and input get `INSTANCE_UNAVAILABLE`. Without a
//! replacement the session ends as `instance_lost`.

use crate::config::SessionConfig;
use crate::error::SessionError;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;
use webpilot_agent::AgentError;
use webpilot_browser::{BrowserError, BrowserLease, BrowserPool, CookieJar, Replacement};
use webpilot_core::ErrorCode;

/// Time allowed for one snapshot (the actor waits for it).
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(2);

/// A session's recovery: what it knew about its browser the last time it looked, and how to replace it.
pub(crate) struct Recovery {
    pool: BrowserPool,
    cookies: CookieJar,
    url: Option<String>,
    /// When the next periodic snapshot is due.
    next: Instant,
    every: Duration,
    grace: Duration,
    window: Duration,
}

/// The replacement attempts under way (aborted if dropped: the session ended first).
pub(crate) type Attempt = AbortOnDropHandle<Result<Replacement, BrowserError>>;

pub(crate) fn unavailable() -> SessionError {
    SessionError::new(
        ErrorCode::InstanceUnavailable,
        "the browser instance was lost and is being replaced; retry after instance:reconnected",
    )
}

pub(crate) fn instance_lost_error() -> AgentError {
    AgentError::new(ErrorCode::InstanceUnavailable, "the browser instance was lost")
}

impl Recovery {
    /// The first snapshot is due a second after the session opens.
    pub fn new(pool: BrowserPool, config: &SessionConfig) -> Self {
        Recovery {
            pool,
            cookies: CookieJar::default(),
            url: None,
            next: Instant::now() + Duration::from_secs(1),
            every: config.snapshot_every,
            grace: config.instance_grace_period,
            window: config.reconnect_window.min(config.instance_grace_period),
        }
    }

    /// When the next periodic snapshot is due.
    pub fn snapshot_due(&self) -> Instant {
        self.next
    }

    /// The grace period `instance:disconnected` announces (ms).
    pub fn grace_ms(&self) -> u64 {
        u64::try_from(self.grace.as_millis()).unwrap_or(u64::MAX)
    }

    /// The periodic snapshot: taken now, the next one due a period later.
    pub async fn periodic_snapshot(&mut self, lease: &BrowserLease) {
        self.snapshot(lease).await;
        self.next = Instant::now() + self.every;
    }

    /// Records the context's cookies and the page's URL, if the browser answers in time.
    pub async fn snapshot(&mut self, lease: &BrowserLease) {
        if !lease.is_alive() {
            return;
        }
        match tokio::time::timeout(SNAPSHOT_TIMEOUT, lease.cookies()).await {
            Ok(Ok(jar)) => self.cookies = jar,
            Ok(Err(e)) => tracing::debug!(error = %e, "cookie snapshot failed"),
            Err(_) => tracing::debug!("cookie snapshot timed out"),
        }
        if let Ok(Ok(url)) = tokio::time::timeout(SNAPSHOT_TIMEOUT, lease.page().url()).await {
            if url.starts_with("http://") || url.starts_with("https://") {
                self.url = Some(url);
            }
        }
    }

    /// Starts asking the pool for a context to replace `lease`'s lost one.
    pub fn attempt(&self, lease: &BrowserLease) -> Attempt {
        let policy = lease.page().policy().clone();
        // A bare spawn on purpose: the attempt belongs to the actor's recovery, which drops (and so aborts) it
        // when the session ends; no group outlives it.
        let pool = self.pool.clone();
        let replace = move || {
            let (pool, policy) = (pool.clone(), policy.clone());
            async move { pool.replacement(policy).await }
        };
        AbortOnDropHandle::new(tokio::spawn(reacquire(replace, self.window)))
    }

    /// Puts `replacement` into `lease`, with the session's identity.
    pub async fn install(&self, lease: &mut BrowserLease, replacement: Replacement) {
        let identity = lease.page().identity();
        lease.install(replacement);
        if let Err(e) = lease.page().set_identity(identity).await {
            tracing::warn!(error = %e, "giving the replacement browser the session's identity failed");
        }
    }

    /// Puts the snapshot back into the new context: its cookies, then its last page.
    pub async fn restore(&self, lease: &BrowserLease) {
        match lease.set_cookies(&self.cookies).await {
            Ok(()) => tracing::info!(cookies = self.cookies.len(), "cookies restored"),
            Err(e) => tracing::warn!(error = %e, "restoring cookies failed"),
        }
        if let Some(url) = &self.url {
            if let Err(e) = lease.page().goto(url).await {
                tracing::warn!(error = %e, "reopening the last page failed");
            }
        }
    }
}

/// Asks for a new context (`replace`: the pool's) until one comes or the window closes (backoff 250 ms
/// doubling, at most 4 s between attempts).
async fn reacquire<R, F, Fut>(mut replace: F, window: Duration) -> Result<R, BrowserError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<R, BrowserError>>,
{
    let deadline = Instant::now() + window;
    let mut delay = Duration::from_millis(250);
    let mut attempt = 1u32;
    loop {
        let result = match tokio::time::timeout_at(deadline, replace()).await {
            Ok(r) => r,
            Err(_) => Err(BrowserError::Timeout("replace the browser instance")),
        };
        match result {
            Ok(r) => return Ok(r),
            Err(e) => {
                tracing::warn!(attempt, error = %e, "replacing the browser instance failed");
                if Instant::now() + delay >= deadline {
                    return Err(e);
                }
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(4));
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A replacement that fails `failures` times, recording when (ms after the loss) each attempt began.
    fn failing(
        failures: usize,
        times: &Arc<Mutex<Vec<u128>>>,
    ) -> impl FnMut() -> std::future::Ready<Result<u32, BrowserError>> {
        let (start, times) = (Instant::now(), times.clone());
        move || {
            let mut times = times.lock().expect("times");
            times.push(start.elapsed().as_millis());
            let n = times.len();
            std::future::ready(if n > failures { Ok(7) } else { Err(BrowserError::NoCapacity) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn replacement_attempts_back_off_and_stop_before_the_window_closes() {
        let times = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let result = reacquire(failing(usize::MAX, &times), Duration::from_secs(10)).await;
        assert!(matches!(result, Err(BrowserError::NoCapacity)), "the last failure is reported");
        // 250 ms doubling, at most 4 s apart; the next (at 11.75 s) would be past the 10 s window.
        assert_eq!(*times.lock().expect("times"), [0, 250, 750, 1750, 3750, 7750]);
        assert_eq!(start.elapsed(), Duration::from_millis(7750), "it gives up at once, without waiting");
    }

    #[tokio::test(start_paused = true)]
    async fn a_replacement_that_comes_is_taken_at_once() {
        let times = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let result = reacquire(failing(2, &times), Duration::from_secs(300)).await;
        assert!(matches!(result, Ok(7)));
        assert_eq!(*times.lock().expect("times"), [0, 250, 750]);
        assert_eq!(start.elapsed(), Duration::from_millis(750));
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_that_hangs_is_cut_off_when_the_window_closes() {
        let start = Instant::now();
        let hanging = || std::future::pending::<Result<u32, BrowserError>>();
        let result = reacquire(hanging, Duration::from_secs(3)).await;
        assert!(matches!(result, Err(BrowserError::Timeout(_))));
        assert_eq!(start.elapsed(), Duration::from_secs(3), "exactly at the window's end");
    }
}
