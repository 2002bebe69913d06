//! The action cache's entries: a user's finished model runs under a key (a digest of the task text,
//! start URL and first page, made by the agent), their steps as JSON, and when they expire. Entries are
//! the user's alone: every read, write and deletion names the user.

use crate::{now_ms, retry, Result, Store};
use webpilot_core::UserId;

/// One cached run as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    pub id: String,
    pub user_id: String,
    pub key: String,
    /// The task text it was recorded for (as the user wrote it).
    pub task_text: String,
    /// The start URL's origin and path.
    pub start_url: String,
    /// The action trace (JSON).
    pub steps: String,
    /// Model tokens the recorded run used.
    pub tokens: i64,
    /// Times it was replayed.
    pub hits: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: i64,
}

/// What a new or rewritten entry holds.
#[derive(Debug, Clone, Copy)]
pub struct NewCacheEntry<'a> {
    pub key: &'a str,
    pub task_text: &'a str,
    pub start_url: &'a str,
    pub steps: &'a str,
    pub tokens: i64,
    /// How long it lives from now (ms).
    pub ttl_ms: i64,
}

type Row = (String, String, String, String, String, String, i64, i64, i64, i64, i64);

/// A query of `Row`s from `action_cache`, then `$rest` (a literal, so the SQL stays static).
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, user_id, cache_key, task_text, start_url, steps, tokens, hits, created_at, updated_at, ",
            "expires_at FROM action_cache ",
            $rest
        )
    };
}

fn entry(r: Row) -> CacheEntry {
    let (id, user_id, key, task_text, start_url, steps, tokens, hits, created_at, updated_at, expires_at) = r;
    CacheEntry { id, user_id, key, task_text, start_url, steps, tokens, hits, created_at, updated_at, expires_at }
}

impl Store {
    /// `user`'s entry under `key`, if it has not expired.
    pub async fn cache_lookup(&self, user: &UserId, key: &str) -> Result<Option<CacheEntry>> {
        let sql = select!("WHERE user_id = $1 AND cache_key = $2 AND expires_at > $3");
        let row: Option<Row> =
            sqlx::query_as(sql).bind(user.as_str()).bind(key).bind(now_ms()).fetch_optional(&self.pool).await?;
        Ok(row.map(entry))
    }

