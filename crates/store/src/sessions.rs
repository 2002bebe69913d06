//! Session rows: who owns a session, its last state, and how it ended.

use crate::users::insert_ledger;
use crate::{now_ms, Result, Store};
use webpilot_core::usage::micros_to_usd;
use webpilot_core::{SessionId, UserId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: SessionId,
    pub user_id: UserId,
    pub state: String,
    pub created_at: i64,
    pub ended_at: Option<i64>,
    pub end_reason: Option<String>,
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    id: String,
    user_id: String,
    state: String,
    created_at: i64,
    ended_at: Option<i64>,
    end_reason: Option<String>,
}

impl Store {
    /// Records a new session held by `node`; `params` is the JSON of its parameters, kept for audit.
    pub async fn insert_session(
        &self,
        id: &SessionId,
        user: &UserId,
        state: &str,
        params: &str,
        node: &str,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO sessions (id, user_id, state, params, created_at, node_id) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id.as_str())
        .bind(user.as_str())
        .bind(state)
        .bind(params)
        .bind(now_ms())
        .bind(node)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn set_session_state(&self, id: &SessionId, state: &str) -> Result<()> {
        sqlx::query("UPDATE sessions SET state = $1 WHERE id = $2 AND ended_at IS NULL")
            .bind(state)
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records a session's end and charges `cost_micros` (its open time) to its owner, in one
    /// transaction. A session already ended (by another node, or recovery) is left as it was and
    /// charged nothing more: returns whether this call ended it.
    pub async fn end_session(&self, id: &SessionId, reason: &str, cost_micros: i64) -> Result<bool> {
        crate::retry::on_busy("end a session", || self.end_session_once(id, reason, cost_micros)).await
    }

    async fn end_session_once(&self, id: &SessionId, reason: &str, cost_micros: i64) -> Result<bool> {
        let cost_micros = cost_micros.max(0);
        let mut tx = self.pool.begin().await?;
        // Write first (see finish_task).
        let user: Option<String> = sqlx::query_scalar(
            "UPDATE sessions SET state = 'terminated', ended_at = $1, end_reason = $2, cost_micros = $4
             WHERE id = $3 AND ended_at IS NULL RETURNING user_id",
        )
        .bind(now_ms())
        .bind(reason)
        .bind(id.as_str())
        .bind(cost_micros)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(user) = user else {
            tx.rollback().await?;
            return Ok(false);
        };
        let user = UserId::from_string(user);
        let ended =
            serde_json::json!({ "sessionId": id.as_str(), "reason": reason, "cost": micros_to_usd(cost_micros) });
        crate::webhooks::enqueue(&mut tx, &user, "session.ended", &ended).await?;
        if cost_micros > 0 {
            sqlx::query("UPDATE users SET balance_micros = balance_micros - $1 WHERE id = $2")
                .bind(cost_micros)
                .bind(user.as_str())
                .execute(&mut *tx)
                .await?;
            insert_ledger(&mut tx, &user, (None, Some(id.as_str())), -cost_micros, "session").await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// What ending `id` charged (0 while it is open, or when its end was recorded by recovery).
    pub async fn session_cost(&self, id: &SessionId) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar("SELECT cost_micros FROM sessions WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>> {
        let row: Option<SessionRow> =
            sqlx::query_as("SELECT id, user_id, state, created_at, ended_at, end_reason FROM sessions WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|r| SessionRecord {
            id: SessionId::from_string(r.id),
            user_id: UserId::from_string(r.user_id),
            state: r.state,
            created_at: r.created_at,
            ended_at: r.ended_at,
            end_reason: r.end_reason,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::store;
    use webpilot_core::SessionId;

    #[tokio::test]
    async fn a_session_end_is_charged_once_with_its_ledger_line() {
        let (s, _d) = store().await;
        let u = s.create_user("s", 10_000).await.unwrap();
        let id = SessionId::generate();
        s.insert_session(&id, &u.id, "active", "{}", "a").await.unwrap();
        assert_eq!(s.session_cost(&id).await.unwrap(), Some(0));
        assert!(s.end_session(&id, "terminated", 1_234).await.unwrap(), "the first end charges");
        assert!(!s.end_session(&id, "expired", 1_234).await.unwrap(), "an ended session is not charged again");
        assert_eq!(s.get_user(&u.id).await.unwrap().unwrap().balance_micros, 10_000 - 1_234);
        assert_eq!(s.session_cost(&id).await.unwrap(), Some(1_234));
        let (kind, amount): (String, i64) =
            sqlx::query_as("SELECT kind, amount_micros FROM usage_ledger WHERE session_id = $1")
                .bind(id.as_str())
                .fetch_one(&s.pool)
                .await
                .unwrap();
        assert_eq!((kind.as_str(), amount), ("session", -1_234));
    }
}
