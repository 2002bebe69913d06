//! The interactions an `interaction` message (or the live view's take-over) carries, selected by `type`,
//! declared once: each read in declaration order from the message's `action` (errors name `action.x`) and
//! documented by the same declaration; a point's bounds are the frame's ([`crate::geometry`]).

use super::task_messages::Tag;
use crate::error::ApiError;
use crate::fields::{out_of_bounds, Fields};
use crate::geometry::{CHROME_BAND, FRAME_HEIGHT, FRAME_WIDTH};
use crate::params::decl::{body, plain, BodyField, BodyGroup, Components, Named};
use crate::params::{MAX_TYPE_TEXT_CHARS, NAMED_KEYS};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::RefOr;

body! {
    /// Takes the mouse and keyboard from the agent; its task waits until control is released.
    pub struct TakeOverControl {
        req "type" kind: Tag<TakeOverControlType>,
    }
}

body! {
    /// Gives control back to the agent.
    pub struct ReleaseControl {
        req "type" kind: Tag<ReleaseControlType>,
    }
}

body! {
    /// A click at a point of the composed view.
    pub struct Click {
        req "type" kind: Tag<ClickType>,
        merge point: Point,
    }
}

body! {
    /// A double click at a point of the composed view.
    pub struct DoubleClick {
        req "type" kind: Tag<DoubleClickType>,
        merge point: Point,
    }
}

body! {
    /// Text typed into the focused element.
    pub struct TypeText {
        req "type" kind: Tag<TypeTextType>,
        req "text" text: TypedText,
        /// Simulate human typing speed.
        opt "humanLike" human_like: bool,
    }
}

body! {
    /// One key pressed.
    pub struct KeyPress {
        req "type" kind: Tag<KeyPressType>,
        /// A named key (Enter, Escape, Tab, Backspace, Arrow…) or one character.
        req "key" key: Key,
    }
}

/// A point of the composed view, `x` and `y`: both must be numbers before either bound is checked, `x` within
/// 0..=[`FRAME_WIDTH`], `y` within [`CHROME_BAND`]..=[`FRAME_HEIGHT`] (above it is the browser's chrome).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl BodyGroup for Point {
    fn read(f: &Fields<'_>) -> Result<Self, ApiError> {
        let x = f.req_f64("x")?;
        let y = f.req_f64("y")?;
        if !(0.0..=f64::from(FRAME_WIDTH)).contains(&x) {
            return Err(out_of_bounds(format!("{} must be between 0 and {FRAME_WIDTH}", f.path("x"))));
        }
        if !(f64::from(CHROME_BAND)..=f64::from(FRAME_HEIGHT)).contains(&y) {
            return Err(out_of_bounds(format!(
                "{} must be between {CHROME_BAND} and {FRAME_HEIGHT} (the top {CHROME_BAND} pixels are browser chrome)",
                f.path("y")
            )));
        }
        Ok(Point { x, y })
    }
    fn properties(object: ObjectBuilder) -> ObjectBuilder {
        let number = |min: u32, max: u32| {
            let format = SchemaFormat::KnownFormat(KnownFormat::Double);
            plain(Type::Number, false, None).format(Some(format)).minimum(Some(min)).maximum(Some(max))
        };
        let object = object.property("x", number(0, FRAME_WIDTH)).required("x");
        object.property("y", number(CHROME_BAND, FRAME_HEIGHT)).required("y")
    }
    fn components(_out: &mut Components) {}
}

/// `text` of a TYPE interaction: at most [`MAX_TYPE_TEXT_CHARS`] characters.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedText(pub String);

impl BodyField for TypedText {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).max_length(Some(MAX_TYPE_TEXT_CHARS)).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            Some(text) if text.chars().count() > MAX_TYPE_TEXT_CHARS => {
                Err(out_of_bounds(format!("{} must be at most {MAX_TYPE_TEXT_CHARS} characters", f.path(name))))
            }
            text => Ok(text.map(|t| Self(t.to_owned()))),
        }
    }
}

/// `key` of a KEY_PRESS interaction: one of [`NAMED_KEYS`] or one character.
#[derive(Debug, Clone, PartialEq)]
pub struct Key(pub String);

impl BodyField for Key {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            Some(key) if !NAMED_KEYS.contains(&key) && key.chars().count() != 1 => Err(out_of_bounds(format!(
                "{} {key:?} is not supported; use a single character or one of {}",
                f.path(name),
                NAMED_KEYS.join(", ")
            ))),
            key => Ok(key.map(|k| Self(k.to_owned()))),
        }
    }
}

/// The `type` of each interaction, one name each.
macro_rules! interaction_type {
    ($($name:ident = $wire:literal),* $(,)?) => {$(
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;

        impl Named for $name {
            const COMPONENT: &'static str = stringify!($name);
            const NAMES: &'static [(&'static str, Self)] = &[($wire, $name)];
        }
    )*};
}

interaction_type! {
    TakeOverControlType = "takeOverControl",
    ReleaseControlType = "releaseControl",
    ClickType = "CLICK",
    DoubleClickType = "DOUBLE_CLICK",
    TypeTextType = "TYPE",
    KeyPressType = "KEY_PRESS",
}
