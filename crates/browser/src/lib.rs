//! webpilot-browser: real Chromium over the DevTools protocol. A pool of Chromium processes hands out
//! leases (one isolated browser context + page per session, released on Drop); a `SessionPage` performs
//! the page actions the agent and manual control need, each with a timeout, and sends every request of the
//! session through its own egress proxy (crate `webpilot-egress`).

mod adopt;
mod applied_identity;
mod challenges;
mod config;
mod cookies;
mod downloads;
mod elements;
mod error;
mod frame_index;
mod frames;
mod identity;
mod identity_frames;
mod inbox;
mod input;
mod launch;
mod lease;
mod marks;
mod memory;
mod navigation;
mod orphans;
mod page;
mod page_open;
mod pictures;
mod pipe;
mod pool;
mod process;
mod relay;
mod remote;
mod sandbox;
mod screencast;
mod scripts;
mod secret_paint;
mod settle;
mod snapshot;
mod storage_state;
mod tabs;
mod upload;
mod warm;

pub use challenges::TokenPlaced;
pub use config::{BrowserSettings, TrustedKey};
pub use cookies::CookieJar;
pub use downloads::{DownloadLimits, DownloadOutcome};
pub use error::BrowserError;
pub use lease::{BrowserLease, Replacement};
pub use marks::{dress, mark_width, Mark, DIGITS, MARK_FILL, MARK_HEIGHT, MARK_INK, MARK_SCALE};
pub use page::{ClickTarget, SessionPage, TabInfo};
pub use pool::{BrowserPool, PoolStats};
/// The byte-bounded queues between a DevTools client's socket and its relay.
pub use relay::queue as devtools_queue;
pub use relay::{DevtoolsScope, RelayEnd};
pub use sandbox::{identity, BrowserIdentity, RunAs, SandboxError};
pub use screencast::PageFrame;
pub use secret_paint::{SecretBoxes, PAINT};
pub use snapshot::{Control, Node, PageSnapshot};
pub use storage_state::{OriginLog, MAX_PROFILE_ORIGINS};
pub use webpilot_egress::DomainPolicy;
