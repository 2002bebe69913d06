//! Whether a new session is recorded: its `recording` parameter, else the service's default
//! (`--record-sessions`), and then only while its user's recordings take less than the storage quota.

use webpilot_core::UserId;
use webpilot_store::Store;

/// Whether a started session is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    /// Not asked for (its `recording`, or the service's default).
    Off,
    /// Recorded.
    On,
    /// Asked for, but its user's recordings already take the whole quota: not recorded.
    OverQuota,
}

/// Decides for a session of `user` that asked `asked` (`None`: the service's `default`), under a
/// per-user `quota` in bytes (`None`: no quota).
pub(crate) async fn decide(
    store: &Store,
    user: &UserId,
    asked: Option<bool>,
    default: bool,
    quota: Option<i64>,
) -> Recording {
    if !asked.unwrap_or(default) {
        return Recording::Off;
    }
    let Some(quota) = quota else { return Recording::On };
    match store.recording_bytes(user).await {
        Ok(used) if used >= quota => Recording::OverQuota,
        Ok(_) => Recording::On,
        Err(e) => {
            // The session itself does not depend on the quota: record, and say why in the log.
            tracing::warn!(error = %e, "a user's recording storage could not be read; recording anyway");
            Recording::On
        }
    }
}
