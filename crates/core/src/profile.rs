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

/// Most origins whose storage one profile carries.
pub const MAX_PROFILE_ORIGINS: usize = 50;

/// Most localStorage one origin holds, in UTF-16 code units of names and values together: what Chromium
/// keeps per origin (10 MiB of UTF-16). A bigger one would never load.
pub const MAX_LOCAL_STORAGE_UNITS: usize = 5 * 1024 * 1024;

/// An IndexedDB database as the page-side export writes it, and as the import needs it to load.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdbDatabase {
    name: String,
    #[serde(default)]
    version: Option<u64>,
    stores: Vec<IdbStore>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IdbStore {
    name: String,
    /// A string, a list of strings, or null (out-of-line keys).
    #[serde(default)]
    key_path: Value,
    #[serde(default)]
    auto_increment: bool,
    indexes: Vec<IdbIndex>,
    records: Vec<(Value, Value)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IdbIndex {
    name: String,
    key_path: Value,
    /// Read for its type only (a boolean).
    #[serde(default)]
    #[allow(dead_code)]
    unique: bool,
    #[serde(default)]
    multi_entry: bool,
}

/// Whether an IndexedDB key path is a string or a non-empty list of strings (`null` too, for a store).
fn key_path_ok(path: &Value, null_ok: bool) -> bool {
    match path {
        Value::Null => null_ok,
        Value::String(_) => true,
        Value::Array(parts) => !parts.is_empty() && parts.iter().all(Value::is_string),
        _ => false,
    }
}

impl IdbDatabase {
    fn check(value: &Value, origin: &str) -> Result<(), String> {
        let at = |what: String| format!("{origin}: IndexedDB {what}");
        let db: IdbDatabase = serde_json::from_value(value.clone()).map_err(|e| {
            at(format!(
                "entries are {{name, version, stores: [{{name, keyPath, autoIncrement, indexes, records}}]}}: {e}"
            ))
        })?;
        if db.name.is_empty() || db.version == Some(0) {
            return Err(at("databases need a name and a version of at least 1".into()));
        }
        for s in &db.stores {
            if s.name.is_empty() || s.indexes.iter().any(|i| i.name.is_empty()) {
                return Err(at(format!("{:?}: every store and index needs a name", db.name)));
            }
            if !key_path_ok(&s.key_path, true) {
                return Err(at(format!("{:?}.{:?}: keyPath is a string, a list of strings or null", db.name, s.name)));
            }
            let keyed = !s.key_path.is_null();
            // Without a key path (and no key generator) every record needs its own key.
            if !keyed && !s.auto_increment && s.records.iter().any(|(k, _)| k.is_null()) {
                return Err(at(format!("{:?}.{:?}: a record without a key path needs a key", db.name, s.name)));
            }
            for ix in &s.indexes {
                // A multiEntry index takes one key path, not a list.
                if !key_path_ok(&ix.key_path, false) || (ix.multi_entry && ix.key_path.is_array()) {
                    return Err(at(format!("{:?}.{:?}: index {:?} has a bad keyPath", db.name, s.name, ix.name)));
                }
            }
        }
        Ok(())
    }
}

impl StorageState {
    /// Parses an imported state and checks it can load: http(s) origins, at most [`MAX_PROFILE_ORIGINS`] of
    /// them, each origin's localStorage within what a browser keeps, and IndexedDB databases in the shape the
    /// export writes. The error says what is wrong and where.
    pub fn parse_import(body: &[u8]) -> Result<StorageState, String> {
        let shape = || "the body is not a storage state: a JSON object {cookies, origins}".to_owned();
        let value: Value = serde_json::from_slice(body).map_err(|e| format!("{}: {e}", shape()))?;
        if !value.is_object() {
            return Err(shape());
        }
        let state: StorageState = serde_json::from_value(value).map_err(|e| format!("{}: {e}", shape()))?;
        state.check_loadable()?;
        Ok(state)
    }

    /// Whether this state can load into a browser (what [`Self::parse_import`] checks after parsing; a
    /// profile stored before those checks is held to them when a session starts from it).
    pub fn check_loadable(&self) -> Result<(), String> {
        let state = self;
        for c in &state.cookies {
            if c.name.is_empty() || c.domain.trim_start_matches('.').is_empty() {
                return Err("every cookie needs a name and a domain".into());
            }
        }
        if state.origins.len() > MAX_PROFILE_ORIGINS {
            let n = state.origins.len();
            return Err(format!("a profile carries at most {MAX_PROFILE_ORIGINS} origins; this one has {n}"));
        }
        let mut seen = std::collections::HashSet::new();
        for o in &state.origins {
            if normalize_origin(&o.origin).as_deref() != Some(o.origin.as_str()) {
                return Err(format!("{:?} is not an http(s) origin like https://example.com", o.origin));
            }
            if !seen.insert(o.origin.as_str()) {
                return Err(format!("{} is listed twice", o.origin));
            }
            let units: usize =
                o.local_storage.iter().map(|i| i.name.encode_utf16().count() + i.value.encode_utf16().count()).sum();
            if units > MAX_LOCAL_STORAGE_UNITS {
                return Err(format!(
                    "{}: localStorage holds {units} characters; a browser keeps at most {MAX_LOCAL_STORAGE_UNITS} \
                     per origin",
                    o.origin
                ));
            }
            for db in &o.indexed_db {
                IdbDatabase::check(db, &o.origin)?;
            }
        }
        Ok(())
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

    fn origin_with(extra: &str) -> Vec<u8> {
        format!(r#"{{"origins":[{{"origin":"https://a.com",{extra}}}]}}"#).into_bytes()
    }

    #[test]
    fn an_import_that_could_never_load_is_refused_with_its_reason() {
        let store = r#"{"name":"s","keyPath":"id","autoIncrement":false,"indexes":[{"name":"by","keyPath":"by","unique":false,"multiEntry":false}],"records":[[1,{"id":1,"by":"x"}]]}"#;
        let good = origin_with(&format!(r#""indexedDB":[{{"name":"db","version":1,"stores":[{store}]}}]"#));
        assert!(StorageState::parse_import(&good).is_ok());
        for (bad, says) in [
            (r#""indexedDB":[[]]"#, "IndexedDB"),
            (r#""indexedDB":[{}]"#, "IndexedDB"),
            (
                r#""indexedDB":[{"name":"db","version":1,"stores":[{"name":"s","keyPath":null,"records":[]}]}]"#,
                "indexes",
            ),
            (r#""indexedDB":[{"name":"","stores":[]}]"#, "name"),
            (r#""indexedDB":[{"name":"db","version":0,"stores":[]}]"#, "version"),
            (
                r#""indexedDB":[{"name":"db","stores":[{"name":"s","keyPath":null,"indexes":[],"records":[[null,1]]}]}]"#,
                "key",
            ),
        ] {
            let e = StorageState::parse_import(&origin_with(bad)).expect_err(bad);
            assert!(e.contains(says) && e.contains("https://a.com"), "{bad}: {e}");
        }
        let huge = "x".repeat(MAX_LOCAL_STORAGE_UNITS);
        let e =
            StorageState::parse_import(&origin_with(&format!(r#""localStorage":[{{"name":"k","value":"{huge}"}}]"#)));
        assert!(e.expect_err("too big").contains("localStorage"));
        let many: Vec<String> =
            (0..=MAX_PROFILE_ORIGINS).map(|i| format!(r#"{{"origin":"https://o{i}.com"}}"#)).collect();
        let e = StorageState::parse_import(format!(r#"{{"origins":[{}]}}"#, many.join(",")).as_bytes());
        assert!(e.expect_err("too many").contains("at most 50 origins"));
        let twice = br#"{"origins":[{"origin":"https://a.com"},{"origin":"https://a.com"}]}"#;
        assert!(StorageState::parse_import(twice).is_err());
        assert!(StorageState::parse_import(b"[]").is_err());
        assert_eq!(StorageState::parse_import(b"{}"), Ok(StorageState::default()), "an empty profile loads");
    }
}
