//! Deactivated accounts lose their live sessions: an account is deactivated by the admin command, often
//! from another process (or another node), so every node looks at the owners of the sessions it holds
//! every few seconds and ends those of a deactivated owner as `terminated`. The requests themselves are
//! refused at once by the API (403 `ACCOUNT_DEACTIVATED`); this closes what needs no request to go on
//! (a running task, the live view, an open socket). Tested end to end in `tests/api/billing.rs`.

use crate::manager::SessionManager;
use std::collections::HashSet;
use std::time::Duration;
use webpilot_core::events::EndReason;
use webpilot_core::UserId;

impl SessionManager {
    /// Looks at the owners of this node's live sessions every `every`, until shutdown, ending the
    /// sessions of those deactivated meanwhile.
    pub fn watch_accounts(&self, every: Duration) {
        let me = self.clone();
        let stop = self.stopping().clone();
        self.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                me.end_deactivated().await;
            }
        });
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
