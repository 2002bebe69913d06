//! A context's downloads: Chromium saves them (`allowAndName`, named by guid) into a directory of the
//! context's own inside the browser profile, and reports them with `Browser.downloadWillBegin` /
//! `Browser.downloadProgress`. A watcher task keeps the ones of its context (a download's frame names its
//! target, whose context is asked for), cancels any that passes a size cap, and hands each finished file's
//! bytes to the session (the file is removed from disk at once, so no partial or finished file stays).
//! DevTools clients that enabled download events hear of each download of the context: at its begin, or,
//! for a frame that is no target of its own (a same-origin iframe), begin and end together once its file
//! is found in the context's directory.

use crate::error::{within, BrowserError};
use crate::process::BrowserProcess;
use crate::sandbox::RunAs;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, CancelDownloadParams, DownloadProgressState, EventDownloadProgress, EventDownloadWillBegin,
    SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::target::{GetTargetInfoParams, TargetId};
use futures::StreamExt;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, Mutex};
use tokio::task::JoinHandle;

/// Size caps of downloads, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownloadLimits {
    pub per_file: u64,
    /// Over every download of one context.
    pub per_session: u64,
}

/// What became of one download of the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownloadOutcome {
    /// Finished: the page's suggested name, the URL and the bytes.
    Saved { suggested: String, url: String, content: Vec<u8> },
    /// Cancelled (or dropped) because it passed a cap; nothing of it is kept.
    Refused { suggested: String, reason: String },
}

/// The context's download directory and the watcher reporting into `rx`; both go when dropped.
pub(crate) struct DownloadArea {
    _dir: tempfile::TempDir,
    rx: Mutex<mpsc::UnboundedReceiver<DownloadOutcome>>,
    watcher: JoinHandle<()>,
    /// Downloads begun and not yet finished, cancelled or refused.
    in_flight: Arc<AtomicUsize>,
    /// The context's `Browser.downloadWillBegin` / `downloadProgress` events (CDP text) for DevTools clients.
    events: broadcast::Sender<String>,
}

impl Drop for DownloadArea {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl DownloadArea {
    /// Downloads begun and not yet reported.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// The context's download events as a DevTools client sees them (`relay`).
    pub(crate) fn events(&self) -> broadcast::Sender<String> {
        self.events.clone()
    }

    /// The context's directory (where files set on the page's file inputs are put too).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// The next finished or refused download (pending while there is none, and forever once the
    /// watcher ended with its browser).
    pub async fn next(&self) -> DownloadOutcome {
        match self.rx.lock().await.recv().await {
            Some(outcome) => outcome,
            None => std::future::pending().await,
        }
    }
}

/// Lets `context` download into a directory of its own and starts its watcher; for a remote browser
/// (whose disk this service cannot read) downloads stay denied and there is no area.
pub(crate) async fn open(
    process: &Arc<BrowserProcess>,
    context: &BrowserContextId,
    run_as: Option<RunAs>,
    limits: DownloadLimits,
    timeout: Duration,
) -> Result<Option<DownloadArea>, BrowserError> {
    let Some(profile) = process.profile() else {
        let mut deny = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny);
        deny.browser_context_id = Some(context.clone());
        within(timeout, "deny downloads", process.browser.execute(deny)).await?;
        return Ok(None);
    };
    let fail = |e: std::io::Error| BrowserError::Launch(format!("download directory: {e}"));
    let dir = tempfile::Builder::new().prefix("downloads-").tempdir_in(&profile).map_err(fail)?;
    if let Some(who) = run_as {
        crate::sandbox::give(dir.path(), who)?;
    }
    // Listening first: no event of this context is missed.
    let began = process.browser.event_listener::<EventDownloadWillBegin>().await?;
    let progress = process.browser.event_listener::<EventDownloadProgress>().await?;
    let (tx, rx) = mpsc::unbounded_channel();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let (events, _) = broadcast::channel(64);
    let watch = Watch {
        events: events.clone(),
        announced: HashSet::new(),
        in_flight: in_flight.clone(),
        process: process.clone(),
        context: context.clone(),
        dir: dir.path().to_path_buf(),
        limits,
        timeout,
        used: 0,
        tracked: HashMap::new(),
        unclaimed: Unclaimed::default(),
        tx,
    };
    let watcher = webpilot_tasks::spawn_owned("download watcher", watch.run(began, progress));
    let mut allow = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::AllowAndName);
    allow.browser_context_id = Some(context.clone());
    allow.download_path = Some(dir.path().display().to_string());
    allow.events_enabled = Some(true);
    within(timeout, "set the download behaviour", process.browser.execute(allow)).await?;
    Ok(Some(DownloadArea { _dir: dir, rx: Mutex::new(rx), watcher, in_flight, events }))
}

/// A download begun in (or maybe in) this context.
struct Tracked {
    suggested: String,
    url: String,
    /// The frame's target is of this context; false when it could not be told (a same-process frame):
    /// then the file's presence in this context's directory decides, at its end.
    sure: bool,
    frame: String,
}

