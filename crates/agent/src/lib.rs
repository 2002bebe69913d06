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
pub use control::{HoldStamp, TaskControl};
pub use meter::UsageMeter;
pub use sink::EventSink;
pub use trace::TraceRecorder;

use async_trait::async_trait;
use parking_lot::Mutex;
use std::sync::Arc;
use webpilot_browser::{BrowserError, PageSnapshot, SessionPage};
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
    /// The page as just read and not acted on since, for the next reader to take instead of reading it again.
    pub fresh: FreshSnapshot,
}

/// A snapshot of the page taken just now and not acted on since. The action cache's lookup leaves the start
/// page's here; the first reader (the model's first observation, a replay's first step) takes it instead of
/// reading the page again. Any action and any human check clear it, and it is not taken after the task was
/// paused or under manual control since it was left.
#[derive(Clone, Default)]
pub struct FreshSnapshot(Arc<Mutex<Option<(PageSnapshot, HoldStamp)>>>);

impl FreshSnapshot {
    pub fn put(&self, snap: PageSnapshot, stamp: HoldStamp) {
        let mut slot = self.0.lock();
        *slot = Some((snap, stamp));
    }

    /// The snapshot, if it is still what the page shows.
    pub fn take(&self) -> Option<PageSnapshot> {
        let (snap, stamp) = self.0.lock().take()?;
        stamp.unheld().then_some(snap)
    }

    pub fn clear(&self) {
        let _ = self.take();
    }
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
