//! The use cases every transport shares: start a session, run a task, send a message, get a task. Each is
//! one typed function with a typed outcome, and [`Call`] names them for the transports that dispatch by
//! name (MCP tools, node-to-node calls). REST handlers, MCP tools, Socket.IO `message`s and chat
//! completions read their input, call these, and write the outcome their own way; none re-implements one.
//! Which calls count toward the caller's rate limit is decided here too ([`counts_toward_limit`]).

use crate::state::AppState;
use crate::views::{self, MessageAck, PollView, SendMessageResponse, SessionStarted, TaskAfterWait};
use serde::Serialize;
use webpilot_core::params::{Message, SendMessage, SessionParams};
use webpilot_core::{ApiError, ErrorCode};
use webpilot_sessions::{Recording, SendOutcome, StartedTask};
use webpilot_store::User;

/// A use case with its parsed input.
pub(crate) enum Call {
    StartSession(SessionParams),
    RunTask(SessionParams),
    /// A message to a session; a new task is waited for (up to the inline wait) or answered as pending.
    Send {
        message: SendMessage,
        wait: Wait,
    },
    GetTask {
        session_id: String,
        task_id: String,
    },
}

/// What a new task started by a message is answered with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Its outcome after the inline wait, as run-task (REST, MCP).
    ForTask,
    /// At once, as pending: its events follow on the socket that sent it.
    No,
}

/// How a call reached the service, for the rate limit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// A request: REST or an MCP tool.
    Request,
    /// A message on the session's Socket.IO channel.
    Socket,
}

/// Whether `call` counts toward its caller's rate limit: every work-starting request, and over a socket
/// only a new task, or a message that did not parse (state commands, interactions and answers keep a taken-over session responsive).
pub(crate) fn counts_toward_limit(call: &Call, via: Via) -> bool {
    match (call, via) {
        (Call::GetTask { .. }, _) => false,
        // A message that did not parse counts too: it is refused, and refusals are not what keeps a session
        // responsive.
        (Call::Send { message, .. }, Via::Socket) => {
            matches!(message.message, Ok(Message::NewTask(_)) | Err(_))
        }
        (_, Via::Socket) => false,
        (_, Via::Request) => true,
    }
}

/// A new task's answer when it is not waited for.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPending {
    pub message: &'static str,
    pub pending: bool,
    pub poll_url: String,
    pub session_id: String,
    pub status: &'static str,
    pub success: bool,
    pub task_id: String,
}

/// What a call is answered with.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Outcome {
    Started(SessionStarted),
    Finished(TaskAfterWait),
    Message(SendMessageResponse),
    Pending(TaskPending),
    Task(PollView),
}

/// What sending a message did: answered at once, or started a task.
pub(crate) enum Sent {
    Ack(MessageAck),
    Task(StartedTask),
}

/// Runs `call` for `user`.
pub(crate) async fn execute(state: &AppState, user: &User, call: Call) -> Result<Outcome, ApiError> {
    Ok(match call {
        Call::StartSession(params) => Outcome::Started(start_session(state, user, params).await?),
        // Socket.IO and MCP answers have no headers: there, `GET /recordings/{sessionId}` tells.
        Call::RunTask(params) => Outcome::Finished(run_task(state, user, params).await?.0),
        Call::Send { message, wait } => match (send(state, user, message).await?, wait) {
            (Sent::Ack(ack), _) => Outcome::Message(SendMessageResponse::Ack(ack)),
            (Sent::Task(task), Wait::ForTask) => {
                Outcome::Message(SendMessageResponse::Task(Box::new(finish(state, &task).await?)))
            }
            (Sent::Task(task), Wait::No) => Outcome::Pending(pending(state, &task)),
        },
        Call::GetTask { session_id, task_id } => Outcome::Task(get_task(state, &session_id, &task_id).await?),
    })
}

/// Starts a session (and its initial task, not waited for).
pub(crate) async fn start_session(
    state: &AppState,
    user: &User,
    params: SessionParams,
) -> Result<SessionStarted, ApiError> {
    let prompt = params.task_details.clone().unwrap_or_default();
    let started = state.manager.start_session(user, params).await?;
    let socket_url = state.sockets.socket_url(&state.config.public_url, started.session_id.as_str());
    Ok(views::session_started(&state.config, &state.stream_key, &started, &prompt, &socket_url))
}

/// Starts a session for its one task (run-task, chat completions) and returns the task, and whether
/// the session is recorded.
pub(crate) async fn start_task(
    state: &AppState,
    user: &User,
    params: SessionParams,
    context: Vec<(String, String)>,
) -> Result<(StartedTask, Recording), ApiError> {
    let started = state.manager.start_session_with_context(user, params, context).await?;
    // Parsing for run-task requires taskDetails, so the session always starts with its task.
    let task =
        started.task.ok_or_else(|| ApiError::new(ErrorCode::InternalError, "the session started without its task"))?;
    Ok((task, started.recording))
}

/// How long run-task and chat completions wait, after their task, for the session's end to be recorded.
pub(crate) const SESSION_END_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts a session with one task and waits up to the inline wait for it.
pub(crate) async fn run_task(
    state: &AppState,
    user: &User,
    params: SessionParams,
) -> Result<(TaskAfterWait, Recording), ApiError> {
    let (task, recording) = start_task(state, user, params, Vec::new()).await?;
    let mut outcome = finish(state, &task).await?;
    // The session ends with its task: the answer reports the whole charge of the call, with the split.
    if outcome.ended_with_session() {
        if let Some(micros) = state.manager.ended_session_cost(&task.session_id, SESSION_END_WAIT).await {
            outcome.add_session_cost(micros);
        }
    }
    Ok((outcome, recording))
}

/// Sends a message to one of `user`'s sessions.
pub(crate) async fn send(state: &AppState, user: &User, message: SendMessage) -> Result<Sent, ApiError> {
    Ok(match state.manager.send(user, message).await? {
        SendOutcome::Task(task) => Sent::Task(task),
        SendOutcome::Ack(message) => Sent::Ack(MessageAck { message, success: true }),
    })
}

/// A started task's outcome after the inline wait (run-task, a new task by send-message or MCP).
pub(crate) async fn finish(state: &AppState, task: &StartedTask) -> Result<TaskAfterWait, ApiError> {
    let view = state.manager.wait_task(task).await?;
    Ok(views::task_after_wait(&state.config, &state.manager.config().prices, task, &view))
}

/// A started task answered at once: its events follow on the socket that started it.
pub(crate) fn pending(state: &AppState, task: &StartedTask) -> TaskPending {
    TaskPending {
        message: "the task started; its events follow on this socket",
        pending: true,
        poll_url: views::poll_url(&state.config, task),
        session_id: task.session_id.to_string(),
        status: "pending",
        success: true,
        task_id: task.task_id.to_string(),
    }
}

/// A task's state (no caller: a task id is its own capability, as the spec's poll has no key).
pub(crate) async fn get_task(state: &AppState, session_id: &str, task_id: &str) -> Result<PollView, ApiError> {
    let view = state.manager.poll(session_id, task_id).await?;
    Ok(views::poll(&state.manager.config().prices, &view))
}
