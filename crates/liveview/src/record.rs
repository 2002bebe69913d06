//! The recorder: one more consumer of a session's feed, like a viewer, that writes the composed frames
//! as VP8 in WebM. It encodes at most `max_fps` frames a second and only when the picture changed, with
//! a keyframe at least every `keyframe_every`, on a blocking thread, one frame at a time: a slow disk
//! or encoder makes it skip pictures, never slows the feed. It ends when the feed does (the session
//! ended), after a last frame at the end time so the video lasts as long as the session did.

use crate::feed::{Feed, Frame};
use crate::vp8::{Vp8Encoder, Vp8Error};
use crate::webm::{WebmError, WebmMuxer};
use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Tunables of a recording.
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    /// Most frames encoded per second.
    pub max_fps: u32,
    /// Longest time between keyframes among the frames written (what seeking lands on).
    pub keyframe_every: Duration,
    pub bitrate_kbps: u32,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig { max_fps: 10, keyframe_every: Duration::from_secs(2), bitrate_kbps: 1000 }
    }
}

/// What a recording holds so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordingStats {
    /// Frames written.
    pub frames: u64,
    /// Size of the file.
    pub bytes: u64,
    /// Time of the last frame written, from the start of the recording.
    pub duration_ms: u64,
}

/// Why a recording stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("VP8: {0}")]
    Vp8(#[from] Vp8Error),
    #[error(transparent)]
    Webm(#[from] WebmError),
    #[error("recording file: {0}")]
    Io(#[from] std::io::Error),
    #[error("the encoder thread failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// The encoder and the file, used on a blocking thread.
struct Sink {
    file: File,
    mux: Option<WebmMuxer<File>>,
    encoder: Option<Vp8Encoder>,
    config: RecorderConfig,
    /// The last picture written (I420) and the time of the last keyframe.
    last: Option<Vec<u8>>,
    last_key_ms: Option<u64>,
    stats: RecordingStats,
}

impl Sink {
    /// Writes `frame` at `at_ms` unless it shows the picture last written (`again` writes it anyway).
    fn push(&mut self, frame: &Frame, at_ms: u64, again: bool) -> Result<(), RecordError> {
        let i420 = frame.i420();
        if !again && self.last.as_deref() == Some(i420) {
            return Ok(());
        }
        let (width, height) = frame.dimensions();
        if self.mux.is_none() {
            self.mux = Some(WebmMuxer::new(self.file.try_clone()?, width, height)?);
            self.encoder = Some(Vp8Encoder::new(width, height, self.config.bitrate_kbps)?);
        }
        let (Some(mux), Some(encoder)) = (self.mux.as_mut(), self.encoder.as_mut()) else { return Ok(()) };
        let every = u64::try_from(self.config.keyframe_every.as_millis()).unwrap_or(u64::MAX);
        let key = self.last_key_ms.is_none_or(|k| at_ms.saturating_sub(k) >= every);
        let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
        for out in encoder.encode(i420, at, key)? {
            mux.write_frame(&out.data, at_ms, out.key)?;
            if out.key {
                self.last_key_ms = Some(at_ms);
            }
            self.stats.frames += 1;
            self.stats.duration_ms = at_ms;
        }
        self.last = Some(i420.to_vec());
        self.stats.bytes = self.file.metadata()?.len();
        Ok(())
    }

    fn finish(&mut self) -> Result<RecordingStats, RecordError> {
        self.file.flush()?;
        self.file.sync_data()?;
        self.stats.bytes = self.file.metadata()?.len();
        Ok(self.stats)
    }
}

/// Records `feed` into `file` until the feed ends; times count from `started`. Returns what was
/// written; on an error the file holds what was written before it.
pub async fn record(
    feed: Arc<Feed>,
    file: File,
    config: RecorderConfig,
    started: Instant,
) -> Result<RecordingStats, RecordError> {
    // While only this recorder watches, the page is captured at the rate it encodes.
    let (mut frames, _recording) = feed.frames_for_recording(config.max_fps);
    frames.mark_changed();
    let gap = Duration::from_secs(1) / config.max_fps.max(1);
    let mut sink = Box::new(Sink {
        file,
        mux: None,
        encoder: None,
        config,
        last: None,
        last_key_ms: None,
        stats: RecordingStats::default(),
    });
    let mut next_allowed = Instant::now();
    while frames.changed().await.is_ok() {
        // Pictures that come faster than the cap are sampled: the latest one after the gap is written.
        tokio::time::sleep_until(next_allowed).await;
        let Some(frame) = frames.borrow_and_update().clone() else { continue };
        next_allowed = Instant::now() + gap;
        let at_ms = elapsed_ms(started);
        let (back, result) = tokio::task::spawn_blocking(move || {
            let result = sink.push(&frame, at_ms, false);
            (sink, result)
        })
        .await?;
        sink = back;
        result?;
    }
    // The feed ended with the session: its last picture at the end, so the video lasts as long.
    let latest = frames.borrow().clone();
    drop(feed);
    let end_ms = elapsed_ms(started);
    let stats = tokio::task::spawn_blocking(move || {
        if let Some(frame) = latest.filter(|_| end_ms > sink.stats.duration_ms) {
            sink.push(&frame, end_ms, true)?;
        }
        sink.finish()
    })
    .await??;
    Ok(stats)
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
