//! One feed per watched session, shared by all its viewers: it screencasts the session's active tab,
//! draws the band, and publishes each composed frame. It exists only while someone holds it: the last
//! viewer's drop aborts it, which stops the screencast. It ends by itself when the session does.
//! Chromium is asked for frames only as often as the watchers use them: `max_fps` while a person
//! watches, the recorder's rate while only a recorder does.

use crate::compose::{compose_rgb, draw_band, encode_jpeg, BandInfo};
use crate::vp8::rgb_to_i420;
use bytes::Bytes;
use image::RgbImage;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use webpilot_browser::SessionPage;
use webpilot_core::secrets::Secrets;

/// The secret values the band masks: the session's and those of every task it ran (a URL typed into
/// keeps showing a value after its task ended). Only ever grows while the session lives.
pub type BandSecrets = watch::Receiver<Vec<Secrets>>;

/// Tunables of the live view.
#[derive(Debug, Clone)]
pub struct LiveViewConfig {
    /// JPEG quality of the screencast and of the composed frames.
    pub quality: u8,
    /// How often the band (tab titles, URL) is read again while nothing else changes.
    pub band_refresh: Duration,
    /// Most frames per second composed for one session (each is a JPEG decode and encode); a
    /// picture that changes faster is sampled, and its latest state is always sent.
    pub max_fps: u32,
}

impl Default for LiveViewConfig {
    fn default() -> Self {
        LiveViewConfig { quality: 70, band_refresh: Duration::from_millis(500), max_fps: 25 }
    }
}

/// A composed 1024 x 600 frame, shared by every viewer of the session.
pub type Frame = Arc<Composed>;

/// One composed frame. Each kind of viewer reads it in its own form, made once, by the first viewer of
/// that kind that asks, so a session watched only over WebRTC never encodes a JPEG, and one watched only
/// over MJPEG never converts to I420.
pub struct Composed {
    rgb: RgbImage,
    quality: u8,
    jpeg: OnceLock<Option<Bytes>>,
    i420: OnceLock<Vec<u8>>,
}

impl Composed {
    pub fn new(rgb: RgbImage, quality: u8) -> Self {
        Composed { rgb, quality, jpeg: OnceLock::new(), i420: OnceLock::new() }
    }

    /// The frame as a JPEG (`None` if it cannot be encoded). CPU-heavy the first time: call it off the
    /// async threads.
    pub fn jpeg(&self) -> Option<Bytes> {
        self.jpeg
            .get_or_init(|| match encode_jpeg(&self.rgb, self.quality) {
                Ok(jpeg) => Some(Bytes::from(jpeg)),
                Err(e) => {
                    tracing::debug!(error = %e, "a live view frame could not be encoded");
                    None
                }
            })
            .clone()
    }

    /// The picture as planar I420.
    pub fn i420(&self) -> &[u8] {
        self.i420.get_or_init(|| rgb_to_i420(&self.rgb))
    }

    pub fn dimensions(&self) -> (u32, u32) {
        self.rgb.dimensions()
    }
}

/// The feeds of every watched session.
#[derive(Default)]
pub struct LiveView {
    config: LiveViewConfig,
    feeds: Mutex<HashMap<String, Weak<Feed>>>,
}

/// What a viewer holds: the latest frame, and the feed kept alive by holding it.
pub struct Feed {
    frames: watch::Receiver<Option<Frame>>,
    recorders: Arc<Recorders>,
    task: JoinHandle<()>,
}

/// The recorders among a feed's watchers, and the most frames a second they use.
#[derive(Default)]
struct Recorders {
    count: AtomicUsize,
    fps: AtomicU32,
}

/// Held by a recorder as long as it reads a feed's frames (see [`Feed::frames_for_recording`]).
pub struct RecordingMark(Arc<Recorders>);

impl Drop for RecordingMark {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Feed {
    /// The frames: `None` until the first one is composed; closed when the session ends.
    pub fn frames(&self) -> watch::Receiver<Option<Frame>> {
        self.frames.clone()
    }

    /// The frames for a recorder that uses at most `fps` a second, and the mark it holds while it reads
    /// them: while only recorders watch, the page is captured no more often than that.
    pub fn frames_for_recording(&self, fps: u32) -> (watch::Receiver<Option<Frame>>, RecordingMark) {
        self.recorders.fps.fetch_max(fps.max(1), Ordering::SeqCst);
        self.recorders.count.fetch_add(1, Ordering::SeqCst);
        (self.frames.clone(), RecordingMark(self.recorders.clone()))
    }
}

impl LiveView {
    pub fn new(config: LiveViewConfig) -> Self {
        LiveView { config, feeds: Mutex::new(HashMap::new()) }
    }

    /// The feed of `session`, started now unless someone already watches it; its band masks `secrets`.
    pub fn watch(&self, session: &str, pages: watch::Receiver<SessionPage>, secrets: BandSecrets) -> Arc<Feed> {
        let mut feeds = self.feeds.lock();
        feeds.retain(|_, f| f.strong_count() > 0);
        if let Some(feed) = feeds.get(session).and_then(Weak::upgrade) {
            return feed;
        }
        let (tx, frames) = watch::channel(None);
        let recorders = Arc::new(Recorders::default());
        let task =
            webpilot_tasks::spawn_owned("live feed", run(pages, secrets, tx, recorders.clone(), self.config.clone()));
        let feed = Arc::new(Feed { frames, recorders, task });
        feeds.insert(session.to_owned(), Arc::downgrade(&feed));
        tracing::debug!("a live view feed started");
        feed
    }

