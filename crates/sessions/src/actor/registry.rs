//! What others hold of a session: its cheap [`SessionHandle`] (send it a command, subscribe to its
//! events), the commands it takes, the registries of one node (its live sessions, by id with their owner,
//! and its running tasks) and the [`Env`] of parts every actor works with.

use crate::admission::SessionSlot;
use crate::config::SessionConfig;
use crate::error::SessionError;
use crate::live::LiveTask;
use crate::profiles::SessionProfile;
use crate::runner::TaskStart;
use chrono::{DateTime, Utc};
use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use webpilot_agent::Agent;
use webpilot_browser::{BrowserLease, BrowserPool, SessionPage};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::params::{Interaction, StateCommand, TaskLimits};
use webpilot_core::proxies::ShownProxy;
use webpilot_core::secrets::Secrets;
use webpilot_core::state::SessionState;
use webpilot_core::{ErrorCode, SessionId, TaskId, UserId};
use webpilot_store::Store;
use webpilot_tasks::Tasks;

/// What a live session is doing now (the session list shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// No task runs: ready for one, or for manual use.
    Idle,
    Running,
    /// The running task is paused and waits for `resume`.
    Paused,
    /// The running task waits for a human's guardrail answer.
    Guardrail,
}

/// A reply to a command, sent by the actor.
pub(crate) type Reply<T> = oneshot::Sender<Result<T, SessionError>>;

/// What a session's actor is asked to do.
pub(crate) enum Command {
    NewTask {
        start: Box<TaskStart>,
        reply: Reply<Arc<LiveTask>>,
    },
    State {
        command: StateCommand,
        reply: Reply<String>,
    },
    Interaction {
        action: Interaction,
        reply: Reply<String>,
    },
    Guardrail {
        answer: String,
        reply: Reply<String>,
    },
    /// End the session for `reason` (not a caller's request: e.g. the cluster declared this node lost).
    End {
        reason: EndReason,
        reply: Reply<String>,
    },
}

/// The parts of the service every session's actor works with (cheap to clone).
#[derive(Clone)]
pub(crate) struct Env {
    store: Store,
    pool: BrowserPool,
    agent: Arc<dyn Agent>,
    config: Arc<SessionConfig>,
    files: crate::FileStore,
    /// The actors and their follow-up work (waited for at shutdown); its stop signal is `shutdown`.
    work: Tasks,
    shutdown: CancellationToken,
    sessions: Arc<Registry>,
    tasks: Arc<LiveTasks>,
}

impl Env {
    pub fn new(
        store: Store,
        pool: BrowserPool,
        agent: Arc<dyn Agent>,
        config: SessionConfig,
        files: crate::FileStore,
    ) -> Self {
        let work = Tasks::new();
        Env {
            shutdown: work.stop_token(),
            work,
            store,
            pool,
            agent,
            config: Arc::new(config),
            files,
            sessions: Arc::new(Registry::default()),
            tasks: Arc::new(LiveTasks::default()),
        }
    }
    pub fn store(&self) -> &Store {
        &self.store
    }
    pub fn pool(&self) -> &BrowserPool {
        &self.pool
    }
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }
    pub fn files(&self) -> &crate::FileStore {
        &self.files
    }
    /// Cancelled when the service stops: every actor ends.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }
    /// Runs `work` as a task of the sessions' group, named `name` (waited for at shutdown).
    pub fn spawn(&self, name: &'static str, work: impl std::future::Future<Output = ()> + Send + 'static) {
        self.work.spawn(name, work);
    }
    /// Tells every actor to end, and waits for them and their follow-up work.
    pub async fn stop_and_wait(&self) {
        self.work.shutdown().await;
    }
    pub fn sessions(&self) -> &Registry {
        &self.sessions
    }
    pub fn tasks(&self) -> &LiveTasks {
        &self.tasks
    }
}

/// What a new session is made of: its lease (with its profile loaded), its user's place, its limits.
pub(crate) struct Opening {
    pub id: SessionId,
    pub user_id: UserId,
    pub lease: BrowserLease,
    pub profile: Option<SessionProfile>,
    pub slot: SessionSlot,
    pub max_duration: Duration,
    pub terminate_on_completion: bool,
    /// Task limits new tasks inherit.
    pub defaults: TaskLimits,
    /// The session's own secrets, masked by the live view from its first frame.
    pub secrets: Secrets,
    pub proxies: Arc<[ShownProxy]>,
}

/// The cheap handle of a live session: send it a command, subscribe to its events, watch its pages.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    user_id: UserId,
    defaults: TaskLimits,
    tx: mpsc::Sender<Command>,
    bus: broadcast::Sender<SessionEvent>,
    /// The session's pages (replaced when its browser is); closed when the session ends.
    pages: watch::Receiver<SessionPage>,
    /// The secrets of the session and of each task it ran, which the live view's band masks.
    shown_secrets: Arc<watch::Sender<Vec<Secrets>>>,
    /// The session's upstream proxies as answers show them (no credentials).
    proxies: Arc<[ShownProxy]>,
    /// The actor's state and running task, as the session list shows them.
    status: watch::Receiver<Status>,
    /// When the session opened.
    created_at: DateTime<Utc>,
}

/// What the actor publishes of itself for the session list: its state and its running task.
#[derive(Clone)]
pub(crate) struct Status {
    pub state: SessionState,
    pub task: Option<Arc<LiveTask>>,
}

