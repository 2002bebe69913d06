//! Where session files' bytes live: in the blob store the recordings use, as `files/<sessionId>/<id>`,
//! with their metadata in the database. Without `--object-store` the blob store is this node's folder
//! (`<data dir>/files/…`), and a file written here is read here (another node forwards to this one);
//! with it, every node reads them. Rows from before the blob store, and a node's folder once it has an object
//! store, are moved at start ([`FileStore::relocate`]).

use bytes::Bytes;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use webpilot_blobs::{BlobError, Blobs, DIR_MODE, FILE_MODE};
use webpilot_core::{SessionId, UserId};
use webpilot_store::{FileBlob, FileData, FilePlace, FileRecord, Store, StoreError};

/// The folder of the blob store that holds session files (`files/<sessionId>/<id>`).
const FOLDER: &str = "files";

/// What can go wrong storing or reading a file.
#[derive(Debug, thiserror::Error)]
pub enum FileStoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the blob store failed: {0}")]
    Blob(#[from] BlobError),
    #[error("the file's bytes are kept by node {0}")]
    Elsewhere(String),
    #[error("the file's bytes are in an object store this node is not configured with")]
    NoObjectStore,
}

/// Where a file's bytes are, by [`FileStore::kept`].
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// A row from before the blob store, whose bytes are in the database (always this node's to serve).
    Bytes(Vec<u8>),
    /// The file's row, its bytes in a blob store ([`FileStore::holder`] says which).
    Row(FileRecord),
    /// Deleted meanwhile.
    Gone,
}

/// The session files' bytes and rows, behind one handle (cheap to clone).
#[derive(Clone, Debug)]
pub struct FileStore {
    store: Store,
    /// This node's own folder (its data directory, which holds `files/`), and the blob store over it.
    dir: PathBuf,
    local: Blobs,
    /// The object store, when the node has one (new files go there).
    shared: Option<Blobs>,
    node: String,
}

impl FileStore {
    /// Files of node `node`: new ones go to `shared` when given, else under `dir` (an existing directory).
    pub fn new(store: Store, dir: &Path, shared: Option<Blobs>, node: String) -> Result<Self, BlobError> {
        let dir = std::fs::canonicalize(dir)?;
        let address = url::Url::from_file_path(&dir)
            .map_err(|()| BlobError::Address(format!("the directory {} as a URL", dir.display())))?;
        let local = Blobs::open(address.as_str(), &[])?;
        Ok(FileStore { store, dir, local, shared, node })
    }

    /// The node these blobs belong to.
    pub fn node_id(&self) -> &str {
        &self.node
    }

    /// Puts `file`'s bytes in the blob store, then records it in `session`'s area (a refused row drops the
    /// blob again). An upload into an ended session is `StoreError::NotFound`.
    pub async fn insert(
        &self,
        session: &SessionId,
        user: &UserId,
        file: FileData<'_>,
    ) -> Result<FileRecord, FileStoreError> {
        let key = new_key(session);
        let blobs = self.shared.as_ref().unwrap_or(&self.local);
        blobs.put(&key, Bytes::copy_from_slice(file.content)).await?;
        if self.shared.is_none() {
            self.make_private(session, &key).await?;
        }
        let blob = FileBlob { key: &key, node_id: &self.node, in_object_store: self.shared.is_some() };
        match self.store.insert_file(session, user, file, blob).await {
            Ok(record) => Ok(record),
            Err(e) => {
                self.drop_blob(blobs, &key).await;
                Err(e.into())
            }
        }
    }

