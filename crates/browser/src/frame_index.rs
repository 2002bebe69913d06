//! Where the elements of a session's latest snapshot live when they are in a cross-origin frame, and the
//! session's frame connection (`frames.rs`); kept on the session's pages, filled and read by `elements.rs`.

use crate::frames::FrameClient;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Where an index of the latest snapshot lives, when not in the page's own document.
#[derive(Debug, Clone)]
pub(crate) struct FrameElement {
    pub(crate) target_id: String,
    /// The element's index inside its frame's document.
    pub(crate) local: u32,
    /// The frame's number on the page (`data-wp-frame` of its iframe).
    pub(crate) frame: u32,
}

/// The frame connection of a session and the frame elements of its latest snapshot.
#[derive(Default)]
pub(crate) struct FrameState {
    pub(crate) client: tokio::sync::Mutex<Option<Arc<FrameClient>>>,
    /// (tab target id, index → frame element).
    pub(crate) index: Mutex<(String, HashMap<u32, FrameElement>)>,
}
