//! webpilot-liveview: what a person watching a session sees. The active tab's screencast under a
//! browser-chrome band drawn by the service (`compose`, secrets masked by `mask`), one shared feed per
//! watched session that runs only while someone watches (`feed`), the HTTP MJPEG stream of it
//! (`mjpeg`), and its WebRTC viewers (`whep`, each viewer's connection in `peer`, with the VP8 encoder
//! in `vp8`). A session may also be recorded: `record` writes its feed as VP8 in WebM (`webm`),
//! `timeline` its events, and `files` names what a recording keeps.

pub mod compose;
mod feed;
pub mod mask;
pub mod mjpeg;
mod peer;
pub mod record;
pub mod recording_files;
pub mod timeline;
pub mod vp8;
pub mod webm;
pub mod whep;
mod whep_config;

pub use feed::{BandSecrets, Composed, Feed, Frame, LiveView, LiveViewConfig, RecordingMark};
pub use record::{record, RecordError, RecorderConfig, RecordingStats};
pub use whep::{ViewerScope, WhepAnswer, WhepConfig, WhepError, WhepViewers};
