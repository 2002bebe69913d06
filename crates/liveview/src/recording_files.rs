//! The names of a recording's files: in its folder under the recording node's data directory, and in
//! the object store once uploaded (`recordings/<sessionId>/…`); and their removal from either.

use std::path::Path;
use webpilot_blobs::Blobs;

/// The video (VP8 in WebM).
pub const VIDEO_FILE: &str = "video.webm";
/// The finished timeline (a JSON list); a folder may instead hold the lines written before a crash.
pub use crate::timeline::EVENTS_FILE;

/// The object store's name for `file` of the recording of `session`.
pub fn blob(session: &str, file: &str) -> String {
    format!("{}/{file}", blob_folder(session))
}

/// The object store's folder of the recording of `session` (everything under it is the recording's).
pub fn blob_folder(session: &str) -> String {
    format!("recordings/{session}")
}

/// Removes the files of the recording of `session`: its folder under `root`, or, when they were uploaded,
/// its objects in `blobs`. Failures are logged (the recording's row is gone by then).
pub async fn remove(root: &Path, blobs: Option<&Blobs>, session: &str, in_object_store: bool) {
    if !in_object_store {
        remove_folder(&root.join(session)).await;
        return;
    }
    let Some(blobs) = blobs else {
        tracing::warn!(session, "a recording's files are in an object store this node is not configured with");
        return;
    };
    if let Err(e) = blobs.delete_all(&blob_folder(session)).await {
        tracing::warn!(session, error = %e, "a recording's files could not be removed from the object store");
    }
}

/// Removes a recording's folder; one already gone is fine.
pub async fn remove_folder(dir: &Path) {
    if let Err(e) = tokio::fs::remove_dir_all(dir).await {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(error = %e, "a recording's folder could not be removed");
        }
    }
}
