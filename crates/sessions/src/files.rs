//! A session's files, as a part its actor owns: each finished download is named (the page's suggested
//! name made safe, unique within the session), checked against the session's cap, stored with its bytes,
//! and announced with a `download` event (a refused one is announced too); and the session's stored files
//! are put where its page's file inputs may be given them.

use crate::file_store::FileStore;
use std::path::Path;
use std::time::Duration;
use tokio::sync::broadcast;
use webpilot_browser::{BrowserLease, DownloadOutcome, SessionPage};
use webpilot_core::events::{DownloadEvent, SessionEvent};
use webpilot_core::files::{check_name, mime_for, sanitize, FileSource};
use webpilot_core::{ErrorCode, SessionId, UserId};
use webpilot_store::{FileData, Store};

/// One session's files: where they are stored, under which caps, and whom a download is announced to.
pub(crate) struct Files {
    /// Where the files' bytes go.
    files: FileStore,
    store: Store,
    session: SessionId,
    user: UserId,
    /// The session's file cap (bytes).
    cap: u64,
    /// The user's storage quota (bytes), if any.
    quota: Option<i64>,
    bus: broadcast::Sender<SessionEvent>,
}

/// The MIME type of a `data:` URL (`data:text/plain;base64,...` → `text/plain`).
fn data_url_mime(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("data:")?;
    let mime = rest.split([';', ',']).next()?.trim();
    (mime.contains('/') && mime.len() <= 100).then_some(mime)
}

/// How long a session that ends waits for its downloads still under way.
const DOWNLOAD_GRACE: Duration = Duration::from_secs(10);

impl Files {
    pub fn new(
        files: FileStore,
        store: Store,
        session: SessionId,
        user: UserId,
        cap: u64,
        quota: Option<i64>,
        bus: broadcast::Sender<SessionEvent>,
    ) -> Self {
        Files { files, store, session, user, cap, quota, bus }
    }

    /// Stores the downloads reported or still under way (for up to [`DOWNLOAD_GRACE`]) before the
    /// session's context goes. With `quiet`, it also waits until no download has been under way for that
    /// long: a task's last click may start one whose first event has not come yet (a run-task's end).
    pub async fn settle_downloads(&self, lease: &BrowserLease, quiet: Duration) {
        let deadline = tokio::time::Instant::now() + DOWNLOAD_GRACE;
        let mut calm_since = tokio::time::Instant::now();
        loop {
            let busy = lease.downloads_in_flight() > 0;
            if busy {
                calm_since = tokio::time::Instant::now();
            }
            let calm_until = calm_since + quiet;
            tokio::select! {
                biased;
                outcome = lease.next_download() => {
                    self.on_download(outcome).await;
                    calm_since = tokio::time::Instant::now();
                }
                _ = tokio::time::sleep_until(calm_until), if !busy => return,
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Puts the session's stored files where its page's file inputs may be given them (a file already
    /// there with its size is kept); a failure is logged, and the upload that needs the file fails.
    pub async fn place_files(&self, page: &SessionPage) {
        let Some(dir) = page.files_dir().map(Path::to_path_buf) else { return };
        let store = &self.store;
        let files = match store.list_files(&self.session).await {
            Ok(files) => files,
            Err(e) => {
                tracing::warn!(error = %e, "listing a session's files failed");
                return;
            }
        };
        if let Err(e) = tokio::fs::create_dir_all(&dir).await {
            tracing::warn!(error = %e, "making the session's files directory failed");
            return;
        }
        for f in files.into_iter().filter(|f| check_name(&f.name).is_ok()) {
            let path = dir.join(&f.name);
            let present = tokio::fs::metadata(&path).await.is_ok_and(|m| i64::try_from(m.len()) == Ok(f.bytes));
            if present {
                continue;
            }
            let written = match self.files.content(&self.session, &f).await {
                Ok(Some(content)) => tokio::fs::write(&path, content).await.map_err(|e| e.to_string()),
                Ok(None) => Ok(()), // deleted meanwhile
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = written {
                tracing::warn!(error = %e, "placing a session file for uploads failed");
            }
        }
    }

    pub async fn on_download(&self, outcome: DownloadOutcome) {
        let event = match outcome {
            DownloadOutcome::Refused { suggested, reason } => DownloadEvent::refused(
                format!("{}: {reason}; nothing was kept", sanitize(&suggested)),
                ErrorCode::FileTooLarge,
            ),
            DownloadOutcome::Saved { suggested, url, content } => self.keep(&suggested, &url, &content).await,
        };
        let _ = self.bus.send(SessionEvent::Download(event));
    }

    async fn keep(&self, suggested: &str, url: &str, content: &[u8]) -> DownloadEvent {
        let name = sanitize(suggested);
        let cap = self.cap;
        let store = &self.store;
        let used = match store.session_file_bytes(&self.session).await {
            Ok(n) => u64::try_from(n).unwrap_or(0),
            Err(e) => {
                tracing::error!(error = %e, "reading a session's file bytes failed");
                return DownloadEvent::refused(
                    format!("{name}: the file could not be stored"),
                    ErrorCode::InternalError,
                );
            }
        };
        if used.saturating_add(content.len() as u64) > cap {
            return DownloadEvent::refused(
                format!("{name}: the download passed the session's file cap of {cap} bytes; nothing was kept"),
                ErrorCode::FileTooLarge,
            );
        }
        let quota = self.quota;
        if store.over_storage_quota(&self.user, content.len(), quota).await.unwrap_or(false) {
            let quota = quota.unwrap_or_default();
            return DownloadEvent::refused(
                format!("{name}: the download passed the storage quota of {quota} bytes; nothing was kept"),
                ErrorCode::StorageQuotaExceeded,
            );
        }
        let mime_type = data_url_mime(url).unwrap_or_else(|| mime_for(&name));
        let file = FileData { name: &name, mime_type, source: FileSource::Download, content };
        match self.files.insert(&self.session, &self.user, file).await {
            Ok(r) => {
                tracing::info!(bytes = r.bytes, "a download was stored");
                DownloadEvent::saved(r.name, u64::try_from(r.bytes).unwrap_or(0), r.sha256, r.mime_type)
            }
            Err(e) => {
                tracing::error!(error = %e, "storing a download failed");
                DownloadEvent::refused(format!("{name}: the file could not be stored"), ErrorCode::InternalError)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn data_urls_name_their_type() {
        assert_eq!(super::data_url_mime("data:text/plain;base64,aGk="), Some("text/plain"));
        assert_eq!(super::data_url_mime("data:,hi"), None);
        assert_eq!(super::data_url_mime("blob:http://x/1"), None);
    }
}
