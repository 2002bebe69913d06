//! The interaction message's manual browser control (`takeOverControl`, clicks, typing, keys, uploads):
//! its actions and their bounds, read from the message's `action` object.

use crate::error::ApiError;
use crate::fields::{invalid_params, Fields};
use crate::params::decl::{component, reference, BodyField, BodyGroup, Components};
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

fn parse_interaction(f: &Fields<'_>) -> Result<Interaction, ApiError> {
    use super::schema::{Click, DoubleClick, KeyPress, Point, TypeText};
    match f.req_str("type")? {
        "takeOverControl" => Ok(Interaction::TakeOverControl),
        "releaseControl" => Ok(Interaction::ReleaseControl),
        "CLICK" => Click::read(f).map(|c| Interaction::Click { x: c.point.x, y: c.point.y }),
        "DOUBLE_CLICK" => DoubleClick::read(f).map(|c| Interaction::DoubleClick { x: c.point.x, y: c.point.y }),
        "TYPE" => {
            TypeText::read(f).map(|t| Interaction::Type { text: t.text.0, human_like: t.human_like.unwrap_or(false) })
        }
        "KEY_PRESS" => KeyPress::read(f).map(|k| Interaction::KeyPress { key: k.key.0 }),
        "UPLOAD" => {
            let name = f.req_str("name")?;
            crate::files::check_name(name).map_err(|e| invalid_params(format!("action.name: {e}")))?;
            Point::read(f).map(|p| Interaction::Upload { name: name.to_owned(), x: p.x, y: p.y })
        }
        other => Err(invalid_params(format!(
            "unknown action.type {other:?}; expected takeOverControl, releaseControl, CLICK, DOUBLE_CLICK, TYPE, \
             KEY_PRESS or UPLOAD"
        ))),
    }
}
