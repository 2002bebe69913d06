//! The per-user sliding-window rate limit (spec: Limits). Every request to a limited endpoint counts,
//! including failures. With Redis (`--redis-url`) the window is shared by every node; without it, or
//! while Redis is unavailable (logged, and `GET /start/health` says so), each node counts alone.

mod layer;
mod local;

pub use layer::{limit, LimitedUser};

use local::LocalWindow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use webpilot_cluster::SharedWindow;
use webpilot_core::UserId;

/// The answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix time (s) when the oldest counted request leaves the window.
    pub reset_unix: u64,
    /// Seconds until a request would be allowed again (0 when allowed).
    pub retry_after: u64,
}

impl RateDecision {
    fn new(allowed: bool, limit: u32, counted: u32, until_reset: Duration) -> RateDecision {
        if !allowed {
            metrics::counter!("webpilot_rate_limited_total").increment(1);
        }
        let unix_now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        RateDecision {
            allowed,
            limit,
            remaining: limit.saturating_sub(counted),
            reset_unix: (unix_now + until_reset.as_secs_f64()).ceil() as u64,
            retry_after: if allowed { 0 } else { until_reset.as_secs_f64().ceil().max(1.0) as u64 },
        }
    }
}

pub struct RateLimiter {
    limit: u32,
    window: Duration,
    local: LocalWindow,
    shared: Option<SharedWindow>,
}

impl RateLimiter {
    /// A limiter counting on this node alone.
    pub fn new(limit: u32, window: Duration) -> Self {
        RateLimiter { limit, window, local: LocalWindow::new(limit, window), shared: None }
    }

    /// A limiter counting in `shared` (Redis), and on this node while Redis is unavailable.
    pub fn shared(limit: u32, window: Duration, shared: SharedWindow) -> Self {
        RateLimiter { shared: Some(shared), ..Self::new(limit, window) }
    }

    /// Counts one request by `user` now and says whether it may proceed.
    pub async fn hit(&self, user: &UserId) -> RateDecision {
        if let Some(shared) = &self.shared {
            match shared.hit(user.as_str(), self.limit, self.window).await {
                Ok(c) => return RateDecision::new(c.allowed, self.limit, c.count, c.until_reset),
                // Logged by the Redis link when it goes away; the node keeps limiting on its own.
                Err(e) => tracing::debug!(error = %e, "shared rate window unavailable; counting locally"),
            }
        }
        self.local.hit(user)
    }

    /// Drops users with no request in the window (called now and then to bound memory).
    pub fn prune(&self) {
        self.local.prune();
    }
}
