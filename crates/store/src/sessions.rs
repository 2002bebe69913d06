//! Session rows: who owns a session, its last state, and how it ended.

use crate::{now_ms, Result, Store};
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

    pub async fn end_session(&self, id: &SessionId, reason: &str) -> Result<()> {
        sqlx::query("UPDATE sessions SET state = 'terminated', ended_at = $1, end_reason = $2 WHERE id = $3 AND ended_at IS NULL")
            .bind(now_ms())
            .bind(reason)
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
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
