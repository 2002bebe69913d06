//! Retrying a write that lost a race for the database. SQLite answers SQLITE_BUSY (5, and 517 for a
//! stale WAL snapshot) or SQLITE_LOCKED (6) when another connection holds the write lock past the busy
//! timeout, or when a read had to be upgraded to a write; PostgreSQL answers a serialization failure
//! (40001) or a deadlock (40P01). Each is safe to run again from the start of its transaction.

use crate::{Result, StoreError};
use std::future::Future;
use std::time::Duration;

/// Attempts before the error is given to the caller.
const ATTEMPTS: u32 = 8;

/// Whether `e` is a lost race that a fresh attempt can win.
pub(crate) fn is_contention(e: &StoreError) -> bool {
    let StoreError::Db(sqlx::Error::Database(db)) = e else { return false };
    matches!(db.code().as_deref(), Some("5" | "6" | "517" | "261" | "40001" | "40P01"))
}

/// Runs `attempt` until it succeeds, fails for another reason, or has lost `ATTEMPTS` races (backing
/// off 20 ms, doubling, at most 1 s between attempts).
pub(crate) async fn on_busy<T, F, Fut>(what: &'static str, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut pause = Duration::from_millis(20);
    for n in 1.. {
        match attempt().await {
            Err(e) if n < ATTEMPTS && is_contention(&e) => {
                tracing::debug!(what, attempt = n, error = %e, "database busy; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            other => return other,
        }
    }
    unreachable!("the loop returns")
}
