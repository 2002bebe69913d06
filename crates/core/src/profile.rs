//! Profiles: what a profile name may be, and the storage state a profile holds (every cookie of a
//! context, and the localStorage and IndexedDB of the origins it visited), in the JSON shape of
//! Playwright's `storageState` (with `indexedDB` per origin), so an export can be read by other tools.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest profile name, in characters.
pub const MAX_PROFILE_NAME: usize = 64;

/// Checks a profile name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
pub fn check_profile_name(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > MAX_PROFILE_NAME || !name.chars().all(ok_char) {
        return Err(format!("a profile name is 1 to {MAX_PROFILE_NAME} of the characters A-Z a-z 0-9 . _ -"));
    }
    Ok(())
}

/// One cookie, session cookies (`expires: -1`) and httpOnly ones included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredCookie {
    pub name: String,
    pub value: String,
    pub domain: String,
    #[serde(default = "root_path")]
    pub path: String,
    /// Unix seconds; -1 for a session cookie.
    #[serde(default = "session_expiry")]
    pub expires: f64,
    #[serde(default)]
    pub http_only: bool,
    #[serde(default)]
    pub secure: bool,
    /// `Strict`, `Lax` or `None`; absent when the site did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}

fn root_path() -> String {
    "/".into()
}
fn session_expiry() -> f64 {
    -1.0
}

/// One localStorage entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageItem {
    pub name: String,
    pub value: String,
}

/// What one origin keeps: its localStorage and its IndexedDB databases (as the page-side export wrote
/// them: `[{name, version, stores: [{name, keyPath, autoIncrement, indexes, records: [[key, value]]}]}]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginState {
    pub origin: String,
    #[serde(default)]
    pub local_storage: Vec<StorageItem>,
    #[serde(default, rename = "indexedDB", skip_serializing_if = "Vec::is_empty")]
    pub indexed_db: Vec<Value>,
}

impl OriginState {
    pub fn is_empty(&self) -> bool {
        self.local_storage.is_empty() && self.indexed_db.is_empty()
    }
}

/// A profile's content: a browser context's storage state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageState {
    #[serde(default)]
    pub cookies: Vec<StoredCookie>,
    #[serde(default)]
    pub origins: Vec<OriginState>,
}

impl StorageState {
    /// Parses an imported state, checking each origin is an http(s) origin.
    pub fn parse_import(body: &[u8]) -> Result<StorageState, String> {
        let state: StorageState =
            serde_json::from_slice(body).map_err(|e| format!("the body is not a storage state: {e}"))?;
        for c in &state.cookies {
            if c.name.is_empty() || c.domain.trim_start_matches('.').is_empty() {
                return Err("every cookie needs a name and a domain".into());
            }
        }
        for o in &state.origins {
            if normalize_origin(&o.origin).as_deref() != Some(o.origin.as_str()) {
                return Err(format!("{:?} is not an http(s) origin like https://example.com", o.origin));
            }
        }
        Ok(state)
    }

    /// The origins this state holds something for.
    pub fn origin_names(&self) -> Vec<String> {
        self.origins.iter().map(|o| o.origin.clone()).collect()
    }
}

/// The origin (`scheme://host[:port]`) of an http(s) URL; `None` for anything else.
pub fn normalize_origin(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return None;
    }
    Some(parsed.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_pattern() {
        for ok in ["shop", "a", "A.b_c-9", &"x".repeat(64)] {
            assert!(check_profile_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "é", &"x".repeat(65), "../x"] {
            assert!(check_profile_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn origins_are_normalized() {
        assert_eq!(normalize_origin("http://127.0.0.1:8080/a?b").as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(normalize_origin("https://Shop.example/").as_deref(), Some("https://shop.example"));
        assert_eq!(normalize_origin("about:blank"), None);
        assert_eq!(normalize_origin("file:///etc/passwd"), None);
    }

    #[test]
    fn an_import_reads_playwright_states_and_refuses_bad_origins() {
        let ok = br#"{"cookies":[{"name":"s","value":"v","domain":"a.com","path":"/","expires":-1,
            "httpOnly":true,"secure":false,"sameSite":"Lax"}],
            "origins":[{"origin":"https://a.com","localStorage":[{"name":"k","value":"v"}]}]}"#;
        let s = StorageState::parse_import(ok).unwrap();
        assert!(s.cookies[0].http_only);
        assert_eq!(s.origin_names(), vec!["https://a.com".to_owned()]);
        assert!(StorageState::parse_import(br#"{"origins":[{"origin":"javascript:x"}]}"#).is_err());
        assert!(StorageState::parse_import(b"[1]").is_err());
        assert!(StorageState::parse_import(br#"{"cookies":[{"name":"a","value":"b","domain":""}]}"#).is_err());
    }
}
