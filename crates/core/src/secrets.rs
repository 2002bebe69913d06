//! Secrets a task may type without the model ever seeing them: parsed from `secrets` on start-session,
//! newTask and run-task, substituted for `<secret:NAME>` only when typing on an allowed domain, and
//! masked back to `<secret:NAME>` wherever a value would otherwise leave the service (observations,
//! events, results, errors). Values never appear in `Debug` output.

use crate::error::ApiError;
use crate::fields::{invalid_params, out_of_bounds};
use crate::policy::normalize_domain;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Most secrets one task may hold.
pub const MAX_SECRETS: usize = 32;
/// Longest secret value (characters).
pub const MAX_SECRET_CHARS: usize = 4_096;
/// Longest secret name.
pub const MAX_SECRET_NAME: usize = 64;

/// One secret: its value, and the domains it may be typed on (any domain when empty).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    value: String,
    domains: Vec<String>,
}

impl Secret {
    pub fn new(value: impl Into<String>, domains: Vec<String>) -> Self {
        Secret { value: value.into(), domains }
    }
    pub fn domains(&self) -> &[String] {
        &self.domains
    }
    /// May this secret be typed on a page of `host`? (The host itself or a subdomain of an entry.)
    pub fn allowed_on(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.domains.is_empty()
            || self
                .domains
                .iter()
                .any(|d| host == *d || host.strip_suffix(d.as_str()).is_some_and(|r| r.ends_with('.')))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret").field("value", &"<redacted>").field("domains", &self.domains).finish()
    }
}

/// Why a `<secret:NAME>` could not be typed; the message names the secret, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("there is no secret named {name:?}; the secrets are: {known}")]
    Unknown { name: String, known: String },
    #[error("the secret {name:?} may only be typed on {allowed}, not on {host:?}")]
    NotAllowed { name: String, host: String, allowed: String },
}

/// The secrets of a task, by name. Cheap to clone.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Arc<Inner>);

#[derive(Default, PartialEq, Eq)]
struct Inner {
    map: BTreeMap<String, Secret>,
    /// What `mask` replaces: each value as typed and as a URL carries it, with its `<secret:NAME>`,
    /// longest first (so a value that holds another is masked whole). Made once, used on every mask.
    forms: Vec<(String, String)>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.map.keys()).finish()
    }
}

const OPEN: &str = "<secret:";

impl Secrets {
    pub fn from_map(map: BTreeMap<String, Secret>) -> Self {
        let mut forms = Vec::new();
        for (name, s) in &map {
            let placeholder = format!("<secret:{name}>");
            forms.push((s.value.clone(), placeholder.clone()));
            let encoded: String = url::form_urlencoded::byte_serialize(s.value.as_bytes()).collect();
            if encoded != s.value {
                forms.push((encoded.replace('+', "%20"), placeholder.clone()));
                forms.push((encoded, placeholder));
            }
        }
        forms.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        Secrets(Arc::new(Inner { map, forms }))
    }

    pub fn is_empty(&self) -> bool {
        self.0.map.is_empty()
    }

