//! webpilot-cluster: what several webpilot nodes share. Through the database: which nodes are alive and
//! which node holds each session (`membership`). Through Redis, at request speed: the per-user sliding
//! rate window (one Lua script, atomic on the server), session events for sockets on other nodes, and
//! whether Redis is reachable now. Without a
//! Redis URL a node counts alone, exactly as before.

mod events;
mod link;
mod membership;
mod node_key;
mod window;

pub use events::{EventFanout, WireEvent};
pub use link::{RedisLink, RedisState};
pub use membership::{Hooks, Membership, MembershipConfig, OnLost, OnReaped};
pub use node_key::{NodeKey, NODE_KEY_HEADER};
pub use window::{SharedWindow, WindowCount};

/// Errors talking to Redis. Messages never contain the URL (it may hold a password).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("invalid Redis URL")]
    BadUrl,
    #[error("{0}")]
    Redis(#[from] redis::RedisError),
    #[error("no answer within {0:?}")]
    Timeout(std::time::Duration),
    #[error("unexpected answer: {0}")]
    Protocol(String),
}
