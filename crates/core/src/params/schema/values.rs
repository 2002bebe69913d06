//! The field types of session and task parameters: each reads its value with the spec's error and
//! documents it from the same constants (`maxLength` of startingUrl is [`MAX_URL_LEN`], the check's).

use super::parts::SecretEntry;
use crate::error::{ApiError, ErrorCode};
use crate::fields::{invalid_params, out_of_bounds, Fields};
use crate::output::OutputSchema;
use crate::params::decl::{plain, reference, BodyField, Components, Named};
use crate::params::{parse_avoid_domains, parse_starting_url, parse_task_details, CacheMode};
use crate::params::{MAX_AVOID_DOMAINS, MAX_TASK_DETAILS_CHARS, MAX_URL_LEN};
use crate::profile::{check_profile_name, MAX_PROFILE_NAME};
use crate::proxies::{parse_proxies, ProxyRoute, MAX_PROXIES};
use crate::secrets::Secrets;
use crate::vision::VisionMode;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// `taskDetails`: trimmed, at most [`MAX_TASK_DETAILS_CHARS`] characters, `INVALID_TASK_DETAILS` else.
/// With `MIN` 0 a blank one is no task (start-session's); with `MIN` 1 it must not be blank.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskText<const MIN: usize>(pub String);

impl<const MIN: usize> BodyField for TaskText<MIN> {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let text = plain(Type::String, nullable, description).max_length(Some(MAX_TASK_DETAILS_CHARS));
        text.min_length((MIN > 0).then_some(MIN)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            Some(s) if MIN == 0 && s.trim().is_empty() => Ok(None),
            Some(s) => parse_task_details(s).map(|t| Some(Self(t))),
            None => Ok(None),
        }
    }
}

/// `mode`: only `default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultMode;

impl Named for DefaultMode {
    const COMPONENT: &'static str = "Mode";
    const NAMES: &'static [(&'static str, Self)] = &[("default", DefaultMode)];
}

impl BodyField for DefaultMode {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(Self::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        Self::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            None => Ok(None),
            Some(mode) => Self::named(mode)
                .map(Some)
                .ok_or_else(|| out_of_bounds("mode must be \"default\" (the only supported mode)")),
        }
    }
}

/// `startingUrl`: an absolute http(s) URL of at most [`MAX_URL_LEN`] bytes; blank is `None` (it clears
/// the session's).
#[derive(Debug, Clone, PartialEq)]
pub struct StartingUrl(pub Option<String>);

impl BodyField for StartingUrl {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).max_length(Some(MAX_URL_LEN)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            None => Ok(None),
            Some(u) if u.trim().is_empty() => Ok(Some(Self(None))),
            Some(u) => parse_starting_url(u).map(|u| Some(Self(Some(u)))),
        }
    }
}

/// `avoidDomains`: at most [`MAX_AVOID_DOMAINS`] domain names, normalised, without repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct AvoidDomains(pub Vec<String>);

impl BodyField for AvoidDomains {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let items = ObjectBuilder::new().schema_type(Type::String);
        let list = ArrayBuilder::new().schema_type(crate::params::decl::typed(Type::Array, nullable)).items(items);
        list.description(description).max_items(Some(MAX_AVOID_DOMAINS)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.opt_str_array(name)?.map(|list| parse_avoid_domains(&list).map(Self)).transpose()
    }
}

/// `secrets`: an object of name to [`SecretEntry`], read by [`Secrets::parse`].
impl BodyField for Secrets {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let entry = reference(&SecretEntry::name(), false, None);
        let names = ObjectBuilder::new().schema_type(Type::String);
        let map = plain(Type::Object, nullable, description).additional_properties(Some(entry));
        map.property_names(Some(names)).into()
    }
    fn components(out: &mut Components) {
        crate::params::decl::component::<SecretEntry>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(Secrets::parse).transpose()
    }
}

/// `outputSchema`: any JSON Schema object, compiled by [`OutputSchema::parse`].
impl BodyField for OutputSchema {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::Object, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(OutputSchema::parse).transpose()
    }
}

/// `replayOf`: a taskId (trimmed, 1 to 100 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOf(pub String);

impl BodyField for ReplayOf {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)?.map(str::trim) {
            None => Ok(None),
            Some(id) if id.is_empty() || id.len() > 100 => {
                Err(out_of_bounds("replayOf must be the taskId of an earlier task"))
            }
            Some(id) => Ok(Some(Self(id.to_owned()))),
        }
    }
}

impl Named for CacheMode {
    const COMPONENT: &'static str = "CacheMode";
    const NAMES: &'static [(&'static str, Self)] = &[("auto", CacheMode::Auto), ("off", CacheMode::Off)];
}

/// `cache`: one of [`CacheMode`]'s names, `INVALID_PARAMS` else.
impl BodyField for CacheMode {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(Self::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        Self::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.opt_str(name)?.map(CacheMode::parse).transpose()
    }
}

impl Named for VisionMode {
    const COMPONENT: &'static str = "Vision";
    const NAMES: &'static [(&'static str, Self)] =
        &[("off", VisionMode::Off), ("auto", VisionMode::Auto), ("on", VisionMode::On)];
}

/// `vision`: one of [`VisionMode`]'s names, `INVALID_PARAMS` else.
impl BodyField for VisionMode {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(Self::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        Self::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(VisionMode::parse).transpose()
    }
}

/// `profile`: 1 to [`MAX_PROFILE_NAME`] of `A-Z a-z 0-9 . _ -`, `INVALID_PARAMS` else.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileName(pub String);

impl BodyField for ProfileName {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let name = plain(Type::String, nullable, description).min_length(Some(1)).max_length(Some(MAX_PROFILE_NAME));
        name.pattern(Some(format!("^[A-Za-z0-9._-]{{1,{MAX_PROFILE_NAME}}}$"))).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        let Some(profile) = f.opt_str(name)? else { return Ok(None) };
        check_profile_name(profile).map_err(|e| invalid_params(format!("{name}: {e}")))?;
        Ok(Some(Self(profile.to_owned())))
    }
}

/// `proxies`: at most [`MAX_PROXIES`] entries, read by [`parse_proxies`].
#[derive(Debug, Clone, PartialEq)]
pub struct Proxies(pub Vec<ProxyRoute>);

impl BodyField for Proxies {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        let entry = reference(&super::parts::ProxyEntry::name(), false, None);
        let list = ArrayBuilder::new().schema_type(crate::params::decl::typed(Type::Array, nullable)).items(entry);
        list.description(description).max_items(Some(MAX_PROXIES)).into()
    }
    fn components(out: &mut Components) {
        crate::params::decl::component::<super::parts::ProxyEntry>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.get(name).map(|list| parse_proxies(Some(list)).map(Self)).transpose()
    }
}

/// `persistProfile` needs `profile`.
pub fn persist_needs_profile(profile: &Option<ProfileName>, persist: &Option<bool>) -> Result<(), ApiError> {
    if *persist == Some(true) && profile.is_none() {
        return Err(ApiError::new(ErrorCode::MissingRequiredField, "persistProfile needs a profile name (profile)"));
    }
    Ok(())
}
