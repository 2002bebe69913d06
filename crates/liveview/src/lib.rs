//! webpilot-liveview: what a person watching a session sees. The active tab's screencast under a
//! browser-chrome band drawn by the service (`compose`), one shared feed per watched session that runs
//! only while someone watches (`feed`), and the HTTP MJPEG stream of it (`mjpeg`).

pub mod compose;
mod feed;
pub mod mjpeg;

pub use feed::{Feed, Frame, LiveView, LiveViewConfig};
