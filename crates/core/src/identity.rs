//! The browser identity of a session: `locale` (BCP 47), `timezone` (IANA), `userAgent` and
//! `geolocation`, validated at the edge. The browser applies it to every page of the session's context.

use crate::error::ApiError;
use crate::fields::out_of_bounds;
use serde_json::Value;

/// Longest accepted userAgent (characters).
pub const MAX_USER_AGENT_CHARS: usize = 512;
/// Longest accepted locale tag.
pub const MAX_LOCALE_CHARS: usize = 64;
/// Largest accepted geolocation accuracy (metres).
pub const MAX_ACCURACY_M: f64 = 100_000.0;
/// The accuracy reported when none is given (metres).
pub const DEFAULT_ACCURACY_M: f64 = 10.0;

/// Where the browser says it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geolocation {
    pub latitude: f64,
    pub longitude: f64,
    pub accuracy: f64,
}

/// What the session's pages say about the browser; every part optional (Chromium's own when absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// A canonical BCP 47 tag, e.g. `de-DE`.
    pub locale: Option<String>,
    /// An IANA zone name, e.g. `Europe/Berlin`.
    pub timezone: Option<String>,
    pub user_agent: Option<String>,
    pub geolocation: Option<Geolocation>,
}

impl Identity {
    pub fn is_empty(&self) -> bool {
        self == &Identity::default()
    }

    /// The languages for the locale, as Chromium takes them: the tag, then its language alone when the tag
    /// has more (`de-DE,de`). Chromium adds the q-values to the header itself (`de-DE,de;q=0.9`).
    pub fn accept_language(&self) -> Option<String> {
        let locale = self.locale.as_deref()?;
        match locale.split('-').next() {
            Some(lang) if lang != locale => Some(format!("{locale},{lang}")),
            _ => Some(locale.to_owned()),
        }
    }
}

/// A BCP 47 tag of the forms browsers take: `language[-script][-region][-variant...]` (language 2-3 or 5-8
/// letters, script 4 letters, region 2 letters or 3 digits, variants 5-8 characters or a digit and 3),
/// written back in canonical case (`de-DE`, `zh-Hant-TW`). Extensions and private use are refused.
pub(crate) fn parse_locale(raw: &str) -> Result<String, ApiError> {
    let bad = || out_of_bounds(format!("locale must be a BCP 47 language tag such as \"de-DE\"; {raw:?} is not"));
    let tag = raw.trim();
    if tag.is_empty() || tag.len() > MAX_LOCALE_CHARS {
        return Err(bad());
    }
    let mut parts = tag.split('-');
    let language =
        parts.next().filter(|l| matches!(l.len(), 2 | 3 | 5..=8) && l.bytes().all(|b| b.is_ascii_alphabetic()));
    let mut out = vec![language.ok_or_else(bad)?.to_ascii_lowercase()];
    // 0: script may come, 1: region may come, 2: only variants.
    let mut stage = 0;
    for part in parts {
        let alpha = part.bytes().all(|b| b.is_ascii_alphabetic());
        let digits = part.bytes().all(|b| b.is_ascii_digit());
        let alnum = part.bytes().all(|b| b.is_ascii_alphanumeric());
        if stage == 0 && part.len() == 4 && alpha {
            let mut script = part.to_ascii_lowercase();
            script[..1].make_ascii_uppercase();
            out.push(script);
            stage = 1;
        } else if stage <= 1 && ((part.len() == 2 && alpha) || (part.len() == 3 && digits)) {
            out.push(part.to_ascii_uppercase());
            stage = 2;
        } else if alnum && ((5..=8).contains(&part.len()) || (part.len() == 4 && part.as_bytes()[0].is_ascii_digit())) {
            out.push(part.to_ascii_lowercase());
            stage = 2;
        } else {
            return Err(bad());
        }
    }
    Ok(out.join("-"))
}

pub(crate) fn parse_timezone(raw: &str) -> Result<String, ApiError> {
    let raw = raw.trim();
    raw.parse::<chrono_tz::Tz>().map(|tz| tz.name().to_owned()).map_err(|_| {
        out_of_bounds(format!("timezone must be an IANA time zone name such as \"Europe/Berlin\"; {raw:?} is not"))
    })
}

pub(crate) fn parse_user_agent(raw: &str) -> Result<String, ApiError> {
    let len = raw.chars().count();
    if len == 0 || len > MAX_USER_AGENT_CHARS {
        return Err(out_of_bounds(format!("userAgent must be 1 to {MAX_USER_AGENT_CHARS} characters")));
    }
    // It becomes a header: printable ASCII only, so nothing can be smuggled into the request.
    if !raw.chars().all(|c| (' '..='~').contains(&c)) || raw.trim().is_empty() {
        return Err(out_of_bounds("userAgent must be printable ASCII text"));
    }
    Ok(raw.to_owned())
}

pub(crate) fn parse_geolocation(raw: &Value) -> Result<Geolocation, ApiError> {
    let shape = || out_of_bounds("geolocation must be {latitude, longitude, accuracy?} with numbers");
    let Value::Object(obj) = raw else { return Err(shape()) };
    if let Some(key) = obj.keys().find(|k| !matches!(k.as_str(), "latitude" | "longitude" | "accuracy")) {
        return Err(out_of_bounds(format!("geolocation.{key} is not a field; use latitude, longitude, accuracy")));
    }
    let number = |name: &str, lo: f64, hi: f64, default: Option<f64>| -> Result<f64, ApiError> {
        match obj.get(name).filter(|v| !v.is_null()) {
            None => default.ok_or_else(|| out_of_bounds(format!("geolocation.{name} is required"))),
            Some(v) => v
                .as_f64()
                .filter(|n| n.is_finite() && (lo..=hi).contains(n))
                .ok_or_else(|| out_of_bounds(format!("geolocation.{name} must be a number from {lo} to {hi}"))),
        }
    };
    Ok(Geolocation {
        latitude: number("latitude", -90.0, 90.0, None)?,
        longitude: number("longitude", -180.0, 180.0, None)?,
        accuracy: number("accuracy", 0.0, MAX_ACCURACY_M, Some(DEFAULT_ACCURACY_M))?,
    })
}
