//! Session files: what a session's pages downloaded or a client uploaded, metadata and bytes, so any node
//! serves them, also after the session ended, until `purge_files` drops them. Names are unique within a
//! session: a taken name gets ` (n)` before its extension.

use crate::{now_ms, retry, Result, Store, StoreError};
use sha2::{Digest, Sha256};
use webpilot_core::files::{numbered, FileSource};
use webpilot_core::{SessionId, UserId};

/// Most alternatives tried for a taken name.
const MAX_NUMBERED: u32 = 1000;

/// A stored file's metadata.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FileRecord {
    pub name: String,
    pub bytes: i64,
    pub sha256: String,
    pub mime_type: String,
    pub source: String,
    pub created_at: i64,
}

/// A file to store.
#[derive(Debug, Clone, Copy)]
pub struct NewFile<'a> {
    /// The wanted name (already valid); numbered when the session has one of that name.
    pub name: &'a str,
    pub mime_type: &'a str,
    pub source: FileSource,
    pub content: &'a [u8],
}

impl Store {
    /// Stores `file` in `session`'s area under its name, or the first free numbered one. An upload needs the
    /// session live: into an ended (or unknown) one it is `StoreError::NotFound("live session")`.
    pub async fn insert_file(&self, session: &SessionId, user: &UserId, file: NewFile<'_>) -> Result<FileRecord> {
        let sha256 = hex::encode(Sha256::digest(file.content));
        let bytes = i64::try_from(file.content.len()).unwrap_or(i64::MAX);
        retry::on_busy("store a session file", || async {
            let mut tx = self.pool.begin().await?;
            if file.source == FileSource::Upload {
                // An upload needs a live session. Touching its row holds it against a concurrent end (the end's
                // UPDATE waits for this transaction), so an upload is stored before the end or refused.
                let live = sqlx::query("UPDATE sessions SET state = state WHERE id = $1 AND ended_at IS NULL")
                    .bind(session.as_str())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if live == 0 {
                    return Err(StoreError::NotFound("live session"));
                }
            }
            let taken: Vec<String> = sqlx::query_scalar("SELECT name FROM files WHERE session_id = $1")
                .bind(session.as_str())
                .fetch_all(&mut *tx)
                .await?;
            let mut name = file.name.to_owned();
            let mut n = 1;
            while taken.contains(&name) && n <= MAX_NUMBERED {
                name = numbered(file.name, n);
                n += 1;
            }
            let record = FileRecord {
                name,
                bytes,
                sha256: sha256.clone(),
                mime_type: file.mime_type.to_owned(),
                source: file.source.as_str().to_owned(),
                created_at: now_ms(),
            };
            sqlx::query(
                "INSERT INTO files (session_id, user_id, name, bytes, sha256, mime_type, source, created_at, content)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(session.as_str())
            .bind(user.as_str())
            .bind(&record.name)
            .bind(record.bytes)
            .bind(&record.sha256)
            .bind(&record.mime_type)
            .bind(&record.source)
            .bind(record.created_at)
            .bind(file.content)
            .execute(&mut *tx)
            .await?;
            // Announced with the row: a stored file is never missed by the owner's webhooks.
            let data = serde_json::json!({
                "sessionId": session.as_str(),
                "name": record.name,
                "bytes": record.bytes,
                "sha256": record.sha256,
                "mimeType": record.mime_type,
                "source": record.source,
                "createdAt": crate::rfc3339(record.created_at),
            });
            crate::webhooks::enqueue(&mut tx, user, "file.created", &data).await?;
            tx.commit().await?;
            Ok(record)
        })
        .await
    }

    /// The files of `session`, oldest first.
    pub async fn list_files(&self, session: &SessionId) -> Result<Vec<FileRecord>> {
        Ok(sqlx::query_as(
            "SELECT name, bytes, sha256, mime_type, source, created_at FROM files
             WHERE session_id = $1 ORDER BY created_at, name",
        )
        .bind(session.as_str())
        .fetch_all(&self.pool)
        .await?)
    }

    /// The bytes stored for `session` so far (what its per-session cap counts).
    pub async fn session_file_bytes(&self, session: &SessionId) -> Result<i64> {
        let total: Option<i64> =
            sqlx::query_scalar("SELECT CAST(SUM(bytes) AS BIGINT) FROM files WHERE session_id = $1")
                .bind(session.as_str())
                .fetch_one(&self.pool)
                .await?;
        Ok(total.unwrap_or(0))
    }

    /// The bytes of every file `user` has stored (what the storage quota counts, beside recordings).
    pub async fn user_file_bytes(&self, user: &UserId) -> Result<i64> {
        let total: Option<i64> = sqlx::query_scalar("SELECT CAST(SUM(bytes) AS BIGINT) FROM files WHERE user_id = $1")
            .bind(user.as_str())
            .fetch_one(&self.pool)
            .await?;
        Ok(total.unwrap_or(0))
    }

    /// What `user`'s files and recordings take together (the storage quota's count).
    pub async fn storage_bytes(&self, user: &UserId) -> Result<i64> {
        Ok(self.user_file_bytes(user).await?.saturating_add(self.recording_bytes(user).await?))
    }

    /// Whether `adding` more bytes would take `user`'s files and recordings past `quota` (`None`: no quota).
    pub async fn over_storage_quota(&self, user: &UserId, adding: usize, quota: Option<i64>) -> Result<bool> {
        let Some(quota) = quota else { return Ok(false) };
        let adding = i64::try_from(adding).unwrap_or(i64::MAX);
        Ok(self.storage_bytes(user).await?.saturating_add(adding) > quota)
    }

    /// One file of `session` with its bytes.
    pub async fn get_file(&self, session: &SessionId, name: &str) -> Result<Option<(FileRecord, Vec<u8>)>> {
        let meta: Option<FileRecord> = sqlx::query_as(
            "SELECT name, bytes, sha256, mime_type, source, created_at FROM files WHERE session_id = $1 AND name = $2",
        )
        .bind(session.as_str())
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        let Some(meta) = meta else { return Ok(None) };
        let content: Option<Vec<u8>> =
            sqlx::query_scalar("SELECT content FROM files WHERE session_id = $1 AND name = $2")
                .bind(session.as_str())
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        Ok(content.map(|c| (meta, c)))
    }

    /// Removes one file of `session`; false when there is none.
    pub async fn delete_file(&self, session: &SessionId, name: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM files WHERE session_id = $1 AND name = $2")
            .bind(session.as_str())
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Drops every file stored before `before` (ms); returns how many.
    pub async fn purge_files(&self, before: i64) -> Result<u64> {
        let done = retry::on_busy("purge session files", || async {
            Ok(sqlx::query("DELETE FROM files WHERE created_at < $1").bind(before).execute(&self.pool).await?)
        })
        .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    #[tokio::test]
    async fn files_keep_their_bytes_get_unique_names_and_are_purged() {
        let (s, _d) = store().await;
        let u = s.create_user("f", 0).await.unwrap();
        let sid = SessionId::generate();
        let content: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let file = NewFile {
            name: "a.bin",
            mime_type: "application/octet-stream",
            source: FileSource::Download,
            content: &content,
        };
        let first = s.insert_file(&sid, &u.id, file).await.unwrap();
        let second = s.insert_file(&sid, &u.id, file).await.unwrap();
        assert_eq!((first.name.as_str(), second.name.as_str()), ("a.bin", "a (1).bin"));
        assert_eq!(first.sha256, hex::encode(Sha256::digest(&content)));
        let (meta, bytes) = s.get_file(&sid, "a (1).bin").await.unwrap().expect("stored");
        assert_eq!((meta.bytes, bytes), (70_000, content));
        assert_eq!(s.session_file_bytes(&sid).await.unwrap(), 140_000);
        assert!(s.delete_file(&sid, "a.bin").await.unwrap());
        assert!(!s.delete_file(&sid, "a.bin").await.unwrap());
        assert_eq!(s.list_files(&sid).await.unwrap().len(), 1);
        assert_eq!(s.purge_files(now_ms() + 1).await.unwrap(), 1);
        assert!(s.list_files(&sid).await.unwrap().is_empty());
        assert_eq!(s.session_file_bytes(&sid).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn uploads_need_a_live_session_and_downloads_land_after_its_end() {
        let (s, _d) = store().await;
        let u = s.create_user("f", 0).await.unwrap();
        let sid = SessionId::generate();
        s.insert_session(&sid, &u.id, "active", "{}", "n").await.unwrap();
        let upload = NewFile { name: "u.txt", mime_type: "text/plain", source: FileSource::Upload, content: b"hi" };
        s.insert_file(&sid, &u.id, upload).await.unwrap();
        assert!(s.end_session(&sid, "terminated", 0).await.unwrap());
        let refused = s.insert_file(&sid, &u.id, upload).await;
        assert!(matches!(refused, Err(StoreError::NotFound(_))), "{refused:?}");
        let unknown = s.insert_file(&SessionId::generate(), &u.id, upload).await;
        assert!(matches!(unknown, Err(StoreError::NotFound(_))), "{unknown:?}");
        // A download still being written when its session ends is kept (docs/profiles-and-files.md).
        let late = NewFile { source: FileSource::Download, ..upload };
        assert_eq!(s.insert_file(&sid, &u.id, late).await.unwrap().name, "u (1).txt");
    }
}
