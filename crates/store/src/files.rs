//! Session files: what a session's pages downloaded or a client uploaded. The rows hold their metadata and
//! where their bytes are in the blob store (`blob_key`, `storage`, `node_id`), so any node finds them,
//! also after the session ended, until `purge_files` drops them. Rows from before the blob store keep their
//! bytes in `content` (`storage` = `database`). Names are unique within a session: a taken name gets
//! ` (n)` before its extension.

use crate::{now_ms, retry, Result, Store, StoreError};
use sha2::{Digest, Sha256};
use webpilot_core::files::{numbered, FileSource};
use webpilot_core::{SessionId, UserId};

/// Most alternatives tried for a taken name.
const MAX_NUMBERED: u32 = 1000;

/// `storage` of a file whose bytes are in the node's own blob folder.
const NODE: &str = "node";
/// `storage` of a file whose bytes are in the object store every node reads.
const OBJECT_STORE: &str = "object_store";
/// `storage` of a row written before the blob store: its bytes are in `content`.
const DATABASE: &str = "database";

/// The columns of a `FileRecord`.
macro_rules! select_files {
    ($rest:literal) => {
        concat!(
            "SELECT name, bytes, sha256, mime_type, source, created_at, blob_key, node_id, storage FROM files ",
            $rest
        )
    };
}

/// A stored file's metadata, and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FileRecord {
    pub name: String,
    pub bytes: i64,
    pub sha256: String,
    pub mime_type: String,
    pub source: String,
    pub created_at: i64,
    /// The blob's name in the blob store (`None`: the bytes are in the database, an older row).
    pub blob_key: Option<String>,
    /// The node whose blob folder holds the bytes (when `storage` is `node`).
    pub node_id: String,
    storage: String,
}

/// Where a file's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePlace<'a> {
    /// In the database row (written before the blob store).
    Database,
    /// Blob `key` in the folder of node `node`.
    Node { node: &'a str, key: &'a str },
    /// Blob `key` in the object store.
    ObjectStore { key: &'a str },
}

impl FileRecord {
    /// Where the bytes are.
    pub fn place(&self) -> FilePlace<'_> {
        match (self.storage.as_str(), self.blob_key.as_deref()) {
            (OBJECT_STORE, Some(key)) => FilePlace::ObjectStore { key },
            (NODE, Some(key)) => FilePlace::Node { node: &self.node_id, key },
            _ => FilePlace::Database,
        }
    }
}

/// Where a new file's bytes were put.
#[derive(Debug, Clone, Copy)]
pub struct FileBlob<'a> {
    pub key: &'a str,
    /// The node that wrote them.
    pub node_id: &'a str,
    /// In the object store (else in that node's folder).
    pub in_object_store: bool,
}

/// A file to store: its wanted name, type, origin and bytes.
#[derive(Debug, Clone, Copy)]
pub struct FileData<'a> {
    /// The wanted name (already valid); numbered when the session has one of that name.
    pub name: &'a str,
    pub mime_type: &'a str,
    pub source: FileSource,
    /// The bytes (measured and hashed by `insert_file`; the blob store keeps them).
    pub content: &'a [u8],
}

