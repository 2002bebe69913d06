//! The socket capability: the token a Socket.IO client needs to act on a session. It is an HMAC of the
//! session id under a key the nodes share (made by the first node, kept in the database: a socket may
//! connect to any node), so nothing is stored per session and a token cannot be
//! forged from a session id. It is handed out only inside `socketURL` (to the session's owner), never in
//! `pollUrl`, poll bodies or any public endpoint.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

/// Bytes of the HMAC kept in a token (128 bits, as for session ids).
const TOKEN_BYTES: usize = 16;

/// HMAC-SHA256 of `message` under `key` (the socket and the stream capabilities both sign with it).
pub(crate) fn keyed_mac(key: &[u8; 32], message: &[u8]) -> Hmac<Sha256> {
    // An HMAC accepts a key of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(message);
    mac
}

pub struct SocketKey([u8; 32]);

impl SocketKey {
    pub fn random() -> Self {
        SocketKey(rand::random())
    }

    /// The key the nodes share.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        SocketKey(bytes)
    }

    fn mac(&self, session_id: &str) -> Hmac<Sha256> {
        keyed_mac(&self.0, session_id.as_bytes())
    }

    /// The token for `session_id` (hex).
    pub fn token(&self, session_id: &str) -> String {
        hex::encode(&self.mac(session_id).finalize().into_bytes()[..TOKEN_BYTES])
    }

    /// Whether `token` is the token of `session_id`, compared in constant time.
    pub fn verify(&self, session_id: &str, token: &str) -> bool {
        match hex::decode(token.trim()) {
            Ok(bytes) if bytes.len() == TOKEN_BYTES => self.mac(session_id).verify_truncated_left(&bytes).is_ok(),
            _ => false,
        }
    }
}

impl Default for SocketKey {
    fn default() -> Self {
        SocketKey::random()
    }
}

impl fmt::Debug for SocketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SocketKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_only_its_session_under_its_key() {
        let key = SocketKey::random();
        let t = key.token("ses_a");
        assert_eq!(t.len(), 2 * TOKEN_BYTES);
        assert!(key.verify("ses_a", &t));
        assert!(!key.verify("ses_b", &t));
        assert!(!SocketKey::random().verify("ses_a", &t));
        assert!(!key.verify("ses_a", ""));
        assert!(!key.verify("ses_a", &t[..10]));
        assert!(!key.verify("ses_a", "not hex"));
    }
}
