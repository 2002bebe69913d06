//! The usage ledger as a caller reads it (`GET /usage`): what left a user's balance, one line per charge
//! (a task's usage, a session's open time), newest first, paged by a cursor; and what running tasks hold.

use crate::{Result, Store};
use webpilot_core::UserId;

/// One charge against a balance.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UsageLine {
    pub id: String,
    /// `task` or `session`.
    pub kind: String,
    pub task_id: Option<String>,
    pub session_id: Option<String>,
    /// What left the balance (micro-dollars, positive for a charge).
    pub cost_micros: i64,
    pub created_at: i64,
}

/// Which lines a page holds: charges made in `[since, until)` (Unix ms), older than `after` when given (the
/// last line of the page before), at most `limit`.
#[derive(Debug, Clone)]
pub struct UsagePage {
    pub since: i64,
    pub until: i64,
    pub after: Option<(i64, String)>,
    pub limit: i64,
}

impl Store {
    /// `user`'s charges on `page`, newest first.
    pub async fn usage_lines(&self, user: &UserId, page: &UsagePage) -> Result<Vec<UsageLine>> {
        // Without a cursor, every line is older than (i64::MAX, ""): the same statement serves both.
        let (at, id) = page.after.clone().unwrap_or((i64::MAX, String::new()));
        Ok(sqlx::query_as(
            "SELECT id, kind, task_id, session_id, -amount_micros AS cost_micros, created_at FROM usage_ledger
             WHERE user_id = $1 AND kind IN ('task', 'session') AND created_at >= $2 AND created_at < $3
               AND (created_at < $4 OR (created_at = $4 AND id < $5))
             ORDER BY created_at DESC, id DESC LIMIT $6",
        )
        .bind(user.as_str())
        .bind(page.since)
        .bind(page.until)
        .bind(at)
        .bind(id)
        .bind(page.limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// What `user`'s running tasks hold of the balance now (micro-dollars).
    pub async fn held_micros(&self, user: &UserId) -> Result<i64> {
        // SUM over BIGINT is NUMERIC on PostgreSQL, which `Any` cannot read: cast it back.
        Ok(sqlx::query_scalar("SELECT CAST(COALESCE(SUM(micros), 0) AS BIGINT) FROM claims WHERE user_id = $1")
            .bind(user.as_str())
            .fetch_one(&self.pool)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    #[tokio::test]
    async fn charges_are_listed_newest_first_in_pages_and_add_up_to_what_left_the_balance() {
        let (s, _d) = store().await;
        let u = s.create_user("u", 10_000_000).await.unwrap();
        let other = s.create_user("o", 10_000_000).await.unwrap();
        let mut tx = s.pool.begin().await.unwrap();
        for (i, kind) in ["task", "session", "task", "session", "task"].iter().enumerate() {
            let (task, session) = match *kind {
                "task" => (Some(format!("tsk_{i}")), None),
                _ => (None, Some(format!("ses_{i}"))),
            };
            crate::users::insert_ledger(&mut tx, &u.id, (task.as_deref(), session.as_deref()), -(100 + i as i64), kind)
                .await
                .unwrap();
        }
        crate::users::insert_ledger(&mut tx, &other.id, (Some("tsk_x"), None), -7, "task").await.unwrap();
        tx.commit().await.unwrap();
        let all = UsagePage { since: 0, until: i64::MAX, after: None, limit: 100 };
        let lines = s.usage_lines(&u.id, &all).await.unwrap();
        assert_eq!(lines.len(), 5, "the credit and the other user's charge are not lines");
        assert_eq!(lines.iter().map(|l| l.cost_micros).sum::<i64>(), 510);
        assert!(lines.windows(2).all(|w| (w[0].created_at, &w[0].id) > (w[1].created_at, &w[1].id)));
        let first = s.usage_lines(&u.id, &UsagePage { limit: 2, ..all.clone() }).await.unwrap();
        let last = first.last().map(|l| (l.created_at, l.id.clone()));
        let second = s.usage_lines(&u.id, &UsagePage { limit: 10, after: last, ..all.clone() }).await.unwrap();
        assert_eq!([first, second].concat(), lines, "pages follow each other without gaps or repeats");
        let none = UsagePage { since: 0, until: 1, after: None, limit: 10 };
        assert!(s.usage_lines(&u.id, &none).await.unwrap().is_empty());
        assert_eq!(s.held_micros(&u.id).await.unwrap(), 0);
    }
}
