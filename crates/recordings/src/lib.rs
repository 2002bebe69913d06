//! Session recordings on this node: a session whose `recording` is on gets a recorder (a consumer of
//! its live-view feed, which needs no viewer) and a timeline follower, both under
//! `<data-dir>/recordings/<sessionId>/`, and a `recordings` row that says `ready` once both finished.
//! At start, the rows this node left `recording` (it was killed) are settled as `failed`, with the
//! bytes their video kept: it plays up to the cut. With an object store (`--object-store`), a
//! finished recording is uploaded before it is settled, and its folder removed: any node serves it.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use webpilot_blobs::{BlobError, Blobs, DIR_MODE, FILE_MODE};
use webpilot_liveview::recording_files::{self, VIDEO_FILE};
use webpilot_liveview::timeline;
use webpilot_liveview::{record, LiveView, RecorderConfig, RecordingStats};
use webpilot_sessions::{RecordHook, RecordedSession};
use webpilot_store::{now_ms, RecordingStatus, RecordingTotals, Store};
use webpilot_tasks::Tasks;

/// How long the timeline may take to write the session's last events after the video ended.
const TIMELINE_GRACE: Duration = Duration::from_secs(2);

/// The recorders of this node's sessions.
pub struct Recorders {
    live_view: Arc<LiveView>,
    store: Store,
    root: PathBuf,
    node_id: String,
    blobs: Option<Blobs>,
    config: RecorderConfig,
    /// The recordings being written (waited for after the sessions ended).
    tasks: Tasks,
}

impl Recorders {
    pub fn new(
        live_view: Arc<LiveView>,
        store: Store,
        root: PathBuf,
        node_id: String,
        blobs: Option<Blobs>,
    ) -> Arc<Self> {
        Arc::new(Recorders {
            live_view,
            store,
            root,
            node_id,
            blobs,
            config: RecorderConfig::default(),
            tasks: Tasks::new(),
        })
    }

    /// The hook that starts recording a session.
    pub fn hook(self: &Arc<Self>) -> RecordHook {
        let me = self.clone();
        Arc::new(move |session| {
            let run = me.clone().run(session);
            me.tasks.spawn("recording", run);
        })
    }

    /// Removes the recordings that ended before `ended_before` (ms) and whose files this node can
    /// remove (its own, and those in the object store): rows and files. Returns how many went.
    pub async fn purge(&self, ended_before: i64) -> Result<usize, webpilot_store::StoreError> {
        let gone = self.store.purge_recordings(&self.node_id, ended_before).await?;
        for (id, in_object_store) in &gone {
            recording_files::remove(&self.root, self.blobs.as_ref(), id, *in_object_store).await;
        }
        Ok(gone.len())
    }

