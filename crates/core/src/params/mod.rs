//! Request bodies validated at the edge into types that cannot be wrong: session and task parameters,
//! and the four message kinds of send-message. Bounds follow the spec's Limits part, taking the stricter
//! error-guidance ranges where the spec's two sources conflict (docs/api.md says which).

use crate::error::{ApiError, ErrorCode};
use crate::fields::{invalid_params, out_of_bounds};
pub use crate::fields::{Fields, RequestBody};
use crate::output::OutputSchema;
use crate::policy::normalize_domain;
use crate::secrets::Secrets;
use crate::vision::VisionMode;
pub use bodies::{InteractionRequest, LinkRequest, RunTaskRequest, StartSessionRequest};
pub use interaction::{Interaction, MAX_TYPE_TEXT_CHARS, NAMED_KEYS};
use serde_json::Value;

mod bodies;
#[doc(hidden)]
pub mod decl;
mod interaction;
mod schema;

use decl::{BodyGroup, Named};
pub(crate) use schema::{ChatCompletionRequest, ChatMessage};

/// Default and maximum session / task duration (ms).
pub const MAX_DURATION_MS: u64 = 300_000;
pub const MIN_DURATION_MS: u64 = 1_000;
pub const DEFAULT_MAX_INPUT_TOKENS: u64 = 100_000;
pub const MIN_INPUT_TOKENS: u64 = 1_000;
pub const MAX_INPUT_TOKENS: u64 = 100_000;
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 100_000;
pub const MIN_OUTPUT_TOKENS: u64 = 100;
pub const MAX_OUTPUT_TOKENS: u64 = 50_000;
/// Longest accepted taskDetails (characters).
pub const MAX_TASK_DETAILS_CHARS: usize = 20_000;
/// Longest accepted startingUrl (bytes).
pub const MAX_URL_LEN: usize = 2_048;
/// Most entries in avoidDomains.
pub const MAX_AVOID_DOMAINS: usize = 100;
/// Limits and browser settings of a task; a session's parameters are the defaults of its tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLimits {
    pub max_duration_ms: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub starting_url: Option<String>,
    /// Normalised host names.
    pub avoid_domains: Vec<String>,
    /// Values the agent types for `<secret:NAME>`; a task's own are added to its session's.
    pub secrets: Secrets,
    /// What the final answer must satisfy (a task's own; not inherited from the session).
    pub output_schema: Option<OutputSchema>,
    /// An earlier task of the same user to replay without the model (a task's own).
    pub replay_of: Option<String>,
    /// When the model sees a screenshot of the page (`vision`; docs/agent.md).
    pub vision: VisionMode,
    /// Whether the action cache may replay (and record) this task (`cache`).
    pub cache: CacheMode,
}

/// `cache` of a task: `auto` replays a cached run of the same task when there is one, and records a
/// successful model run; `off` does neither. Without a model the cache is never used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    #[default]
    Auto,
    Off,
}

impl CacheMode {
    /// `"auto"` or `"off"`; anything else is 400 `INVALID_PARAMS`.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        Self::named(raw).ok_or_else(|| invalid_params(format!("cache {raw:?} is not one of {}", Self::quoted_names())))
    }
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_duration_ms: MAX_DURATION_MS,
            max_input_tokens: DEFAULT_MAX_INPUT_TOKENS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            starting_url: None,
            avoid_domains: Vec::new(),
            secrets: Secrets::default(),
            output_schema: None,
            replay_of: None,
            vision: VisionMode::default(),
            cache: CacheMode::Auto,
        }
    }
}

/// The task limits a message gives, each `None` when the message leaves it out: laid over the session's
/// own by [`TaskLimitsPatch::over`]. Parsed without the session, so the transport reads a message once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskLimitsPatch {
    max_duration_ms: Option<u64>,
    max_input_tokens: Option<u64>,
    max_output_tokens: Option<u64>,
    /// `Some(None)`: a blank `startingUrl`, which clears the session's.
    starting_url: Option<Option<String>>,
    avoid_domains: Option<Vec<String>>,
    /// Merged into the session's secrets.
    secrets: Option<Secrets>,
    output_schema: Option<OutputSchema>,
    replay_of: Option<String>,
    vision: Option<VisionMode>,
    cache: Option<CacheMode>,
}