    /// Stores `user`'s run under its key, replacing an entry there (a healed run rewrites its entry,
    /// keeping its id and creation time); its life starts again.
    pub async fn cache_save(&self, user: &UserId, new: NewCacheEntry<'_>) -> Result<CacheEntry> {
        let id = format!("cache_{}", uuid::Uuid::new_v4().simple());
        retry::on_busy("store an action cache entry", || async {
            let now = now_ms();
            sqlx::query(
                "INSERT INTO action_cache (id, user_id, cache_key, task_text, start_url, steps, tokens, hits,
                                           created_at, updated_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8, $9)
                 ON CONFLICT (user_id, cache_key) DO UPDATE SET task_text = excluded.task_text,
                     start_url = excluded.start_url, steps = excluded.steps, tokens = excluded.tokens,
                     updated_at = excluded.updated_at, expires_at = excluded.expires_at",
            )
            .bind(&id)
            .bind(user.as_str())
            .bind(new.key)
            .bind(new.task_text)
            .bind(new.start_url)
            .bind(new.steps)
            .bind(new.tokens)
            .bind(now)
            .bind(now.saturating_add(new.ttl_ms))
            .execute(&self.pool)
            .await?;
            let sql = select!("WHERE user_id = $1 AND cache_key = $2");
            let row: Row = sqlx::query_as(sql).bind(user.as_str()).bind(new.key).fetch_one(&self.pool).await?;
            Ok(entry(row))
        })
        .await
    }

    /// Counts a replay of `user`'s entry `id`.
    pub async fn cache_hit(&self, user: &UserId, id: &str) -> Result<()> {
        retry::on_busy("count an action cache hit", || async {
            sqlx::query("UPDATE action_cache SET hits = hits + 1 WHERE id = $1 AND user_id = $2")
                .bind(id)
                .bind(user.as_str())
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// `user`'s entries that have not expired, most recently written first: `limit` from `offset`, and
    /// how many there are in all.
    pub async fn cache_list(&self, user: &UserId, limit: i64, offset: i64) -> Result<(Vec<CacheEntry>, i64)> {
        let now = now_ms();
        let sql = select!("WHERE user_id = $1 AND expires_at > $2 ORDER BY updated_at DESC, id LIMIT $3 OFFSET $4");
        let rows: Vec<Row> =
            sqlx::query_as(sql).bind(user.as_str()).bind(now).bind(limit).bind(offset).fetch_all(&self.pool).await?;
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM action_cache WHERE user_id = $1 AND expires_at > $2")
            .bind(user.as_str())
            .bind(now)
            .fetch_one(&self.pool)
            .await?;
        Ok((rows.into_iter().map(entry).collect(), total))
    }

    /// Removes `user`'s entry `id`; false when `user` has none by that id.
    pub async fn cache_delete(&self, user: &UserId, id: &str) -> Result<bool> {
        let done = retry::on_busy("delete an action cache entry", || async {
            Ok(sqlx::query("DELETE FROM action_cache WHERE id = $1 AND user_id = $2")
                .bind(id)
                .bind(user.as_str())
                .execute(&self.pool)
                .await?)
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Removes every expired entry; returns how many.
    pub async fn cache_purge_expired(&self) -> Result<u64> {
        let done = retry::on_busy("purge expired action cache entries", || async {
            Ok(sqlx::query("DELETE FROM action_cache WHERE expires_at <= $1")
                .bind(now_ms())
                .execute(&self.pool)
                .await?)
        })
        .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    fn new<'a>(key: &'a str, steps: &'a str, ttl_ms: i64) -> NewCacheEntry<'a> {
        NewCacheEntry { key, task_text: "add product 29", start_url: "http://a.test/shop", steps, tokens: 900, ttl_ms }
    }

    #[tokio::test]
    async fn entries_are_per_user_rewritten_in_place_and_expire() {
        let (s, _d) = store().await;
        let (a, b) = (s.create_user("a", 0).await.unwrap(), s.create_user("b", 0).await.unwrap());
        let first = s.cache_save(&a.id, new("k1", "[1]", 60_000)).await.unwrap();
        assert_eq!((first.steps.as_str(), first.tokens, first.hits), ("[1]", 900, 0));
        assert!(s.cache_lookup(&b.id, "k1").await.unwrap().is_none(), "another user's is not seen");
        // A healed run rewrites the entry: same id, new steps.
        let healed = s.cache_save(&a.id, new("k1", "[2]", 60_000)).await.unwrap();
        assert_eq!((healed.id.as_str(), healed.steps.as_str()), (first.id.as_str(), "[2]"));
        s.cache_hit(&a.id, &first.id).await.unwrap();
        s.cache_hit(&b.id, &first.id).await.unwrap();
        assert_eq!(s.cache_lookup(&a.id, "k1").await.unwrap().map(|e| e.hits), Some(1));
        // An expired entry is neither found nor listed, and is purged.
        s.cache_save(&a.id, new("old", "[3]", -1)).await.unwrap();
        assert!(s.cache_lookup(&a.id, "old").await.unwrap().is_none());
        let (listed, total) = s.cache_list(&a.id, 10, 0).await.unwrap();
        assert_eq!((listed.len(), total), (1, 1));
        assert_eq!(s.cache_purge_expired().await.unwrap(), 1);
        assert!(!s.cache_delete(&b.id, &first.id).await.unwrap(), "not another user's");
        assert!(s.cache_delete(&a.id, &first.id).await.unwrap());
        assert!(s.cache_lookup(&a.id, "k1").await.unwrap().is_none());
        assert_eq!(s.cache_list(&a.id, 10, 0).await.unwrap().1, 0);
    }
}
