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
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;
use webpilot_agent::AgentError;
use webpilot_browser::{BrowserError, BrowserLease, BrowserPool, CookieJar, DomainPolicy, Replacement};
use webpilot_core::ErrorCode;

/// Time allowed for one snapshot (the actor waits for it).
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(2);

/// A session's recovery: what it knew about its browser the last time it looked, and how to replace it.
pub(crate) struct Recovery {
    replace: Replace,
    cookies: CookieJar,
    url: Option<String>,
    /// When the next periodic snapshot is due.
    next: Instant,
    every: Duration,
    grace: Duration,
    window: Duration,
}

/// How a lost context is replaced: the pool's [`BrowserPool::replacement`] (a test's stand-in).
type Replace = Arc<dyn Fn(DomainPolicy) -> Pin<Box<dyn Future<Output = Replaced> + Send>> + Send + Sync>;
type Replaced = Result<Replacement, BrowserError>;

/// What a snapshot reads of the session's browser: its lease (or a test's stand-in).
pub(crate) trait Snapshotted {
    fn is_alive(&self) -> bool;
    fn cookies(&self) -> impl Future<Output = Result<CookieJar, BrowserError>> + Send;
    fn url(&self) -> impl Future<Output = Result<String, BrowserError>> + Send;
}

impl Snapshotted for BrowserLease {
    fn is_alive(&self) -> bool {
        BrowserLease::is_alive(self)
    }

    fn cookies(&self) -> impl Future<Output = Result<CookieJar, BrowserError>> + Send {
        BrowserLease::cookies(self)
    }