impl Store {
    /// Records `file`, whose bytes are in the blob store already as `blob`, in `session`'s area under its name, or the first free numbered one. An upload needs the
    /// session live: into an ended (or unknown) one it is `StoreError::NotFound("live session")`.
    pub async fn insert_file(
        &self,
        session: &SessionId,
        user: &UserId,
        file: FileData<'_>,
        blob: FileBlob<'_>,
    ) -> Result<FileRecord> {
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
                blob_key: Some(blob.key.to_owned()),
                node_id: blob.node_id.to_owned(),
                storage: if blob.in_object_store { OBJECT_STORE } else { NODE }.to_owned(),
            };
            sqlx::query(
                "INSERT INTO files (session_id, user_id, name, bytes, sha256, mime_type, source, created_at, content,
                 blob_key, node_id, storage) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(session.as_str())
            .bind(user.as_str())
            .bind(&record.name)
            .bind(record.bytes)
            .bind(&record.sha256)
            .bind(&record.mime_type)
            .bind(&record.source)
            .bind(record.created_at)
            .bind(&[][..])
            .bind(&record.blob_key)
            .bind(&record.node_id)
            .bind(&record.storage)
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
        Ok(sqlx::query_as(select_files!("WHERE session_id = $1 ORDER BY created_at, name"))
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

    /// One file of `session`.
    pub async fn get_file(&self, session: &SessionId, name: &str) -> Result<Option<FileRecord>> {
        Ok(sqlx::query_as(select_files!("WHERE session_id = $1 AND name = $2"))
            .bind(session.as_str())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The bytes a row from before the blob store keeps in the database (`FilePlace::Database`); `None` when
    /// it is gone or its bytes were moved to the blob store meanwhile ([`Store::move_file`]).
    pub async fn file_content(&self, session: &SessionId, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar("SELECT content FROM files WHERE session_id = $1 AND name = $2 AND storage = $3")
            .bind(session.as_str())
            .bind(name)
            .bind(DATABASE)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Files whose bytes `node` moves to where it writes new ones: rows that keep them in the database and,
    /// when it has an object store (`object_store`), those in its own folder. `(session id, name)` pairs
    /// after `after` in that order, `limit` at most.
    pub async fn files_to_move(
        &self,
        node: &str,
        object_store: bool,
        after: (&str, &str),
        limit: i64,
    ) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(concat!(
            "SELECT session_id, name FROM files WHERE (storage = $1 OR (storage = $2 AND node_id = $3 AND $4)) ",
            "AND (session_id > $5 OR (session_id = $5 AND name > $6)) ORDER BY session_id, name LIMIT $7"
        ))
        .bind(DATABASE)
        .bind(NODE)
        .bind(node)
        .bind(object_store)
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Records that file `name` of `session`, whose bytes were where `from` says, now has them at `to`
    /// (the row's `content` is emptied). False when the row was deleted or changed meanwhile: then `to`'s
    /// blob is the caller's to drop.
    pub async fn move_file(
        &self,
        session: &SessionId,
        name: &str,
        from: &FileRecord,
        to: FileBlob<'_>,
    ) -> Result<bool> {
        let storage = if to.in_object_store { OBJECT_STORE } else { NODE };
        retry::on_busy("move a session file's bytes", || async {
            let moved = sqlx::query(concat!(
                "UPDATE files SET storage = $1, blob_key = $2, node_id = $3, content = $4 ",
                "WHERE session_id = $5 AND name = $6 AND storage = $7 AND COALESCE(blob_key, '') = $8"
            ))
            .bind(storage)
            .bind(to.key)
            .bind(to.node_id)
            .bind(Vec::<u8>::new())
            .bind(session.as_str())
            .bind(name)
            .bind(from.storage.as_str())
            .bind(from.blob_key.as_deref().unwrap_or(""))
            .execute(&self.pool)
            .await?;
            Ok(moved.rows_affected() == 1)
        })
        .await
    }

    /// Removes one file of `session` and returns what it was (its blob is the caller's to delete).
    pub async fn delete_file(&self, session: &SessionId, name: &str) -> Result<Option<FileRecord>> {
        retry::on_busy("delete a session file", || async {
            Ok(sqlx::query_as(concat!(
                "DELETE FROM files WHERE session_id = $1 AND name = $2 ",
                "RETURNING name, bytes, sha256, mime_type, source, created_at, blob_key, node_id, storage"
            ))
            .bind(session.as_str())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
        })
        .await
    }

    /// Drops every file stored before `before` (ms) whose blob `node` can delete: its own, those in the
    /// database, and, when `object_store` (it reads the object store), those there. Returns them, so their
    /// blobs are deleted; each row goes to one node only.
    pub async fn purge_files(&self, node: &str, object_store: bool, before: i64) -> Result<Vec<FileRecord>> {
        retry::on_busy("purge session files", || async {
            Ok(sqlx::query_as(concat!(
                "DELETE FROM files WHERE created_at < $1 AND (storage = $2 OR (storage = $3 AND node_id = $4) ",
                "OR (storage = $5 AND $6)) ",
                "RETURNING name, bytes, sha256, mime_type, source, created_at, blob_key, node_id, storage"
            ))
            .bind(before)
            .bind(DATABASE)
            .bind(NODE)
            .bind(node)
            .bind(OBJECT_STORE)
            .bind(object_store)
            .fetch_all(&self.pool)
            .await?)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    const BLOB: FileBlob<'static> = FileBlob { key: "files/s/1", node_id: "n1", in_object_store: false };

    /// A row as the version before the blob store wrote it: `old.txt`, its bytes ("old") in `content`.
    async fn old_row(s: &Store, sid: &SessionId, user: &UserId) {
        sqlx::query(
            "INSERT INTO files (session_id, user_id, name, bytes, sha256, mime_type, source, created_at, content)
             VALUES ($1, $2, 'old.txt', 3, 'x', 'text/plain', 'upload', 1, $3)",
        )
        .bind(sid.as_str())
        .bind(user.as_str())
        .bind(&b"old"[..])
        .execute(&s.pool)
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn files_keep_their_place_get_unique_names_and_are_purged_by_their_node() {
        let (s, _d) = store().await;
        let u = s.create_user("f", 0).await.unwrap();
        let sid = SessionId::generate();
        let content: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let file = FileData {
            name: "a.bin",
            mime_type: "application/octet-stream",
            source: FileSource::Download,
            content: &content,
        };
        let first = s.insert_file(&sid, &u.id, file, BLOB).await.unwrap();
        let shared = FileBlob { key: "files/s/2", node_id: "n2", in_object_store: true };
        let second = s.insert_file(&sid, &u.id, file, shared).await.unwrap();
        assert_eq!((first.name.as_str(), second.name.as_str()), ("a.bin", "a (1).bin"));
        assert_eq!(first.sha256, hex::encode(Sha256::digest(&content)));
        let meta = s.get_file(&sid, "a (1).bin").await.unwrap().expect("stored");
        assert_eq!((meta.bytes, meta.place()), (70_000, FilePlace::ObjectStore { key: "files/s/2" }));
        let meta = s.get_file(&sid, "a.bin").await.unwrap().expect("stored");
        assert_eq!(meta.place(), FilePlace::Node { node: "n1", key: "files/s/1" });
        assert_eq!(s.file_content(&sid, "a.bin").await.unwrap(), None, "no bytes in the row");
        assert_eq!(s.session_file_bytes(&sid).await.unwrap(), 140_000);
        assert_eq!(s.user_file_bytes(&u.id).await.unwrap(), 140_000, "the quota counts them");
        assert_eq!(s.delete_file(&sid, "a.bin").await.unwrap().map(|r| r.blob_key), Some(Some("files/s/1".into())));
        assert!(s.delete_file(&sid, "a.bin").await.unwrap().is_none());
        assert_eq!(s.list_files(&sid).await.unwrap().len(), 1);
        // Another node without the object store leaves it; one with it purges it.
        assert!(s.purge_files("n1", false, now_ms() + 1).await.unwrap().is_empty());
        assert_eq!(s.purge_files("n1", true, now_ms() + 1).await.unwrap().len(), 1);
        assert!(s.list_files(&sid).await.unwrap().is_empty());
        assert_eq!(s.session_file_bytes(&sid).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_row_from_before_the_blob_store_keeps_its_bytes_and_any_node_purges_it() {
        let (s, _d) = store().await;
        let u = s.create_user("f", 0).await.unwrap();
        let sid = SessionId::generate();
        old_row(&s, &sid, &u.id).await;
        let meta = s.get_file(&sid, "old.txt").await.unwrap().expect("listed");
        assert_eq!((meta.place(), meta.blob_key.as_deref()), (FilePlace::Database, None));
        assert_eq!(s.file_content(&sid, "old.txt").await.unwrap(), Some(b"old".to_vec()));
        assert_eq!(s.purge_files("any", false, 2).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_node_moves_the_rows_it_answers_for_once_and_a_changed_row_is_left() {
        let (s, _d) = store().await;
        let u = s.create_user("f", 0).await.unwrap();
        let sid = SessionId::generate();
        old_row(&s, &sid, &u.id).await;
        let file = FileData { name: "n1.txt", mime_type: "text/plain", source: FileSource::Download, content: b"" };
        s.insert_file(&sid, &u.id, file, BLOB).await.unwrap();
        let other = FileBlob { key: "files/s/9", node_id: "n2", in_object_store: false };
        s.insert_file(&sid, &u.id, FileData { name: "n2.txt", ..file }, other).await.unwrap();
        let first = (sid.as_str(), "");
        let names = |v: Vec<(String, String)>| v.into_iter().map(|(_, n)| n).collect::<Vec<_>>();
        assert_eq!(names(s.files_to_move("n1", false, first, 10).await.unwrap()), ["old.txt"]);
        assert_eq!(names(s.files_to_move("n1", true, first, 10).await.unwrap()), ["n1.txt", "old.txt"]);
        assert_eq!(names(s.files_to_move("n1", true, (sid.as_str(), "n1.txt"), 10).await.unwrap()), ["old.txt"]);

        let old = s.get_file(&sid, "old.txt").await.unwrap().expect("old");
        let to = FileBlob { key: "files/s/new", node_id: "n1", in_object_store: true };
        assert!(s.move_file(&sid, "old.txt", &old, to).await.unwrap());
        assert!(!s.move_file(&sid, "old.txt", &old, to).await.unwrap(), "moved already: the row changed");
        let moved = s.get_file(&sid, "old.txt").await.unwrap().expect("moved");
        assert_eq!((moved.place(), moved.bytes), (FilePlace::ObjectStore { key: "files/s/new" }, 3));
        assert_eq!(s.file_content(&sid, "old.txt").await.unwrap(), None, "its bytes left the row");
        assert_eq!(names(s.files_to_move("n1", true, first, 10).await.unwrap()), ["n1.txt"]);
    }

    #[tokio::test]
    async fn uploads_need_a_live_session_and_downloads_land_after_its_end() {
        let (s, _d) = store().await;
        let u = s.create_user("f", 0).await.unwrap();
        let sid = SessionId::generate();
        s.insert_session(&sid, &u.id, "active", "{}", "n").await.unwrap();
        let upload = FileData { name: "u.txt", mime_type: "text/plain", source: FileSource::Upload, content: b"hi" };
        s.insert_file(&sid, &u.id, upload, BLOB).await.unwrap();
        assert!(s.end_session(&sid, "terminated", 0).await.unwrap());
        let refused = s.insert_file(&sid, &u.id, upload, BLOB).await;
        assert!(matches!(refused, Err(StoreError::NotFound(_))), "{refused:?}");
        let unknown = s.insert_file(&SessionId::generate(), &u.id, upload, BLOB).await;
        assert!(matches!(unknown, Err(StoreError::NotFound(_))), "{unknown:?}");
        // A download still being written when its session ends is kept (docs/profiles-and-files.md).
        let late = FileData { source: FileSource::Download, ..upload };
        assert_eq!(s.insert_file(&sid, &u.id, late, BLOB).await.unwrap().name, "u (1).txt");
    }
}