impl TaskLimitsPatch {
    /// The limits this patch gives, the rest from `base`: its secrets are added to the base's, while
    /// `outputSchema` and `replayOf` are a task's own and never inherited.
    pub fn over(self, base: &TaskLimits) -> TaskLimits {
        TaskLimits {
            max_duration_ms: self.max_duration_ms.unwrap_or(base.max_duration_ms),
            max_input_tokens: self.max_input_tokens.unwrap_or(base.max_input_tokens),
            max_output_tokens: self.max_output_tokens.unwrap_or(base.max_output_tokens),
            starting_url: self.starting_url.unwrap_or_else(|| base.starting_url.clone()),
            avoid_domains: self.avoid_domains.unwrap_or_else(|| base.avoid_domains.clone()),
            secrets: self.secrets.map_or_else(|| base.secrets.clone(), |own| base.secrets.merged(&own)),
            output_schema: self.output_schema,
            replay_of: self.replay_of,
            vision: self.vision.unwrap_or(base.vision),
            cache: self.cache.unwrap_or(base.cache),
        }
    }
}

impl From<schema::TaskOptions> for TaskLimitsPatch {
    fn from(o: schema::TaskOptions) -> Self {
        TaskLimitsPatch {
            max_duration_ms: o.max_duration.map(|d| d.0),
            max_input_tokens: o.max_input_tokens.map(|t| t.0),
            max_output_tokens: o.max_output_tokens.map(|t| t.0),
            starting_url: o.starting_url.map(|u| u.0),
            avoid_domains: o.avoid_domains.map(|d| d.0),
            secrets: o.secrets,
            output_schema: o.output_schema,
            replay_of: o.replay_of.map(|r| r.0),
            vision: o.vision,
            cache: o.cache,
        }
    }
}

pub(crate) fn parse_starting_url(raw: &str) -> Result<String, ApiError> {
    let raw = raw.trim();
    if raw.len() > MAX_URL_LEN {
        return Err(out_of_bounds(format!("startingUrl must be at most {MAX_URL_LEN} characters")));
    }
    let parsed = url::Url::parse(raw).map_err(|_| out_of_bounds("startingUrl must be an absolute http(s) URL"))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(parsed.to_string()),
        _ => Err(out_of_bounds("startingUrl must be an absolute http(s) URL")),
    }
}

pub(crate) fn parse_avoid_domains(list: &[&str]) -> Result<Vec<String>, ApiError> {
    if list.len() > MAX_AVOID_DOMAINS {
        return Err(out_of_bounds(format!("avoidDomains may hold at most {MAX_AVOID_DOMAINS} entries")));
    }
    let mut out = Vec::with_capacity(list.len());
    for raw in list {
        let d = normalize_domain(raw)
            .ok_or_else(|| out_of_bounds(format!("avoidDomains entry {raw:?} is not a domain name")))?;
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Ok(out)
}

pub(crate) fn parse_task_details(raw: &str) -> Result<String, ApiError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(ApiError::new(ErrorCode::InvalidTaskDetails, "taskDetails must not be empty"));
    }
    if trimmed.chars().count() > MAX_TASK_DETAILS_CHARS {
        return Err(ApiError::new(
            ErrorCode::InvalidTaskDetails,
            format!("taskDetails must be at most {MAX_TASK_DETAILS_CHARS} characters"),
        ));
    }
    Ok(trimmed.to_owned())
}

/// Body of start-session and run-task.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionParams {
    /// The initial task; `None` when the session starts idle.
    pub task_details: Option<String>,
    pub limits: TaskLimits,
    pub terminate_on_completion: bool,
    /// Whether the session is recorded (`recording`); `None` leaves it to the service's default
    /// (`--record-sessions`).
    pub recording: Option<bool>,
    /// The profile the context starts from (`profile`).
    pub profile: Option<String>,
    /// Whether the context's state is saved back into `profile` when the session ends (`persistProfile`).
    pub persist_profile: bool,
    /// What the session's pages say about the browser (`locale`, `timezone`, `userAgent`, `geolocation`).
    pub identity: crate::identity::Identity,
    /// Upstream proxies the session's requests leave through (`proxies`), names not yet looked up.
    pub proxies: Vec<crate::proxies::ProxyRoute>,
}

/// Which endpoint the session parameters came from: run-task requires taskDetails and forces
/// terminateOnCompletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOrigin {
    StartSession,
    RunTask,
}

impl SessionParams {
    pub fn parse(body: &Value, origin: SessionOrigin) -> Result<Self, ApiError> {
        let f = Fields::of(body, "request body")?;
        Ok(match origin {
            SessionOrigin::StartSession => {
                let b = schema::StartSessionRequest::read(&f)?;
                let terminate = b.terminate_on_completion.unwrap_or(false);
                let task_details = b.task_details.map(|t| t.0);
                Self::of(task_details, terminate, b.recording, b.limits, b.profile, b.identity)
            }
            SessionOrigin::RunTask => {
                let b = schema::RunTaskRequest::read(&f)?;
                Self::of(Some(b.task_details.0), true, b.recording, b.limits, b.profile, b.identity)
            }
        })
    }

