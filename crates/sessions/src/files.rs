//! A session's files, as a part its actor owns: each finished download is named (the page's suggested
//! name made safe, unique within the session), checked against the session's cap, stored with its bytes,
//! and announced with a `download` event (a refused one is announced too); and the session's stored files
//! are put where its page's file inputs may be given them.

use crate::file_store::FileStore;
use std::future::Future;
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
        settle(lease, quiet, |outcome| self.on_download(outcome)).await;
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

/// Where a session's downloads come from: its lease (or a test's stand-in).
pub(crate) trait Downloads {
    /// Downloads begun and not yet handed over.
    fn in_flight(&self) -> usize;
    /// The next finished (or refused) download; never resolves while there is none.
    fn next(&self) -> impl Future<Output = DownloadOutcome> + Send;
}

impl Downloads for BrowserLease {
    fn in_flight(&self) -> usize {
        self.downloads_in_flight()
    }

    fn next(&self) -> impl Future<Output = DownloadOutcome> + Send {
        self.next_download()
    }
}

/// [`Files::settle_downloads`]'s wait: hands each download `downloads` reports to `keep` until none has
/// been under way for `quiet` (looked at every 50 ms), or [`DOWNLOAD_GRACE`] has passed.
async fn settle<D, F, Fut>(downloads: &D, quiet: Duration, mut keep: F)
where
    D: Downloads,
    F: FnMut(DownloadOutcome) -> Fut,
    Fut: Future<Output = ()>,
{
    let deadline = tokio::time::Instant::now() + DOWNLOAD_GRACE;
    let mut calm_since = tokio::time::Instant::now();
    loop {
        let busy = downloads.in_flight() > 0;
        if busy {
            calm_since = tokio::time::Instant::now();
        }
        let calm_until = calm_since + quiet;
        tokio::select! {
            biased;
            outcome = downloads.next() => {
                keep(outcome).await;
                calm_since = tokio::time::Instant::now();
            }
            _ = tokio::time::sleep_until(calm_until), if !busy => return,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = tokio::time::sleep_until(deadline) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paused::{ends_exactly_at, MS};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use tokio::time::Instant;

    #[test]
    fn data_urls_name_their_type() {
        assert_eq!(super::data_url_mime("data:text/plain;base64,aGk="), Some("text/plain"));
        assert_eq!(super::data_url_mime("data:,hi"), None);
        assert_eq!(super::data_url_mime("blob:http://x/1"), None);
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Downloads that begin and end at set times (ms from the start, in the order they end), each handed
    /// over as it ends.
    struct Scripted {
        start: Instant,
        downloads: Vec<(u64, u64)>,
        handed: AtomicUsize,
    }

    impl Scripted {
        fn new(downloads: &[(u64, u64)]) -> Self {
            Scripted { start: Instant::now(), downloads: downloads.to_vec(), handed: AtomicUsize::new(0) }
        }
    }

    impl Downloads for Scripted {
        fn in_flight(&self) -> usize {
            let now = self.start.elapsed();
            let handed = self.handed.load(Ordering::SeqCst);
            self.downloads.iter().skip(handed).filter(|(begins, _)| ms(*begins) <= now).count()
        }

        fn next(&self) -> impl Future<Output = DownloadOutcome> + Send {
            let n = self.handed.load(Ordering::SeqCst);
            let next = self.downloads.get(n).map(|(_, ends)| self.start + ms(*ends));
            async move {
                let Some(ends) = next else { return std::future::pending().await };
                tokio::time::sleep_until(ends).await;
                self.handed.fetch_add(1, Ordering::SeqCst);
                DownloadOutcome::Refused { suggested: format!("file{n}"), reason: "scripted".into() }
            }
        }
    }

    /// Settles `downloads` with `quiet`; which were kept, and when (ms from the start).
    async fn settled(downloads: &Scripted, quiet: Duration) -> Vec<(String, u128)> {
        let kept = Mutex::new(Vec::new());
        settle(downloads, quiet, |outcome| {
            let (DownloadOutcome::Refused { suggested, .. } | DownloadOutcome::Saved { suggested, .. }) = outcome;
            kept.lock().expect("kept").push((suggested, downloads.start.elapsed().as_millis()));
            std::future::ready(())
        })
        .await;
        kept.into_inner().expect("kept")
    }

    #[tokio::test(start_paused = true)]
    async fn with_nothing_under_way_a_session_ends_at_once_or_after_the_quiet() {
        let none = Scripted::new(&[]);
        assert!(ends_exactly_at(Duration::ZERO, settled(&none, Duration::ZERO)).await.is_empty());
        let none = Scripted::new(&[]);
        let kept = ends_exactly_at(Duration::from_secs(1), settled(&none, Duration::from_secs(1))).await;
        assert!(kept.is_empty(), "a second of quiet after a run-task's last step, and nothing came");
    }

    #[tokio::test(start_paused = true)]
    async fn a_download_under_way_is_kept_and_the_quiet_counts_from_it() {
        let one = Scripted::new(&[(0, 3_000)]);
        let kept = ends_exactly_at(ms(3_000), settled(&one, Duration::ZERO)).await;
        assert_eq!(kept, [("file0".to_string(), 3_000)]);
        let one = Scripted::new(&[(0, 3_000)]);
        let kept = ends_exactly_at(ms(4_000), settled(&one, Duration::from_secs(1))).await;
        assert_eq!(kept, [("file0".to_string(), 3_000)], "kept as it ended, then a second of quiet");
    }

    #[tokio::test(start_paused = true)]
    async fn a_download_that_begins_within_the_quiet_is_waited_for() {
        let late = Scripted::new(&[(500, 2_000), (2_600, 2_900)]);
        let kept = ends_exactly_at(ms(3_900), settled(&late, Duration::from_secs(1))).await;
        assert_eq!(kept, [("file0".to_string(), 2_000), ("file1".to_string(), 2_900)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_download_still_under_way_is_given_up_at_the_grace() {
        let endless = Scripted::new(&[(0, 60_000)]);
        let kept = ends_exactly_at(DOWNLOAD_GRACE, settled(&endless, Duration::from_secs(1))).await;
        assert!(kept.is_empty(), "given up after {DOWNLOAD_GRACE:?}");
        // One that ends a millisecond before the grace is kept.
        let just = Scripted::new(&[(0, 10_000 - 1)]);
        let kept = ends_exactly_at(DOWNLOAD_GRACE, settled(&just, Duration::from_secs(1))).await;
        assert_eq!(kept, [("file0".to_string(), (DOWNLOAD_GRACE - MS).as_millis())]);
    }
}
