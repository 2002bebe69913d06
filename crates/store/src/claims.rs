//! Claims: what each user holds of the cluster right now (open sessions, and running tasks' holds on the
//! balance), counted in the database so every node enforces the same per-user limits. A claim is granted
//! in one transaction that first locks the user's row (a no-op `UPDATE`, which PostgreSQL holds until
//! commit and SQLite turns into its write lock), so two nodes cannot both take a user's last place.

use crate::{now_ms, retry, Result, Store};
use webpilot_core::UserId;

/// What a claim is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// An open session (counted against the per-user session cap).
    Session,
    /// A running task (its hold is set aside from the balance).
    Task,
}

impl ClaimKind {
    fn as_str(self) -> &'static str {
        match self {
            ClaimKind::Session => "session",
            ClaimKind::Task => "task",
        }
    }
}

/// The limits a claim is checked against.
#[derive(Debug, Clone, Copy)]
pub struct ClaimLimits {
    /// Open sessions a user may have across the cluster.
    pub max_sessions: i64,
    /// What this claim sets aside from the balance (micro-dollars): a running task's estimate, or the
    /// price of a session's whole maxDuration. A session must be covered by what the other holds
    /// leave; a task only needs something left (so parallel tasks overdraw by at most one hold).
    pub hold_micros: i64,
}

/// Why a claim was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// The balance, less the holds of the user's running tasks, covers no new work.
    Balance,
    /// The user has `max_sessions` sessions open.
    SessionCap,
    /// No such user.
    NoUser,
}

impl Store {
    /// Grants `user` one more `kind` on `node` (returning the claim's id), or says why not.
    pub async fn claim(
        &self,
        user: &UserId,
        node: &str,
        kind: ClaimKind,
        limits: ClaimLimits,
    ) -> Result<std::result::Result<String, ClaimRefusal>> {
        retry::on_busy("granting a claim", || self.try_claim(user, node, kind, limits)).await
    }

    async fn try_claim(
        &self,
        user: &UserId,
        node: &str,
        kind: ClaimKind,
        limits: ClaimLimits,
    ) -> Result<std::result::Result<String, ClaimRefusal>> {
        let mut tx = self.pool.begin().await?;
        let balance: Option<i64> = sqlx::query_scalar(
            "UPDATE users SET balance_micros = balance_micros WHERE id = $1 RETURNING balance_micros",
        )
        .bind(user.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(balance) = balance else {
            tx.rollback().await?;
            return Ok(Err(ClaimRefusal::NoUser));
        };
        // SUM over BIGINT is NUMERIC on PostgreSQL, which `Any` cannot read: cast it back.
        let (sessions, held): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(CASE WHEN kind = 'session' THEN 1 END), CAST(COALESCE(SUM(micros), 0) AS BIGINT)
             FROM claims WHERE user_id = $1",
        )
        .bind(user.as_str())
        .fetch_one(&mut *tx)
        .await?;
        let hold = limits.hold_micros.max(0);
        let available = balance - held;
        let refusal = if available <= 0 || (kind == ClaimKind::Session && available < hold) {
            Some(ClaimRefusal::Balance)
        } else if kind == ClaimKind::Session && sessions >= limits.max_sessions {
            Some(ClaimRefusal::SessionCap)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            // Rolled back here, not on drop: a dropped transaction's rollback waits for the connection's
            // next use, and the user's row stays locked until then.
            tx.rollback().await?;
            return Ok(Err(refusal));
        }
        let id = uuid::Uuid::new_v4().to_string();
        sqlx::query(
            "INSERT INTO claims (id, user_id, node_id, kind, micros, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&id)
        .bind(user.as_str())
        .bind(node)
        .bind(kind.as_str())
        .bind(hold)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(id))
    }

