//! Profiles: a user's saved storage states by name, stored sealed (the caller encrypts; the store never
//! sees the content in clear), under a cap per profile and per user; and the one-writer lock a live
//! session with `persistProfile` holds on its profile, across nodes.

use crate::{now_ms, retry, Result, Store, StoreError};
use webpilot_core::{SessionId, UserId};

/// A lock row older than this whose session was never recorded is a start that did not finish.
const UNRECORDED_LOCK_MS: i64 = 120_000;

/// What is listed of a profile: never its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRecord {
    pub name: String,
    /// Stored (sealed) size.
    pub bytes: i64,
    pub origins: Vec<String>,
    pub cookies: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(sqlx::FromRow)]
struct ProfileRow {
    name: String,
    bytes: i64,
    origins: String,
    cookies: i64,
    created_at: i64,
    updated_at: i64,
}

impl TryFrom<ProfileRow> for ProfileRecord {
    type Error = StoreError;
    fn try_from(r: ProfileRow) -> Result<Self> {
        let origins = serde_json::from_str(&r.origins).map_err(|e| StoreError::Corrupt(format!("origins: {e}")))?;
        Ok(ProfileRecord {
            name: r.name,
            bytes: r.bytes,
            origins,
            cookies: r.cookies,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// A sealed profile to store, with what is listed of it.
#[derive(Debug, Clone, Copy)]
pub struct NewProfile<'a> {
    pub name: &'a str,
    pub sealed: &'a [u8],
    pub origins: &'a [String],
    pub cookies: i64,
}

/// The size caps a save must keep to (bytes, as stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileCaps {
    pub per_profile: i64,
    pub per_user: i64,
}

/// Why a save was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProfileRefusal {
    #[error("the profile would be {bytes} bytes, over the cap of {cap} bytes per profile")]
    ProfileCap { bytes: i64, cap: i64 },
    #[error("the user's profiles would be {bytes} bytes, over the cap of {cap} bytes per user")]
    UserCap { bytes: i64, cap: i64 },
}

/// A select of the listed columns of `profiles` with the rest of the statement.
macro_rules! select {
    ($rest:literal) => {
        concat!("SELECT name, bytes, origins, cookies, created_at, updated_at FROM profiles ", $rest)
    };
}

impl Store {
    /// Stores (or replaces) `user`'s profile, unless that passes a cap.
    pub async fn save_profile(
        &self,
        user: &UserId,
        profile: NewProfile<'_>,
        caps: ProfileCaps,
    ) -> Result<Result<ProfileRecord, ProfileRefusal>> {
        let bytes = i64::try_from(profile.sealed.len()).unwrap_or(i64::MAX);
        if bytes > caps.per_profile {
            return Ok(Err(ProfileRefusal::ProfileCap { bytes, cap: caps.per_profile }));
        }
        let origins = serde_json::to_string(profile.origins).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        retry::on_busy("save a profile", || async {
            let mut tx = self.pool.begin().await?;
            // A write on the user's row first: concurrent saves of one user take turns, so the sum holds.
            sqlx::query("UPDATE users SET name = name WHERE id = $1").bind(user.as_str()).execute(&mut *tx).await?;
            let others: Option<i64> =
                sqlx::query_scalar("SELECT CAST(SUM(bytes) AS BIGINT) FROM profiles WHERE user_id = $1 AND name <> $2")
                    .bind(user.as_str())
                    .bind(profile.name)
                    .fetch_one(&mut *tx)
                    .await?;
            let total = others.unwrap_or(0).saturating_add(bytes);
            if total > caps.per_user {
                tx.rollback().await?;
                return Ok(Err(ProfileRefusal::UserCap { bytes: total, cap: caps.per_user }));
            }
            let now = now_ms();
            sqlx::query(
                "INSERT INTO profiles (user_id, name, sealed, bytes, origins, cookies, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
                 ON CONFLICT (user_id, name) DO UPDATE SET sealed = $3, bytes = $4, origins = $5, cookies = $6,
                     updated_at = $7",
            )
            .bind(user.as_str())
            .bind(profile.name)
            .bind(profile.sealed)
            .bind(bytes)
            .bind(&origins)
            .bind(profile.cookies)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let row: ProfileRow = sqlx::query_as(select!("WHERE user_id = $1 AND name = $2"))
                .bind(user.as_str())
                .bind(profile.name)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Ok(row.try_into()?))
        })
        .await
    }

