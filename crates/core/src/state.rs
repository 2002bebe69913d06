//! The session state machine of the spec's States part, as a pure function:
//! `transition(state, task_running, input)` gives the next state or the error the caller gets. The session
//! actor (`webpilot_sessions`' `SessionActor`) owns the state and applies it.

use crate::error::{ApiError, ErrorCode};
use serde::Serialize;

/// Session states (spec: States and transitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// The browser is being prepared. Kept for the spec's state table: webpilot never enters it, since a
    /// session is created only once its browser is ready, and starts `Active`.
    Pending,
    /// Ready, or running a task (the actor's `task_running` says which).
    Active,
    /// The running task waits for `resume` after finishing its current action.
    Paused,
    /// The last task was stopped by the caller; ready for a new task or manual use.
    Stopped,
    /// The last task ended by itself (successfully or with an error); ready for a new task.
    Completed,
    /// Final: the browser is closed and the session is gone.
    Terminated,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Pending => "pending",
            SessionState::Active => "active",
            SessionState::Paused => "paused",
            SessionState::Stopped => "stopped",
            SessionState::Completed => "completed",
            SessionState::Terminated => "terminated",
        }
    }
}

/// What can happen to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The browser is ready (leaves `Pending`). Kept with `Pending` for the spec's table; nothing sends it.
    Initialized,
    NewTask,
    Pause,
    Resume,
    Stop,
    Terminate,
    /// The running task ended by itself (done or failed).
    TaskFinished,
}

/// The answer of the state machine: the next state, and whether anything changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub next: SessionState,
    /// false when the input was accepted as a no-op (e.g. `stop` with no task running).
    pub changed: bool,
}

fn to(next: SessionState) -> Result<Transition, ApiError> {
    Ok(Transition { next, changed: true })
}

fn stay(state: SessionState) -> Result<Transition, ApiError> {
    Ok(Transition { next: state, changed: false })
}

fn invalid(msg: &str) -> Result<Transition, ApiError> {
    Err(ApiError::new(ErrorCode::InvalidState, msg))
}

/// Applies `input` to a session in `state`; `task_running` says whether a task is in progress
/// (in `Active` or `Paused`).
pub fn transition(state: SessionState, task_running: bool, input: Input) -> Result<Transition, ApiError> {
    use Input as I;
    use SessionState as S;
    match (state, input) {
        (S::Terminated, _) => Err(ApiError::code(ErrorCode::SessionNotFound)),
        (_, I::Terminate) => to(S::Terminated),
        (S::Pending, I::Initialized) => to(S::Active),
        (S::Pending, _) => invalid("the session is still starting"),
        (_, I::Initialized) => stay(state),

        (S::Active, I::NewTask) if task_running => Err(ApiError::code(ErrorCode::TaskAlreadyRunning)),
        (S::Paused, I::NewTask) => Err(ApiError::code(ErrorCode::TaskAlreadyRunning)),
        (S::Active | S::Stopped | S::Completed, I::NewTask) => to(S::Active),

        (S::Active, I::Pause) if task_running => to(S::Paused),
        (S::Paused, I::Pause) => stay(state),
        (_, I::Pause) => invalid("no task is running to pause"),

        (S::Paused, I::Resume) => to(S::Active),
        (S::Active, I::Resume) if task_running => stay(state),
        (_, I::Resume) => invalid("no paused task to resume"),

        (S::Active, I::Stop) if task_running => to(S::Stopped),
        (S::Paused, I::Stop) => to(S::Stopped),
        (_, I::Stop) => stay(state),

        (S::Active | S::Paused, I::TaskFinished) => to(S::Completed),
        (_, I::TaskFinished) => stay(state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Input as I;
    use SessionState as S;

    fn next(s: S, running: bool, i: I) -> Result<S, ErrorCode> {
        transition(s, running, i).map(|t| t.next).map_err(|e| e.code)
    }

    #[test]
    fn the_spec_table_holds() {
        assert_eq!(next(S::Pending, false, I::Initialized), Ok(S::Active));
        assert_eq!(next(S::Active, true, I::Pause), Ok(S::Paused));
        assert_eq!(next(S::Active, true, I::TaskFinished), Ok(S::Completed));
        assert_eq!(next(S::Active, true, I::Stop), Ok(S::Stopped));
        assert_eq!(next(S::Active, true, I::Terminate), Ok(S::Terminated));
        assert_eq!(next(S::Paused, true, I::Resume), Ok(S::Active));
        assert_eq!(next(S::Paused, true, I::Stop), Ok(S::Stopped));
        assert_eq!(next(S::Paused, true, I::Terminate), Ok(S::Terminated));
        assert_eq!(next(S::Stopped, false, I::NewTask), Ok(S::Active));
        assert_eq!(next(S::Stopped, false, I::Terminate), Ok(S::Terminated));
        assert_eq!(next(S::Completed, false, I::NewTask), Ok(S::Active));
        assert_eq!(next(S::Completed, false, I::Terminate), Ok(S::Terminated));
    }

    #[test]
    fn terminated_is_final() {
        for i in [I::Initialized, I::NewTask, I::Pause, I::Resume, I::Stop, I::Terminate, I::TaskFinished] {
            assert_eq!(next(S::Terminated, false, i), Err(ErrorCode::SessionNotFound));
        }
    }

    #[test]
    fn a_second_task_while_one_runs_is_refused() {
        assert_eq!(next(S::Active, true, I::NewTask), Err(ErrorCode::TaskAlreadyRunning));
        assert_eq!(next(S::Paused, true, I::NewTask), Err(ErrorCode::TaskAlreadyRunning));
        assert_eq!(next(S::Active, false, I::NewTask), Ok(S::Active));
    }

    #[test]
    fn pause_and_resume_need_a_task() {
        assert_eq!(next(S::Active, false, I::Pause), Err(ErrorCode::InvalidState));
        assert_eq!(next(S::Completed, false, I::Resume), Err(ErrorCode::InvalidState));
        assert!(!transition(S::Completed, false, I::Stop).unwrap().changed);
    }
}
