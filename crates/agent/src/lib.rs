//! webpilot-agent: the seam between a session and whatever does its tasks. An `Agent` gets the task,
//! the session's page, a `TaskControl` (pause / resume / stop / guardrail answers), an `EventSink` and a
//! `UsageMeter`; it returns the final message or a coded error. `model::ModelAgent` drives the browser
//! with a chat model; the offline planner, which follows explicit step-by-step English instructions, is
//! the agent used when no model is configured.

pub mod cache;
pub mod checks;
mod control;
mod meter;
pub mod model;
pub mod planner;
pub mod replay;
mod reveal;
mod sink;
pub mod trace;

pub use checks::{HumanChecks, TaskChecks};
pub use control::TaskControl;
pub use meter::UsageMeter;
pub use sink::EventSink;
pub use trace::TraceRecorder;

use async_trait::async_trait;
use webpilot_browser::{BrowserError, SessionPage};
use webpilot_core::params::TaskLimits;
use webpilot_core::secrets::Secrets;
use webpilot_core::{ErrorCode, TaskId};

/// What the agent is asked to do.
#[derive(Debug, Clone)]
pub struct AgentTask {
    pub task_id: TaskId,
    /// The task in natural language.
    pub details: String,
    /// Earlier conversation, oldest first (chat completions), as `(role, content)`.
    pub context: Vec<(String, String)>,
    pub limits: TaskLimits,
}

/// Everything the agent may use while it works.
#[derive(Clone)]
pub struct AgentContext {
    pub page: SessionPage,
    pub control: TaskControl,
    pub events: EventSink,
    pub usage: UsageMeter,
    /// Values typed for `<secret:NAME>`; never shown to the model (see `webpilot_core::secrets`).
    pub secrets: Secrets,
    /// The actions carried out, for a later replay.
    pub trace: TraceRecorder,
    /// Human checks (CAPTCHAs, challenge pages) met on the way, and the solver, if any.
    pub checks: TaskChecks,
}

/// A task's failure, with the code reported on poll and events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AgentError {
    pub code: ErrorCode,
    pub message: String,
}

impl AgentError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AgentError { code, message: message.into() }
    }
    pub fn stopped() -> Self {
        AgentError::new(ErrorCode::TaskStopped, "the task was stopped")
    }
}

impl From<BrowserError> for AgentError {
    fn from(e: BrowserError) -> Self {
        AgentError::new(e.code(), e.to_string())
    }
}

/// Does tasks. Implementations must return promptly with `AgentError::stopped()` once
/// `ctx.control` is stopped, and call `ctx.control.checkpoint()` between actions so pause works.
#[async_trait]
pub trait Agent: Send + Sync {
    /// A short name for logs ("offline-planner", "openai:gpt-4o").
    fn name(&self) -> &str;
    /// Whether a model drives it (a replay hands over to such an agent when it cannot go on).
    fn uses_model(&self) -> bool {
        false
    }
    async fn run(&self, task: AgentTask, ctx: AgentContext) -> Result<String, AgentError>;
}
