//! The HTTP video stream: a feed's frames as `multipart/x-mixed-replace` JPEG parts (MJPEG), which an
//! `<img>` tag, ffmpeg and VLC play. The latest frame is sent at once, then each new one; while the
//! picture stands still the last frame is repeated every `repeat`, which keeps players (and proxies)
//! from timing out and lets a viewer that went away be noticed at the next write.

use crate::feed::{Feed, Frame};
use bytes::Bytes;
use futures::Stream;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The multipart boundary between frames.
pub const BOUNDARY: &str = "webpilot-frame";

/// The `Content-Type` of the stream.
pub fn content_type() -> String {
    format!("multipart/x-mixed-replace; boundary={BOUNDARY}")
}

/// One part: its boundary line, headers and the JPEG.
pub fn part(jpeg: &[u8]) -> Bytes {
    let head = format!("--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n", jpeg.len());
    let mut out = Vec::with_capacity(head.len() + jpeg.len() + 2);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(jpeg);
    out.extend_from_slice(b"\r\n");
    Bytes::from(out)
}

struct StreamState {
    /// Held so the feed lives while this viewer does.
    _feed: Arc<Feed>,
    frames: watch::Receiver<Option<Frame>>,
    repeat: Duration,
}

/// The body of one viewer's stream; it ends when the session does.
pub fn stream(feed: Arc<Feed>, repeat: Duration) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    let mut frames = feed.frames();
    // The latest frame (if any) goes out first.
    frames.mark_changed();
    let state = StreamState { _feed: feed, frames, repeat };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            let changed = tokio::time::timeout(s.repeat, s.frames.changed()).await;
            if let Ok(Err(_)) = changed {
                return None;
            }
            let frame = s.frames.borrow_and_update().clone();
            if let Some(frame) = frame {
                let jpeg = tokio::task::spawn_blocking(move || frame.jpeg()).await.ok().flatten();
                if let Some(jpeg) = jpeg {
                    return Some((Ok(part(&jpeg)), s));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_framed_by_its_boundary_and_length() {
        let p = part(b"JPEGDATA");
        let text = String::from_utf8_lossy(&p);
        assert!(text.starts_with("--webpilot-frame\r\nContent-Type: image/jpeg\r\nContent-Length: 8\r\n\r\n"));
        assert!(text.ends_with("JPEGDATA\r\n"));
        assert_eq!(content_type(), "multipart/x-mixed-replace; boundary=webpilot-frame");
    }
}
