//! The per-user limiter: counts in the shared (Redis) window when there is one, on this node otherwise.

use super::decision::RateDecision;
use super::local::LocalWindow;
use std::time::Duration;
use webpilot_cluster::SharedWindow;
use webpilot_core::UserId;

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
