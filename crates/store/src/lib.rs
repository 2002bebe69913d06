//! webpilot-store: the persistent state (users, API keys, balances, sessions, tasks, usage) behind one
//! `Store` handle. SQLite is the embedded default; the SQL is kept portable so the PostgreSQL migration
//! (migrations/postgres) runs the same schema when a later issue turns that backend on.

mod keys;
mod retry;
mod sessions;
mod tasks;
mod users;

pub use keys::{generate_api_key, hash_api_key, ApiKeyRecord, KeyLookup};
pub use sessions::SessionRecord;
pub use tasks::{TaskOutcome, TaskRecord, TaskStatus};
pub use users::User;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
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
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The store handle; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL schema, for the backend a later issue turns on (and for the test that checks it runs).
pub static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

impl Store {
    /// Opens (creating if needed) the SQLite database at `path` and brings its schema up to date.
    pub async fn open_sqlite(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Db(sqlx::Error::Io(e)))?;
        }
        let opts = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(8).connect_with(opts).await?;
        SQLITE_MIGRATIONS.run(&pool).await?;
        Ok(Store { pool })
    }

    /// Closes the pool, flushing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    pub async fn store() -> (Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open_sqlite(&dir.path().join("t.db")).await.expect("open");
        (store, dir)
    }
}
