//! The interaction message's manual browser control (`takeOverControl`, clicks, typing, keys, uploads):
//! its actions and their bounds, read from the message's `action` object.

use crate::error::ApiError;
use crate::fields::{invalid_params, out_of_bounds, Fields};
use crate::params::decl::{component, reference, BodyField, Components};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// Longest text of one TYPE interaction (characters).
pub const MAX_TYPE_TEXT_CHARS: usize = 10_000;

/// Keys accepted by KEY_PRESS besides single printable characters.
pub const NAMED_KEYS: &[&str] = &[
    "Enter",
    "Escape",
    "Tab",
    "Backspace",
    "Delete",
    "Space",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "PageUp",
    "PageDown",
];

/// Manual browser control.
#[derive(Debug, Clone, PartialEq)]
pub enum Interaction {
    TakeOverControl,
    ReleaseControl,
    Click {
        x: f64,
        y: f64,
    },
    DoubleClick {
        x: f64,
        y: f64,
    },
    Type {
        text: String,
        human_like: bool,
    },
    KeyPress {
        key: String,
    },
    /// Sets the session's file `name` on the file input at the frame point.
    Upload {
        name: String,
        x: f64,
        y: f64,
    },
}

/// An interaction message's `action`, its fields named `action.x` in errors; documented by the union of
/// the interactions selected by `type` (`schema::Interaction`).
impl BodyField for Interaction {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(&super::schema::Interaction::name(), nullable, description)
    }
    fn components(out: &mut Components) {
        component::<super::schema::Interaction>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        f.opt_object(name, "action.")?.map(|action| parse_interaction(&action)).transpose()
    }
}

fn parse_point(f: &Fields<'_>) -> Result<(f64, f64), ApiError> {
    let x = f.req_f64("x")?;
    let y = f.req_f64("y")?;
    use crate::geometry::{CHROME_BAND, FRAME_HEIGHT, FRAME_WIDTH};
    if !(0.0..=f64::from(FRAME_WIDTH)).contains(&x) {
        return Err(out_of_bounds(format!("action.x must be between 0 and {FRAME_WIDTH}")));
    }
    if !(f64::from(CHROME_BAND)..=f64::from(FRAME_HEIGHT)).contains(&y) {
        return Err(out_of_bounds(format!(
            "action.y must be between {CHROME_BAND} and {FRAME_HEIGHT} \
             (the top {CHROME_BAND} pixels are browser chrome)"
        )));
    }
    Ok((x, y))
}

fn parse_interaction(f: &Fields<'_>) -> Result<Interaction, ApiError> {
    match f.req_str("type")? {
        "takeOverControl" => Ok(Interaction::TakeOverControl),
        "releaseControl" => Ok(Interaction::ReleaseControl),
        "CLICK" => parse_point(f).map(|(x, y)| Interaction::Click { x, y }),
        "DOUBLE_CLICK" => parse_point(f).map(|(x, y)| Interaction::DoubleClick { x, y }),
        "TYPE" => {
            let text = f.req_str("text")?;
            if text.chars().count() > MAX_TYPE_TEXT_CHARS {
                return Err(out_of_bounds(format!("action.text must be at most {MAX_TYPE_TEXT_CHARS} characters")));
            }
            Ok(Interaction::Type { text: text.to_owned(), human_like: f.opt_bool("humanLike")?.unwrap_or(false) })
        }
        "KEY_PRESS" => {
            let key = f.req_str("key")?;
            if NAMED_KEYS.contains(&key) || key.chars().count() == 1 {
                Ok(Interaction::KeyPress { key: key.to_owned() })
            } else {
                Err(out_of_bounds(format!(
                    "action.key {key:?} is not supported; use a single character or one of {}",
                    NAMED_KEYS.join(", ")
                )))
            }
        }
        "UPLOAD" => {
            let name = f.req_str("name")?;
            crate::files::check_name(name).map_err(|e| invalid_params(format!("action.name: {e}")))?;
            parse_point(f).map(|(x, y)| Interaction::Upload { name: name.to_owned(), x, y })
        }
        other => Err(invalid_params(format!(
            "unknown action.type {other:?}; expected takeOverControl, releaseControl, CLICK, DOUBLE_CLICK, TYPE, \
             KEY_PRESS or UPLOAD"
        ))),
    }
}
