//! Browser instance loss and recovery. While the browser lives, the actor keeps a snapshot of the
//! context's cookies and the page's URL. When the browser dies: `instance:disconnected` is announced
//! (with the spec's grace period), the running task fails with `INSTANCE_UNAVAILABLE`, a new context is
//! taken from the pool (which relaunches a dead Chromium) with backoff inside the reconnect window, the
//! snapshot's cookies are set in it and its URL opened, and `instance:reconnected` is announced. While
//! this runs the session still answers: `terminate` ends it, new tasks and input get
//! `INSTANCE_UNAVAILABLE`. Without a replacement the session ends as `instance_lost`.

use crate::actor::{Command, SessionActor};
use crate::runner;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;
use webpilot_agent::AgentError;
use webpilot_browser::{BrowserError, BrowserPool, CookieJar, DomainPolicy, Replacement};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::{ApiError, ErrorCode};

/// What the session knew about its browser the last time it looked.
#[derive(Default)]
pub(crate) struct Snapshot {
    pub cookies: CookieJar,
    pub url: Option<String>,
}

/// Time allowed for one snapshot (the actor waits for it).
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(2);

enum Wake {
    Replaced(Result<Replacement, BrowserError>),
    Command(Option<Command>),
    End(EndReason),
}

fn unavailable() -> ApiError {
    ApiError::new(
        ErrorCode::InstanceUnavailable,
        "the browser instance was lost and is being replaced; retry after instance:reconnected",
    )
}

pub(crate) fn instance_lost_error() -> AgentError {
    AgentError::new(ErrorCode::InstanceUnavailable, "the browser instance was lost")
}

/// Asks the pool for a new context until one comes or the window closes (backoff 250 ms doubling, at
/// most 4 s between attempts).
async fn reacquire(pool: BrowserPool, policy: DomainPolicy, window: Duration) -> Result<Replacement, BrowserError> {
    let deadline = Instant::now() + window;
    let mut delay = Duration::from_millis(250);
    let mut attempt = 1u32;
    loop {
        let result = match tokio::time::timeout_at(deadline, pool.replacement(policy.clone())).await {
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

impl SessionActor {
    /// Records the context's cookies and the page's URL, if the browser answers in time.
    pub(crate) async fn take_snapshot(&mut self) {
        if !self.lease.is_alive() {
            return;
        }
        match tokio::time::timeout(SNAPSHOT_TIMEOUT, self.lease.cookies()).await {
            Ok(Ok(jar)) => self.snapshot.cookies = jar,
            Ok(Err(e)) => tracing::debug!(error = %e, "cookie snapshot failed"),
            Err(_) => tracing::debug!("cookie snapshot timed out"),
        }
        if let Ok(Ok(url)) = tokio::time::timeout(SNAPSHOT_TIMEOUT, self.lease.page().url()).await {
            if url.starts_with("http://") || url.starts_with("https://") {
                self.snapshot.url = Some(url);
            }
        }
    }

    /// Handles the loss of the browser; returns an end reason when the session cannot go on.
    pub(crate) async fn recover(&mut self) -> Option<EndReason> {
        let grace_ms = self.shared.config.instance_grace_period.as_millis() as u64;
        tracing::warn!(pid = ?self.lease.pid(), "browser instance lost");
        let _ = self.bus.send(SessionEvent::InstanceDisconnected { grace_period_ms: grace_ms });
        if let Some(mut task) = self.task.take() {
            let result = runner::halt(&mut task).await.map_err(|_| instance_lost_error());
            self.record(&mut task, result).await;
            if let Err(e) = self.apply(webpilot_core::state::Input::TaskFinished).await {
                tracing::warn!(error = %e, "task end in an unexpected state");
            }
            if task.terminate_on_completion || self.terminate_on_completion {
                // The session existed for that task only: nothing to recover for.
                return Some(EndReason::InstanceLost);
            }
        }
        let window = self.shared.config.reconnect_window.min(self.shared.config.instance_grace_period);
        let policy = self.lease.page().policy().clone();
        // Aborted if the session ends first.
        let mut attempts = AbortOnDropHandle::new(tokio::spawn(reacquire(self.shared.pool.clone(), policy, window)));
        let shutdown = self.shared.shutdown.clone();
        loop {
            let wake = tokio::select! {
                r = &mut attempts => Wake::Replaced(r.unwrap_or(Err(BrowserError::InstanceLost))),
                cmd = self.rx.recv() => Wake::Command(cmd),
                _ = tokio::time::sleep_until(self.expires_at) => Wake::End(EndReason::Expired),
                _ = shutdown.cancelled() => Wake::End(EndReason::Terminated),
            };
            match wake {
                Wake::Replaced(Ok(replacement)) => {
                    let identity = self.lease.page().identity();
                    self.lease.install(replacement);
                    if let Err(e) = self.lease.page().set_identity(identity).await {
                        tracing::warn!(error = %e, "giving the replacement browser the session's identity failed");
                    }
                    self.pages.send_replace(self.lease.page().clone());
                    self.restore().await;
                    crate::profiles::follow_replacement(self.profile.as_mut(), &self.lease).await;
                    self.last_activity = Instant::now();
                    let _ = self.bus.send(SessionEvent::InstanceReconnected);
                    tracing::info!(pid = ?self.lease.pid(), "browser instance replaced");
                    return None;
                }
                Wake::Replaced(Err(e)) => {
                    tracing::warn!(error = %e, "no replacement browser instance");
                    return Some(EndReason::InstanceLost);
                }
                Wake::Command(None) => return Some(EndReason::Terminated),
                Wake::Command(Some(cmd)) => {
                    if let Some(end) = self.handle_while_recovering(cmd).await {
                        return Some(end);
                    }
                }
                Wake::End(reason) => return Some(reason),
            }
        }
    }

    /// State commands and guardrail answers behave as usual (there is no task now); work that needs the
    /// browser is refused until it is back.
    async fn handle_while_recovering(&mut self, cmd: Command) -> Option<EndReason> {
        match cmd {
            Command::NewTask { reply, .. } => {
                let _ = reply.send(Err(unavailable()));
                None
            }
            Command::Interaction { reply, .. } => {
                let _ = reply.send(Err(unavailable()));
                None
            }
            other => self.handle(other).await,
        }
    }

    /// Puts the snapshot back into the new context: its cookies, then its last page.
    async fn restore(&mut self) {
        match self.lease.set_cookies(&self.snapshot.cookies).await {
            Ok(()) => tracing::info!(cookies = self.snapshot.cookies.len(), "cookies restored"),
            Err(e) => tracing::warn!(error = %e, "restoring cookies failed"),
        }
        if let Some(url) = self.snapshot.url.clone() {
            if let Err(e) = self.lease.page().goto(&url).await {
                tracing::warn!(error = %e, "reopening the last page failed");
            }
        }
    }
}
