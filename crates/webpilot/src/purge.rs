//! The periodic purge of session files older than `--file-retention-hours` (any node may run it: the
//! delete is one statement, and running it twice drops nothing more).

use std::time::Duration;
use webpilot_store::{now_ms, Store};
use webpilot_tasks::Tasks;

/// How often files past their retention are looked for.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// Purges now and every [`PURGE_EVERY`] until `tasks` is told to stop (a task of `tasks`).
pub(crate) fn spawn(store: Store, retention: Duration, tasks: &Tasks) {
    let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    let group = tasks.clone();
    tasks.spawn("file purge", async move {
        loop {
            match store.purge_files(now_ms().saturating_sub(retention_ms)).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(files = n, "session files past their retention purged"),
                Err(e) => tracing::warn!(error = %e, "purging session files failed"),
            }
            tokio::select! {
                _ = group.stopping() => return,
                _ = tokio::time::sleep(PURGE_EVERY) => {}
            }
        }
    });
}
