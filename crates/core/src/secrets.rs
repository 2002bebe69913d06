//! Secrets a task may type without the model ever seeing them: parsed from `secrets` on start-session,
//! newTask and run-task, substituted for `<secret:NAME>` only when typing on an allowed domain, and
//! masked back to `<secret:NAME>` wherever a value would otherwise leave the service (observations,
//! events, results, errors). Values never appear in `Debug` output. A `totp` secret types the one-time
//! code valid at that moment; its seed, and every code it typed, are masked like a value.

use crate::error::ApiError;
use crate::fields::{invalid_params, out_of_bounds};
use crate::policy::normalize_domain;
use crate::totp::{Algorithm, Totp, DEFAULT_PERIOD};
use parking_lot::Mutex;
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

/// What a secret types: a fixed value, or the one-time code of a TOTP seed.
#[derive(Clone, PartialEq, Eq)]
enum Kind {
    Value(String),
    Totp(Totp),
}

/// One secret: its value, and the domains it may be typed on (any domain when empty).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    kind: Kind,
    domains: Vec<String>,
}

impl Secret {
    pub fn new(value: impl Into<String>, domains: Vec<String>) -> Self {
        Secret { kind: Kind::Value(value.into()), domains }
    }
    pub fn totp(totp: Totp, domains: Vec<String>) -> Self {
        Secret { kind: Kind::Totp(totp), domains }
    }
    /// Does it type a one-time code (a `totp` seed)?
    pub fn is_one_time_code(&self) -> bool {
        matches!(self.kind, Kind::Totp(_))
    }
    /// The fixed text masked for this secret: its value, or a TOTP's seed.
    fn masked_text(&self) -> &str {
        match &self.kind {
            Kind::Value(v) => v,
            Kind::Totp(t) => t.seed_text(),
        }
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
        f.debug_struct("Secret")
            .field("value", &"<redacted>")
            .field("totp", &matches!(self.kind, Kind::Totp(_)))
            .field("domains", &self.domains)
            .finish()
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

#[derive(Default)]
struct Inner {
    map: BTreeMap<String, Secret>,
    /// What `mask` replaces: each value as typed and as a URL carries it, with its `<secret:NAME>`,
    /// longest first (so a value that holds another is masked whole). Made once, used on every mask.
    forms: Vec<(String, String)>,
    /// The one-time codes typed so far, with their `<secret:NAME>`: shared by every clone, so whatever
    /// masks for the task also masks a code the moment it is typed.
    typed: Mutex<Vec<(String, String)>>,
}

impl PartialEq for Inner {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map
    }
}
impl Eq for Inner {}

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
            let value = s.masked_text();
            forms.push((value.to_owned(), placeholder.clone()));
            if let Kind::Totp(t) = &s.kind {
                // A seed is often shown in lower case or in groups; its plain lower-case form is masked too.
                forms.push((t.seed_text().to_ascii_lowercase(), placeholder.clone()));
            }
            let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
            if encoded != value {
                forms.push((encoded.replace('+', "%20"), placeholder.clone()));
                forms.push((encoded, placeholder));
            }
        }
        forms.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        Secrets(Arc::new(Inner { map, forms, typed: Mutex::default() }))
    }

    pub fn is_empty(&self) -> bool {
        self.0.map.is_empty()
    }

    /// The very same set (not only equal entries): what it masks includes the one-time codes typed
    /// through it or its clones.
    pub fn same(&self, other: &Secrets) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
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

    /// Parses the `secrets` field: `{NAME: "value"}`, `{NAME: {value, domains: [...]}}` or
    /// `{NAME: {totp, digits?, period?, algorithm?, domains?}}`.
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
                    if o.contains_key("totp") {
                        map.insert(name.clone(), Secret::totp(parse_totp(name, o)?, domains));
                        continue;
                    }
                    let value = o
                        .get("value")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid_params(format!("secrets.{name}.value must be a string")))?;
                    (value, domains)
                }
                _ => {
                    return Err(invalid_params(format!(
                        "secrets.{name} must be a string, {{value, domains}} or {{totp, digits, period, algorithm}}"
                    )))
                }
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

    /// `text` with every `<secret:NAME>` replaced by its value (a TOTP's code valid now), when typing on a
    /// page of `host`.
    pub fn substitute(&self, text: &str, host: &str) -> Result<String, SecretError> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.substitute_at(text, host, now)
    }

    /// [`Self::substitute`] at `unix_seconds`; each code typed is remembered, and masked from then on.
    pub fn substitute_at(&self, text: &str, host: &str, unix_seconds: u64) -> Result<String, SecretError> {
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
            match &secret.kind {
                Kind::Value(v) => out.push_str(v),
                Kind::Totp(t) => {
                    let code = t.code_at(unix_seconds);
                    self.remember(code.clone(), name);
                    out.push_str(&code);
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn remember(&self, code: String, name: &str) {
        let mut typed = self.0.typed.lock();
        if !typed.iter().any(|(c, _)| *c == code) {
            typed.push((code, format!("<secret:{name}>")));
        }
    }

    /// The one-time codes typed so far.
    fn typed(&self) -> Vec<(String, String)> {
        self.0.typed.lock().clone()
    }

    /// `text` with every secret value (as typed, and as a URL would carry it), TOTP seed and one-time code
    /// typed so far replaced by `<secret:NAME>`.
    pub fn mask(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for (value, placeholder) in self.0.forms.iter().chain(self.typed().iter()) {
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
    /// Every value `mask` would replace (each secret as typed and as a URL carries it, and the one-time codes
    /// typed so far), with how many times `text` shows it: what a picture of the page must have painted over.
    /// Never log them.
    pub fn values_in(&self, text: &str) -> Vec<(String, usize)> {
        self.0
            .forms
            .iter()
            .chain(self.typed().iter())
            .map(|(value, _)| (value.clone(), if value.is_empty() { 0 } else { text.matches(value.as_str()).count() }))
            .collect()
    }

    pub fn shown_in(&self, text: &str) -> bool {
        self.0.map.values().any(|s| text.contains(s.masked_text()))
            || self.typed().iter().any(|(code, _)| text.contains(code.as_str()))
    }
}

/// A `totp` secret's generator; a bad seed or setting is INVALID_PARAMETER naming the field.
fn parse_totp(name: &str, o: &serde_json::Map<String, Value>) -> Result<Totp, ApiError> {
    if let Some(key) = o.keys().find(|k| !matches!(k.as_str(), "totp" | "digits" | "period" | "algorithm" | "domains"))
    {
        return Err(out_of_bounds(format!("secrets.{name}.{key} is not a field of a totp secret")));
    }
    let seed = o
        .get("totp")
        .and_then(Value::as_str)
        .ok_or_else(|| out_of_bounds(format!("secrets.{name}.totp must be a base32 seed")))?;
    let digits = match o.get("digits").filter(|v| !v.is_null()) {
        None => 6,
        Some(v) => v
            .as_u64()
            .and_then(|d| u32::try_from(d).ok())
            .ok_or_else(|| out_of_bounds(format!("secrets.{name}.digits must be 6 or 8")))?,
    };
    let period = match o.get("period").filter(|v| !v.is_null()) {
        None => DEFAULT_PERIOD,
        Some(v) => v.as_u64().ok_or_else(|| out_of_bounds(format!("secrets.{name}.period must be whole seconds")))?,
    };
    let algorithm = match o.get("algorithm").filter(|v| !v.is_null()) {
        None => Algorithm::Sha1,
        Some(v) => v.as_str().and_then(Algorithm::parse).ok_or_else(|| {
            out_of_bounds(format!("secrets.{name}.algorithm must be \"SHA1\", \"SHA256\" or \"SHA512\""))
        })?,
    };
    Totp::new(seed, digits, period, algorithm).map_err(|e| {
        let field = match e {
            crate::totp::TotpError::Seed => "totp",
            crate::totp::TotpError::Digits => "digits",
            crate::totp::TotpError::Period => "period",
        };
        out_of_bounds(format!("secrets.{name}.{field}: {e}"))
    })
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
    fn totp_secrets_type_the_code_of_the_moment_and_mask_seed_and_codes() {
        // RFC 6238's SHA1 seed, six digits.
        let seed = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
        let s = Secrets::parse(&json!({"code": {"totp": seed, "domains": ["example.com"]}})).unwrap();
        assert_eq!(s.substitute_at("<secret:code>", "example.com", 59).unwrap(), "287082");
        assert!(matches!(s.substitute_at("<secret:code>", "other.test", 59), Err(SecretError::NotAllowed { .. })));
        // A clone (the event sink's) masks a code typed through another, and the seed in any case.
        let sink = s.clone();
        assert_eq!(
            sink.mask("typed 287082; seed gezdgnbvgy3tqojqgezdgnbvgy3tqojq"),
            "typed <secret:code>; seed <secret:code>"
        );
        assert_eq!(s.substitute_at("<secret:code>", "example.com", 1111111109).unwrap(), "081804");
        assert!(sink.shown_in("081804") && sink.shown_in(seed) && !sink.shown_in("123456"));
        assert_eq!(sink.mask("287082 081804"), "<secret:code> <secret:code>");
        assert!(!format!("{s:?} {:?}", s.0.map.get("code")).contains("GEZD"));
        let eight =
            Secrets::parse(&json!({"c": {"totp": seed, "digits": 8, "period": 30, "algorithm": "SHA1"}})).unwrap();
        assert_eq!(eight.substitute_at("<secret:c>", "x.test", 59).unwrap(), "94287082");
    }

    #[test]
    fn bad_totp_secrets_name_their_field() {
        let table = [
            (json!({"c": {"totp": "not base32!"}}), "secrets.c.totp"),
            (json!({"c": {"totp": 12}}), "secrets.c.totp"),
            (json!({"c": {"totp": "JBSWY3DPEHPK3PXP", "digits": 7}}), "secrets.c.digits"),
            (json!({"c": {"totp": "JBSWY3DPEHPK3PXP", "period": 0}}), "secrets.c.period"),
            (json!({"c": {"totp": "JBSWY3DPEHPK3PXP", "algorithm": "MD5"}}), "secrets.c.algorithm"),
            (json!({"c": {"totp": "JBSWY3DPEHPK3PXP", "value": "x"}}), "secrets.c.value"),
        ];
        for (body, field) in table {
            let e = Secrets::parse(&body).unwrap_err();
            assert_eq!(e.code, crate::ErrorCode::InvalidParameter, "{body}");
            assert!(e.message.contains(field) && !e.message.contains("JBSW"), "{body}: {}", e.message);
        }
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
