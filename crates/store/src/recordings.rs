//! Recordings of sessions: whose each is, whether it is still being written (`recording`), complete
//! (`ready`) or cut off (`failed`), and what it holds. The files themselves are the recorder's.

use crate::{retry, Result, Store, StoreError};
use webpilot_core::UserId;

/// Where a recording stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordingStatus {
    Recording,
    Ready,
    Failed,
}

impl RecordingStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordingStatus::Recording => "recording",
            RecordingStatus::Ready => "ready",
            RecordingStatus::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "recording" => Ok(RecordingStatus::Recording),
            "ready" => Ok(RecordingStatus::Ready),
            "failed" => Ok(RecordingStatus::Failed),
            other => Err(StoreError::Corrupt(format!("recording status {other:?}"))),
        }
    }
}

/// What a finished (or cut off) recording holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordingTotals {
    pub duration_ms: i64,
    pub bytes: i64,
    pub frames: i64,
}

/// One recording as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingRecord {
    pub session_id: String,
    pub user_id: String,
    pub status: RecordingStatus,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub totals: RecordingTotals,
    /// The node that recorded it (and keeps its files unless they are in the object store).
    pub node_id: String,
    /// Whether its files were uploaded to the object store, so any node serves them.
    pub in_object_store: bool,
}

#[derive(sqlx::FromRow)]
struct RecordingRow {
    session_id: String,
    user_id: String,
    status: String,
    started_at: i64,
    ended_at: Option<i64>,
    duration_ms: i64,
    bytes: i64,
    frames: i64,
    node_id: String,
    storage: String,
}

/// `storage` of a recording whose files are in the object store (else `node`).
const OBJECT_STORE: &str = "object_store";

fn storage(in_object_store: bool) -> &'static str {
    if in_object_store {
        OBJECT_STORE
    } else {
        "node"
    }
}

/// A query of `RecordingRow`s: its columns, from `recordings`, then `$rest` (a literal, so the SQL stays static).
macro_rules! select_recordings {
    ($rest:literal) => {
        concat!(
            "SELECT session_id, user_id, status, started_at, ended_at, duration_ms, bytes, frames, node_id, ",
            "storage FROM recordings ",
            $rest
        )
    };
}

impl TryFrom<RecordingRow> for RecordingRecord {
    type Error = StoreError;
    fn try_from(r: RecordingRow) -> Result<Self> {
        Ok(RecordingRecord {
            session_id: r.session_id,
            user_id: r.user_id,
            status: RecordingStatus::parse(&r.status)?,
            started_at: r.started_at,
            ended_at: r.ended_at,
            totals: RecordingTotals { duration_ms: r.duration_ms, bytes: r.bytes, frames: r.frames },
            node_id: r.node_id,
            in_object_store: r.storage == OBJECT_STORE,
        })
    }
}

