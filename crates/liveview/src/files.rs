//! The names of a recording's files: in its folder under the recording node's data directory, and in
//! the object store once uploaded (`recordings/<sessionId>/…`).

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
