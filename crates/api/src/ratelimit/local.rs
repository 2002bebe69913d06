//! The in-process sliding window: the whole rate limit on a node without Redis, and the fallback of a
//! node whose Redis is unavailable.

use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use webpilot_core::UserId;

use super::decision::RateDecision;

pub struct LocalWindow {
    limit: u32,
    window: Duration,
    hits: Mutex<HashMap<UserId, VecDeque<Instant>>>,
}

impl LocalWindow {
    pub fn new(limit: u32, window: Duration) -> Self {
        LocalWindow { limit, window, hits: Mutex::new(HashMap::new()) }
    }

    /// Counts one request by `user` now and says whether it may proceed.
    pub fn hit(&self, user: &UserId) -> RateDecision {
        self.hit_at(user, Instant::now())
    }

    fn hit_at(&self, user: &UserId, now: Instant) -> RateDecision {
        let mut map = self.hits.lock();
        let q = map.entry(user.clone()).or_default();
        while q.front().is_some_and(|t| now.duration_since(*t) >= self.window) {
            q.pop_front();
        }
        let allowed = (q.len() as u32) < self.limit;
        if allowed {
            q.push_back(now);
        }
        let oldest = q.front().copied().unwrap_or(now);
        let until_reset = (oldest + self.window).saturating_duration_since(now);
        RateDecision::new(allowed, self.limit, q.len() as u32, until_reset)
    }

    /// Drops users with no request in the window (called now and then to bound memory).
    pub fn prune(&self) {
        let now = Instant::now();
        let mut map = self.hits.lock();
        map.retain(|_, q| q.back().is_some_and(|t| now.duration_since(*t) < self.window));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides() {
        let rl = LocalWindow::new(3, Duration::from_secs(60));
        let u = UserId::generate();
        let t0 = Instant::now();
        for i in 0..3 {
            let d = rl.hit_at(&u, t0 + Duration::from_secs(i * 10));
            assert!(d.allowed);
            assert_eq!(d.remaining, 2 - i as u32);
        }
        let denied = rl.hit_at(&u, t0 + Duration::from_secs(30));
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after, 30);
        // The first request leaves the window at t0 + 60 s.
        assert!(rl.hit_at(&u, t0 + Duration::from_secs(60)).allowed);
        assert!(!rl.hit_at(&u, t0 + Duration::from_secs(61)).allowed);
        assert!(rl.hit_at(&UserId::generate(), t0).allowed, "users are counted apart");
    }
}