    /// `user`'s profiles by name.
    pub async fn list_profiles(&self, user: &UserId) -> Result<Vec<ProfileRecord>> {
        let rows: Vec<ProfileRow> = sqlx::query_as(select!("WHERE user_id = $1 ORDER BY name"))
            .bind(user.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(ProfileRecord::try_from).collect()
    }

    /// What is listed of one profile of `user`.
    pub async fn profile_record(&self, user: &UserId, name: &str) -> Result<Option<ProfileRecord>> {
        let row: Option<ProfileRow> = sqlx::query_as(select!("WHERE user_id = $1 AND name = $2"))
            .bind(user.as_str())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.map(ProfileRecord::try_from).transpose()
    }

    /// The sealed content of one profile of `user`.
    pub async fn profile_sealed(&self, user: &UserId, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar("SELECT sealed FROM profiles WHERE user_id = $1 AND name = $2")
            .bind(user.as_str())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Removes one profile of `user`; false when there is none.
    pub async fn delete_profile(&self, user: &UserId, name: &str) -> Result<bool> {
        let done = retry::on_busy("delete a profile", || async {
            Ok(sqlx::query("DELETE FROM profiles WHERE user_id = $1 AND name = $2")
                .bind(user.as_str())
                .bind(name)
                .execute(&self.pool)
                .await?)
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Makes `session` the one writer of `user`'s profile `name`: false when another live session is.
    /// A lock whose session ended (on any node, also when a lost node's sessions were ended) is taken
    /// over, as is one whose session was never recorded and is older than two minutes.
    pub async fn lock_profile(&self, user: &UserId, name: &str, session: &SessionId) -> Result<bool> {
        retry::on_busy("lock a profile", || async {
            let mut tx = self.pool.begin().await?;
            let now = now_ms();
            sqlx::query(
                "DELETE FROM profile_locks WHERE user_id = $1 AND name = $2 AND (
                     session_id IN (SELECT id FROM sessions WHERE ended_at IS NOT NULL)
                     OR (created_at < $3 AND session_id NOT IN (SELECT id FROM sessions)))",
            )
            .bind(user.as_str())
            .bind(name)
            .bind(now - UNRECORDED_LOCK_MS)
            .execute(&mut *tx)
            .await?;
            let taken = sqlx::query(
                "INSERT INTO profile_locks (user_id, name, session_id, created_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (user_id, name) DO NOTHING",
            )
            .bind(user.as_str())
            .bind(name)
            .bind(session.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(taken == 1)
        })
        .await
    }

    /// Lets go of `session`'s lock on `user`'s profile `name` (a no-op when it holds none).
    pub async fn unlock_profile(&self, user: &UserId, name: &str, session: &SessionId) -> Result<()> {
        retry::on_busy("unlock a profile", || async {
            sqlx::query("DELETE FROM profile_locks WHERE user_id = $1 AND name = $2 AND session_id = $3")
                .bind(user.as_str())
                .bind(name)
                .bind(session.as_str())
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    const CAPS: ProfileCaps = ProfileCaps { per_profile: 100, per_user: 150 };

    fn profile<'a>(name: &'a str, sealed: &'a [u8], origins: &'a [String]) -> NewProfile<'a> {
        NewProfile { name, sealed, origins, cookies: 2 }
    }

    #[tokio::test]
    async fn profiles_are_per_user_replaced_and_capped() {
        let (s, _d) = store().await;
        let (a, b) = (s.create_user("a", 0).await.unwrap(), s.create_user("b", 0).await.unwrap());
        let origins = vec!["https://a.example".to_owned()];
        let saved = s.save_profile(&a.id, profile("shop", &[1; 60], &origins), CAPS).await.unwrap().unwrap();
        assert_eq!((saved.bytes, saved.cookies, saved.origins.clone()), (60, 2, origins.clone()));
        // Replaced in place; the first save's time stays its creation.
        let again = s.save_profile(&a.id, profile("shop", &[2; 70], &[]), CAPS).await.unwrap().unwrap();
        assert_eq!((again.bytes, again.created_at), (70, saved.created_at));
        assert_eq!(s.profile_sealed(&a.id, "shop").await.unwrap(), Some(vec![2; 70]));
        assert_eq!(s.profile_sealed(&b.id, "shop").await.unwrap(), None, "another user's is not seen");
        let over = s.save_profile(&a.id, profile("big", &[0; 101], &[]), CAPS).await.unwrap();
        assert_eq!(over, Err(ProfileRefusal::ProfileCap { bytes: 101, cap: 100 }));
        let over = s.save_profile(&a.id, profile("two", &[0; 81], &[]), CAPS).await.unwrap();
        assert_eq!(over, Err(ProfileRefusal::UserCap { bytes: 151, cap: 150 }));
        assert!(s.save_profile(&b.id, profile("two", &[0; 81], &[]), CAPS).await.unwrap().is_ok());
        assert_eq!(s.list_profiles(&a.id).await.unwrap().len(), 1);
        assert!(s.delete_profile(&a.id, "shop").await.unwrap());
        assert!(!s.delete_profile(&a.id, "shop").await.unwrap());
        assert!(s.profile_record(&a.id, "shop").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn one_live_session_writes_a_profile_until_it_ends() {
        let (s, _d) = store().await;
        let u = s.create_user("u", 0).await.unwrap();
        let (first, second) = (SessionId::generate(), SessionId::generate());
        s.insert_session(&first, &u.id, "active", "{}", "n").await.unwrap();
        s.insert_session(&second, &u.id, "active", "{}", "n").await.unwrap();
        assert!(s.lock_profile(&u.id, "shop", &first).await.unwrap());
        assert!(!s.lock_profile(&u.id, "shop", &second).await.unwrap(), "held by a live session");
        assert!(s.lock_profile(&u.id, "other", &second).await.unwrap(), "another name is free");
        s.unlock_profile(&u.id, "shop", &second).await.unwrap();
        assert!(!s.lock_profile(&u.id, "shop", &second).await.unwrap(), "only the holder lets go");
        // Its session ended without letting go (a lost node): the lock is stale.
        s.end_session(&first, "instance_lost", 0).await.unwrap();
        assert!(s.lock_profile(&u.id, "shop", &second).await.unwrap());
        s.unlock_profile(&u.id, "shop", &second).await.unwrap();
        assert!(s.lock_profile(&u.id, "shop", &first).await.unwrap());
    }
}
