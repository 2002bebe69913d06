//! The per-user sliding-window rate limit (spec: Limits). Every request to a limited endpoint counts,
//! including failures. With Redis (`--redis-url`) the window is shared by every node; without it, or
//! while Redis is unavailable (logged, and `GET /start/health` says so), each node counts alone.

mod decision;
mod layer;
pub(crate) mod limiter;
mod local;

pub use layer::{limit, LimitedUser};
pub use limiter::RateLimiter;
