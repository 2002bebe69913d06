//! Identifier newtypes, so a session id can never be passed where a task id is wanted.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($name:ident, $prefix:literal) => {
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A fresh random id: the prefix and a UUIDv4 without dashes. Named so, and with no `Default`,
            /// so that no `..Default::default()` mints an id unseen.
            pub fn generate() -> Self {
                Self(format!("{}{}", $prefix, uuid::Uuid::new_v4().simple()))
            }
            /// Wraps an id read from a request path or the store; ids are opaque strings.
            pub fn from_string(s: impl Into<String>) -> Self {
                Self(s.into())
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(SessionId, "ses_");
id_type!(TaskId, "task_");
id_type!(UserId, "usr_");
id_type!(KeyId, "key_");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_unique() {
        let a = SessionId::generate();
        let b = SessionId::generate();
        assert!(a.as_str().starts_with("ses_"));
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 4 + 32);
    }
}
