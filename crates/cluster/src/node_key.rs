//! The key one node presents to another on internal calls (a socket message for a session the other node
//! holds). It is a shared secret made by the first node and kept in the database, never shown to clients.

use std::fmt;
use std::sync::Arc;

/// The header that carries it.
pub const NODE_KEY_HEADER: &str = "x-webpilot-node-key";

#[derive(Clone)]
pub struct NodeKey(Arc<str>);

impl NodeKey {
    pub fn new(secret: &str) -> NodeKey {
        NodeKey(secret.into())
    }

    pub fn value(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is the key, comparing every byte whatever the first difference.
    pub fn verify(&self, presented: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), presented.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NodeKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::NodeKey;

    #[test]
    fn only_the_key_itself_verifies() {
        let key = NodeKey::new("0123abcd");
        assert!(key.verify("0123abcd"));
        assert!(!key.verify("0123abce") && !key.verify("0123abc") && !key.verify(""));
        assert_eq!(format!("{key:?}"), "NodeKey(..)");
    }
}
