//! One rate-limit answer: allowed or not, with the figures the `X-RateLimit-*` headers show.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    pub(super) fn new(allowed: bool, limit: u32, counted: u32, until_reset: Duration) -> RateDecision {
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
