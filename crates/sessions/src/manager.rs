//! The registry of live sessions and the domain entry points the API calls: start a session, send it
//! a message, wait for or poll a task. Ownership (a session answers only its own user) and the balance
//! rule (no new work at or below zero) are enforced here.

use crate::actor::{Command, SessionActor};
use crate::admission::{Admission, Hold};
use crate::live::{LiveTask, TaskView};
use crate::runner::TaskStart;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, Mutex as AsyncMutex};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use webpilot_agent::Agent;
use webpilot_browser::{BrowserPool, SessionPage};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::params::{Message, NewTask, SessionParams, TaskLimits};
use webpilot_core::secrets::Secrets;
use webpilot_core::state::SessionState;
use webpilot_core::usage::Prices;
use webpilot_core::{ApiError, ErrorCode, SessionId, TaskId, UserId};
use webpilot_store::{Store, User};

/// Tunables of the session layer.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// How long run-task and newTask wait inline before answering `pending` (spec: 50 s).
    pub task_wait: Duration,
    /// A session with no task and no message for this long ends as `expired` (at most 5 min).
    pub idle_timeout: Duration,
    pub prices: Prices,
    /// The reconnection grace period announced in `instance:disconnected` (spec: 300000 ms); also the
    /// longest the replacement attempts may run.
    pub instance_grace_period: Duration,
    /// How long to try for a replacement browser instance before ending as `instance_lost`.
    pub reconnect_window: Duration,
    /// How often the session's cookies and URL are snapshotted for recovery (also after every task).
    pub snapshot_every: Duration,
    /// Most sessions one user may have open at once (429 `SESSION_LIMIT_REACHED` beyond).
    pub max_sessions_per_user: usize,
    /// What a running task holds of its user's balance until its real cost is charged (micro-USD).
    pub task_hold_micros: i64,
    /// This node's id: the sessions it starts are recorded as held by it.
    pub node_id: String,
    /// Count the per-user session cap and task holds in the database, which other nodes share, instead
    /// of in this node's memory.
    pub shared_limits: bool,
    /// Whether a session that does not say (`recording`) is recorded (`--record-sessions`).
    pub record_sessions: bool,
    /// Bytes each user's recordings may take before new sessions record nothing (`None`: no quota).
    pub recording_quota_bytes: Option<i64>,
    /// The key profiles are sealed with, and their caps.
    pub profiles: crate::profiles::ProfileSettings,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            task_wait: Duration::from_secs(50),
            idle_timeout: Duration::from_secs(300),
            prices: Prices::default(),
            instance_grace_period: Duration::from_secs(300),
            reconnect_window: Duration::from_secs(300),
            snapshot_every: Duration::from_secs(5),
            max_sessions_per_user: 3,
            task_hold_micros: 50_000,
            node_id: "local".into(),
            shared_limits: false,
            record_sessions: false,
            recording_quota_bytes: None,
            profiles: Default::default(),
        }
    }
}

/// The cheap handle of a live session.
#[derive(Clone)]
struct SessionHandle {
    user_id: UserId,
    /// Task limits new tasks inherit.
    defaults: TaskLimits,
    tx: mpsc::Sender<Command>,
    bus: broadcast::Sender<SessionEvent>,
    /// The session's pages (replaced when its browser is); closed when the session ends.
    pages: tokio::sync::watch::Receiver<SessionPage>,
    /// The secrets of the session and of each task it ran, which the live view's band masks.
    shown_secrets: Arc<tokio::sync::watch::Sender<Vec<Secrets>>>,
}

pub(crate) struct Shared {
    pub store: Store,
    pub pool: BrowserPool,
    pub agent: Arc<dyn Agent>,
    pub config: SessionConfig,
    pub shutdown: CancellationToken,
    pub admission: Arc<Admission>,
    sessions: Mutex<HashMap<SessionId, SessionHandle>>,
    tasks: Mutex<HashMap<TaskId, Arc<LiveTask>>>,
    tracker: TaskTracker,
    /// Given every new session's events, from its first (other nodes' sockets get them through it).
    event_hooks: Mutex<Vec<EventHook>>,
    /// Given each new session that is to be recorded.
    record_hooks: Mutex<Vec<RecordHook>>,
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
    live: Arc<LiveTask>,
}

