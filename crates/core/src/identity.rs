//! The browser identity of a session: `locale` (BCP 47), `timezone` (IANA), `userAgent` and
//! `geolocation`, validated at the edge. The browser applies it to every page of the session's context.

use crate::error::ApiError;
use crate::fields::{out_of_bounds, Fields};
use crate::params::decl::{component, plain, reference, BodyField, Components};
use crate::params::GeolocationOption;
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

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

fn text<'a>(f: &Fields<'a>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match f.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(out_of_bounds(format!("{name} must be a string"))),
    }
}

/// `locale`: a BCP 47 tag of at most [`MAX_LOCALE_CHARS`], in canonical case.
#[derive(Debug, Clone, PartialEq)]
pub struct Locale(pub String);

/// `timezone`: an IANA zone name.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeZone(pub String);

/// `userAgent`: 1 to [`MAX_USER_AGENT_CHARS`] of printable ASCII.
#[derive(Debug, Clone, PartialEq)]
pub struct UserAgent(pub String);

/// Longest time-zone name the schema documents (the check is the IANA table's names).
const MAX_TIMEZONE_CHARS: usize = 64;

/// A text field of the identity, documented 1 to `max` long with an example.
fn text_schema(nullable: bool, description: Option<String>, max: usize) -> ObjectBuilder {
    plain(Type::String, nullable, description).min_length(Some(1)).max_length(Some(max))
}

#[allow(deprecated)] // `example`, not `examples`: the published document's form (OpenAPI 3.0 style).
fn with_example(schema: ObjectBuilder, example: &str) -> ObjectBuilder {
    schema.example(Some(Value::from(example)))
}

impl BodyField for Locale {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        with_example(text_schema(nullable, description, MAX_LOCALE_CHARS), "de-DE").into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        text(f, name)?.map(|raw| parse_locale(raw).map(Self)).transpose()
    }
}

impl BodyField for TimeZone {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        with_example(text_schema(nullable, description, MAX_TIMEZONE_CHARS), "Europe/Berlin").into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        text(f, name)?.map(|raw| parse_timezone(raw).map(Self)).transpose()
    }
}

impl BodyField for UserAgent {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let pattern = format!("^[ -~]{{1,{MAX_USER_AGENT_CHARS}}}$");
        text_schema(nullable, description, MAX_USER_AGENT_CHARS).pattern(Some(pattern)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        text(f, name)?.map(|raw| parse_user_agent(raw).map(Self)).transpose()
    }
}

/// `geolocation`: documented by the component `GeolocationOption`.
impl BodyField for Geolocation {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(&GeolocationOption::name(), nullable, description)
    }
    fn components(out: &mut Components) {
        component::<GeolocationOption>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(parse_geolocation).transpose()
    }
}

/// A BCP 47 tag of the forms browsers take: `language[-script][-region][-variant...]` (language 2-3 or 5-8
/// letters, script 4 letters, region 2 letters or 3 digits, variants 5-8 characters or a digit and 3),
/// written back in canonical case (`de-DE`, `zh-Hant-TW`). Extensions and private use are refused.
fn parse_locale(raw: &str) -> Result<String, ApiError> {
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

fn parse_timezone(raw: &str) -> Result<String, ApiError> {
    let raw = raw.trim();
    raw.parse::<chrono_tz::Tz>().map(|tz| tz.name().to_owned()).map_err(|_| {
        out_of_bounds(format!("timezone must be an IANA time zone name such as \"Europe/Berlin\"; {raw:?} is not"))
    })
}

fn parse_user_agent(raw: &str) -> Result<String, ApiError> {
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

fn parse_geolocation(raw: &Value) -> Result<Geolocation, ApiError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use serde_json::json;

    fn read(body: Value) -> Result<Identity, ApiError> {
        crate::params::read_identity(&body)
    }

    #[test]
    fn good_values_are_read_and_normalised() {
        let id = read(json!({"locale": "de-de", "timezone": "Europe/Berlin", "userAgent": "Mozilla/5.0 (X11) Test/1",
                              "geolocation": {"latitude": 52.52, "longitude": 13.405}}))
        .unwrap();
        assert_eq!(id.locale.as_deref(), Some("de-DE"));
        assert_eq!(id.accept_language().as_deref(), Some("de-DE,de"));
        assert_eq!(id.timezone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(
            id.geolocation,
            Some(Geolocation { latitude: 52.52, longitude: 13.405, accuracy: DEFAULT_ACCURACY_M })
        );
        assert_eq!(read(json!({"locale": "fr"})).unwrap().accept_language().as_deref(), Some("fr"));
        assert_eq!(read(json!({"locale": "ZH-hant-tw"})).unwrap().locale.as_deref(), Some("zh-Hant-TW"));
        assert_eq!(read(json!({"locale": "es-419"})).unwrap().locale.as_deref(), Some("es-419"));
        assert_eq!(read(json!({"locale": "de-CH-1996"})).unwrap().locale.as_deref(), Some("de-CH-1996"));
        assert!(read(json!({"locale": null})).unwrap().is_empty());
        assert_eq!(read(json!({"timezone": "UTC"})).unwrap().timezone.as_deref(), Some("UTC"));
    }

    #[test]
    fn bad_values_name_their_field() {
        let table = [
            (json!({"locale": "not a locale"}), "locale"),
            (json!({"locale": "x"}), "locale"),
            (json!({"locale": "de-DE-u-co-phonebk"}), "locale"),
            (json!({"locale": "de--DE"}), "locale"),
            (json!({"locale": "en-US-US"}), "locale"),
            (json!({"locale": 7}), "locale"),
            (json!({"locale": "de_DE\u{0}"}), "locale"),
            (json!({"timezone": "Mars/Olympus"}), "timezone"),
            (json!({"timezone": ""}), "timezone"),
            (json!({"userAgent": ""}), "userAgent"),
            (json!({"userAgent": "a".repeat(513)}), "userAgent"),
            (json!({"userAgent": "ok\r\nX-Evil: 1"}), "userAgent"),
            (json!({"geolocation": "Berlin"}), "geolocation"),
            (json!({"geolocation": {"latitude": 91, "longitude": 0}}), "geolocation.latitude"),
            (json!({"geolocation": {"latitude": 0}}), "geolocation.longitude"),
            (json!({"geolocation": {"latitude": 0, "longitude": 0, "accuracy": -1}}), "geolocation.accuracy"),
            (json!({"geolocation": {"latitude": 0, "longitude": 0, "altitude": 3}}), "geolocation.altitude"),
        ];
        for (body, field) in table {
            let e = read(body.clone()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParameter, "{body}");
            assert!(e.message.contains(field), "{body}: {}", e.message);
        }
    }
}