    /// The blob store holding `record`'s bytes when this node reads it, with the blob's name; `None` for a
    /// row that keeps them in the database.
    pub fn holder<'r>(&self, record: &'r FileRecord) -> Result<Option<(&Blobs, &'r str)>, FileStoreError> {
        match record.place() {
            FilePlace::Database => Ok(None),
            FilePlace::ObjectStore { key } => match &self.shared {
                Some(blobs) => Ok(Some((blobs, key))),
                None => Err(FileStoreError::NoObjectStore),
            },
            FilePlace::Node { node, key } if node == self.node => Ok(Some((&self.local, key))),
            FilePlace::Node { node, .. } => Err(FileStoreError::Elsewhere(node.to_owned())),
        }
    }

    /// Where `record`'s bytes are now: the bytes a row from before the blob store keeps in the database, or
    /// the row as it is (its bytes in a blob store), re-read when they were moved there meanwhile
    /// ([`FileStore::relocate`] at a node's start); [`Kept::Gone`] when the file went meanwhile.
    pub async fn kept(&self, session: &SessionId, record: &FileRecord) -> Result<Kept, FileStoreError> {
        if record.place() != FilePlace::Database {
            return Ok(Kept::Row(record.clone()));
        }
        if let Some(content) = self.store.file_content(session, &record.name).await? {
            return Ok(Kept::Bytes(content));
        }
        Ok(match self.store.get_file(session, &record.name).await? {
            Some(now) if now.place() != FilePlace::Database => Kept::Row(now),
            _ => Kept::Gone,
        })
    }

    /// The whole of `record`'s bytes (`None`: gone meanwhile).
    pub async fn content(&self, session: &SessionId, record: &FileRecord) -> Result<Option<Vec<u8>>, FileStoreError> {
        match self.kept(session, record).await? {
            Kept::Bytes(content) => Ok(Some(content)),
            Kept::Row(now) => match self.holder(&now)? {
                Some((blobs, key)) => Ok(blobs.get(key).await?.map(|b| b.to_vec())),
                None => Ok(None),
            },
            Kept::Gone => Ok(None),
        }
    }

    /// Moves the bytes this node answers for to where it writes new files: rows from before the blob store
    /// (their bytes in the database) and, when the node has an object store, the files of its own folder
    /// (written before it had one). Run at start; each file is moved by one node only. Returns how many.
    pub async fn relocate(&self) -> Result<usize, FileStoreError> {
        let (mut after, mut moved) = ((String::new(), String::new()), 0);
        loop {
            let batch = self.store.files_to_move(&self.node, self.shared.is_some(), (&after.0, &after.1), 32).await?;
            let Some(last) = batch.last().cloned() else { return Ok(moved) };
            for (session, name) in batch {
                match self.relocate_one(&SessionId::from_string(session), &name).await {
                    Ok(true) => moved += 1,
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "a session file's bytes could not be moved; they stay"),
                }
            }
            after = last;
        }
    }

    /// Moves one file's bytes; false when there was nothing to move (gone, or moved by another node).
    async fn relocate_one(&self, session: &SessionId, name: &str) -> Result<bool, FileStoreError> {
        let Some(record) = self.store.get_file(session, name).await? else { return Ok(false) };
        let content = match record.place() {
            FilePlace::Database => self.store.file_content(session, name).await?.map(Bytes::from),
            FilePlace::Node { node, key } if node == self.node && self.shared.is_some() => self.local.get(key).await?,
            _ => None,
        };
        let Some(content) = content else { return Ok(false) };
        let key = new_key(session);
        let blobs = self.shared.as_ref().unwrap_or(&self.local);
        blobs.put(&key, content).await?;
        if self.shared.is_none() {
            self.make_private(session, &key).await?;
        }
        let blob = FileBlob { key: &key, node_id: &self.node, in_object_store: self.shared.is_some() };
        if !self.store.move_file(session, name, &record, blob).await? {
            self.drop_blob(blobs, &key).await;
            return Ok(false);
        }
        if let FilePlace::Node { key: old, .. } = record.place() {
            self.drop_blob(&self.local, old).await;
        }
        Ok(true)
    }

    /// Deletes file `name` of `session` and its blob; `None` when there is none. The caller made sure this
    /// node reads its blob (`holder`).
    pub async fn delete(&self, session: &SessionId, name: &str) -> Result<Option<FileRecord>, FileStoreError> {
        let Some(record) = self.store.delete_file(session, name).await? else { return Ok(None) };
        self.remove_blob(&record).await;
        Ok(Some(record))
    }

    /// Drops the files stored before `before` (ms) whose blobs this node can delete, with their blobs;
    /// returns how many.
    pub async fn purge(&self, before: i64) -> Result<usize, FileStoreError> {
        let gone = self.store.purge_files(&self.node, self.shared.is_some(), before).await?;
        for record in &gone {
            self.remove_blob(record).await;
        }
        Ok(gone.len())
    }

    /// Deletes `record`'s blob (its row is gone); a failure is logged.
    async fn remove_blob(&self, record: &FileRecord) {
        match self.holder(record) {
            Ok(Some((blobs, key))) => self.drop_blob(blobs, key).await,
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "a deleted file's blob could not be removed"),
        }
    }

    /// The data directory is the service's alone: the folders a local blob is in are made 0700 and the
    /// blob 0600 (the blob store creates them with the process's default modes).
    async fn make_private(&self, session: &SessionId, key: &str) -> Result<(), FileStoreError> {
        let files = self.dir.join(FOLDER);
        for (path, mode) in
            [(files.join(session.as_str()), DIR_MODE), (files, DIR_MODE), (self.dir.join(key), FILE_MODE)]
        {
            tokio::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .await
                .map_err(|e| FileStoreError::Blob(e.into()))?;
        }
        Ok(())
    }

    async fn drop_blob(&self, blobs: &Blobs, key: &str) {
        if let Err(e) = blobs.delete(key).await {
            tracing::warn!(error = %e, "a session file's blob could not be removed");
        }
    }
}