struct Watch {
    process: Arc<BrowserProcess>,
    context: BrowserContextId,
    dir: PathBuf,
    limits: DownloadLimits,
    timeout: Duration,
    /// Bytes of this context's downloads kept so far.
    used: u64,
    tracked: HashMap<String, Tracked>,
    unclaimed: Unclaimed,
    tx: mpsc::UnboundedSender<DownloadOutcome>,
    in_flight: Arc<AtomicUsize>,
    /// What DevTools clients of the session are told (`DownloadArea::events`).
    events: broadcast::Sender<String>,
    /// Downloads whose begin was told to them, so their progress is told too.
    announced: HashSet<String>,
}

impl Watch {
    async fn run(
        mut self,
        mut began: impl futures::Stream<Item = Arc<EventDownloadWillBegin>> + Unpin,
        mut progress: impl futures::Stream<Item = Arc<EventDownloadProgress>> + Unpin,
    ) {
        loop {
            tokio::select! {
                // Begins first: a begin and its progress, both read, are handled in their order.
                biased;
                Some(e) = began.next() => self.began(&e).await,
                Some(e) = progress.next() => self.progressed(&e).await,
                else => return,
            }
            // Counted after the outcome was sent: a reader seeing 0 finds every outcome queued.
            self.in_flight.store(self.tracked.values().filter(|t| t.sure).count(), Ordering::SeqCst);
        }
    }

    /// Bytes one more download may have.
    fn allowed(&self) -> u64 {
        self.limits.per_file.min(self.limits.per_session.saturating_sub(self.used))
    }

    async fn began(&mut self, e: &EventDownloadWillBegin) {
        let target = GetTargetInfoParams::builder().target_id(TargetId::new(e.frame_id.inner().clone())).build();
        let sure = match within(self.timeout, "look up a download's frame", self.process.browser.execute(target)).await
        {
            Ok(info) => match info.result.target_info.browser_context_id {
                Some(c) if c == self.context => true,
                _ => return self.unclaimed.foreign(&e.guid),
            },
            Err(_) => false,
        };
        let frame = e.frame_id.inner().clone();
        let tracked = Tracked { suggested: e.suggested_filename.clone(), url: e.url.clone(), sure, frame };
        if sure {
            self.tell_begin(&e.guid, &tracked);
        }
        self.tracked.insert(e.guid.clone(), tracked);
        if let Some(early) = self.unclaimed.claim(&e.guid) {
            self.progressed(&early).await;
        }
    }

    async fn progressed(&mut self, e: &Arc<EventDownloadProgress>) {
        self.tell_progress(e);
        if e.state == DownloadProgressState::Canceled {
            // Also the end of one this watcher cancelled: nothing of it may stay.
            self.tracked.remove(&e.guid);
            self.unclaimed.ended(&e.guid);
            self.discard(&e.guid).await;
            return;
        }
        let Some(t) = self.tracked.get(&e.guid) else { return self.unclaimed.hold(e) };
        let allowed = self.allowed();
        let size = e.total_bytes.max(e.received_bytes).max(0.0) as u64;
        match e.state {
            DownloadProgressState::InProgress if t.sure && size > allowed => {
                let Some(t) = self.tracked.remove(&e.guid) else { return };
                let mut cancel = CancelDownloadParams::new(e.guid.clone());
                cancel.browser_context_id = Some(self.context.clone());
                if let Err(err) = within(self.timeout, "cancel a download", self.process.browser.execute(cancel)).await
                {
                    tracing::warn!(error = %err, "cancelling a download over its cap failed");
                }
                self.discard(&e.guid).await;
                self.refuse(t.suggested, allowed);
            }
            DownloadProgressState::InProgress | DownloadProgressState::Canceled => {}
            DownloadProgressState::Completed => {
                let Some(t) = self.tracked.remove(&e.guid) else { return };
                let path = self.dir.join(&e.guid);
                let content = tokio::fs::read(&path).await;
                self.discard(&e.guid).await;
                match content {
                    Ok(content) if content.len() as u64 > allowed => self.refuse(t.suggested, allowed),
                    Ok(content) => {
                        if !t.sure {
                            // Its file is in this context's directory: it was the session's after all.
                            self.tell_begin(&e.guid, &t);
                            self.tell_progress(e);
                        }
                        self.used += content.len() as u64;
                        let _ = self.tx.send(DownloadOutcome::Saved { suggested: t.suggested, url: t.url, content });
                    }
                    Err(err) if t.sure => tracing::warn!(error = %err, "a finished download could not be read"),
                    Err(_) => {} // not this context's after all
                }
            }
        }
    }

    /// Tells DevTools clients that enabled download events of a download's begin, as Chromium would (the
    /// file itself stays the service's).
    fn tell_begin(&mut self, guid: &str, t: &Tracked) {
        let params = json!({ "frameId": t.frame, "guid": guid, "url": t.url, "suggestedFilename": t.suggested });
        let _ = self.events.send(json!({ "method": "Browser.downloadWillBegin", "params": params }).to_string());
        self.announced.insert(guid.to_owned());
    }