    fn of(
        task_details: Option<String>,
        terminate_on_completion: bool,
        recording: Option<bool>,
        limits: schema::TaskOptions,
        profile: schema::ProfileOptions,
        identity: schema::IdentityOptions,
    ) -> Self {
        SessionParams {
            task_details,
            limits: TaskLimitsPatch::from(limits).over(&TaskLimits::default()),
            terminate_on_completion,
            recording,
            persist_profile: profile.persist_profile.unwrap_or(false),
            profile: profile.profile.map(|p| p.0),
            identity: identity.into(),
            proxies: profile.proxies.map(|p| p.0).unwrap_or_default(),
        }
    }
}

impl From<schema::IdentityOptions> for crate::identity::Identity {
    fn from(o: schema::IdentityOptions) -> Self {
        crate::identity::Identity {
            locale: o.locale.map(|l| l.0),
            timezone: o.timezone.map(|t| t.0),
            user_agent: o.user_agent.map(|u| u.0),
            geolocation: o.geolocation,
        }
    }
}

/// The identity fields of `body` (the identity module's tests).
#[cfg(test)]
pub(crate) fn read_identity(body: &Value) -> Result<crate::identity::Identity, ApiError> {
    schema::IdentityOptions::read(&Fields::of(body, "request body")?).map(Into::into)
}

/// A `newTask` message: its text and the limits it gives; [`NewTaskMessage::with_defaults`] fills in the
/// session's for the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTaskMessage {
    pub task_details: String,
    pub limits: TaskLimitsPatch,
    pub terminate_on_completion: bool,
}

impl NewTaskMessage {
    /// The task, with the limits the message left out taken from `session_defaults`.
    pub fn with_defaults(self, session_defaults: &TaskLimits) -> NewTask {
        NewTask {
            task_details: self.task_details,
            limits: self.limits.over(session_defaults),
            terminate_on_completion: self.terminate_on_completion,
        }
    }
}

/// A new task: its text and its limits (defaults from the session).
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub task_details: String,
    pub limits: TaskLimits,
    pub terminate_on_completion: bool,
}

/// `newState` of a state message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateCommand {
    Pause,
    Resume,
    Stop,
    Terminate,
}

/// One message of send-message (or of the WebSocket channel).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    NewTask(NewTaskMessage),
    State(StateCommand),
    Interaction(Interaction),
    Guardrail { answer: String },
}

/// The one rule for a `sessionId` (or `taskId`) given in a JSON body or the socket's auth data, on every
/// transport: surrounding whitespace is not part of it (ids never contain any).
pub fn id_text(raw: &str) -> &str {
    raw.trim()
}

/// Body of send-message: parsed once, by the transport.
#[derive(Debug, Clone, PartialEq)]
pub struct SendMessage {
    pub session_id: String,
    /// The message, or why it is not one. The error is answered only once the session is known to be the
    /// caller's: an unknown session is 404 whatever the message says, as the API has always answered.
    pub message: Result<Message, ApiError>,
}

impl SendMessage {
    pub fn parse(body: &Value) -> Result<Self, ApiError> {
        let body = schema::SendMessageRequest::read(&Fields::of(body, "request body")?)?;
        Ok(SendMessage { session_id: body.session_id.0, message: body.message.0 })
    }
}

impl Message {
    /// Parses a message object; a new task's limits are laid over the session's when it starts.
    pub fn parse(value: &Value) -> Result<Self, ApiError> {
        let f = Fields::of(value, "message")?;
        let action_type = f.req_str("actionType")?;
        match action_type {
            "newTask" => {
                let m = schema::NewTaskMessage::read(&f)?;
                Ok(Message::NewTask(NewTaskMessage {
                    task_details: m.task_details.0,
                    limits: m.limits.into(),
                    terminate_on_completion: m.terminate_on_completion.unwrap_or(false),
                }))
            }
            "state" => schema::StateMessage::read(&f).map(|m| Message::State(m.new_state)),
            "interaction" => schema::InteractionMessage::read(&f).map(|m| Message::Interaction(m.action)),
            "guardrail" => schema::GuardrailMessage::read(&f).map(|m| Message::Guardrail { answer: m.task_details.0 }),
            other => Err(invalid_params(format!(
                "unknown actionType {other:?}; expected newTask, state, interaction or guardrail"
            ))),
        }
    }
}

#[cfg(test)]
mod tests;
