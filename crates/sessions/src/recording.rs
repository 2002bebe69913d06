//! Whether a new session is recorded: its `recording` parameter, else the service's default
//! (`--record-sessions`), and then only while its user's recordings take less than their quota, and its
//! files and recordings less than the storage quota.

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

/// The per-user quotas a recording is held to (bytes; `None`: none).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Quotas {
    /// What the user's recordings may take (`--recording-quota`).
    pub recordings: Option<i64>,
    /// What the user's files and recordings may take together (`--storage-quota`).
    pub storage: Option<i64>,
}

/// Decides for a session of `user` that asked `asked` (`None`: the service's `default`), under the user's
/// `quotas`.
pub(crate) async fn decide(
    store: &Store,
    user: &UserId,
    asked: Option<bool>,
    default: bool,
    quotas: Quotas,
) -> Recording {
    if !asked.unwrap_or(default) {
        return Recording::Off;
    }
    if quotas.recordings.is_none() && quotas.storage.is_none() {
        return Recording::On;
    }
    // The recordings' bytes are read once and serve both quotas.
    let over = async {
        let recorded = store.recording_bytes(user).await?;
        if quotas.recordings.is_some_and(|quota| recorded >= quota) {
            return Ok(true);
        }
        match quotas.storage {
            Some(quota) => Ok::<bool, webpilot_store::StoreError>(
                store.user_file_bytes(user).await?.saturating_add(recorded) >= quota,
            ),
            None => Ok(false),
        }
    };
    match over.await {
        Ok(true) => Recording::OverQuota,
        Ok(false) => Recording::On,
        Err(e) => {
            // The session itself does not depend on the quota: record, and say why in the log.
            tracing::warn!(error = %e, "a user's recording storage could not be read; recording anyway");
            Recording::On
        }
    }
}