    /// Gives a claim back (its session or task ended); a claim already dropped is fine.
    pub async fn release_claim(&self, id: &str) -> Result<()> {
        retry::on_busy("releasing a claim", || async {
            sqlx::query("DELETE FROM claims WHERE id = $1").bind(id).execute(&self.pool).await?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    const LIMITS: ClaimLimits = ClaimLimits { max_sessions: 2, hold_micros: 10_000 };
    const SESSIONS: ClaimLimits = ClaimLimits { max_sessions: 2, hold_micros: 0 };

    #[tokio::test]
    async fn claims_cap_sessions_and_hold_the_balance_across_nodes() {
        let (s, _d) = store().await;
        let u = s.create_user("c", 8_000).await.unwrap();
        let one = s.claim(&u.id, "a", ClaimKind::Session, SESSIONS).await.unwrap().expect("first session");
        s.claim(&u.id, "b", ClaimKind::Session, SESSIONS).await.unwrap().expect("second session, on another node");
        let third = s.claim(&u.id, "a", ClaimKind::Session, SESSIONS).await.unwrap();
        assert_eq!(third, Err(ClaimRefusal::SessionCap));
        s.release_claim(&one).await.unwrap();
        s.claim(&u.id, "b", ClaimKind::Session, SESSIONS).await.unwrap().expect("a place came back");

        let task = s.claim(&u.id, "a", ClaimKind::Task, LIMITS).await.unwrap().expect("the balance covers a task");
        let second = s.claim(&u.id, "b", ClaimKind::Task, LIMITS).await.unwrap();
        assert_eq!(second, Err(ClaimRefusal::Balance), "8,000 less one 10,000 hold leaves nothing");
        s.release_claim(&task).await.unwrap();
        let missing = s.claim(&UserId::generate(), "a", ClaimKind::Task, LIMITS).await.unwrap();
        assert_eq!(missing, Err(ClaimRefusal::NoUser));
    }

    #[tokio::test]
    async fn a_session_is_granted_only_when_the_balance_covers_its_hold() {
        let (s, _d) = store().await;
        let u = s.create_user("c", 7_000).await.unwrap();
        let hold = |micros| ClaimLimits { max_sessions: 3, hold_micros: micros };
        assert_eq!(s.claim(&u.id, "a", ClaimKind::Session, hold(15_000)).await.unwrap(), Err(ClaimRefusal::Balance));
        let first = s.claim(&u.id, "a", ClaimKind::Session, hold(5_000)).await.unwrap().expect("5,000 of 7,000");
        let second = s.claim(&u.id, "b", ClaimKind::Session, hold(5_000)).await.unwrap();
        assert_eq!(second, Err(ClaimRefusal::Balance), "2,000 left cannot cover a 5,000 hold on any node");
        s.claim(&u.id, "b", ClaimKind::Session, hold(2_000)).await.unwrap().expect("exactly covered");
        s.release_claim(&first).await.unwrap();
        s.claim(&u.id, "b", ClaimKind::Session, hold(5_000)).await.unwrap().expect("the hold came back");
    }

    #[tokio::test]
    async fn concurrent_claims_never_pass_the_cap() {
        let (s, _d) = store().await;
        let u = s.create_user("c", 1_000_000).await.unwrap();
        let limits = ClaimLimits { max_sessions: 3, hold_micros: 0 };
        let tries = (0..12).map(|i| {
            let (s, id) = (s.clone(), u.id.clone());
            webpilot_tasks::spawn_owned("test claim", async move {
                s.claim(&id, if i % 2 == 0 { "a" } else { "b" }, ClaimKind::Session, limits).await
            })
        });
        let mut granted = 0;
        for t in tries {
            if t.await.unwrap().unwrap().is_ok() {
                granted += 1;
            }
        }
        assert_eq!(granted, 3);
    }

    #[tokio::test]
    async fn a_lost_or_recovering_node_drops_its_claims() {
        let (s, _d) = store().await;
        let u = s.create_user("c", 1_000_000).await.unwrap();
        let limits = ClaimLimits { max_sessions: 1, hold_micros: 0 };
        s.claim(&u.id, "a", ClaimKind::Session, limits).await.unwrap().expect("first");
        assert_eq!(s.claim(&u.id, "b", ClaimKind::Session, limits).await.unwrap(), Err(ClaimRefusal::SessionCap));
        s.recover_interrupted("a").await.unwrap();
        s.claim(&u.id, "b", ClaimKind::Session, limits).await.unwrap().expect("a's place was given back");
        s.stop_node("b").await.unwrap();
        s.claim(&u.id, "a", ClaimKind::Session, limits).await.unwrap().expect("a stopped node holds nothing");
    }
}