    /// The names, for the model.
    pub fn names(&self) -> impl Iterator<Item = (&str, &Secret)> {
        self.0.map.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// These secrets with `other`'s added (an entry of `other` wins over one of the same name).
    pub fn merged(&self, other: &Secrets) -> Secrets {
        if other.is_empty() {
            return self.clone();
        }
        let mut map = self.0.map.clone();
        map.extend(other.0.map.iter().map(|(k, v)| (k.clone(), v.clone())));
        Secrets::from_map(map)
    }

    /// Parses the `secrets` field: `{NAME: "value"}` or `{NAME: {value, domains: [...]}}`.
    pub fn parse(raw: &Value) -> Result<Secrets, ApiError> {
        let Value::Object(obj) = raw else {
            return Err(invalid_params("secrets must be an object of name: value"));
        };
        if obj.len() > MAX_SECRETS {
            return Err(out_of_bounds(format!("secrets may hold at most {MAX_SECRETS} entries")));
        }
        let mut map = BTreeMap::new();
        for (name, entry) in obj {
            let valid_name = !name.is_empty()
                && name.len() <= MAX_SECRET_NAME
                && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !valid_name {
                return Err(invalid_params(format!(
                    "secret names are 1 to {MAX_SECRET_NAME} letters, digits, '_', '-' or '.'; {name:?} is not"
                )));
            }
            let (value, domains) = match entry {
                Value::String(v) => (v.as_str(), Vec::new()),
                Value::Object(o) => {
                    let value = o
                        .get("value")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid_params(format!("secrets.{name}.value must be a string")))?;
                    let domains = match o.get("domains") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(Value::Array(list)) => list
                            .iter()
                            .map(|d| {
                                d.as_str().and_then(normalize_domain).ok_or_else(|| {
                                    invalid_params(format!("secrets.{name}.domains must hold domain names"))
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                        Some(_) => return Err(invalid_params(format!("secrets.{name}.domains must be an array"))),
                    };
                    (value, domains)
                }
                _ => return Err(invalid_params(format!("secrets.{name} must be a string or {{value, domains}}"))),
            };
            if value.is_empty() || value.chars().count() > MAX_SECRET_CHARS {
                return Err(out_of_bounds(format!("secrets.{name} must be 1 to {MAX_SECRET_CHARS} characters")));
            }
            map.insert(name.clone(), Secret::new(value, domains));
        }
        Ok(Secrets::from_map(map))
    }

    /// Does `text` hold a placeholder?
    pub fn has_placeholder(text: &str) -> bool {
        text.contains(OPEN)
    }

    /// `text` with every `<secret:NAME>` replaced by its value, when typing on a page of `host`.
    pub fn substitute(&self, text: &str, host: &str) -> Result<String, SecretError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(OPEN) {
            let after = &rest[at + OPEN.len()..];
            let Some(end) = after.find('>') else { break };
            let name = &after[..end];
            let secret = self.0.map.get(name).ok_or_else(|| SecretError::Unknown {
                name: name.to_owned(),
                known: if self.is_empty() {
                    "(none)".into()
                } else {
                    self.0.map.keys().cloned().collect::<Vec<_>>().join(", ")
                },
            })?;
            if !secret.allowed_on(host) {
                return Err(SecretError::NotAllowed {
                    name: name.to_owned(),
                    host: host.to_owned(),
                    allowed: secret.domains.join(", "),
                });
            }
            out.push_str(&rest[..at]);
            out.push_str(&secret.value);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `text` with every secret value (as typed, and as a URL would carry it) replaced by `<secret:NAME>`.
    pub fn mask(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for (value, placeholder) in &self.0.forms {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), placeholder);
            }
        }
        out
    }

    /// `value` with every string in it masked (keys too).
    pub fn mask_json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.mask(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.mask_json(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (self.mask(k), self.mask_json(v))).collect()),
            other => other.clone(),
        }
    }

    /// Does `text` show a secret value?
    pub fn shown_in(&self, text: &str) -> bool {
        self.0.map.values().any(|s| text.contains(&s.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secrets() -> Secrets {
        Secrets::parse(&json!({"pw": {"value": "hunter 2&x", "domains": ["Example.COM"]}, "user": "ada"})).unwrap()
    }

    #[test]
    fn values_are_substituted_only_on_allowed_domains() {
        let s = secrets();
        assert_eq!(s.substitute("<secret:pw>!", "login.example.com").unwrap(), "hunter 2&x!");
        assert_eq!(s.substitute("a <secret:user> b", "anything.test").unwrap(), "a ada b");
        assert!(matches!(s.substitute("<secret:pw>", "evil-example.com"), Err(SecretError::NotAllowed { .. })));
        let unknown = s.substitute("<secret:nope>", "example.com").unwrap_err().to_string();
        assert!(unknown.contains("pw, user") && !unknown.contains("hunter"), "{unknown}");
        assert_eq!(s.substitute("plain <secret:unterminated", "x.test").unwrap(), "plain <secret:unterminated");
    }

    #[test]
    fn values_are_masked_raw_and_url_encoded() {
        let s = secrets();
        let masked = s.mask("typed hunter 2&x, url ?p=hunter+2%26x and hunter%202%26x, ada");
        assert_eq!(masked, "typed <secret:pw>, url ?p=<secret:pw> and <secret:pw>, <secret:user>");
        assert!(s.shown_in("xx hunter 2&x") && !s.shown_in("hunter"));
        assert_eq!(s.mask_json(&json!({"a": ["ada\"", 1]})), json!({"a": ["<secret:user>\"", 1]}));
        assert!(!format!("{s:?} {:?}", s.0.map.get("pw")).contains("hunter"));
    }

    #[test]
    fn bad_secrets_are_refused() {
        for bad in [json!([]), json!({"a b": "x"}), json!({"a": ""}), json!({"a": 3}), json!({"a": {"domains": []}})] {
            assert!(Secrets::parse(&bad).is_err(), "{bad}");
        }
        let merged = secrets().merged(&Secrets::parse(&json!({"user": "bob"})).unwrap());
        assert_eq!(merged.substitute("<secret:user>", "x.test").unwrap(), "bob");
    }
}
