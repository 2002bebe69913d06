//! webpilot-store: the persistent state (users, API keys, balances, sessions, tasks, usage, nodes) behind
//! one `Store` handle, on SQLite (the embedded default) or PostgreSQL (`--database-url`, for several nodes).
//!
//! One set of statements serves both through sqlx's `Any` driver: the schema keeps to what both read the
//! same way under `Any` (TEXT ids, BIGINT milliseconds and micro-dollars, no booleans, timestamps or
//! JSON columns) and every statement uses `$N` placeholders, which SQLite accepts too. Each backend has its
//! own migration folder.

mod action_cache;
mod claims;
mod files;
mod keys;
mod nodes;
mod profiles;
mod recordings;
mod retry;
mod sealed;
mod sessions;
mod tasks;
pub mod testdb;
mod usage;
mod users;
mod webhooks;

pub use action_cache::{CacheEntry, NewCacheEntry};
pub use claims::{ClaimKind, ClaimLimits, ClaimRefusal};
pub use files::{FileBlob, FileData, FilePlace, FileRecord};
pub use keys::{generate_api_key, hash_api_key, ApiKeyRecord, KeyLookup};
pub use nodes::{NodeRecord, Reaped, SessionPlace};
pub use profiles::{NewProfile, ProfileCaps, ProfileRecord, ProfileRefusal};
pub use recordings::{RecordingRecord, RecordingStatus, RecordingTotals};
pub use sealed::{SealError, Sealer};
pub use sessions::SessionRecord;
pub use tasks::{TaskOutcome, TaskRecord, TaskStatus};
pub use usage::{UsageLine, UsagePage};
pub use users::User;
pub use webhooks::{
    AttemptOutcome, DeliveryRecord, DueMessage, OutboxMessage, WebhookEvent, WebhookRecord, WEBHOOK_EVENTS,
};

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{AnyPool, ConnectOptions, Connection, Executor};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// Errors of the store. Messages never contain key material.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("invalid stored value: {0}")]
    Corrupt(String),
    #[error("unsupported database URL (postgres://... or sqlite://...)")]
    UnsupportedUrl,
    #[error(transparent)]
    Sealed(#[from] SealError),
}

/// Every store failure is the service's fault: 500 `INTERNAL_ERROR`, the cause logged once where it becomes
/// an `ApiError` (absent rows are answered by the callers, which know what was asked for).
impl webpilot_core::Coded for StoreError {
    fn code(&self) -> webpilot_core::ErrorCode {
        webpilot_core::ErrorCode::InternalError
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A time in Unix ms as the API writes every time: RFC 3339 in UTC, with milliseconds
/// (`2026-11-27T10:00:00.000Z`).
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Which database engine a store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

/// The store handle; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// Seals the secrets kept in the database (`sealed.rs`); a random key until [`Store::with_sealer`].
    sealer: std::sync::Arc<Sealer>,
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL schema (also run directly by the schema test).
pub static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

impl Store {
    /// Opens (creating if needed) the SQLite database at `path` and brings its schema up to date.
    pub async fn open_sqlite(path: &Path) -> Result<Store> {
        let path = &std::path::absolute(path).map_err(|e| StoreError::Db(sqlx::Error::Io(e)))?;
        let io = |e| StoreError::Db(sqlx::Error::Io(e));
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(webpilot_blobs::DIR_MODE).create(dir).map_err(io)?;
        }
        // Made empty (a valid SQLite database) and 0600 first: SQLite gives its WAL and shared-memory
        // files the database file's mode, so the whole database is the service's alone.
        {
            use std::os::unix::fs::OpenOptionsExt;
            let made =
                std::fs::OpenOptions::new().write(true).create_new(true).mode(webpilot_blobs::FILE_MODE).open(path);
            if let Err(e) = made.map(drop) {
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(io(e));
                }
            }
        }
        // Create the file and switch it to WAL once (the mode is kept in the file) with the native
        // driver, which has typed options for both.
        let native = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        native.connect().await?.close().await?;
        let url = url::Url::from_file_path(path)
            .map_err(|()| StoreError::Corrupt(format!("database path {} is not absolute", path.display())))?;
        // file:///a%20b/x.db -> sqlite:///a%20b/x.db (the SQLite driver percent-decodes the path).
        let url = format!("sqlite://{}", url.path());
        Self::open_any(&url, Backend::Sqlite).await
    }

    /// Opens the store at `url`: `postgres://...` (or `postgresql://`), or `sqlite://<path>`.
    pub async fn open_url(url: &str) -> Result<Store> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Self::open_any(url, Backend::Postgres).await
        } else if let Some(path) = url.strip_prefix("sqlite://") {
            Self::open_sqlite(Path::new(path)).await
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }

    async fn open_any(url: &str, backend: Backend) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let opts = AnyConnectOptions::from_str(url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Postgres { 16 } else { 8 })
            .acquire_timeout(Duration::from_secs(15))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(opts)
            .await?;
        match backend {
            Backend::Sqlite => SQLITE_MIGRATIONS.run(&pool).await?,
            Backend::Postgres => POSTGRES_MIGRATIONS.run(&pool).await?,
        }
        Ok(Store { pool, backend, sealer: std::sync::Arc::new(Sealer::ephemeral()) })
    }

    /// The database's clock in Unix ms: what node heartbeats are written and judged by, so nodes whose own
    /// clocks drift apart still agree on who is silent. SQLite serves one machine: its clock is this one.
    pub(crate) async fn clock_ms(&self) -> Result<i64> {
        match self.backend {
            Backend::Sqlite => Ok(now_ms()),
            Backend::Postgres => {
                Ok(sqlx::query_scalar("SELECT CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)")
                    .fetch_one(&self.pool)
                    .await?)
            }
        }
    }

    /// The store sealing its secrets with `sealer` (the service's, from its profile key) instead of the
    /// random key it opens with.
    pub fn with_sealer(mut self, sealer: Sealer) -> Store {
        self.sealer = std::sync::Arc::new(sealer);
        self
    }

    /// Closes the pool, flushing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// A fresh store: SQLite in a temporary directory, or, with `WEBPILOT_TEST_DATABASE=postgres`, a
    /// fresh schema on the local PostgreSQL.
    pub async fn store() -> (Store, (tempfile::TempDir, Option<crate::testdb::TestDatabase>)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::testdb::TestDatabase::from_env().await.expect("test database");
        let store = match &db {
            Some(db) => Store::open_url(&db.url).await.expect("open"),
            None => Store::open_sqlite(&dir.path().join("t.db")).await.expect("open"),
        };
        (store, (dir, db))
    }
}