    /// Uploads the recording in `dir` to the object store, if there is one. `true` once both its video
    /// and its timeline are there (then the folder is no longer needed).
    async fn upload(&self, session: &str, dir: &Path) -> bool {
        let Some(blobs) = &self.blobs else { return false };
        match upload(blobs, session, dir).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(session, error = %e, "a recording could not be uploaded; this node serves it");
                false
            }
        }
    }

    /// Settles the recording of `session` in `dir`: uploads it when there is an object store, stores
    /// `status` and `totals`, and removes the uploaded folder.
    async fn settle(
        &self,
        session: &str,
        dir: &Path,
        status: RecordingStatus,
        totals: RecordingTotals,
    ) -> Result<(), webpilot_store::StoreError> {
        let uploaded = self.upload(session, dir).await;
        self.store.finish_recording(session, status, now_ms(), totals, uploaded).await?;
        if uploaded {
            recording_files::remove_folder(dir).await;
        }
        Ok(())
    }

    /// Purges recordings past `retention` now and every ten minutes until `tasks` is told to stop (a
    /// task of `tasks`).
    pub fn purge_every(self: &Arc<Self>, retention: Duration, tasks: &Tasks) {
        let me = self.clone();
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let group = tasks.clone();
        tasks.spawn("recording purge", async move {
            loop {
                match me.purge(webpilot_store::now_ms().saturating_sub(retention_ms)).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(recordings = n, "recordings past their retention purged"),
                    Err(e) => tracing::warn!(error = %e, "purging recordings failed"),
                }
                tokio::select! {
                    _ = group.stopping() => return,
                    _ = tokio::time::sleep(Duration::from_secs(600)) => {}
                }
            }
        });
    }

    /// Waits until every recording started has been written out (after the sessions ended).
    pub async fn wait(&self) {
        self.tasks.wait().await;
    }

    /// Settles the recordings this node left `recording` when it stopped without ending them.
    pub async fn settle_unfinished(&self) -> Result<usize, webpilot_store::StoreError> {
        let left = self.store.unfinished_recordings(&self.node_id).await?;
        for r in &left {
            let dir = self.root.join(&r.session_id);
            let bytes = file_size(&dir.join(VIDEO_FILE)).await;
            let totals = RecordingTotals { bytes, ..RecordingTotals::default() };
            self.settle(&r.session_id, &dir, RecordingStatus::Failed, totals).await?;
        }
        Ok(left.len())
    }

    async fn run(self: Arc<Self>, session: RecordedSession) {
        let id = session.id.as_str().to_owned();
        let started = Instant::now();
        let started_at = now_ms();
        let dir = self.root.join(&id);
        // The service's alone (0700 / 0600), like the whole data directory.
        let file = match std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(&dir) {
            Ok(()) => std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(FILE_MODE)
                .open(dir.join(VIDEO_FILE)),
            Err(e) => Err(e),
        };
        let file = match file {
            Ok(file) => file,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "a recording could not be created; the session is not recorded");
                return;
            }
        };
        if let Err(e) = self.store.insert_recording(&id, &session.user_id, &self.node_id, started_at).await {
            tracing::error!(session = %id, error = %e, "a recording could not be stored; the session is not recorded");
            return;
        }
        tracing::info!(session = %id, "recording started");
        let feed = self.live_view.watch(&id, session.pages.clone(), session.shown_secrets.clone());
        let stop = CancellationToken::new();
        let mut events = webpilot_tasks::spawn_owned(
            "recording timeline",
            timeline::follow(session.events, session.pages, session.shown_secrets, started, dir.clone(), stop.clone()),
        );
        let video = record(feed, file, self.config.clone(), started).await;
        // The session has ended: the timeline has its end_session by now, or soon.
        let events = match tokio::time::timeout(TIMELINE_GRACE, &mut events).await {
            Ok(done) => done,
            Err(_) => {
                stop.cancel();
                events.await
            }
        };
        let timeline_ok = match events {
            Ok(Ok(_)) => true,
            Ok(Err(e)) => {
                tracing::warn!(session = %id, error = %e, "a recording's timeline could not be written");
                false
            }
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "a recording's timeline stopped");
                false
            }
        };
        let (status, stats) = match video {
            Ok(stats) if timeline_ok => (RecordingStatus::Ready, stats),
            Ok(stats) => (RecordingStatus::Failed, stats),
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "a recording stopped early");
                let bytes = file_size(&dir.join(VIDEO_FILE)).await;
                (
                    RecordingStatus::Failed,
                    RecordingStats { bytes: u64::try_from(bytes).unwrap_or(0), ..Default::default() },
                )
            }
        };
        let totals = RecordingTotals {
            duration_ms: i64::try_from(stats.duration_ms).unwrap_or(i64::MAX),
            bytes: i64::try_from(stats.bytes).unwrap_or(i64::MAX),
            frames: i64::try_from(stats.frames).unwrap_or(i64::MAX),
        };
        match self.settle(&id, &dir, status, totals).await {
            Ok(()) => {
                tracing::info!(session = %id, status = status.as_str(), frames = stats.frames, bytes = stats.bytes, "recording finished")
            }
            Err(e) => tracing::error!(session = %id, error = %e, "a finished recording could not be stored"),
        }
    }
}

/// Uploads a recording's video (as written) and timeline (as it can be read, also after a crash).
async fn upload(blobs: &Blobs, session: &str, dir: &Path) -> Result<(), BlobError> {
    let video = dir.join(VIDEO_FILE);
    if tokio::fs::try_exists(&video).await? {
        blobs.put_file(&recording_files::blob(session, VIDEO_FILE), &video).await?;
    }
    let entries = timeline::read(dir).await?;
    let json = serde_json::to_vec(&entries).map_err(std::io::Error::other)?;
    blobs.put(&recording_files::blob(session, recording_files::EVENTS_FILE), json.into()).await
}

async fn file_size(path: &Path) -> i64 {
    tokio::fs::metadata(path).await.map(|m| i64::try_from(m.len()).unwrap_or(i64::MAX)).unwrap_or(0)
}
