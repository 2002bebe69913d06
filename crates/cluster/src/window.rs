//! The sliding rate window shared by every node: a sorted set of request times per user, trimmed,
//! counted and added to by one Lua script, so two nodes can never both take the last free slot. Times
//! come from the Redis server's clock, so nodes whose clocks drift still count the same window.

use crate::{ClusterError, RedisLink};
use std::time::Duration;

/// KEYS[1]: the user's window. ARGV: limit, window (ms), a unique member for this request.
/// Returns {allowed (0/1), requests counted in the window, now (ms), oldest counted request (ms)}.
const SCRIPT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', KEYS[1], window)
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local oldest_ms = now
if oldest[2] then oldest_ms = tonumber(oldest[2]) end
return {allowed, count, now, oldest_ms}
"#;

/// What the shared window said about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCount {
    pub allowed: bool,
    /// Requests counted in the window, this one included when allowed.
    pub count: u32,
    /// Until the oldest counted request leaves the window.
    pub until_reset: Duration,
}

/// The per-user windows in Redis under `prefix`.
#[derive(Clone, Debug)]
pub struct SharedWindow {
    link: RedisLink,
    script: redis::Script,
    prefix: String,
}

impl SharedWindow {
    pub fn new(link: RedisLink, prefix: &str) -> SharedWindow {
        SharedWindow { link, script: redis::Script::new(SCRIPT), prefix: prefix.to_owned() }
    }

    /// Counts one request by `user` against `limit` per `window`.
    pub async fn hit(&self, user: &str, limit: u32, window: Duration) -> Result<WindowCount, ClusterError> {
        let key = format!("{}:rate:{user}", self.prefix);
        let member = uuid::Uuid::new_v4().simple().to_string();
        let mut conn = self.link.conn();
        let mut invocation = self.script.key(key);
        invocation.arg(limit).arg(window.as_millis() as u64).arg(member);
        let answer: Vec<i64> = self.link.run(invocation.invoke_async(&mut conn)).await?;
        let [allowed, count, now, oldest] = answer[..] else {
            return Err(ClusterError::Protocol(format!("rate script answered {answer:?}")));
        };
        let reset_at = oldest + window.as_millis() as i64;
        Ok(WindowCount {
            allowed: allowed == 1,
            count: count.clamp(0, u32::MAX as i64) as u32,
            until_reset: Duration::from_millis((reset_at - now).max(0) as u64),
        })
    }
}
