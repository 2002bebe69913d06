//! A recording's timeline: every event of the session (as its WebSocket clients get them, secrets
//! already masked) and every navigation of its active tab with the URL (masked like the band's), each
//! with `t`, the milliseconds since the recording began. Entries are appended to `events.jsonl` as
//! they come (a crash keeps them); the whole list becomes `events.json` when the session ends.

use crate::mask::mask_text;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use webpilot_browser::SessionPage;
use webpilot_core::events::SessionEvent;
use webpilot_core::secrets::Secrets;

/// The finished timeline's file name.
pub const EVENTS_FILE: &str = "events.json";
/// The timeline as it is written, one entry a line.
pub const EVENTS_LINES_FILE: &str = "events.jsonl";
/// How often the active tab's URL is looked at.
const URL_POLL: Duration = Duration::from_millis(250);

/// One entry of the timeline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Milliseconds since the recording began.
    pub t: u64,
    /// The event's name: a Socket.IO event name (`message`, `end_session`, `instance:*`) or `navigation`.
    pub event: String,
    pub data: Value,
}

#[derive(Serialize)]
struct Navigation {
    url: String,
}

/// Follows the session until it ends (`end_session`, or its bus closes) or `stop`; writes both files
/// under `dir` and returns how many entries it wrote.
pub async fn follow(
    mut events: broadcast::Receiver<SessionEvent>,
    pages: watch::Receiver<SessionPage>,
    secrets: watch::Receiver<Vec<Secrets>>,
    started: Instant,
    dir: PathBuf,
    stop: CancellationToken,
) -> std::io::Result<usize> {
    let mut lines = private_file(&dir.join(EVENTS_LINES_FILE)).await?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut url = String::new();
    let mut poll = tokio::time::interval(URL_POLL);
    loop {
        let (event, data, last) = tokio::select! {
            e = events.recv() => match e {
                Ok(e) => {
                    let last = matches!(e, SessionEvent::EndSession { .. });
                    let (name, data) = e.wire();
                    (name.to_owned(), data, last)
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "a recording's timeline fell behind its session's events");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = poll.tick() => {
                let found = tokio::select! {
                    found = navigation(&pages, &secrets, &mut url, started) => found,
                    _ = stop.cancelled() => break,
                };
                if let Some(entry) = found {
                    write(&mut lines, &mut entries, entry).await?;
                }
                continue;
            }
            _ = stop.cancelled() => break,
        };
        // An address change the poll has not seen yet goes before the event that follows it (a task that
        // navigates and then completes at once still has its navigation in the timeline).
        // Bounded: the session's last events must not wait on a page that no longer answers.
        let found = match last {
            true => {
                tokio::time::timeout(LAST_LOOK, navigation(&pages, &secrets, &mut url, started)).await.ok().flatten()
            }
            false => tokio::select! {
                found = navigation(&pages, &secrets, &mut url, started) => found,
                _ = stop.cancelled() => None,
            },
        };
        if let Some(entry) = found {
            write(&mut lines, &mut entries, entry).await?;
        }
        let entry = Entry { t: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX), event, data };
        write(&mut lines, &mut entries, entry).await?;
        if last {
            break;
        }
    }
    lines.flush().await?;
    let all = serde_json::to_vec(&entries).unwrap_or_default();
    // Written aside and renamed into place, so a reader meanwhile finds the lines file or the whole list,
    // never a list half written (that was a 500 for a timeline read as its session ended).
    let aside = dir.join(format!("{EVENTS_FILE}.part"));
    let mut file = private_file(&aside).await?;
    file.write_all(&all).await?;
    file.flush().await?;
    drop(file);
    tokio::fs::rename(&aside, dir.join(EVENTS_FILE)).await?;
    tokio::fs::remove_file(dir.join(EVENTS_LINES_FILE)).await?;
    Ok(entries.len())
}

/// A new file (truncating an old one) readable by the service alone (mode 0600): a recording's files are
/// the data directory's, which the browser's user must not open.
async fn private_file(path: &std::path::Path) -> std::io::Result<tokio::fs::File> {
    tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(webpilot_blobs::FILE_MODE)
        .open(path)
        .await
}

/// The longest look at the active tab's address before the session's `end_session` is written.
const LAST_LOOK: std::time::Duration = std::time::Duration::from_millis(500);

/// A `navigation` entry when the active tab's address changed since `url` (which it then becomes).
async fn navigation(
    pages: &watch::Receiver<SessionPage>,
    secrets: &watch::Receiver<Vec<Secrets>>,
    url: &mut String,
    started: Instant,
) -> Option<Entry> {
    let page = pages.borrow().clone();
    let now = page.active_url().await.ok()?;
    if now == *url || now.is_empty() {
        return None;
    }
    url.clone_from(&now);
    let shown = mask_text(&secrets.borrow(), &now);
    let data = serde_json::to_value(Navigation { url: shown }).unwrap_or_default();
    Some(Entry {
        t: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        event: "navigation".into(),
        data,
    })
}

/// Appends `entry` to the lines file (kept through a crash) and to the list.
async fn write(lines: &mut tokio::fs::File, entries: &mut Vec<Entry>, entry: Entry) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(&entry).unwrap_or_default();
    line.push(b'\n');
    lines.write_all(&line).await?;
    entries.push(entry);
    Ok(())
}

/// The timeline stored in `dir`: the finished list, or what was written before a crash.
pub async fn read(dir: &Path) -> std::io::Result<Vec<Entry>> {
    match tokio::fs::read(dir.join(EVENTS_FILE)).await {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text = match tokio::fs::read_to_string(dir.join(EVENTS_LINES_FILE)).await {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(e),
            };
            // A line cut off by the crash is left out.
            Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
        }
        Err(e) => Err(e),
    }
}
