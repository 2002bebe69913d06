//! The profile key: profiles are sealed with AES-256-GCM under it before they reach the store. The key
//! comes from `--profile-key` (hex) or from `profile.key` in the data directory, made on first start
//! (mode 0600). Older keys (`--profile-previous-keys`) still open what they sealed; every save seals
//! with the current key, so a rotation completes as profiles are saved (or exported and imported).
//!
//! Sealed form: version byte 1, the 4-byte key id (the start of the key's SHA-256), the 12-byte nonce,
//! then the ciphertext and tag. The associated data binds it to its owner and name: a row copied to
//! another user or name does not open.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use sha2::{Digest, Sha256};
use std::io;
use std::path::Path;
use webpilot_core::UserId;

const VERSION: u8 = 1;
const ID_LEN: usize = 4;
const NONCE_LEN: usize = 12;

/// Why a profile key could not be read, or a sealed profile not opened.
#[derive(Debug, thiserror::Error)]
pub enum ProfileKeyError {
    #[error("a profile key is 64 hex digits (32 bytes)")]
    BadKey,
    #[error("the profile key file: {0}")]
    File(#[from] io::Error),
    #[error("the profile was sealed with a key this service does not have (was --profile-key changed?)")]
    UnknownKey,
    #[error("the profile does not open with its key (damaged, or moved to another user or name)")]
    Damaged,
}

/// One AES-256 key and its id.
#[derive(Clone)]
struct KeyEntry {
    id: [u8; ID_LEN],
    cipher: Aes256Gcm,
}

impl KeyEntry {
    fn new(key: [u8; 32]) -> KeyEntry {
        let digest = Sha256::digest(key);
        let mut id = [0; ID_LEN];
        id.copy_from_slice(&digest[..ID_LEN]);
        KeyEntry { id, cipher: Aes256Gcm::new(&Key::<Aes256Gcm>::from(key)) }
    }
}

/// The current profile key, and older ones that still open what they sealed.
#[derive(Clone)]
pub struct ProfileKey {
    current: KeyEntry,
    previous: Vec<KeyEntry>,
}

impl std::fmt::Debug for ProfileKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProfileKey({}, {} previous)", hex::encode(self.current.id), self.previous.len())
    }
}

fn parse_hex(text: &str) -> Result<[u8; 32], ProfileKeyError> {
    let bytes = hex::decode(text.trim()).map_err(|_| ProfileKeyError::BadKey)?;
    bytes.try_into().map_err(|_| ProfileKeyError::BadKey)
}

impl ProfileKey {
    /// A fresh random key (tests, and services that keep no profiles past their life).
    pub fn random() -> ProfileKey {
        ProfileKey { current: KeyEntry::new(rand::random()), previous: Vec::new() }
    }

    /// The key given in hex.
    pub fn from_hex(text: &str) -> Result<ProfileKey, ProfileKeyError> {
        Ok(ProfileKey { current: KeyEntry::new(parse_hex(text)?), previous: Vec::new() })
    }

    /// The key in the file at `path`, made (random, mode 0600) when there is none.
    pub fn load_or_create(path: &Path) -> Result<ProfileKey, ProfileKeyError> {
        Self::from_hex(&webpilot_core::secret_file::read_or_create(path, rand::random())?)
    }

    /// Adds older keys (hex) that still open what they sealed.
    pub fn with_previous<'a>(mut self, keys: impl IntoIterator<Item = &'a str>) -> Result<Self, ProfileKeyError> {
        for k in keys {
            self.previous.push(KeyEntry::new(parse_hex(k)?));
        }
        Ok(self)
    }

    fn aad(user: &UserId, name: &str) -> Vec<u8> {
        format!("webpilot-profile\0{}\0{name}", user.as_str()).into_bytes()
    }

    /// Seals `plain` as `user`'s profile `name` under the current key.
    pub fn seal(&self, user: &UserId, name: &str, plain: &[u8]) -> Vec<u8> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let aad = Self::aad(user, name);
        let sealed = self.current.cipher.encrypt(&Nonce::from(nonce), Payload { msg: plain, aad: &aad });
        // Encryption fails only for inputs over 64 GiB, far above the profile caps.
        let sealed = sealed.unwrap_or_default();
        let mut out = Vec::with_capacity(1 + ID_LEN + NONCE_LEN + sealed.len());
        out.push(VERSION);
        out.extend_from_slice(&self.current.id);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`Self::seal`] made for `user`'s profile `name`, under whichever known key sealed it.
    pub fn open(&self, user: &UserId, name: &str, sealed: &[u8]) -> Result<Vec<u8>, ProfileKeyError> {
        if sealed.len() < 1 + ID_LEN + NONCE_LEN || sealed[0] != VERSION {
            return Err(ProfileKeyError::Damaged);
        }
        let (id, rest) = sealed[1..].split_at(ID_LEN);
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let entry = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == id)
            .ok_or(ProfileKeyError::UnknownKey)?;
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| ProfileKeyError::Damaged)?;
        let aad = Self::aad(user, name);
        let opened = entry.cipher.decrypt(&Nonce::from(nonce), Payload { msg: body, aad: &aad });
        opened.map_err(|_| ProfileKeyError::Damaged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_profiles_open_for_their_owner_and_name_only() {
        let key = ProfileKey::random();
        let (a, b) = (UserId::from_string("usr_a"), UserId::from_string("usr_b"));
        let sealed = key.seal(&a, "shop", b"secret-cookie-value");
        assert!(!sealed.windows(6).any(|w| w == b"secret"), "no plain text in the sealed form");
        assert_eq!(key.open(&a, "shop", &sealed).unwrap(), b"secret-cookie-value");
        assert!(matches!(key.open(&b, "shop", &sealed), Err(ProfileKeyError::Damaged)));
        assert!(matches!(key.open(&a, "other", &sealed), Err(ProfileKeyError::Damaged)));
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(key.open(&a, "shop", &flipped), Err(ProfileKeyError::Damaged)));
        assert!(matches!(ProfileKey::random().open(&a, "shop", &sealed), Err(ProfileKeyError::UnknownKey)));
    }

    #[test]
    fn a_rotated_key_still_opens_old_profiles_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.key");
        let old = ProfileKey::load_or_create(&path).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        let old_hex = std::fs::read_to_string(&path).unwrap();
        let user = UserId::from_string("usr_a");
        let sealed = old.seal(&user, "p", b"x");
        assert_eq!(ProfileKey::load_or_create(&path).unwrap().open(&user, "p", &sealed).unwrap(), b"x");
        let new = ProfileKey::from_hex(&"11".repeat(32)).unwrap().with_previous([old_hex.as_str()]).unwrap();
        assert_eq!(new.open(&user, "p", &sealed).unwrap(), b"x");
        assert!(matches!(ProfileKey::from_hex("abc"), Err(ProfileKeyError::BadKey)));
    }
}