    fn url(&self) -> impl Future<Output = Result<String, BrowserError>> + Send {
        self.page().url()
    }
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
        let replace: Replace = Arc::new(move |policy| {
            let pool = pool.clone();
            Box::pin(async move { pool.replacement(policy).await })
        });
        Recovery::with(replace, config)
    }

    /// [`Recovery::new`], replacing a lost context with `replace`.
    fn with(replace: Replace, config: &SessionConfig) -> Self {
        Recovery {
            replace,
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
    pub async fn periodic_snapshot(&mut self, lease: &impl Snapshotted) {
        self.snapshot(lease).await;
        self.next = Instant::now() + self.every;
    }

    /// Records the context's cookies and the page's URL, if the browser answers in time.
    pub async fn snapshot(&mut self, lease: &impl Snapshotted) {
        if !lease.is_alive() {
            return;
        }
        match tokio::time::timeout(SNAPSHOT_TIMEOUT, lease.cookies()).await {
            Ok(Ok(jar)) => self.cookies = jar,
            Ok(Err(e)) => tracing::debug!(error = %e, "cookie snapshot failed"),
            Err(_) => tracing::debug!("cookie snapshot timed out"),
        }
        if let Ok(Ok(url)) = tokio::time::timeout(SNAPSHOT_TIMEOUT, lease.url()).await {
            if url.starts_with("http://") || url.starts_with("https://") {
                self.url = Some(url);
            }
        }
    }

    /// Starts asking the pool for a context to replace `lease`'s lost one.
    pub fn attempt(&self, lease: &BrowserLease) -> Attempt {
        self.attempt_for(lease.page().policy().clone())
    }

    /// Starts asking for a context under `policy`.
    fn attempt_for(&self, policy: DomainPolicy) -> Attempt {
        // A bare spawn on purpose: the attempt belongs to the actor's recovery, which drops (and so aborts) it
        // when the session ends; no group outlives it.
        let replace = self.replace.clone();
        let replace = move || replace(policy.clone());
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
    use crate::paused::ends_exactly_at;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

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

    /// A recovery under `config` whose replacements fail (or never come, with `hang`), recording when (ms
    /// after the loss) each attempt began.
    fn recovery(config: &SessionConfig, hang: bool, times: &Arc<Mutex<Vec<u128>>>) -> Recovery {
        let (start, times) = (Instant::now(), times.clone());
        let replace: Replace = Arc::new(move |_policy| {
            times.lock().expect("times").push(start.elapsed().as_millis());
            Box::pin(async move {
                if hang {
                    std::future::pending::<()>().await;
                }
                Err(BrowserError::NoCapacity)
            })
        });
        Recovery::with(replace, config)
    }

    fn config(grace_s: u64, reconnect_s: u64) -> SessionConfig {
        SessionConfig {
            instance_grace_period: Duration::from_secs(grace_s),
            reconnect_window: Duration::from_secs(reconnect_s),
            ..SessionConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_recovery_tries_within_the_shorter_of_its_grace_and_reconnect_window() {
        let times = Arc::new(Mutex::new(Vec::new()));
        let short_grace = recovery(&config(5, 300), false, &times);
        assert_eq!(short_grace.grace_ms(), 5_000);
        let result =
            ends_exactly_at(Duration::from_millis(3_750), short_grace.attempt_for(DomainPolicy::default())).await;
        assert!(matches!(result, Ok(Err(BrowserError::NoCapacity))));
        assert_eq!(*times.lock().expect("times"), [0, 250, 750, 1_750, 3_750], "the next, at 7.75 s, is past 5 s");
        let times = Arc::new(Mutex::new(Vec::new()));
        let short_window = recovery(&config(300, 2), false, &times);
        assert_eq!(short_window.grace_ms(), 300_000);
        let result =
            ends_exactly_at(Duration::from_millis(1_750), short_window.attempt_for(DomainPolicy::default())).await;
        assert!(matches!(result, Ok(Err(BrowserError::NoCapacity))));
        assert_eq!(*times.lock().expect("times"), [0, 250, 750, 1_750]);
        let hanging = recovery(&config(3, 300), true, &times);
        let result = ends_exactly_at(Duration::from_secs(3), hanging.attempt_for(DomainPolicy::default())).await;
        assert!(matches!(result, Ok(Err(BrowserError::Timeout(_)))), "cut off as the grace ends");
    }

    /// A browser whose every read answers after `answers_in`, with the page at `url`.
    struct Browser {
        alive: bool,
        answers_in: Duration,
        url: &'static str,
        reads: AtomicUsize,
    }

    fn browser(answers_in: Duration, url: &'static str) -> Browser {
        Browser { alive: true, answers_in, url, reads: AtomicUsize::new(0) }
    }

    impl Snapshotted for Browser {
        fn is_alive(&self) -> bool {
            self.alive
        }

        fn cookies(&self) -> impl Future<Output = Result<CookieJar, BrowserError>> + Send {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let wait = self.answers_in;
            async move {
                tokio::time::sleep(wait).await;
                Ok(CookieJar::default())
            }
        }

        fn url(&self) -> impl Future<Output = Result<String, BrowserError>> + Send {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let (wait, url) = (self.answers_in, self.url.to_string());
            async move {
                tokio::time::sleep(wait).await;
                Ok(url)
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn snapshots_come_a_period_after_the_last_one_ended_and_each_read_is_cut_at_two_seconds() {
        let start = Instant::now();
        let mut r = recovery(&config(300, 300), false, &Arc::new(Mutex::new(Vec::new())));
        assert_eq!(r.snapshot_due(), start + Duration::from_secs(1), "the first a second after the session opens");
        tokio::time::sleep_until(r.snapshot_due()).await;
        r.periodic_snapshot(&browser(Duration::ZERO, "https://a.example/")).await;
        assert_eq!(r.url.as_deref(), Some("https://a.example/"));
        assert_eq!(r.snapshot_due(), start + Duration::from_secs(6), "then every 5 s");
        tokio::time::sleep_until(r.snapshot_due()).await;
        let slow = browser(Duration::from_millis(1_500), "https://b.example/");
        ends_exactly_at(Duration::from_secs(3), r.periodic_snapshot(&slow)).await;
        assert_eq!(r.url.as_deref(), Some("https://b.example/"));
        assert_eq!(r.snapshot_due(), start + Duration::from_secs(14), "5 s after a snapshot that ended at 9 s");
        tokio::time::sleep_until(r.snapshot_due()).await;
        let hung = browser(Duration::from_secs(3_600), "https://c.example/");
        ends_exactly_at(SNAPSHOT_TIMEOUT * 2, r.periodic_snapshot(&hung)).await;
        assert_eq!(r.url.as_deref(), Some("https://b.example/"), "what it knew is kept");
        assert_eq!(r.snapshot_due(), start + Duration::from_secs(23));
        let blank = browser(Duration::ZERO, "about:blank");
        r.snapshot(&blank).await;
        assert_eq!(r.url.as_deref(), Some("https://b.example/"), "only a web page is reopened");
        tokio::time::sleep_until(r.snapshot_due()).await;
        let dead = Browser { alive: false, ..browser(Duration::ZERO, "https://d.example/") };
        ends_exactly_at(Duration::ZERO, r.periodic_snapshot(&dead)).await;
        assert_eq!(dead.reads.load(Ordering::SeqCst), 0, "nothing is read from a dead browser");
        assert_eq!(r.url.as_deref(), Some("https://b.example/"));
        assert_eq!(r.snapshot_due(), start + Duration::from_secs(23) + Duration::from_secs(5));
    }
}