    /// How many sessions are being watched (screencasting) now.
    pub fn active_feeds(&self) -> usize {
        let feeds = self.feeds.lock();
        feeds.values().filter(|f| f.strong_count() > 0).count()
    }
}

/// Follows the session's pages (a recovered session gets new ones) until the session ends.
async fn run(
    mut pages: watch::Receiver<SessionPage>,
    secrets: BandSecrets,
    out: watch::Sender<Option<Frame>>,
    recorders: Arc<Recorders>,
    config: LiveViewConfig,
) {
    let watchers = Watchers { out, recorders, config };
    loop {
        let page = pages.borrow_and_update().clone();
        let replaced = watch_page(&page, &mut pages, &secrets, &watchers).await;
        if !replaced {
            // The session ended: dropping `out` ends every viewer's stream.
            return;
        }
    }
}

/// Where a feed's frames go, and who takes them.
struct Watchers {
    out: watch::Sender<Option<Frame>>,
    recorders: Arc<Recorders>,
    config: LiveViewConfig,
}

impl Watchers {
    /// The least time between two captures of the page: a person's rate unless only recorders watch.
    fn pace(&self) -> Duration {
        // Each viewer and recorder holds one receiver of the frames, and the feed itself one.
        let watching = self.out.receiver_count().saturating_sub(1);
        let recording = self.recorders.count.load(Ordering::SeqCst);
        let fps = if recording > 0 && watching <= recording {
            self.recorders.fps.load(Ordering::SeqCst).min(self.config.max_fps)
        } else {
            self.config.max_fps
        };
        Duration::from_secs(1) / fps.max(1)
    }

    /// Tells the screencast the pace the current watchers need.
    fn update(&self, pace: &watch::Sender<Duration>) {
        let now = self.pace();
        pace.send_if_modified(|p| std::mem::replace(p, now) != now);
    }
}

/// Composes frames of one `SessionPage` until it is replaced (true) or the session ends (false).
async fn watch_page(
    page: &SessionPage,
    pages: &mut watch::Receiver<SessionPage>,
    secrets: &BandSecrets,
    watchers: &Watchers,
) -> bool {
    let (out, config) = (&watchers.out, &watchers.config);
    let pace = watch::Sender::new(watchers.pace());
    let mut shots = page.screencast(config.quality, pace.subscribe());
    let mut tab_changes = page.tab_changes();
    // A page that does not answer (still loading, or going away with its session) must not keep the feed
    // from seeing the session end: every wait on the browser races the end.
    let mut info = tokio::select! {
        info = band_info(page, secrets) => info,
        changed = pages.changed() => return changed.is_ok(),
    };
    let mut band = Arc::new(draw_band(&info));
    let mut last: Option<Arc<Vec<u8>>> = None;
    publish(out, &band, last.clone(), config.quality).await;
    let mut refresh = tokio::time::interval(config.band_refresh);
    let min_gap = Duration::from_secs(1) / config.max_fps.max(1);
    let mut next_allowed = tokio::time::Instant::now();
    // A picture that came sooner than `min_gap` after the last frame, sent when the gap is over.
    let mut held = false;
    loop {
        tokio::select! {
            shot = shots.recv() => match shot {
                Some(shot) => {
                    last = Some(Arc::new(shot.jpeg));
                    held = true;
                }
                // The screencast task only stops when its receiver is gone; treat it as the end.
                None => return false,
            },
            _ = tokio::time::sleep_until(next_allowed), if held => {
                held = false;
                next_allowed = tokio::time::Instant::now() + min_gap;
                publish(out, &band, last.clone(), config.quality).await;
                watchers.update(&pace);
            }
            // A tab opened, closed or became active: redraw the band now, not at the next refresh.
            _ = tab_changes.changed() => refresh.reset_immediately(),
            _ = refresh.tick() => {
                watchers.update(&pace);
                let now = tokio::select! {
                    now = band_info(page, secrets) => now,
                    changed = pages.changed() => return changed.is_ok(),
                };
                if now != info {
                    info = now;
                    band = Arc::new(draw_band(&info));
                    publish(out, &band, last.clone(), config.quality).await;
                }
            }
            changed = pages.changed() => return changed.is_ok(),
        }
    }
}

/// The tabs as the band shows them, secrets masked (empty when the browser does not answer).
async fn band_info(page: &SessionPage, secrets: &BandSecrets) -> BandInfo {
    let info = BandInfo { tabs: page.tabs().await.unwrap_or_default() };
    // Read after the tabs: a task's secrets are added before it starts, so a URL read now that shows
    // one of them is masked with it.
    let secrets = secrets.borrow().clone();
    info.masked(&secrets)
}

/// Composes a frame off the async threads and publishes it (a frame that cannot be composed is skipped).
async fn publish(out: &watch::Sender<Option<Frame>>, band: &Arc<image::RgbImage>, page: Option<Arc<Vec<u8>>>, q: u8) {
    let band = band.clone();
    let composed = tokio::task::spawn_blocking(move || {
        compose_rgb(&band, page.as_deref().map(Vec::as_slice)).map(|rgb| Composed::new(rgb, q))
    })
    .await;
    match composed {
        Ok(Ok(frame)) => {
            out.send_replace(Some(Arc::new(frame)));
        }
        Ok(Err(e)) => tracing::debug!(error = %e, "a live view frame was skipped"),
        Err(e) => tracing::warn!(error = %e, "composing a live view frame failed"),
    }
}
