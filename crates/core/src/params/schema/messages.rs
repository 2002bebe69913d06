//! The unions of send-message's four messages, selected by `actionType`, and of the interactions an
//! `interaction` message (or the live view's take-over) carries, selected by `type`; each message and
//! interaction is declared in `task_messages.rs` or `interactions.rs`.

// Never built: each type describes a message its validator reads from JSON, for the schema derive alone.
#![allow(dead_code)]

use super::interactions::{Click, DoubleClick, KeyPress, ReleaseControl, TakeOverControl, TypeText};
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