impl Store {
    /// Records that `node` started recording `session` of `user` at `started_at` (ms).
    pub async fn insert_recording(&self, session: &str, user: &UserId, node: &str, started_at: i64) -> Result<()> {
        retry::on_busy("store a recording", || async {
            sqlx::query(
                "INSERT INTO recordings (session_id, user_id, node_id, status, started_at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(session)
            .bind(user.as_str())
            .bind(node)
            .bind(RecordingStatus::Recording.as_str())
            .bind(started_at)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }

    /// Settles a recording as `status` at `ended_at` (ms) with what it holds, and where its files are.
    pub async fn finish_recording(
        &self,
        session: &str,
        status: RecordingStatus,
        ended_at: i64,
        totals: RecordingTotals,
        in_object_store: bool,
    ) -> Result<()> {
        retry::on_busy("finish a recording", || async {
            let mut tx = self.pool.begin().await?;
            let owner: Option<String> = sqlx::query_scalar(
                "UPDATE recordings SET status = $1, ended_at = $2, duration_ms = $3, bytes = $4, frames = $5,
                 storage = $6 WHERE session_id = $7 RETURNING user_id",
            )
            .bind(status.as_str())
            .bind(ended_at)
            .bind(totals.duration_ms)
            .bind(totals.bytes)
            .bind(totals.frames)
            .bind(storage(in_object_store))
            .bind(session)
            .fetch_optional(&mut *tx)
            .await?;
            // A ready recording is announced with its row (`recording.ready`); a failed one is not.
            if let (Some(user), RecordingStatus::Ready) = (owner, status) {
                let data = serde_json::json!({
                    "sessionId": session,
                    "status": status.as_str(),
                    "durationMs": totals.duration_ms,
                    "bytes": totals.bytes,
                    "frames": totals.frames,
                    "endedAt": ended_at,
                    "video": format!("/recordings/{session}/video.webm"),
                    "events": format!("/recordings/{session}/events"),
                });
                crate::webhooks::enqueue(&mut tx, &UserId::from_string(user), "recording.ready", &data).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// The recordings `node` left `recording` (it stopped without finishing them).
    pub async fn unfinished_recordings(&self, node: &str) -> Result<Vec<RecordingRecord>> {
        let rows: Vec<RecordingRow> = sqlx::query_as(select_recordings!("WHERE node_id = $1 AND status = $2"))
            .bind(node)
            .bind(RecordingStatus::Recording.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(RecordingRecord::try_from).collect()
    }

    /// `user`'s recording of `session` (None for another user's).
    pub async fn get_recording(&self, user: &UserId, session: &str) -> Result<Option<RecordingRecord>> {
        let row: Option<RecordingRow> = sqlx::query_as(select_recordings!("WHERE session_id = $1 AND user_id = $2"))
            .bind(session)
            .bind(user.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.map(RecordingRecord::try_from).transpose()
    }

    /// The recording of `session`, whoever owns it (for a share link, which is its own capability).
    pub async fn recording_of_session(&self, session: &str) -> Result<Option<RecordingRecord>> {
        let row: Option<RecordingRow> = sqlx::query_as(select_recordings!("WHERE session_id = $1"))
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
        row.map(RecordingRecord::try_from).transpose()
    }

    /// Removes the finished recordings that ended before `ended_before` (ms) whose files `node` can
    /// remove (its own, and any in the object store), and returns their session ids with whether their
    /// files are in the object store. Each row goes to one node only.
    pub async fn purge_recordings(&self, node: &str, ended_before: i64) -> Result<Vec<(String, bool)>> {
        retry::on_busy("purge recordings", || async {
            let gone: Vec<(String, String)> = sqlx::query_as(
                "DELETE FROM recordings WHERE (node_id = $1 OR storage = $4) AND status <> $2 AND ended_at < $3
                 RETURNING session_id, storage",
            )
            .bind(node)
            .bind(RecordingStatus::Recording.as_str())
            .bind(ended_before)
            .bind(OBJECT_STORE)
            .fetch_all(&self.pool)
            .await?;
            Ok(gone.into_iter().map(|(id, storage)| (id, storage == OBJECT_STORE)).collect())
        })
        .await
    }

    /// `user`'s recordings, newest first, `limit` of them after skipping `offset`.
    pub async fn list_recordings(&self, user: &UserId, limit: i64, offset: i64) -> Result<Vec<RecordingRecord>> {
        let rows: Vec<RecordingRow> = sqlx::query_as(select_recordings!(
            "WHERE user_id = $1 ORDER BY started_at DESC, session_id DESC LIMIT $2 OFFSET $3"
        ))
        .bind(user.as_str())
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(RecordingRecord::try_from).collect()
    }

    /// The bytes `user`'s recordings take (what the storage quota counts).
    pub async fn recording_bytes(&self, user: &UserId) -> Result<i64> {
        let used: Option<i64> =
            sqlx::query_scalar("SELECT CAST(SUM(bytes) AS BIGINT) FROM recordings WHERE user_id = $1")
                .bind(user.as_str())
                .fetch_one(&self.pool)
                .await?;
        Ok(used.unwrap_or(0))
    }

    /// Forgets `user`'s recording of `session`; false when there is none.
    pub async fn delete_recording(&self, user: &UserId, session: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM recordings WHERE session_id = $1 AND user_id = $2")
            .bind(session)
            .bind(user.as_str())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    #[tokio::test]
    async fn recordings_are_owned_listed_newest_first_and_settled() {
        let (s, _d) = store().await;
        let u = s.create_user("r", 1_000).await.unwrap();
        let other = s.create_user("o", 1_000).await.unwrap();
        s.insert_recording("s1", &u.id, "n1", 1_000).await.unwrap();
        s.insert_recording("s2", &u.id, "n1", 2_000).await.unwrap();
        s.insert_recording("s3", &u.id, "n2", 3_000).await.unwrap();
        let totals = RecordingTotals { duration_ms: 4_000, bytes: 9_000, frames: 12 };
        s.finish_recording("s1", RecordingStatus::Ready, 5_000, totals, true).await.unwrap();
        let one = s.get_recording(&u.id, "s1").await.unwrap().expect("own");
        assert_eq!((one.status, one.ended_at, one.totals), (RecordingStatus::Ready, Some(5_000), totals));
        assert!(one.in_object_store && one.node_id == "n1");
        assert_eq!(s.recording_bytes(&u.id).await.unwrap(), 9_000, "what the quota counts");
        assert_eq!(s.recording_bytes(&other.id).await.unwrap(), 0);
        assert!(s.get_recording(&other.id, "s1").await.unwrap().is_none(), "not another user's");
        let ids: Vec<String> =
            s.list_recordings(&u.id, 10, 0).await.unwrap().into_iter().map(|r| r.session_id).collect();
        assert_eq!(ids, vec!["s3", "s2", "s1"]);
        assert_eq!(s.list_recordings(&u.id, 1, 1).await.unwrap()[0].session_id, "s2");
        let left: Vec<String> =
            s.unfinished_recordings("n1").await.unwrap().into_iter().map(|r| r.session_id).collect();
        assert_eq!(left, vec!["s2"]);
        assert!(!s.delete_recording(&other.id, "s2").await.unwrap());
        assert!(s.delete_recording(&u.id, "s2").await.unwrap());
        assert_eq!(s.list_recordings(&u.id, 10, 0).await.unwrap().len(), 2);
        // s1 is in the object store: any node purges it; s3 is n2's.
        let purged = s.purge_recordings("n9", 10_000).await.unwrap();
        assert_eq!(purged, vec![("s1".to_owned(), true)]);
    }
}
