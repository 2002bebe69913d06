//! The identity fields of start-session and run-task as `body!` reads and documents them: `locale`,
//! `timezone`, `userAgent` and `geolocation`, each checked by the identity module's parsers.

use super::GeolocationOption;
use crate::error::ApiError;
use crate::fields::{out_of_bounds, Fields};
use crate::identity::{
    parse_geolocation, parse_locale, parse_timezone, parse_user_agent, Geolocation, MAX_LOCALE_CHARS,
    MAX_USER_AGENT_CHARS,
};
use crate::params::decl::{component, plain, reference, BodyField, Components};
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Identity, DEFAULT_ACCURACY_M};
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
