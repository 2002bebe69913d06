//! Users and their balances (micro-dollars).

use crate::{now_ms, Result, Store, StoreError};
use webpilot_core::UserId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    pub name: String,
    pub balance_micros: i64,
    pub deactivated_at: Option<i64>,
    pub created_at: i64,
}

impl User {
    pub fn is_active(&self) -> bool {
        self.deactivated_at.is_none()
    }
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: String,
    name: String,
    balance_micros: i64,
    deactivated_at: Option<i64>,
    created_at: i64,
}

impl From<UserRow> for User {
    fn from(r: UserRow) -> Self {
        User {
            id: UserId::from_string(r.id),
            name: r.name,
            balance_micros: r.balance_micros,
            deactivated_at: r.deactivated_at,
            created_at: r.created_at,
        }
    }
}

impl Store {
    pub async fn create_user(&self, name: &str, balance_micros: i64) -> Result<User> {
        let user = User {
            id: UserId::generate(),
            name: name.to_owned(),
            balance_micros,
            deactivated_at: None,
            created_at: now_ms(),
        };
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO users (id, name, balance_micros, created_at) VALUES ($1, $2, $3, $4)")
            .bind(user.id.as_str())
            .bind(&user.name)
            .bind(user.balance_micros)
            .bind(user.created_at)
            .execute(&mut *tx)
            .await?;
        if balance_micros != 0 {
            insert_ledger(&mut tx, &user.id, (None, None), balance_micros, "credit").await?;
        }
        tx.commit().await?;
        Ok(user)
    }

    pub async fn get_user(&self, id: &UserId) -> Result<Option<User>> {
        let row: Option<UserRow> =
            sqlx::query_as("SELECT id, name, balance_micros, deactivated_at, created_at FROM users WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(User::from))
    }

    pub async fn list_users(&self) -> Result<Vec<User>> {
        let rows: Vec<UserRow> = sqlx::query_as(
            "SELECT id, name, balance_micros, deactivated_at, created_at FROM users ORDER BY created_at",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(User::from).collect())
    }

    pub async fn deactivate_user(&self, id: &UserId) -> Result<()> {
        let done = sqlx::query("UPDATE users SET deactivated_at = $1 WHERE id = $2 AND deactivated_at IS NULL")
            .bind(now_ms())
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 && self.get_user(id).await?.is_none() {
            return Err(StoreError::NotFound("user"));
        }
        Ok(())
    }

    /// Adds `delta_micros` (negative to take away) and returns the new balance.
    pub async fn add_balance(&self, id: &UserId, delta_micros: i64) -> Result<i64> {
        crate::retry::on_busy("add to a balance", || self.add_balance_once(id, delta_micros)).await
    }

    async fn add_balance_once(&self, id: &UserId, delta_micros: i64) -> Result<i64> {
        let mut tx = self.pool.begin().await?;
        // Write first (see finish_task).
        let balance: Option<i64> = sqlx::query_scalar(
            "UPDATE users SET balance_micros = balance_micros + $1 WHERE id = $2 RETURNING balance_micros",
        )
        .bind(delta_micros)
        .bind(id.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(balance) = balance else {
            tx.rollback().await?;
            return Err(StoreError::NotFound("user"));
        };
        insert_ledger(&mut tx, id, (None, None), delta_micros, "credit").await?;
        tx.commit().await?;
        Ok(balance)
    }
}

/// Records one balance movement inside the caller's transaction.
/// `for_what` is the task or session the movement is for: `(Some(task), None)`, `(None, Some(session))`.
pub(crate) async fn insert_ledger(
    tx: &mut sqlx::AnyConnection,
    user: &UserId,
    for_what: (Option<&str>, Option<&str>),
    amount_micros: i64,
    kind: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO usage_ledger (id, user_id, task_id, session_id, amount_micros, kind, created_at)
         VALUES ($1, $2, $3, $7, $4, $5, $6)",
    )
    .bind(uuid::Uuid::new_v4().simple().to_string())
    .bind(user.as_str())
    .bind(for_what.0)
    .bind(amount_micros)
    .bind(kind)
    .bind(now_ms())
    .bind(for_what.1)
    .execute(tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::testutil::store;

    #[tokio::test]
    async fn balances_move_and_users_deactivate() {
        let (s, _d) = store().await;
        let u = s.create_user("alice", 5_000_000).await.unwrap();
        assert_eq!(s.add_balance(&u.id, -1_500_000).await.unwrap(), 3_500_000);
        s.deactivate_user(&u.id).await.unwrap();
        assert!(!s.get_user(&u.id).await.unwrap().unwrap().is_active());
        assert_eq!(s.list_users().await.unwrap().len(), 1);
    }
}
