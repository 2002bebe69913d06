//! Blobs: files that outlive a session, kept in an object store every node of a cluster reads
//! (`--object-store`: `s3://bucket/prefix`, `gs://…`, `az://…`, or `file:///a/directory/every/node/mounts`),
//! through the `object_store` crate. Keys are `/`-separated names under the store's prefix. Credentials
//! and endpoints come from the process environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and from explicit
//! `key=value` options; neither is ever logged.

/// Mode of every folder the service makes in its data directory (recordings', files' and the rest): the data
/// directory is the service's alone (docs/security.md).
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file the service writes in its data directory.
pub const FILE_MODE: u32 = 0o600;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::path::{Path as Key, PathPart};
use object_store::{GetOptions, GetRange, ObjectStore};
use std::ops::Range;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// What can go wrong with blobs.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("the object store address is not valid: {0}")]
    Address(String),
    #[error("the object store failed: {0}")]
    Store(#[from] object_store::Error),
    #[error("a local file could not be read: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, BlobError>;

/// Environment variables whose (lower-cased) names the object store builders read.
const ENV_PREFIXES: [&str; 3] = ["aws_", "google_", "azure_"];

/// One object store and the prefix under which this service keeps its blobs.
#[derive(Clone, Debug)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
    root: Key,
    /// The address with no query and no user info, for logs.
    shown: String,
}

impl Blobs {
    /// Opens the store `address` names, configured by the environment and then by `options`
    /// (`key=value`, the `object_store` builders' keys, such as `aws_endpoint` or `aws_allow_http`).
    pub fn open(address: &str, options: &[String]) -> Result<Self> {
        let url = url::Url::parse(address).map_err(|e| BlobError::Address(format!("{e}")))?;
        let mut config: Vec<(String, String)> = std::env::vars()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
            .collect();
        for option in options {
            let (k, v) = option
                .split_once('=')
                .ok_or_else(|| BlobError::Address(format!("an option is not key=value: {:?}", redacted(option))))?;
            config.push((k.trim().to_ascii_lowercase(), v.to_owned()));
        }
        let (store, root) = object_store::parse_url_opts(&url, config)?;
        let mut shown = url.clone();
        let _ = shown.set_password(None);
        let _ = shown.set_username("");
        shown.set_query(None);
        Ok(Blobs { store: Arc::from(store), root, shown: shown.to_string() })
    }

    /// The store's address, without credentials (for logs and the health answer).
    pub fn address(&self) -> &str {
        &self.shown
    }

    fn key(&self, name: &str) -> Key {
        self.root.parts().chain(name.split('/').filter(|p| !p.is_empty()).map(PathPart::from)).collect()
    }

    /// Uploads the local file `path` as `name` (in parts when it is large) and returns its size.
    pub async fn put_file(&self, name: &str, path: &std::path::Path) -> Result<u64> {
        let mut file = tokio::fs::File::open(path).await?;
        let mut writer = BufWriter::new(self.store.clone(), self.key(name));
        let copied = tokio::io::copy(&mut file, &mut writer).await;
        match copied {
            Ok(n) => {
                writer.shutdown().await?;
                Ok(n)
            }
            Err(e) => {
                if let Err(abort) = writer.abort().await {
                    tracing::warn!(error = %abort, "an unfinished upload could not be aborted");
                }
                Err(e.into())
            }
        }
    }

    /// Stores `bytes` as `name`.
    pub async fn put(&self, name: &str, bytes: Bytes) -> Result<()> {
        self.store.put(&self.key(name), bytes.into()).await?;
        Ok(())
    }

    /// The whole of `name`; `None` when there is no such blob.
    pub async fn get(&self, name: &str) -> Result<Option<Bytes>> {
        match self.store.get(&self.key(name)).await {
            Ok(found) => Ok(Some(found.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The size of `name` in bytes; `None` when there is no such blob.
    pub async fn size(&self, name: &str) -> Result<Option<u64>> {
        match self.store.head(&self.key(name)).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The bytes `range` of `name`, as they arrive.
    pub async fn stream(&self, name: &str, range: Range<u64>) -> Result<BoxStream<'static, Result<Bytes>>> {
        let options = GetOptions { range: Some(GetRange::Bounded(range)), ..GetOptions::default() };
        let found = self.store.get_opts(&self.key(name), options).await?;
        Ok(found.into_stream().map_err(BlobError::from).boxed())
    }

    /// Removes the blob `name`; one already gone is fine.
    pub async fn delete(&self, name: &str) -> Result<()> {
        match self.store.delete(&self.key(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes every blob under `prefix` (a folder-like name); returns how many went.
    pub async fn delete_all(&self, prefix: &str) -> Result<usize> {
        let under = self.key(prefix);
        let names: Vec<Key> = self.store.list(Some(&under)).map_ok(|meta| meta.location).try_collect().await?;
        let count = names.len();
        let listed = futures::stream::iter(names.into_iter().map(Ok)).boxed();
        self.store.delete_stream(listed).try_collect::<Vec<_>>().await?;
        Ok(count)
    }
}

/// An option as it may be shown: its key only.
fn redacted(option: &str) -> String {
    format!("{}=…", option.split('=').next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> (Blobs, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let address = format!("file://{}/blobs", dir.path().display());
        (Blobs::open(&address, &[]).expect("open"), dir)
    }

    #[tokio::test]
    async fn files_go_up_and_come_back_whole_or_in_ranges() {
        let (blobs, dir) = local();
        let file = dir.path().join("video.webm");
        let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &content).expect("write");
        assert_eq!(blobs.put_file("recordings/s1/video.webm", &file).await.expect("put"), 200_000);
        assert_eq!(blobs.size("recordings/s1/video.webm").await.expect("size"), Some(200_000));
        let part: Vec<Bytes> =
            blobs.stream("recordings/s1/video.webm", 100..350).await.expect("range").try_collect().await.expect("read");
        assert_eq!(part.concat(), content[100..350].to_vec());
        blobs.put("recordings/s1/events.json", Bytes::from_static(b"[]")).await.expect("put");
        assert_eq!(blobs.get("recordings/s1/events.json").await.expect("get").as_deref(), Some(&b"[]"[..]));
        assert_eq!(blobs.get("recordings/s2/events.json").await.expect("get"), None);
        assert_eq!(blobs.size("recordings/s2/video.webm").await.expect("size"), None);
        assert!(dir.path().join("blobs/recordings/s1/video.webm").exists(), "under the address's directory");
        blobs.put("files/s1/f", Bytes::from_static(b"x")).await.expect("put");
        blobs.delete("files/s1/f").await.expect("delete");
        blobs.delete("files/s1/f").await.expect("gone already is fine");
        assert_eq!(blobs.size("files/s1/f").await.expect("size"), None);
        assert_eq!(blobs.delete_all("recordings/s1").await.expect("delete"), 2);
        assert_eq!(blobs.size("recordings/s1/video.webm").await.expect("size"), None);
    }

    #[test]
    fn addresses_and_options_are_checked_and_never_shown_with_secrets() {
        assert!(matches!(Blobs::open("not a url", &[]), Err(BlobError::Address(_))));
        assert!(matches!(Blobs::open("s3://bucket/p", &["no-value".into()]), Err(BlobError::Address(_))));
        assert_eq!(redacted("aws_secret_access_key=abc"), "aws_secret_access_key=…");
        let s3 = Blobs::open("s3://user:pw@bucket/p?x=1", &["aws_region=eu-west-1".into()]).expect("s3");
        assert_eq!(s3.address(), "s3://bucket/p");
    }
}