impl Status {
    /// What the session is doing now, as the list says it.
    pub fn activity(&self) -> Activity {
        match (&self.task, self.state) {
            (_, SessionState::Paused) => Activity::Paused,
            (Some(t), SessionState::Active) if t.control.pending_guardrail().is_some() => Activity::Guardrail,
            (Some(_), SessionState::Active) => Activity::Running,
            _ => Activity::Idle,
        }
    }
}

fn no_session() -> SessionError {
    SessionError::refused(ErrorCode::SessionNotFound)
}

impl SessionHandle {
    pub(super) fn new(
        user_id: UserId,
        defaults: TaskLimits,
        tx: mpsc::Sender<Command>,
        bus: broadcast::Sender<SessionEvent>,
        pages: watch::Receiver<SessionPage>,
        proxies: Arc<[ShownProxy]>,
        status: watch::Receiver<Status>,
    ) -> Self {
        let shown_secrets = Arc::new(watch::Sender::new(Vec::new()));
        let created_at = Utc::now();
        SessionHandle { user_id, defaults, tx, bus, pages, shown_secrets, proxies, status, created_at }
    }

    pub fn user_id(&self) -> &UserId {
        &self.user_id
    }
    /// Task limits new tasks inherit.
    pub fn defaults(&self) -> &TaskLimits {
        &self.defaults
    }
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.bus.subscribe()
    }
    /// Tells the session's listeners something that happened outside its actor.
    pub fn announce(&self, event: SessionEvent) {
        let _ = self.bus.send(event);
    }
    pub fn pages(&self) -> watch::Receiver<SessionPage> {
        self.pages.clone()
    }
    pub fn shown_secrets(&self) -> watch::Receiver<Vec<Secrets>> {
        self.shown_secrets.subscribe()
    }
    pub fn proxies(&self) -> &[ShownProxy] {
        &self.proxies
    }
    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }
    pub fn created_at(&self) -> DateTime<Utc> {
        self.created_at
    }

    /// Adds a task's secrets to those the live view masks (each set once).
    pub fn show_secrets(&self, secrets: &Secrets) {
        self.shown_secrets.send_if_modified(|all| {
            // By identity: an equal set parsed again remembers the one-time codes typed through it alone.
            let new = !secrets.is_empty() && !all.iter().any(|s| s.same(secrets));
            if new {
                all.push(secrets.clone());
            }
            new
        });
    }

    /// Sends the actor a command and waits for its answer; an ended session is `SESSION_NOT_FOUND`.
    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(make(reply)).await.map_err(|_| no_session())?;
        rx.await.map_err(|_| no_session())?
    }

    pub async fn new_task(&self, start: TaskStart) -> Result<Arc<LiveTask>, SessionError> {
        self.ask(|reply| Command::NewTask { start: Box::new(start), reply }).await
    }
    pub async fn state(&self, command: StateCommand) -> Result<String, SessionError> {
        self.ask(|reply| Command::State { command, reply }).await
    }
    pub async fn interact(&self, action: Interaction) -> Result<String, SessionError> {
        self.ask(|reply| Command::Interaction { action, reply }).await
    }
    pub async fn answer_guardrail(&self, answer: String) -> Result<String, SessionError> {
        self.ask(|reply| Command::Guardrail { answer, reply }).await
    }
    /// Ends the session for `reason` and waits until it is closed.
    pub async fn end(&self, reason: EndReason) -> Result<String, SessionError> {
        self.ask(|reply| Command::End { reason, reply }).await
    }
}

/// The live sessions of this node: their handles, by id, with their owners.
#[derive(Default)]
pub(crate) struct Registry {
    map: Mutex<HashMap<SessionId, (UserId, SessionHandle)>>,
}

impl Registry {
    /// A poisoned lock is recovered: every write below is one map operation, never left half-done.
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, (UserId, SessionHandle)>> {
        self.map.lock()
    }

    pub fn insert(&self, id: SessionId, owner: UserId, handle: SessionHandle) {
        self.lock().insert(id, (owner, handle));
    }

    pub fn remove(&self, id: &SessionId) {
        self.lock().remove(id);
    }

    /// The session `id`, whoever owns it.
    pub fn get(&self, id: &SessionId) -> Option<SessionHandle> {
        self.lock().get(id).map(|(_, h)| h.clone())
    }

    /// The session `id` if `user` owns it.
    pub fn owned(&self, user: &UserId, id: &SessionId) -> Option<SessionHandle> {
        self.lock().get(id).filter(|(owner, _)| owner == user).map(|(_, h)| h.clone())
    }

    /// The sessions `keep` picks by owner, with their ids.
    pub fn picked(&self, keep: impl Fn(&UserId) -> bool) -> Vec<(SessionId, SessionHandle)> {
        self.lock().iter().filter(|(_, (owner, _))| keep(owner)).map(|(id, (_, h))| (id.clone(), h.clone())).collect()
    }

    /// The owners of the live sessions.
    pub fn owners(&self) -> std::collections::HashSet<UserId> {
        self.lock().values().map(|(owner, _)| owner.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The running tasks of this node (and finished ones whose outcome is still being stored).
#[derive(Default)]
pub(crate) struct LiveTasks {
    map: Mutex<HashMap<TaskId, Arc<LiveTask>>>,
}

impl LiveTasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, Arc<LiveTask>>> {
        self.map.lock()
    }

    pub fn insert(&self, live: Arc<LiveTask>) {
        self.lock().insert(live.id.clone(), live);
    }

    pub fn remove(&self, id: &TaskId) {
        self.lock().remove(id);
    }

    pub fn get(&self, id: &TaskId) -> Option<Arc<LiveTask>> {
        self.lock().get(id).cloned()
    }
}
