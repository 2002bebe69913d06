//! API keys: only a SHA-256 hash is stored; the plaintext is shown once at creation.

use crate::{now_ms, users::User, Result, Store, StoreError};
use rand::{distributions::Alphanumeric, Rng};
use sha2::{Digest, Sha256};
use webpilot_core::{KeyId, UserId};

/// A new random key: `wp_` and 40 alphanumeric characters (~238 bits).
pub fn generate_api_key() -> String {
    let body: String = rand::thread_rng().sample_iter(&Alphanumeric).take(40).map(char::from).collect();
    format!("wp_{body}")
}

/// The stored form of a key.
pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub id: KeyId,
    pub user_id: UserId,
    /// The first characters of the key, for recognising it in listings.
    pub prefix: String,
    pub name: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    id: String,
    user_id: String,
    prefix: String,
    name: String,
    created_at: i64,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl From<KeyRow> for ApiKeyRecord {
    fn from(r: KeyRow) -> Self {
        ApiKeyRecord {
            id: KeyId::from_string(r.id),
            user_id: UserId::from_string(r.user_id),
            prefix: r.prefix,
            name: r.name,
            created_at: r.created_at,
            expires_at: r.expires_at,
            revoked_at: r.revoked_at,
        }
    }
}

/// What a presented key resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    Unknown,
    Revoked,
    Expired,
    Valid { key: Box<ApiKeyRecord>, user: Box<User> },
}

impl Store {
    /// Creates a key for `user`; returns the record and the plaintext key (the only time it exists).
    pub async fn create_api_key(
        &self,
        user: &UserId,
        name: &str,
        expires_at: Option<i64>,
    ) -> Result<(ApiKeyRecord, String)> {
        if self.get_user(user).await?.is_none() {
            return Err(StoreError::NotFound("user"));
        }
        let plaintext = generate_api_key();
        let rec = ApiKeyRecord {
            id: KeyId::generate(),
            user_id: user.clone(),
            prefix: plaintext.chars().take(10).collect(),
            name: name.to_owned(),
            created_at: now_ms(),
            expires_at,
            revoked_at: None,
        };
        sqlx::query(
            "INSERT INTO api_keys (id, user_id, key_hash, prefix, name, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(rec.id.as_str())
        .bind(rec.user_id.as_str())
        .bind(hash_api_key(&plaintext))
        .bind(&rec.prefix)
        .bind(&rec.name)
        .bind(rec.created_at)
        .bind(rec.expires_at)
        .execute(&self.pool)
        .await?;
        Ok((rec, plaintext))
    }

    /// Resolves a presented key. Expiry is judged at `now`.
    pub async fn lookup_api_key(&self, presented: &str, now: i64) -> Result<KeyLookup> {
        let row: Option<KeyRow> = sqlx::query_as(
            "SELECT id, user_id, prefix, name, created_at, expires_at, revoked_at FROM api_keys WHERE key_hash = $1",
        )
        .bind(hash_api_key(presented))
        .fetch_optional(&self.pool)
        .await?;
        let Some(key) = row.map(ApiKeyRecord::from) else {
            return Ok(KeyLookup::Unknown);
        };
        if key.revoked_at.is_some() {
            return Ok(KeyLookup::Revoked);
        }
        if key.expires_at.is_some_and(|e| e <= now) {
            return Ok(KeyLookup::Expired);
        }
        let user = self
            .get_user(&key.user_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("key {} has no user", key.id)))?;
        Ok(KeyLookup::Valid { key: Box::new(key), user: Box::new(user) })
    }

    pub async fn revoke_api_key(&self, id: &KeyId) -> Result<()> {
        let done = sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now_ms())
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            let exists: Option<String> = sqlx::query_scalar("SELECT id FROM api_keys WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await?;
            if exists.is_none() {
                return Err(StoreError::NotFound("api key"));
            }
        }
        Ok(())
    }

    pub async fn list_api_keys(&self, user: &UserId) -> Result<Vec<ApiKeyRecord>> {
        let rows: Vec<KeyRow> = sqlx::query_as(
            "SELECT id, user_id, prefix, name, created_at, expires_at, revoked_at FROM api_keys WHERE user_id = $1 ORDER BY created_at",
        )
        .bind(user.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(ApiKeyRecord::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::store;

    #[tokio::test]
    async fn keys_resolve_expire_and_revoke() {
        let (s, _d) = store().await;
        let u = s.create_user("bob", 0).await.unwrap();
        let (rec, key) = s.create_api_key(&u.id, "ci", None).await.unwrap();
        assert!(key.starts_with("wp_") && key.len() == 43);
        assert!(matches!(s.lookup_api_key(&key, now_ms()).await.unwrap(), KeyLookup::Valid { .. }));
        assert_eq!(s.lookup_api_key("wp_nope", now_ms()).await.unwrap(), KeyLookup::Unknown);
        let (_, short) = s.create_api_key(&u.id, "short", Some(now_ms() - 1)).await.unwrap();
        assert_eq!(s.lookup_api_key(&short, now_ms()).await.unwrap(), KeyLookup::Expired);
        s.revoke_api_key(&rec.id).await.unwrap();
        assert_eq!(s.lookup_api_key(&key, now_ms()).await.unwrap(), KeyLookup::Revoked);
        assert_eq!(s.list_api_keys(&u.id).await.unwrap().len(), 2);
    }
}
