//! The registry of live sessions and the domain entry points the API calls: start a session
//! (`start.rs`), send it a message, wait for or poll a task. Ownership (a session answers only its own user) and the balance
//! rule (no new work at or below zero) are enforced here.

use crate::actor::Command;
use crate::admission::Admission;
use crate::config::SessionConfig;
use crate::live::{LiveTask, TaskView};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use webpilot_agent::Agent;
use webpilot_browser::{BrowserPool, SessionPage};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::params::{Message, TaskLimits};
use webpilot_core::secrets::Secrets;
use webpilot_core::{ApiError, ErrorCode, SessionId, TaskId, UserId};
use webpilot_store::{Store, User};

/// The cheap handle of a live session.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    pub(crate) user_id: UserId,
    /// Task limits new tasks inherit.
    pub(crate) defaults: TaskLimits,
    pub(crate) tx: mpsc::Sender<Command>,
    pub(crate) bus: broadcast::Sender<SessionEvent>,
    /// The session's pages (replaced when its browser is); closed when the session ends.
    pub(crate) pages: tokio::sync::watch::Receiver<SessionPage>,
    /// The secrets of the session and of each task it ran, which the live view's band masks.
    pub(crate) shown_secrets: Arc<tokio::sync::watch::Sender<Vec<Secrets>>>,
    /// The session's upstream proxies as answers show them (no credentials).
    pub(crate) proxies: Arc<[webpilot_core::proxies::ShownProxy]>,
}

pub(crate) struct Shared {
    pub store: Store,
    pub pool: BrowserPool,
    pub agent: Arc<dyn Agent>,
    pub config: SessionConfig,
    pub shutdown: CancellationToken,
    pub admission: Arc<Admission>,
    pub(crate) sessions: Mutex<HashMap<SessionId, SessionHandle>>,
    tasks: Mutex<HashMap<TaskId, Arc<LiveTask>>>,
    pub(crate) tracker: TaskTracker,
    /// Given every new session's events, from its first (other nodes' sockets get them through it).
    pub(crate) event_hooks: Mutex<Vec<EventHook>>,
    /// Given each new session that is to be recorded.
    pub(crate) record_hooks: Mutex<Vec<RecordHook>>,
}

/// Receives the event stream of each session this node starts.
pub type EventHook = Arc<dyn Fn(&SessionId, broadcast::Receiver<SessionEvent>) + Send + Sync>;

/// What a recorder of a new session is given: all it watches, from the session's first event on.
pub struct RecordedSession {
    pub id: SessionId,
    pub user_id: UserId,
    pub events: broadcast::Receiver<SessionEvent>,
    /// The session's pages; closed when the session ends.
    pub pages: tokio::sync::watch::Receiver<SessionPage>,
    /// The secret values the picture's band masks (the live view's).
    pub shown_secrets: tokio::sync::watch::Receiver<Vec<Secrets>>,
}

/// Starts the recording of a session whose `recording` is on.
pub type RecordHook = Arc<dyn Fn(RecordedSession) + Send + Sync>;

impl Shared {
    /// Runs `work` as a task the manager owns (waited for at shutdown).
    pub fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        self.tracker.spawn(work);
    }

    pub fn register_task(&self, live: Arc<LiveTask>) {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).insert(live.id.clone(), live);
    }
    pub fn unregister_task(&self, id: &TaskId) {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }
    pub fn unregister_session(&self, id: &SessionId) {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }
    fn live_task(&self, id: &str) -> Option<Arc<LiveTask>> {
        self.tasks.lock().ok()?.get(&TaskId::from_string(id)).cloned()
    }
    fn session(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.lock().ok()?.get(&SessionId::from_string(id)).cloned()
    }
    /// The owners of the live sessions.
    pub fn owners(&self) -> std::collections::HashSet<UserId> {
        self.sessions.lock().map(|m| m.values().map(|h| h.user_id.clone()).collect()).unwrap_or_default()
    }
}

