//! Deactivated accounts lose their live sessions: an account is deactivated by the admin command, often
//! from another process (or another node), so every node looks at the owners of the sessions it holds
//! every few seconds and ends those of a deactivated owner as `terminated`. The requests themselves are
//! refused at once by the API (403 `ACCOUNT_DEACTIVATED`); this closes what needs no request to go on
//! (a running task, the live view, an open socket). Tested end to end in `tests/api/billing.rs`.

use crate::manager::SessionManager;
use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use webpilot_core::events::EndReason;
use webpilot_core::UserId;

impl SessionManager {
    /// Looks at the owners of this node's live sessions every `every`, until shutdown, ending the
    /// sessions of those deactivated meanwhile.
    pub fn watch_accounts(&self, every: Duration) {
        let me = self.clone();
        let stop = self.stopping().clone();
        self.spawn("account watch", async move { every_until_stopped(every, &stop, || me.end_deactivated()).await });
    }

    /// Ends the live sessions of owners whose account is deactivated; returns how many ended.
    pub async fn end_deactivated(&self) -> usize {
        let owners: HashSet<UserId> = self.owners();
        let mut ended = 0;
        for owner in owners {
            match self.store().get_user(&owner).await {
                Ok(Some(user)) if user.is_active() => {}
                // A user that no longer exists is as gone as a deactivated one.
                Ok(_) => {
                    tracing::info!(user = %owner, "ending the sessions of a deactivated account");
                    ended += self.end_sessions_of(&owner, EndReason::Terminated).await;
                }
                Err(e) => tracing::warn!(error = %e, "checking whether a session owner is still active failed"),
            }
        }
        ended
    }
}

/// Runs `look` at once and then every `every` (one that runs late delays the next, none is skipped or
/// run twice to catch up) until `stop` is cancelled.
async fn every_until_stopped<Fut: Future>(every: Duration, stop: &CancellationToken, mut look: impl FnMut() -> Fut) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        look().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paused::ends_exactly_at;
    use std::sync::{Arc, Mutex};
    use tokio::time::{sleep, Instant};

    /// A look that takes `takes` (ms, in turn; then none), recording when (ms from the start) each began.
    fn looks(takes: Vec<u64>, times: &Arc<Mutex<Vec<u128>>>) -> impl FnMut() -> tokio::time::Sleep {
        let (start, times, mut takes) = (Instant::now(), times.clone(), takes.into_iter());
        move || {
            times.lock().expect("times").push(start.elapsed().as_millis());
            sleep(Duration::from_millis(takes.next().unwrap_or(0)))
        }
    }

    /// Cancels `stop` after `after`, then waits forever.
    async fn stop_after(after: Duration, stop: &CancellationToken) {
        sleep(after).await;
        stop.cancel();
        std::future::pending::<()>().await
    }

    #[tokio::test(start_paused = true)]
    async fn owners_are_looked_at_at_once_then_every_period_until_shutdown() {
        let (stop, times) = (CancellationToken::new(), Arc::new(Mutex::new(Vec::new())));
        let watching = async {
            tokio::select! {
                () = every_until_stopped(Duration::from_secs(5), &stop, looks(Vec::new(), &times)) => {}
                () = stop_after(Duration::from_millis(12_500), &stop) => {}
            }
        };
        ends_exactly_at(Duration::from_millis(12_500), watching).await;
        assert_eq!(*times.lock().expect("times"), [0, 5_000, 10_000], "stopped at once, not at the next look");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_look_delays_the_next_without_a_burst_to_catch_up() {
        let (stop, times) = (CancellationToken::new(), Arc::new(Mutex::new(Vec::new())));
        // The second look hangs on the store for 12 s (past two periods).
        let watching = async {
            tokio::select! {
                () = every_until_stopped(Duration::from_secs(5), &stop, looks(vec![0, 12_000], &times)) => {}
                () = stop_after(Duration::from_millis(26_000), &stop) => {}
            }
        };
        ends_exactly_at(Duration::from_secs(26), watching).await;
        assert_eq!(*times.lock().expect("times"), [0, 5_000, 17_000, 22_000], "one look as the slow one ends");
    }
}
