//! webpilot-core: the service's vocabulary with no I/O — ids, the error-code table, the session state
//! machine, validated request parameters, events, the domain policy, geometry and billing arithmetic.

pub mod challenge;
pub mod chat;
pub mod egress;
pub mod error;
pub mod events;
pub mod fields;
pub mod files;
pub mod geometry;
pub mod identity;
pub mod ids;
pub mod output;
pub mod params;
pub mod policy;
pub mod profile;
pub mod proxies;
pub mod secret_file;
pub mod secrets;
pub mod state;
pub mod totp;
pub mod usage;
pub mod vision;

pub use error::{ApiError, Coded, ErrorCode};
pub use ids::{KeyId, SessionId, TaskId, UserId};