/// A new blob's name for a file of `session`: `files/<sessionId>/<random>`.
fn new_key(session: &SessionId) -> String {
    format!("{FOLDER}/{}/{}", session.as_str(), hex::encode(rand::random::<[u8; 16]>()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use webpilot_core::files::FileSource;

    #[tokio::test]
    async fn bytes_go_to_the_blob_folder_and_leave_with_their_row() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open_sqlite(&dir.path().join("t.db")).await.expect("store");
        let files = FileStore::new(store.clone(), dir.path(), None, "n1".into()).expect("file store");
        let user = store.create_user("u", 0).await.expect("user");
        let sid = SessionId::generate();
        let file =
            FileData { name: "a.txt", mime_type: "text/plain", source: FileSource::Download, content: b"marker" };
        let record = files.insert(&sid, &user.id, file).await.expect("stored");
        let key = record.blob_key.clone().expect("a blob");
        assert_eq!(std::fs::read(dir.path().join(&key)).expect("in the folder"), b"marker");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!((mode(&dir.path().join(&key)), mode(&dir.path().join("files"))), (0o600, 0o700));
        assert_eq!(files.content(&sid, &record).await.expect("read"), Some(b"marker".to_vec()));
        let elsewhere = FileStore::new(store.clone(), dir.path(), None, "n2".into()).expect("file store");
        assert!(matches!(elsewhere.holder(&record), Err(FileStoreError::Elsewhere(n)) if n == "n1"));
        assert!(files.delete(&sid, "a.txt").await.expect("delete").is_some());
        assert!(!dir.path().join(&key).exists(), "the blob went with the row");
        let again = files.insert(&sid, &user.id, file).await.expect("stored").blob_key.expect("a blob");
        assert_eq!(elsewhere.purge(i64::MAX).await.expect("purge"), 0, "another node's blobs stay");
        assert!(dir.path().join(&again).is_file());
        assert_eq!(files.purge(i64::MAX).await.expect("purge"), 1);
        assert!(!dir.path().join(&again).exists(), "purged with its row");
    }
}
