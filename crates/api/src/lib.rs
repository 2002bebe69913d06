//! webpilot-api: the HTTP surface. Thin axum handlers that authenticate, count the rate limit,
//! validate the body into core types, make one domain call and map the result to the spec's JSON.

mod auth;
mod body;
mod calls;
mod capability;
mod cdp_forward;
mod connections;
mod error;
mod forward;
pub mod metrics;
pub mod openapi;
mod paging;
mod path;
mod query;
mod ratelimit;
mod routes;
mod socket;
mod state;
mod stream_token;
mod views;

pub use capability::SocketKey;
pub use connections::mcp::McpLimits;
pub use connections::sockets::SocketRegistry;
pub use ratelimit::RateLimiter;
pub use state::{ApiConfig, AppState};
pub use stream_token::{Scope, StreamKey};

/// Builds the router with every endpoint of the REST contract and the Socket.IO channel.
pub fn router(state: AppState) -> axum::Router {
    routes::router(state)
}