/// A created session, as start-session reports it.
pub struct StartedSession {
    pub session_id: SessionId,
    pub expires_in_ms: u64,
    pub balance_micros: i64,
    pub task: Option<StartedTask>,
    /// Whether the session is recorded (and, when it asked to be, why not).
    pub recording: crate::Recording,
}

/// A started task; wait on it with [`SessionManager::wait_task`].
#[derive(Clone)]
pub struct StartedTask {
    pub session_id: SessionId,
    pub task_id: TaskId,
    pub(crate) live: Arc<LiveTask>,
}

/// What a send-message call produced.
pub enum SendOutcome {
    Task(StartedTask),
    Ack(String),
}

#[derive(Clone)]
pub struct SessionManager {
    pub(crate) shared: Arc<Shared>,
}

fn no_session() -> ApiError {
    ApiError::code(ErrorCode::SessionNotFound)
}

impl SessionManager {
    /// What `user`'s open sessions and running tasks hold of the balance now (micro-dollars).
    pub async fn held_micros(&self, user: &webpilot_core::UserId) -> Result<i64, ApiError> {
        self.shared.admission.held(user).await
    }

    pub fn new(store: Store, pool: BrowserPool, agent: Arc<dyn Agent>, config: SessionConfig) -> Self {
        let admission = match config.shared_limits {
            true => Admission::shared(
                config.max_sessions_per_user,
                config.task_hold_micros,
                store.clone(),
                config.node_id.clone(),
            ),
            false => Admission::local(config.max_sessions_per_user, config.task_hold_micros),
        };
        SessionManager {
            shared: Arc::new(Shared {
                store,
                pool,
                agent,
                admission,
                config,
                shutdown: CancellationToken::new(),
                sessions: Mutex::new(HashMap::new()),
                tasks: Mutex::new(HashMap::new()),
                tracker: TaskTracker::new(),
                event_hooks: Mutex::new(Vec::new()),
                record_hooks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Adds a hook given every new session's events, from its first.
    pub fn add_event_hook(&self, hook: EventHook) {
        self.shared.event_hooks.lock().unwrap_or_else(|p| p.into_inner()).push(hook);
    }

    /// Adds a hook given each new session to record (its `recording`, else `--record-sessions`).
    pub fn add_record_hook(&self, hook: RecordHook) {
        self.shared.record_hooks.lock().unwrap_or_else(|p| p.into_inner()).push(hook);
    }

    pub fn config(&self) -> &SessionConfig {
        &self.shared.config
    }

    pub fn pool(&self) -> &BrowserPool {
        &self.shared.pool
    }

    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// Live sessions now.
    pub fn session_count(&self) -> usize {
        self.shared.sessions.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub(crate) async fn ask<T>(
        &self,
        handle: &SessionHandle,
        make: impl FnOnce(oneshot::Sender<Result<T, ApiError>>) -> Command,
    ) -> Result<T, ApiError> {
        let (reply, rx) = oneshot::channel();
        handle.tx.send(make(reply)).await.map_err(|_| no_session())?;
        rx.await.map_err(|_| no_session())?
    }

    /// The live session `session_id` if it belongs to `user`; another user's session is reported as
    /// not found, so its existence does not leak.
    fn owned(&self, user: &UserId, session_id: &str) -> Result<SessionHandle, ApiError> {
        self.shared.session(session_id).filter(|h| &h.user_id == user).ok_or_else(no_session)
    }

    /// Handles one send-message message (or the same message from the WebSocket).
    pub async fn send(&self, user: &User, session_id: &str, message: &Value) -> Result<SendOutcome, ApiError> {
        let handle = self.owned(&user.id, session_id)?;
        let id = SessionId::from_string(session_id);
        match Message::parse(message, &handle.defaults)? {
            Message::NewTask(task) => {
                let balance = self.balance(&user.id).await?;
                let hold = self.shared.admission.hold(&user.id, balance).await?;
                self.start_task(&id, &handle, task, Vec::new(), hold).await.map(SendOutcome::Task)
            }
            Message::State(command) => {
                self.ask(&handle, |reply| Command::State { command, reply }).await.map(SendOutcome::Ack)
            }
            Message::Interaction(action) => {
                self.ask(&handle, |reply| Command::Interaction { action, reply }).await.map(SendOutcome::Ack)
            }
            Message::Guardrail { answer } => {
                self.ask(&handle, |reply| Command::Guardrail { answer, reply }).await.map(SendOutcome::Ack)
            }
        }
    }

    /// The user's balance now, in micro-dollars.
    pub async fn balance(&self, user: &UserId) -> Result<i64, ApiError> {
        let u = self.shared.store.get_user(user).await?;
        Ok(u.map(|u| u.balance_micros).unwrap_or(0))
    }

    /// Waits up to the configured inline wait for `task` to end (or to ask a human), then returns its view.
    pub async fn wait_task(&self, task: &StartedTask) -> Result<TaskView, ApiError> {
        self.wait_task_for(task, self.shared.config.task_wait).await
    }

    /// Waits up to `timeout` for `task` to end (or to ask a human), then returns its view.
    pub async fn wait_task_for(&self, task: &StartedTask, timeout: Duration) -> Result<TaskView, ApiError> {
        if !task.live.wait_settled(timeout).await || task.live.control.pending_guardrail().is_some() {
            return Ok(task.live.view());
        }
        self.poll(task.session_id.as_str(), task.task_id.as_str()).await
    }

    /// Terminates a session whoever owns it (the caller has checked ownership) and waits until its
    /// browser context is released; an already ended session is fine.
    pub async fn terminate(&self, session_id: &SessionId) {
        let Some(handle) = self.shared.session(session_id.as_str()) else {
            return;
        };
        let command = webpilot_core::params::StateCommand::Terminate;
        if let Err(e) = self.ask(&handle, |reply| Command::State { command, reply }).await {
            tracing::debug!(session = %session_id, error = %e, "terminate: the session had already ended");
        }
    }

    /// Ends the sessions live now for `reason`: they are picked at once, and the future returned ends them
    /// and waits until each is closed (sessions started meanwhile are left alone); it yields how many.
    pub fn end_live(&self, reason: EndReason) -> impl std::future::Future<Output = usize> + Send + 'static {
        let handles: Vec<SessionHandle> =
            self.shared.sessions.lock().map(|m| m.values().cloned().collect()).unwrap_or_default();
        let me = self.clone();
        async move {
            let ends = handles.iter().map(|h| me.ask(h, |reply| Command::End { reason, reply }));
            futures::future::join_all(ends).await.len()
        }
    }

    /// Ends `user`'s live sessions for `reason` and waits until each is closed; yields how many.
    pub async fn end_sessions_of(&self, user: &UserId, reason: EndReason) -> usize {
        let handles: Vec<SessionHandle> = self
            .shared
            .sessions
            .lock()
            .map(|m| m.values().filter(|h| &h.user_id == user).cloned().collect())
            .unwrap_or_default();
        let ends = handles.iter().map(|h| self.ask(h, |reply| Command::End { reason, reply }));
        futures::future::join_all(ends).await.len()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Terminates a session in the background (used from `Drop`, e.g. when a client disconnects);
    /// the work is owned by the manager's task tracker.
    pub fn terminate_detached(&self, session_id: SessionId) {
        let me = self.clone();
        self.shared.tracker.spawn(async move {
            me.terminate(&session_id).await;
            tracing::info!(session = %session_id, "session terminated after its client went away");
        });
    }

    /// Ids of `user`'s live sessions.
    pub fn live_sessions(&self, user: &UserId) -> Vec<SessionId> {
        let Ok(map) = self.shared.sessions.lock() else {
            return Vec::new();
        };
        let mut ids: Vec<SessionId> =
            map.iter().filter(|(_, h)| &h.user_id == user).map(|(id, _)| id.clone()).collect();
        ids.sort();
        ids
    }

    /// The upstream proxies of `user`'s live session `id`, as answers show them (no credentials).
    pub fn session_proxies(&self, user: &UserId, id: &SessionId) -> Vec<webpilot_core::proxies::ShownProxy> {
        let Ok(map) = self.shared.sessions.lock() else { return Vec::new() };
        map.get(id).filter(|h| &h.user_id == user).map(|h| h.proxies.to_vec()).unwrap_or_default()
    }

    /// The names of the operator's proxies (`GET /proxies`).
    pub fn proxy_names(&self) -> Vec<String> {
        self.shared.config.proxies.names().map(str::to_owned).collect()
    }

    /// Whether `session_id` is live and belongs to `user`.
    pub fn owns_session(&self, user: &UserId, session_id: &str) -> bool {
        self.owned(user, session_id).is_ok()
    }

    /// The poll view of a task: live state while it runs, the stored outcome afterwards.
    pub async fn poll(&self, session_id: &str, task_id: &str) -> Result<TaskView, ApiError> {
        if let Some(live) = self.shared.live_task(task_id).filter(|l| l.session_id.as_str() == session_id) {
            return Ok(live.view());
        }
        let record = self
            .shared
            .store
            .get_task(session_id, task_id)
            .await?
            .ok_or_else(|| ApiError::code(ErrorCode::TaskNotFound))?;
        Ok(TaskView::from_record(&record))
    }

    /// The user owning live session `session_id` (the WebSocket channel acts as this user); an unknown or
    /// ended session is `SESSION_NOT_FOUND`.
    pub async fn owner(&self, session_id: &str) -> Result<User, ApiError> {
        let handle = self.shared.session(session_id).ok_or_else(no_session)?;
        let user = self.shared.store.get_user(&handle.user_id).await?;
        user.ok_or_else(no_session)
    }

    /// Whether `session_id` is a live session now.
    pub fn is_live(&self, session_id: &str) -> bool {
        self.shared.session(session_id).is_some()
    }

    /// Subscribes to a live session's events (the WebSocket channel uses this).
    pub fn subscribe(&self, session_id: &str) -> Option<broadcast::Receiver<SessionEvent>> {
        self.shared.session(session_id).map(|h| h.bus.subscribe())
    }

    /// What ending `session_id` charged for its open time, once it has ended: waits up to `limit` for a live
    /// session's end (run-task and chat completions end theirs just after their task). None when it had
    /// not ended by then, or its end is not stored.
    pub async fn ended_session_cost(&self, session_id: &SessionId, limit: Duration) -> Option<i64> {
        if let Some(mut events) = self.subscribe(session_id.as_str()) {
            let ended = async {
                loop {
                    match events.recv().await {
                        Ok(SessionEvent::EndSession { .. }) | Err(broadcast::error::RecvError::Closed) => return,
                        _ => continue,
                    }
                }
            };
            tokio::time::timeout(limit, ended).await.ok()?;
        }
        match self.shared.store.get_session(session_id).await {
            Ok(Some(s)) if s.ended_at.is_some() => self.shared.store.session_cost(session_id).await.ok().flatten(),
            _ => None,
        }
    }

    /// Tells a live session's listeners (its sockets, its recording's timeline) how many DevTools clients
    /// are connected now.
    pub fn announce_devtools(&self, session_id: &str, connections: usize) {
        if let Some(h) = self.shared.session(session_id) {
            let _ = h.bus.send(SessionEvent::Devtools { connections });
        }
    }

    /// What the live view of a live session watches: its pages, replaced when its browser is, and
    /// closed when the session ends.
    pub fn pages(&self, session_id: &str) -> Option<tokio::sync::watch::Receiver<SessionPage>> {
        self.shared.session(session_id).map(|h| h.pages)
    }

    /// The secret values the live view of a live session must mask in what it draws (the session's and
    /// every task's so far; it only grows).
    pub fn shown_secrets(&self, session_id: &str) -> Option<tokio::sync::watch::Receiver<Vec<Secrets>>> {
        self.shared.session(session_id).map(|h| h.shown_secrets.subscribe())
    }

    /// Tells every session to end now (running tasks are recorded as interrupted); `shutdown` waits.
    pub fn begin_shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Ends every session (running tasks are recorded as interrupted) and waits for the actors to finish.
    pub async fn shutdown(&self) {
        self.shared.shutdown.cancel();
        self.shared.tracker.close();
        self.shared.tracker.wait().await;
    }
}
