//! Secrets at rest: the shared stream, socket and node keys and every webhook's signing secrets are kept
//! in the database sealed with AES-256-GCM under a key that is never in it (derived from the profile key,
//! which lives in `profile.key` or `--profile-key`). A copy of the database alone mints no token and signs
//! no webhook.
//!
//! Sealed form (text, so it fits the existing TEXT columns): `sealed1:` then hex of the 4-byte key id, the
//! 12-byte nonce, the ciphertext and its tag. The associated data names the row (`kind`, `id`), so a value
//! copied to another row does not open. Older keys still open what they sealed; [`crate::Store::reseal_secrets`]
//! seals every row again under the current key (and seals rows a version before this one kept in clear).

use crate::{Result, Store};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use sha2::{Digest, Sha256};

const PREFIX: &str = "sealed1:";
/// The `kind` of the shared keys (`shared_secrets`, by name).
pub(crate) const SHARED: &str = "shared";
/// The `kind` of webhook signing secrets (by the endpoint's id; the previous secret too).
pub(crate) const WEBHOOK: &str = "webhook";
const ID_LEN: usize = 4;
const NONCE_LEN: usize = 12;
/// What the sealing key is derived under, so it is never the profile key itself.
const LABEL: &[u8] = b"webpilot-secrets-at-rest-v1";

/// Why a sealed value does not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("a key is 64 hex digits (32 bytes)")]
    BadKey,
    #[error("a secret in the database was sealed with a key this node does not have: give every node the same --profile-key (and the old one in --profile-previous-keys while rotating)")]
    UnknownKey,
    #[error("a sealed secret in the database is damaged, or was moved to another row")]
    Damaged,
}

#[derive(Clone)]
struct Entry {
    id: [u8; ID_LEN],
    cipher: Aes256Gcm,
}

impl Entry {
    /// The sealing key derived from a 32-byte root key: SHA-256(LABEL || root), a key of its own for a
    /// uniformly random root.
    fn derive(root: &[u8; 32]) -> Entry {
        let key: [u8; 32] = Sha256::new().chain_update(LABEL).chain_update(root).finalize().into();
        let digest = Sha256::digest(key);
        let mut id = [0; ID_LEN];
        id.copy_from_slice(&digest[..ID_LEN]);
        Entry { id, cipher: Aes256Gcm::new(&Key::<Aes256Gcm>::from(key)) }
    }
}

/// Seals and opens the secrets the store keeps; cheap to clone.
#[derive(Clone)]
pub struct Sealer {
    current: Entry,
    previous: Vec<Entry>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealer({}, {} previous)", hex::encode(self.current.id), self.previous.len())
    }
}

fn parse_hex(text: &str) -> Result<[u8; 32], SealError> {
    let bytes = hex::decode(text.trim()).map_err(|_| SealError::BadKey)?;
    bytes.try_into().map_err(|_| SealError::BadKey)
}

fn aad(kind: &str, id: &str) -> Vec<u8> {
    format!("webpilot-secret\0{kind}\0{id}").into_bytes()
}

impl Sealer {
    /// A sealer under `root` (64 hex digits) that also opens what the `previous` roots sealed.
    pub fn from_hex<'a>(root: &str, previous: impl IntoIterator<Item = &'a str>) -> Result<Sealer, SealError> {
        let previous = previous.into_iter().map(|k| parse_hex(k).map(|k| Entry::derive(&k)));
        Ok(Sealer { current: Entry::derive(&parse_hex(root)?), previous: previous.collect::<Result<_, _>>()? })
    }

    /// A sealer under a fresh random key: for a store whose secrets need not outlive it (tests).
    pub fn ephemeral() -> Sealer {
        Sealer { current: Entry::derive(&rand::random()), previous: Vec::new() }
    }

    /// Whether a stored value is in the sealed form (values kept by an older version are not).
    pub fn is_sealed(stored: &str) -> bool {
        stored.starts_with(PREFIX)
    }

    /// Whether a stored value is sealed under the current key already.
    pub(crate) fn is_current(&self, stored: &str) -> bool {
        stored.strip_prefix(PREFIX).and_then(|h| h.get(..ID_LEN * 2)) == Some(hex::encode(self.current.id).as_str())
    }

    /// `plain` sealed for the row `kind`/`id` under the current key.
    pub fn seal(&self, kind: &str, id: &str, plain: &str) -> String {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let aad = aad(kind, id);
        // Encryption fails only for inputs over 64 GiB; a secret is a few dozen bytes.
        let sealed = self.current.cipher.encrypt(&Nonce::from(nonce), Payload { msg: plain.as_bytes(), aad: &aad });
        let mut out = Vec::with_capacity(ID_LEN + NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(&self.current.id);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed.unwrap_or_default());
        format!("{PREFIX}{}", hex::encode(out))
    }

    /// The plain text of a value [`Self::seal`] made for the row `kind`/`id`, under whichever known key.
    pub fn open(&self, kind: &str, id: &str, stored: &str) -> Result<String, SealError> {
        let bytes = stored.strip_prefix(PREFIX).and_then(|h| hex::decode(h).ok()).ok_or(SealError::Damaged)?;
        if bytes.len() < ID_LEN + NONCE_LEN {
            return Err(SealError::Damaged);
        }
        let (key_id, rest) = bytes.split_at(ID_LEN);
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let entry = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == key_id)
            .ok_or(SealError::UnknownKey)?;
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| SealError::Damaged)?;
        let aad = aad(kind, id);
        let plain = entry.cipher.decrypt(&Nonce::from(nonce), Payload { msg: body, aad: &aad });
        String::from_utf8(plain.map_err(|_| SealError::Damaged)?).map_err(|_| SealError::Damaged)
    }

    /// The plain text of a stored value, sealed or (from before sealing) in clear.
    pub(crate) fn open_or_clear(&self, kind: &str, id: &str, stored: &str) -> Result<String, SealError> {
        match Self::is_sealed(stored) {
            true => self.open(kind, id, stored),
            false => Ok(stored.to_owned()),
        }
    }
}

