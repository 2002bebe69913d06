//! The moving picture of a session: CDP `Page.startScreencast` frames of whichever tab is active,
//! following tab changes (the agent's new tabs and the site's popups), for as long as someone holds
//! the receiving end; the screencast is stopped when it is dropped.

use crate::error::within;
use crate::page::SessionPage;
use base64::Engine;
use chromiumoxide::cdp::browser_protocol::page::{
    EventScreencastFrame, ScreencastFrameAckParams, StartScreencastFormat, StartScreencastParams, StopScreencastParams,
};
use chromiumoxide::Page;
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use webpilot_core::geometry::{FRAME_WIDTH, PAGE_HEIGHT};

/// From this pace on (a recorder alone takes 10 frames a second), a page that draws new pictures faster
/// than the pace has its screencast paused between frames. While a screencast runs, Chromium's compositor
/// captures every frame the page draws (in its GPU process), whatever is acknowledged: the acknowledgement
/// only spares encoding and sending. Stopped, nothing is captured; started again, it sends the current
/// picture. A still page keeps its screencast running, which costs nothing while nothing is drawn.
const PAUSE_FROM: Duration = Duration::from_millis(80);

/// One compressed picture of the active tab's viewport.
#[derive(Debug, Clone)]
pub struct PageFrame {
    pub jpeg: Vec<u8>,
}

/// Why one tab's screencast ended.
enum Ended {
    /// Another tab became active (or this one closed): start again on the active tab.
    TabChanged,
    /// Nobody receives the frames any more.
    Unwatched,
}

impl SessionPage {
    /// Streams JPEG frames (`quality` 1..=100) of the active tab, switching tabs as the active tab
    /// changes. Chromium sends a frame when the page's picture changes, so a still page costs nothing;
    /// and at most one per `pace` (read at each frame), so a page animating at 60 fps is captured and
    /// encoded only as often as its watchers use.
    pub fn screencast(&self, quality: u8, pace: watch::Receiver<Duration>) -> mpsc::Receiver<PageFrame> {
        let (tx, rx) = mpsc::channel(2);
        let page = self.clone();
        webpilot_tasks::spawn_owned("screencast", async move {
            let mut changes = page.tab_changes();
            loop {
                changes.borrow_and_update();
                let timeout = page.cdp_timeout();
                let ended = match page.active_page() {
                    Ok(tab) => cast_tab(&tab, quality, timeout, &pace, &tx, &mut changes).await,
                    Err(_) => wait_for_change(&tx, &mut changes).await,
                };
                if matches!(ended, Ended::Unwatched) {
                    return;
                }
            }
        });
        rx
    }
}

/// Screencasts one tab until the active tab changes or nobody watches; stops it either way.
async fn cast_tab(
    tab: &Page,
    quality: u8,
    timeout: Duration,
    pace: &watch::Receiver<Duration>,
    tx: &mpsc::Sender<PageFrame>,
    changes: &mut tokio::sync::watch::Receiver<u64>,
) -> Ended {
    let mut last_ack = Instant::now();
    let Ok(mut frames) = within(timeout, "listen for frames", tab.event_listener::<EventScreencastFrame>()).await
    else {
        return wait_for_change(tx, changes).await;
    };
    if !start(tab, quality, timeout).await {
        return wait_for_change(tx, changes).await;
    }
    // The last picture sent, to tell a page that changes from one that only gets captured again.
    let mut previous: Option<Vec<u8>> = None;
    let ended = loop {
        tokio::select! {
            frame = frames.next() => match frame {
                Some(frame) => {
                    let data: &str = frame.data.as_ref();
                    let jpeg = base64::engine::general_purpose::STANDARD.decode(data).ok();
                    let changed = jpeg.is_some() && jpeg != previous;
                    let pace_now = *pace.borrow();
                    let due = last_ack + pace_now;
                    // A page drawing faster than the pace, watched slowly: the screencast is paused at once
                    // until the next frame is due (see `PAUSE_FROM`).
                    let pause = pace_now >= PAUSE_FROM && changed && Instant::now() < due;
                    if pause {
                        let _ = within(timeout, "pause screencast", tab.execute(StopScreencastParams::default())).await;
                    }
                    if let Some(jpeg) = jpeg {
                        previous = Some(jpeg.clone());
                        if tx.send(PageFrame { jpeg }).await.is_err() {
                            break Ended::Unwatched;
                        }
                    }
                    if let Some(ended) = wait_until(due, tx, changes).await {
                        break ended;
                    }
                    if pause {
                        if !start(tab, quality, timeout).await {
                            break wait_for_change(tx, changes).await;
                        }
                    } else {
                        // Chromium sends the next frame only after this one is acknowledged: acknowledging it
                        // no sooner than `pace` after the last caps how often frames are encoded and sent.
                        let ack = ScreencastFrameAckParams::new(frame.session_id);
                        let _ = within(timeout, "acknowledge a frame", tab.execute(ack)).await;
                    }
                    last_ack = Instant::now();
                }
                // The tab went away (closed, crashed or its context closed).
                None => break wait_for_change(tx, changes).await,
            },
            changed = changes.changed() => break if changed.is_ok() { Ended::TabChanged } else { Ended::Unwatched },
            _ = tx.closed() => break Ended::Unwatched,
        }
    };
    let _ = within(timeout, "stop screencast", tab.execute(StopScreencastParams::default())).await;
    ended
}

/// Starts the screencast of `tab`; false (logged) when it does not start.
async fn start(tab: &Page, quality: u8, timeout: Duration) -> bool {
    let start = StartScreencastParams::builder()
        .format(StartScreencastFormat::Jpeg)
        .quality(i64::from(quality.clamp(1, 100)))
        .max_width(i64::from(FRAME_WIDTH))
        .max_height(i64::from(PAGE_HEIGHT))
        .every_nth_frame(1)
        .build();
    match within(timeout, "start screencast", tab.execute(start)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(error = %e, "the screencast did not start on the active tab");
            false
        }
    }
}

/// Waits until `due`; what ended the screencast if the tabs changed or nobody watches first.
async fn wait_until(due: Instant, tx: &mpsc::Sender<PageFrame>, changes: &mut watch::Receiver<u64>) -> Option<Ended> {
    tokio::select! {
        _ = tokio::time::sleep_until(due) => None,
        ended = wait_for_change(tx, changes) => Some(ended),
    }
}

/// Waits until the tabs change or nobody watches.
async fn wait_for_change(tx: &mpsc::Sender<PageFrame>, changes: &mut tokio::sync::watch::Receiver<u64>) -> Ended {
    tokio::select! {
        changed = changes.changed() => if changed.is_ok() { Ended::TabChanged } else { Ended::Unwatched },
        _ = tx.closed() => Ended::Unwatched,
    }
}