    /// Passes a download's progress on to DevTools clients, once its begin was.
    fn tell_progress(&mut self, e: &EventDownloadProgress) {
        if !self.announced.contains(&e.guid) {
            return;
        }
        let state = match e.state {
            DownloadProgressState::InProgress => "inProgress",
            DownloadProgressState::Completed => "completed",
            DownloadProgressState::Canceled => "canceled",
        };
        if e.state != DownloadProgressState::InProgress {
            self.announced.remove(&e.guid);
        }
        let params = json!({ "guid": e.guid, "totalBytes": e.total_bytes, "receivedBytes": e.received_bytes,
            "state": state });
        let _ = self.events.send(json!({ "method": "Browser.downloadProgress", "params": params }).to_string());
    }

    fn refuse(&self, suggested: String, allowed: u64) {
        let reason = if allowed < self.limits.per_file {
            format!("the download passed the session's file cap of {} bytes", self.limits.per_session)
        } else {
            format!("the download passed the per-file cap of {} bytes", self.limits.per_file)
        };
        tracing::info!(cap = allowed, "a download over its cap was refused");
        let _ = self.tx.send(DownloadOutcome::Refused { suggested, reason });
    }

    /// Removes whatever Chromium left of download `guid` (the file, or its partial).
    async fn discard(&self, guid: &str) {
        remove_named(&self.dir, guid).await;
    }
}

/// Progress of downloads this watcher does not track. `downloadWillBegin` and `downloadProgress` come
/// through two channels, so a small download's `completed` can be read before its begin: such progress
/// is held until the begin says whose download it is. Downloads begun in other contexts are remembered
/// until they end, so that their progress is dropped rather than held. Only downloads of other contexts
/// already under way when the watcher started can stay held unclaimed.
#[derive(Default)]
struct Unclaimed {
    /// The latest progress of each download whose begin is still to be read.
    early: HashMap<String, Arc<EventDownloadProgress>>,
    /// Downloads begun in other contexts and not yet ended.
    foreign: HashSet<String>,
}

impl Unclaimed {
    /// Progress of a download not tracked (yet).
    fn hold(&mut self, e: &Arc<EventDownloadProgress>) {
        if !self.foreign.contains(&e.guid) {
            self.early.insert(e.guid.clone(), e.clone());
        } else if e.state != DownloadProgressState::InProgress {
            self.foreign.remove(&e.guid);
        }
    }

    /// Download `guid` began in another context.
    fn foreign(&mut self, guid: &str) {
        let ended = self.early.remove(guid).is_some_and(|p| p.state != DownloadProgressState::InProgress);
        if !ended {
            self.foreign.insert(guid.to_string());
        }
    }

    /// Download `guid` began in this context: the progress read before its begin, if any.
    fn claim(&mut self, guid: &str) -> Option<Arc<EventDownloadProgress>> {
        self.early.remove(guid)
    }

    /// Download `guid` was cancelled.
    fn ended(&mut self, guid: &str) {
        self.early.remove(guid);
        self.foreign.remove(guid);
    }
}

/// Removes the entries of `dir` whose names start with `guid`.
async fn remove_named(dir: &Path, guid: &str) {
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else { return };
    while let Ok(Some(entry)) = entries.next_entry().await {
        if entry.file_name().to_string_lossy().starts_with(guid) {
            let _ = tokio::fs::remove_file(entry.path()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(guid: &str, state: DownloadProgressState) -> Arc<EventDownloadProgress> {
        Arc::new(EventDownloadProgress {
            guid: guid.into(),
            total_bytes: 43.0,
            received_bytes: 43.0,
            state,
            file_path: None,
        })
    }

    #[test]
    fn a_completion_read_before_its_begin_is_handed_to_the_begin() {
        let mut u = Unclaimed::default();
        u.hold(&progress("a", DownloadProgressState::InProgress));
        u.hold(&progress("a", DownloadProgressState::Completed));
        let claimed = u.claim("a").expect("held until its begin");
        assert_eq!(claimed.state, DownloadProgressState::Completed, "the latest progress");
        assert!(u.claim("a").is_none(), "handed over once");
        assert!(u.early.is_empty() && u.foreign.is_empty());
    }

    #[test]
    fn another_contexts_progress_is_dropped_and_forgotten_when_it_ends() {
        let mut u = Unclaimed::default();
        // Begun elsewhere, then its progress: nothing is held, and its end forgets it.
        u.foreign("b");
        u.hold(&progress("b", DownloadProgressState::InProgress));
        assert!(u.early.is_empty());
        u.hold(&progress("b", DownloadProgressState::Completed));
        assert!(u.foreign.is_empty());
        // Its completion read before its begin: the begin drops it, and nothing is remembered.
        u.hold(&progress("c", DownloadProgressState::Completed));
        u.foreign("c");
        assert!(u.early.is_empty() && u.foreign.is_empty());
        // Under way when its begin is read: remembered until cancelled.
        u.hold(&progress("d", DownloadProgressState::InProgress));
        u.foreign("d");
        assert!(u.foreign.contains("d"));
        u.ended("d");
        assert!(u.early.is_empty() && u.foreign.is_empty());
    }
}
