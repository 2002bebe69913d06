//! Send-message's body and its `newTask`, `state`, `interaction` and `guardrail` messages, declared once: read in
//! declaration order (a message after `actionType` chose it) and documented by the same declaration, their
//! tags and `newState` values from one table.

use super::session::{SessionOptions, TaskOptions};
use super::values::TaskText;
use crate::error::{ApiError, ErrorCode};
use crate::fields::{invalid_params, missing, Fields};
use crate::params::decl::{body, component, plain, reference, BodyField, Components, Named};
use crate::params::{id_text, Interaction, Message, StateCommand, MAX_TASK_DETAILS_CHARS};
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
    /// Answers a guardrail trigger and resumes the task.
    pub struct GuardrailMessage required ["actionType", "taskDetails", "newState"] {
        req "actionType" action_type: Tag<GuardrailAction>,
        req "newState" new_state: ResumeState,
        /// The human-provided information.
        req "taskDetails" task_details: GuardrailAnswer,
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

/// `actionType` of a `guardrail` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardrailAction;

impl Named for GuardrailAction {
    const COMPONENT: &'static str = "GuardrailAction";
    const NAMES: &'static [(&'static str, Self)] = &[("guardrail", GuardrailAction)];
}

/// `newState` that must be the one name of `T` for a `message` message; absent, it is refused with what it
/// must be.
fn only_state<T: Named>(f: &Fields<'_>, name: &str, message: &str) -> Result<Option<T>, ApiError> {
    let names = T::quoted_names();
    let state =
        f.opt_str(name)?.ok_or_else(|| missing(format!("{name} is required: {names} for a {message} message")))?;
    let wrong = || invalid_params(format!("{name} must be {names} for a {message} message"));
    T::named(state).map(Some).ok_or_else(wrong)
}

/// `newState` of a `guardrail` message: `resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeState;

impl Named for ResumeState {
    const COMPONENT: &'static str = "ResumeState";
    const NAMES: &'static [(&'static str, Self)] = &[("resume", ResumeState)];
}

impl BodyField for ResumeState {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        reference(Self::COMPONENT, nullable, description)
    }
    fn components(out: &mut Components) {
        Self::component(out)
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        only_state(f, name, "guardrail")
    }
}

/// `taskDetails` of a `guardrail` message, the human's answer: taken as given (not trimmed, may be empty),
/// at most [`MAX_TASK_DETAILS_CHARS`] characters, `INVALID_TASK_DETAILS` else; its bound is not documented.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardrailAnswer(pub String);

impl BodyField for GuardrailAnswer {
    fn schema(nullable: bool, description: Option<String>) -> RefOr<Schema> {
        plain(Type::String, nullable, description).into()
    }
    fn read(f: &Fields<'_>, name: &str) -> Result<Option<Self>, ApiError> {
        match f.opt_str(name)? {
            Some(answer) if answer.chars().count() > MAX_TASK_DETAILS_CHARS => {
                Err(ApiError::new(ErrorCode::InvalidTaskDetails, format!("{name} is too long")))
            }
            answer => Ok(answer.map(|a| Self(a.to_owned()))),
        }
    }
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
        only_state(f, name, "newTask")
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
