//! Session files' bytes and their purge: the blob store they go to (the object store when the node has
//! one, else its own folder `<data dir>/files/…`), and the periodic purge of files older than
//! `--file-retention-hours` (each node drops the rows whose blobs it can delete, with the blobs), after
//! moving at start the bytes it answers for into that blob store.

use crate::StartError;
use std::path::Path;
use std::time::Duration;
use webpilot_blobs::Blobs;
use webpilot_sessions::FileStore;
use webpilot_store::{now_ms, Store};
use webpilot_tasks::Tasks;

/// How often files past their retention are looked for.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// The file store of node `node`: its folder under `data_dir` (made already), and `shared` when given.
pub(crate) fn file_store(
    store: &Store,
    data_dir: &Path,
    shared: Option<Blobs>,
    node: &str,
) -> Result<FileStore, StartError> {
    Ok(FileStore::new(store.clone(), data_dir, shared, node.to_owned())?)
}

/// Moves old files' bytes into the blob store, then purges now and every [`PURGE_EVERY`] until `tasks` is
/// told to stop (a task of `tasks`).
pub(crate) fn spawn(files: FileStore, retention: Duration, tasks: &Tasks) {
    let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    let group = tasks.clone();
    tasks.spawn("file purge", async move {
        // First the bytes this node answers for go where new files go (rows of an older version, or its
        // folder once it has an object store).
        match files.relocate().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(files = n, "session files' bytes moved into the blob store"),
            Err(e) => tracing::warn!(error = %e, "moving session files' bytes into the blob store failed"),
        }
        loop {
            match files.purge(now_ms().saturating_sub(retention_ms)).await {
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