/// What a send-message call produced.
pub enum SendOutcome {
    Task(StartedTask),
    Ack(String),
}

#[derive(Clone)]
pub struct SessionManager {
    shared: Arc<Shared>,
}

fn no_session() -> ApiError {
    ApiError::code(ErrorCode::SessionNotFound)
}

impl SessionManager {
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

    /// Creates a session (one browser context) for `user`, starting its first task if it has one.
    pub async fn start_session(&self, user: &User, params: SessionParams) -> Result<StartedSession, ApiError> {
        self.start_session_with_context(user, params, Vec::new()).await
    }

    /// Like [`Self::start_session`], giving the first task earlier conversation as `(role, content)`
    /// (chat completions).
    pub async fn start_session_with_context(
        &self,
        user: &User,
        params: SessionParams,
        context: Vec<(String, String)>,
    ) -> Result<StartedSession, ApiError> {
        let began = Instant::now();
        // Counted before the browser is leased, so one user cannot take every browser.
        // The session's whole maxDuration is held on the balance; its real open time is charged when it ends.
        let session_hold = self.shared.config.prices.session_micros(params.limits.max_duration_ms);
        let mut slot = self.shared.admission.open_session(&user.id, user.balance_micros, session_hold).await?;
        let session_id = SessionId::generate();
        let (lease, profile) =
            match crate::profiles::lease_with_profile(&self.shared, &user.id, &params, &session_id).await {
                Ok(opened) => opened,
                Err(e) => {
                    // Given back before the caller hears it, so a retry is not refused for this place.
                    slot.release().await;
                    return Err(e);
                }
            };
        if params.task_details.is_none() {
            if let Some(url) = &params.limits.starting_url {
                // A session without a task opens its startingUrl now, ready for manual use.
                if let Err(e) = lease.page().goto(url).await {
                    tracing::warn!(error = %e, "opening the session's startingUrl failed");
                }
            }
        }
        let record = serde_json::json!({
            "maxDuration": params.limits.max_duration_ms,
            "maxInputTokens": params.limits.max_input_tokens,
            "maxOutputTokens": params.limits.max_output_tokens,
            "startingUrl": params.limits.starting_url,
            "avoidDomains": params.limits.avoid_domains,
            "terminateOnCompletion": params.terminate_on_completion,
            "profile": params.profile,
            "persistProfile": params.persist_profile,
        });
        self.shared
            .store
            .insert_session(
                &session_id,
                &user.id,
                SessionState::Active.as_str(),
                &record.to_string(),
                &self.shared.config.node_id,
            )
            .await?;
        let (tx, rx) = mpsc::channel(32);
        let (bus, _) = broadcast::channel(256);
        let now = Instant::now();
        let (pages_tx, pages) = tokio::sync::watch::channel(lease.page().clone());
        let actor = SessionActor {
            id: session_id.clone(),
            user_id: user.id.clone(),
            lease,
            state: SessionState::Active,
            terminate_on_completion: params.terminate_on_completion,
            opened_at: now,
            expires_at: now + Duration::from_millis(params.limits.max_duration_ms),
            rx,
            bus: bus.clone(),
            shared: self.shared.clone(),
            task: None,
            manual: false,
            last_activity: now,
            interactions: JoinSet::new(),
            input_lock: Arc::new(AsyncMutex::new(())),
            end_replies: Vec::new(),
            snapshot: Default::default(),
            next_snapshot: now + Duration::from_secs(1),
            slot,
            pages: pages_tx,
            profile,
        };
        // Later tasks inherit the session's limits and domains, but not its startingUrl: that page is
        // opened once (now, or by the first task), and later tasks continue where the browser is.
        let defaults = TaskLimits { starting_url: None, output_schema: None, replay_of: None, ..params.limits.clone() };
        let shown_secrets = Arc::new(tokio::sync::watch::Sender::new(Vec::new()));
        add_shown_secrets(&shown_secrets, &params.limits.secrets);
        let handle = SessionHandle { user_id: user.id.clone(), defaults, tx, bus, pages, shown_secrets };
        // A poisoned lock is recovered: the actor spawns below, so the session must be findable.
        self.shared.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(session_id.clone(), handle.clone());
        for hook in self.shared.event_hooks.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            hook(&session_id, handle.bus.subscribe());
        }
        let config = &self.shared.config;
        let recording = crate::recording::decide(
            &self.shared.store,
            &user.id,
            params.recording,
            config.record_sessions,
            config.recording_quota_bytes,
        )
        .await;
        if recording == crate::Recording::On {
            for hook in self.shared.record_hooks.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                hook(RecordedSession {
                    id: session_id.clone(),
                    user_id: user.id.clone(),
                    events: handle.bus.subscribe(),
                    pages: handle.pages.clone(),
                    shown_secrets: handle.shown_secrets.subscribe(),
                });
            }
        }
        // Every log line of the session's actor (and of its tasks) carries its id and user.
        let span = tracing::info_span!("session", id = %session_id, user = %user.id);
        self.shared.tracker.spawn(tracing::Instrument::instrument(actor.run(), span));
        tracing::info!(session = %session_id, user = %user.id, "session started");
        let task = match params.task_details {
            Some(details) => {
                let task = NewTask {
                    task_details: details,
                    limits: params.limits.clone(),
                    terminate_on_completion: params.terminate_on_completion,
                };
                let started = match self.shared.admission.hold(&user.id, user.balance_micros).await {
                    Ok(hold) => self.start_task(&session_id, &handle, task, context, hold).await,
                    Err(e) => Err(e),
                };
                match started {
                    Ok(t) => Some(t),
                    Err(e) => {
                        // Leave no session behind when its first task cannot start.
                        self.terminate(&session_id).await;
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        metrics::histogram!("webpilot_session_start_seconds").record(began.elapsed().as_secs_f64());
        Ok(StartedSession {
            session_id,
            expires_in_ms: params.limits.max_duration_ms,
            balance_micros: user.balance_micros,
            task,
            recording,
        })
    }

    async fn ask<T>(
        &self,
        handle: &SessionHandle,
        make: impl FnOnce(oneshot::Sender<Result<T, ApiError>>) -> Command,
    ) -> Result<T, ApiError> {
        let (reply, rx) = oneshot::channel();
        handle.tx.send(make(reply)).await.map_err(|_| no_session())?;
        rx.await.map_err(|_| no_session())?
    }

    async fn start_task(
        &self,
        session_id: &SessionId,
        handle: &SessionHandle,
        task: NewTask,
        context: Vec<(String, String)>,
        hold: Hold,
    ) -> Result<StartedTask, ApiError> {
        let replay = match &task.limits.replay_of {
            Some(of) => Some(crate::replays::source(&self.shared.store, &handle.user_id, of).await?),
            None => None,
        };
        // Before the task can type one: the live view masks them from its first frame on.
        add_shown_secrets(&handle.shown_secrets, &task.limits.secrets);
        let start = TaskStart { task, context, hold, replay };
        let live = self.ask(handle, |reply| Command::NewTask { start: Box::new(start), reply }).await?;
        Ok(StartedTask { session_id: session_id.clone(), task_id: live.id.clone(), live })
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

/// Adds a task's secrets to those the live view masks (each set once).
fn add_shown_secrets(shown: &tokio::sync::watch::Sender<Vec<Secrets>>, secrets: &Secrets) {
    shown.send_if_modified(|all| {
        let new = !secrets.is_empty() && !all.contains(secrets);
        if new {
            all.push(secrets.clone());
        }
        new
    });
}
