//! Send-message's body and its `newTask`, `state` and `interaction` messages, declared once: read in
//! declaration order (a message after `actionType` chose it) and documented by the same declaration, their
//! tags and `newState` values from one table.

use super::session::{SessionOptions, TaskOptions};
use super::values::TaskText;
use crate::error::ApiError;
use crate::fields::{invalid_params, missing, Fields};
use crate::params::decl::{body, component, plain, reference, BodyField, Components, Named};
use crate::params::{id_text, Interaction, Message, StateCommand};
use utoipa::openapi::schema::{Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

body! {
    /// The body of `POST /start/send-message`.
    pub struct SendMessageRequest before both_given {
        req "sessionId" session_id: SessionIdText,
        req "message" message: MessageObject,
    }
}

/// `sessionId` and `message` are both required, answered before either is read.
fn both_given(f: &Fields<'_>) -> Result<(), ApiError> {
    if !f.has("sessionId") || !f.has("message") {
        return Err(missing("sessionId and message are required"));
    }
    Ok(())
}

/// `sessionId`: without surrounding whitespace ([`id_text`]), not empty.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionIdText(pub String);

impl BodyField for SessionIdText {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)?.map(id_text) {
            Some("") => Err(missing("sessionId and message are required")),
            id => Ok(id.map(|id| SessionIdText(id.to_owned()))),
        }
    }
}

/// `message`: a JSON object, read as a [`Message`] whose error is kept, to be answered once the session is
/// known to be the caller's.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageObject(pub Result<Message, ApiError>);

impl BodyField for MessageObject {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(&super::Message::name(), nullable, description)
    }
    fn components(out: &mut Components) {
        component::<super::Message>(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.get(name) {
            None => Ok(None),
            Some(message) if message.is_object() => Ok(Some(MessageObject(Message::parse(message)))),
            Some(_) => Err(invalid_params(format!("{name} must be a JSON object"))),
        }
    }
}

body! {
    /// Starts a task in the session (waits up to 50 s for it, like run-task).
    pub struct NewTaskMessage {
        req "actionType" action_type: Tag<NewTaskAction>,
        req "newState" new_state: StartState,
        req "taskDetails" task_details: TaskText<1>,
        read limits: TaskOptions,
        doc _options: SessionOptions,
        opt "terminateOnCompletion" terminate_on_completion: bool,
    }
}

body! {
    /// Pauses, resumes, stops or terminates the session's task.
    pub struct StateMessage {
        req "actionType" action_type: Tag<StateAction>,
        req "newState" new_state: StateCommand,
    }
}

body! {
    /// A manual action in the browser.
    pub struct InteractionMessage {
        req "actionType" action_type: Tag<InteractionAction>,
        req "action" action: Interaction,
    }
}

/// A field whose one value names the message (`actionType`), documented as the enum `T`; the message
/// was chosen by it, so reading it again only checks what was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag<T>(pub T);

impl<T: Named> BodyField for Tag<T> {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(T::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        T::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            None => Ok(None),
            Some(raw) => T::named(raw)
                .map(|t| Some(Tag(t)))
                .ok_or_else(|| invalid_params(format!("{name} must be {}", T::quoted_names()))),
        }
    }
}

/// `actionType` of a `newTask` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewTaskAction;

impl Named for NewTaskAction {
    const COMPONENT: &'static str = "NewTaskAction";
    const NAMES: &'static [(&'static str, Self)] = &[("newTask", NewTaskAction)];
}

/// `actionType` of a `state` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateAction;

impl Named for StateAction {
    const COMPONENT: &'static str = "StateAction";
    const NAMES: &'static [(&'static str, Self)] = &[("state", StateAction)];
}

/// `actionType` of an `interaction` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InteractionAction;

impl Named for InteractionAction {
    const COMPONENT: &'static str = "InteractionAction";
    const NAMES: &'static [(&'static str, Self)] = &[("interaction", InteractionAction)];
}

/// `newState` of a `newTask` message: `start`. Absent, it is refused with what it must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartState;

impl Named for StartState {
    const COMPONENT: &'static str = "StartState";
    const NAMES: &'static [(&'static str, Self)] = &[("start", StartState)];
}

impl BodyField for StartState {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(Self::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        Self::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        let names = Self::quoted_names();
        let state =
            f.opt_str(name)?.ok_or_else(|| missing(format!("{name} is required: {names} for a newTask message")))?;
        let wrong = || invalid_params(format!("{name} must be {names} for a newTask message"));
        Self::named(state).map(Some).ok_or_else(wrong)
    }
}

impl Named for StateCommand {
    const COMPONENT: &'static str = "StateCommand";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("pause", StateCommand::Pause),
        ("resume", StateCommand::Resume),
        ("stop", StateCommand::Stop),
        ("terminate", StateCommand::Terminate),
    ];
}

/// `newState` of a `state` message. Absent, it is refused with the names it may be.
impl BodyField for StateCommand {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(Self::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        Self::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        let state =
            f.opt_str(name)?.ok_or_else(|| missing(format!("{name} is required: one of {}", Self::quoted_names())))?;
        let names = Self::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
        Self::named(state).map(Some).ok_or_else(|| invalid_params(format!("{name} {state:?} is not one of {names}")))
    }
}
