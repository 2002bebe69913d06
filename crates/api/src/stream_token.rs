//! The live-view capability: a token in the stream URLs that lets its holder watch one session until
//! an expiry, and, with the control scope, also click and type into it. It is
//! `<expiry unix seconds>.<scope>.<HMAC-SHA256 of (session id, scope, expiry), 128 bits, hex>` under a
//! server secret kept in the data dir (so links stay valid across a restart, and nothing is stored per
//! session). Changing the session id, the scope or the expiry breaks the MAC.

use crate::capability::keyed_mac;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;
use std::io;
use std::path::Path;

const MAC_BYTES: usize = 16;

/// What a stream token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Watch, and send clicks, typing and keys (what the session's owner gets).
    Control,
    /// Watch only: the link an owner shares.
    Watch,
    /// The session's DevTools endpoint (`cdpURL`); it opens no live view.
    Devtools,
    /// A recording's video and timeline (a share link); no live view.
    Recording,
}

impl Scope {
    fn tag(self) -> &'static str {
        match self {
            Scope::Control => "c",
            Scope::Watch => "w",
            Scope::Devtools => "d",
            Scope::Recording => "r",
        }
    }

    fn from_tag(tag: &str) -> Option<Scope> {
        match tag {
            "c" => Some(Scope::Control),
            "w" => Some(Scope::Watch),
            "d" => Some(Scope::Devtools),
            "r" => Some(Scope::Recording),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the stream token is missing or not valid for this session")]
    Invalid,
    #[error("the stream token has expired")]
    Expired,
}

pub struct StreamKey([u8; 32]);

impl StreamKey {
    /// Reads the secret at `path`, or makes one there (readable by the owner only).
    pub fn load_or_create(path: &Path) -> io::Result<StreamKey> {
        let text = webpilot_core::secret_file::read_or_create(path, rand::random())?;
        Self::from_hex(&text)
    }

    /// The key written as 64 hex digits.
    pub fn from_hex(text: &str) -> io::Result<StreamKey> {
        let bytes = hex::decode(text.trim()).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the stream secret is not 32 bytes"))?;
        Ok(StreamKey(key))
    }

    /// The key as 64 hex digits (to share it with the other nodes through the database).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    fn mac(&self, session_id: &str, scope: Scope, expires: i64) -> Hmac<Sha256> {
        keyed_mac(&self.0, format!("webpilot-stream\0{session_id}\0{}\0{expires}", scope.tag()).as_bytes())
    }

    /// A token for `session_id` with `scope`, valid until `expires` (Unix seconds).
    pub fn issue(&self, session_id: &str, scope: Scope, expires: i64) -> String {
        let mac = self.mac(session_id, scope, expires).finalize().into_bytes();
        format!("{expires}.{}.{}", scope.tag(), hex::encode(&mac[..MAC_BYTES]))
    }

    /// The scope `token` grants on `session_id` at `now` (Unix seconds); the MAC is checked (in
    /// constant time) before the expiry.
    pub fn check(&self, session_id: &str, token: &str, now: i64) -> Result<Scope, TokenError> {
        let mut parts = token.trim().splitn(3, '.');
        let (Some(expires), Some(tag), Some(mac)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(TokenError::Invalid);
        };
        let expires: i64 = expires.parse().map_err(|_| TokenError::Invalid)?;
        let scope = Scope::from_tag(tag).ok_or(TokenError::Invalid)?;
        let mac = hex::decode(mac).map_err(|_| TokenError::Invalid)?;
        if mac.len() != MAC_BYTES || self.mac(session_id, scope, expires).verify_truncated_left(&mac).is_err() {
            return Err(TokenError::Invalid);
        }
        if now >= expires {
            return Err(TokenError::Expired);
        }
        Ok(scope)
    }
}

impl fmt::Debug for StreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StreamKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_its_session_in_its_scope_until_it_expires() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = StreamKey::load_or_create(&dir.path().join("stream.key")).expect("key");
        let t = key.issue("ses_a", Scope::Watch, 1_000);
        assert_eq!(key.check("ses_a", &t, 999), Ok(Scope::Watch));
        assert_eq!(key.check("ses_a", &t, 1_000), Err(TokenError::Expired));
        assert_eq!(key.check("ses_b", &t, 10), Err(TokenError::Invalid));
        // Raising the expiry or the scope breaks the MAC.
        assert_eq!(key.check("ses_a", &t.replacen("1000", "9000", 1), 10), Err(TokenError::Invalid));
        assert_eq!(key.check("ses_a", &t.replacen(".w.", ".c.", 1), 10), Err(TokenError::Invalid));
        for bad in ["", "1000", "1000.w", "x.w.00", "1000.z.00", &t[..t.len() - 2]] {
            assert_eq!(key.check("ses_a", bad, 10), Err(TokenError::Invalid), "{bad}");
        }
        // The same secret is read back after a restart; another secret refuses the token.
        let again = StreamKey::load_or_create(&dir.path().join("stream.key")).expect("key");
        assert_eq!(again.check("ses_a", &t, 10), Ok(Scope::Watch));
        let other = StreamKey::load_or_create(&dir.path().join("other.key")).expect("key");
        assert_eq!(other.check("ses_a", &t, 10), Err(TokenError::Invalid));
    }
}
