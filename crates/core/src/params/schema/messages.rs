//! The wire shape of send-message's four messages, selected by `actionType`, and of the interactions an
//! `interaction` message (or the live view's take-over) carries, selected by `type`: documented here, read
//! by hand (`params::Message::parse`, `params::interaction`) or declared in `task_messages.rs`.

// Never built: each type describes a message its validator reads from JSON, for the schema derive alone.
#![allow(dead_code)]

use super::task_messages::{GuardrailMessage, InteractionMessage, NewTaskMessage, StateMessage};
use utoipa::ToSchema;

/// A message to a session, selected by `actionType`; also what a Socket.IO client emits as `message`.
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(discriminator(property_name = "actionType", mapping(
    ("newTask" = "#/components/schemas/NewTaskMessage"),
    ("state" = "#/components/schemas/StateMessage"),
    ("interaction" = "#/components/schemas/InteractionMessage"),
    ("guardrail" = "#/components/schemas/GuardrailMessage"),
)))]
pub enum Message {
    NewTask(NewTaskMessage),
    State(StateMessage),
    Interaction(InteractionMessage),
    Guardrail(GuardrailMessage),
}

/// An interaction, selected by `type`. Coordinates: x 0 to 1024, y 155 to 600. Also the body of
/// `POST /stream/{sessionId}/interaction`.
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(discriminator(property_name = "type", mapping(
    ("takeOverControl" = "#/components/schemas/TakeOverControl"),
    ("releaseControl" = "#/components/schemas/ReleaseControl"),
    ("CLICK" = "#/components/schemas/Click"),
    ("DOUBLE_CLICK" = "#/components/schemas/DoubleClick"),
    ("TYPE" = "#/components/schemas/TypeText"),
    ("KEY_PRESS" = "#/components/schemas/KeyPress"),
)))]
pub enum Interaction {
    TakeOverControl(TakeOverControl),
    ReleaseControl(ReleaseControl),
    Click(Click),
    DoubleClick(DoubleClick),
    Type(TypeText),
    KeyPress(KeyPress),
}

/// Takes the mouse and keyboard from the agent; its task waits until control is released.
#[derive(ToSchema)]
pub struct TakeOverControl {
    #[serde(rename = "type")]
    kind: TakeOverControlType,
}

#[derive(ToSchema)]
pub enum TakeOverControlType {
    #[serde(rename = "takeOverControl")]
    TakeOverControl,
}

/// Gives control back to the agent.
#[derive(ToSchema)]
pub struct ReleaseControl {
    #[serde(rename = "type")]
    kind: ReleaseControlType,
}

#[derive(ToSchema)]
pub enum ReleaseControlType {
    #[serde(rename = "releaseControl")]
    ReleaseControl,
}

/// A click at a point of the composed view.
#[derive(ToSchema)]
pub struct Click {
    #[serde(rename = "type")]
    kind: ClickType,
    #[schema(minimum = 0, maximum = 1024)]
    x: f64,
    #[schema(minimum = 155, maximum = 600)]
    y: f64,
}

#[derive(ToSchema)]
pub enum ClickType {
    #[serde(rename = "CLICK")]
    Click,
}

/// A double click at a point of the composed view.
#[derive(ToSchema)]
pub struct DoubleClick {
    #[serde(rename = "type")]
    kind: DoubleClickType,
    #[schema(minimum = 0, maximum = 1024)]
    x: f64,
    #[schema(minimum = 155, maximum = 600)]
    y: f64,
}

#[derive(ToSchema)]
pub enum DoubleClickType {
    #[serde(rename = "DOUBLE_CLICK")]
    DoubleClick,
}

/// Text typed into the focused element.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypeText {
    #[serde(rename = "type")]
    kind: TypeTextType,
    #[schema(max_length = 10000)]
    text: String,
    /// Simulate human typing speed.
    human_like: Option<bool>,
}

#[derive(ToSchema)]
pub enum TypeTextType {
    #[serde(rename = "TYPE")]
    Type,
}

/// One key pressed.
#[derive(ToSchema)]
pub struct KeyPress {
    #[serde(rename = "type")]
    kind: KeyPressType,
    /// A named key (Enter, Escape, Tab, Backspace, Arrow…) or one character.
    key: String,
}

#[derive(ToSchema)]
pub enum KeyPressType {
    #[serde(rename = "KEY_PRESS")]
    KeyPress,
}