impl Store {
    /// Seals again, under the current key, every secret the database keeps that is in clear (from a
    /// version before sealing) or sealed under an older key; the number of values rewritten.
    pub async fn reseal_secrets(&self) -> Result<u64> {
        let mut done = 0;
        let shared: Vec<(String, String)> =
            sqlx::query_as("SELECT name, value FROM shared_secrets").fetch_all(&self.pool).await?;
        for (name, value) in shared.into_iter().filter(|(_, v)| !self.sealer.is_current(v)) {
            let sealed = self.sealer.seal(SHARED, &name, &self.sealer.open_or_clear(SHARED, &name, &value)?);
            done += sqlx::query("UPDATE shared_secrets SET value = $1 WHERE name = $2 AND value = $3")
                .bind(sealed)
                .bind(&name)
                .bind(&value)
                .execute(&self.pool)
                .await?
                .rows_affected();
        }
        Ok(done + self.reseal_webhook_secrets().await?)
    }

    /// Seals again, under the current key, every endpoint's secrets that are in clear or under an older key.
    async fn reseal_webhook_secrets(&self) -> Result<u64> {
        let rows: Vec<(String, String, Option<String>)> =
            sqlx::query_as("SELECT id, secret, previous_secret FROM webhooks").fetch_all(&self.pool).await?;
        let mut done = 0;
        for (id, secret, previous) in rows {
            let stale = |v: &str| !self.sealer.is_current(v);
            if !stale(&secret) && !previous.as_deref().is_some_and(stale) {
                continue;
            }
            let reseal =
                |v: &str| self.sealer.open_or_clear(WEBHOOK, &id, v).map(|p| self.sealer.seal(WEBHOOK, &id, &p));
            let previous_sealed = previous.as_deref().map(reseal).transpose()?;
            // Only if no rotation changed the row in between (it is sealed under the current key then).
            done += sqlx::query(
                "UPDATE webhooks SET secret = $1, previous_secret = $2 WHERE id = $3 AND secret = $4
                 AND COALESCE(previous_secret, '') = $5",
            )
            .bind(reseal(&secret)?)
            .bind(previous_sealed)
            .bind(&id)
            .bind(&secret)
            .bind(previous.unwrap_or_default())
            .execute(&self.pool)
            .await?
            .rows_affected();
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
    const OTHER: &str = "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5";

    #[test]
    fn a_sealed_secret_opens_for_its_row_only_and_shows_nothing_in_clear() {
        let s = Sealer::from_hex(ROOT, []).expect("key");
        let sealed = s.seal("webhook", "wh_1", "whsec_topsecret");
        assert!(Sealer::is_sealed(&sealed) && s.is_current(&sealed));
        assert!(!sealed.contains("topsecret"), "{sealed}");
        assert_eq!(s.open("webhook", "wh_1", &sealed).as_deref(), Ok("whsec_topsecret"));
        assert_eq!(s.open("webhook", "wh_2", &sealed), Err(SealError::Damaged), "another row");
        assert_eq!(s.open("shared", "wh_1", &sealed), Err(SealError::Damaged), "another kind");
        let mut flipped = sealed.clone();
        flipped.replace_range(sealed.len() - 1.., if sealed.ends_with('0') { "1" } else { "0" });
        assert_eq!(s.open("webhook", "wh_1", &flipped), Err(SealError::Damaged));
        assert_eq!(s.open("webhook", "wh_1", "sealed1:zz"), Err(SealError::Damaged));
        assert_ne!(s.seal("webhook", "wh_1", "x"), s.seal("webhook", "wh_1", "x"), "a fresh nonce each time");
    }

    #[test]
    fn another_key_does_not_open_it_and_a_rotation_keeps_old_values_open() {
        let old = Sealer::from_hex(ROOT, []).expect("key");
        let sealed = old.seal("shared", "stream", "abc");
        assert_eq!(
            Sealer::from_hex(OTHER, []).expect("key").open("shared", "stream", &sealed),
            Err(SealError::UnknownKey)
        );
        assert_eq!(Sealer::ephemeral().open("shared", "stream", &sealed), Err(SealError::UnknownKey));
        let rotated = Sealer::from_hex(OTHER, [ROOT]).expect("keys");
        assert_eq!(rotated.open("shared", "stream", &sealed).as_deref(), Ok("abc"));
        assert!(!rotated.is_current(&sealed));
        assert!(rotated.is_current(&rotated.seal("shared", "stream", "abc")));
        assert_eq!(Sealer::from_hex("nothex", []).map(|_| ()), Err(SealError::BadKey));
    }

    #[test]
    fn the_sealing_key_is_not_the_root_key() {
        // A value sealed straight under the root key (as a profile is) does not open as a secret.
        let root = parse_hex(ROOT).expect("hex");
        let raw = Aes256Gcm::new(&Key::<Aes256Gcm>::from(root));
        let nonce = [1u8; NONCE_LEN];
        let body = raw.encrypt(&Nonce::from(nonce), Payload { msg: b"abc", aad: &aad("shared", "stream") });
        let digest = Sha256::digest(root);
        let forged = format!(
            "{PREFIX}{}{}{}",
            hex::encode(&digest[..ID_LEN]),
            hex::encode(nonce),
            hex::encode(body.expect("enc"))
        );
        assert!(Sealer::from_hex(ROOT, []).expect("key").open("shared", "stream", &forged).is_err());
    }
}
