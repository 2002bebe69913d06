//! The action cache's entries of one user in the store, behind the agent's `ActionCache` seam; store
//! failures are logged and answered as a miss (reads) or skipped (writes), so a task never fails for them.

use std::time::Duration;
use webpilot_agent::cache::{ActionCache, CacheKey, CachedRun};
use webpilot_agent::trace::{self, TraceStep};
use webpilot_core::UserId;
use webpilot_store::{NewCacheEntry, Store};

pub(crate) struct StoredCache {
    pub store: Store,
    pub user: UserId,
    /// How long an entry lives after it is written (`--cache-ttl-days`).
    pub ttl: Duration,
}

#[async_trait::async_trait]
impl ActionCache for StoredCache {
    async fn lookup(&self, key: &CacheKey) -> Option<CachedRun> {
        let entry = match self.store.cache_lookup(&self.user, &key.digest).await {
            Ok(entry) => entry?,
            Err(e) => {
                tracing::warn!(error = %e, "reading the action cache failed; the task runs without it");
                return None;
            }
        };
        match trace::parse(&entry.steps) {
            Ok(steps) if !steps.is_empty() => {
                Some(CachedRun { id: entry.id, steps, tokens: entry.tokens.max(0) as u64 })
            }
            _ => {
                tracing::warn!(entry = %entry.id, "an action cache entry holds no readable steps; ignored");
                None
            }
        }
    }

    async fn hit(&self, id: &str) {
        if let Err(e) = self.store.cache_hit(&self.user, id).await {
            tracing::warn!(error = %e, "counting an action cache hit failed");
        }
    }

    async fn save(&self, key: &CacheKey, steps: &[TraceStep], tokens: u64) {
        let Ok(json) = serde_json::to_string(steps) else { return };
        let entry = NewCacheEntry {
            key: &key.digest,
            task_text: &key.task_text,
            start_url: &key.start_url,
            steps: &json,
            tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
            ttl_ms: i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX),
        };
        if let Err(e) = self.store.cache_save(&self.user, entry).await {
            tracing::warn!(error = %e, "storing an action cache entry failed; the next run asks the model");
        }
    }
}
