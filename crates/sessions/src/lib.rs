//! webpilot-sessions: live sessions. Each session is an actor (a tokio task owning its browser lease,
//! state and current task) behind a cheap handle; the `SessionManager` is the registry that creates
//! them, routes messages to them, answers task polls and enforces ownership and balance rules.

mod accounts;
mod actor;
mod admission;
mod cache;
mod config;
pub mod devtools;
mod error;
mod file_store;
mod files;
mod input;
mod live;
mod manager;
mod overview;
#[cfg(test)]
mod paused;
mod profiles;
mod proxies;
mod recording;
mod recovery;
mod replays;
mod runner;
mod start;

pub use config::SessionConfig;
pub use error::SessionError;
pub use file_store::{FileStore, FileStoreError, Kept};
pub use live::{LiveTask, TaskView};
pub use manager::{SendOutcome, SessionManager};
pub use overview::{Activity, SessionOverview, TaskEntry};
pub use profiles::{
    ProfileKey, ProfileKeyError, ProfileSettings, Profiles, DEFAULT_MAX_PROFILE_BYTES, DEFAULT_MAX_USER_PROFILE_BYTES,
};
pub use recording::{EventHook, RecordHook, RecordedSession, Recording};
pub use start::{StartedSession, StartedTask};
