//! The session layer's front: the registry of live sessions and admission (a session answers only its
//! own user; no new work at or below a zero balance; at most so many sessions per user). It starts
//! sessions (`start.rs`), sends them messages through their handles, and waits for or polls tasks.

use crate::actor::{Env, SessionHandle};
use crate::admission::Admission;
use crate::config::SessionConfig;
use crate::error::SessionError;
use crate::live::TaskView;
use crate::profiles::Profiles;
use crate::recording::{EventHook, Hooks, RecordHook};
use crate::start::{start_task, StartedSession, StartedTask, Starter};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use webpilot_agent::Agent;
use webpilot_browser::{BrowserPool, SessionPage};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::params::{Message, SendMessage, SessionParams, StateCommand};
use webpilot_core::secrets::Secrets;
use webpilot_core::{ErrorCode, SessionId, TaskId, UserId};
use webpilot_store::{Store, User};

/// What a send-message call produced.
pub enum SendOutcome {
    Task(StartedTask),
    Ack(String),
}

#[derive(Clone)]
pub struct SessionManager {
    inner: Arc<Inner>,
}

struct Inner {
    env: Env,
    admission: Arc<Admission>,
    hooks: Hooks,
    profiles: Profiles,
}

fn no_session() -> SessionError {
    SessionError::refused(ErrorCode::SessionNotFound)
}

impl SessionManager {
    pub fn new(
        store: Store,
        pool: BrowserPool,
        agent: Arc<dyn Agent>,
        config: SessionConfig,
        files: crate::FileStore,
    ) -> Self {
        let admission = match config.shared_limits {
            true => Admission::shared(
                config.max_sessions_per_user,
                config.task_hold_micros,
                store.clone(),
                config.node_id.clone(),
            ),
            false => Admission::local(config.max_sessions_per_user, config.task_hold_micros),
        };
        let profiles = Profiles::new(store.clone(), config.profiles.clone());
        let env = Env::new(store, pool, agent, config, files);
        SessionManager { inner: Arc::new(Inner { env, admission, hooks: Hooks::default(), profiles }) }
    }

    pub(crate) fn env(&self) -> &Env {
        &self.inner.env
    }

    /// What `user`'s open sessions and running tasks hold of the balance now (micro-dollars).
    pub async fn held_micros(&self, user: &UserId) -> Result<i64, SessionError> {
        self.inner.admission.held(user).await
    }

    /// Adds a hook given every new session's events, from its first.
    pub fn add_event_hook(&self, hook: EventHook) {
        self.inner.hooks.add_event_hook(hook);
    }

    /// Adds a hook given each new session to record (its `recording`, else `--record-sessions`).
    pub fn add_record_hook(&self, hook: RecordHook) {
        self.inner.hooks.add_record_hook(hook);
    }

    pub fn config(&self) -> &SessionConfig {
        self.env().config()
    }

    pub fn pool(&self) -> &BrowserPool {
        self.env().pool()
    }

    pub fn store(&self) -> &Store {
        self.env().store()
    }

    /// The session files' bytes and rows.
    pub fn files(&self) -> &crate::FileStore {
        self.env().files()
    }

    /// The users' stored profiles (list, read, delete, export, import).
    pub fn profiles(&self) -> &Profiles {
        &self.inner.profiles
    }

    /// Runs `work` as a task the manager owns, named `name` (waited for at shutdown).
    pub(crate) fn spawn(&self, name: &'static str, work: impl std::future::Future<Output = ()> + Send + 'static) {
        self.env().spawn(name, work);
    }

    /// Cancelled when the service stops.
    pub(crate) fn stopping(&self) -> &tokio_util::sync::CancellationToken {
        self.env().shutdown()
    }

    /// Live sessions now.
    pub fn session_count(&self) -> usize {
        self.env().sessions().len()
    }

    /// Creates a session (one browser context) for `user`, starting its first task if it has one.
    pub async fn start_session(&self, user: &User, params: SessionParams) -> Result<StartedSession, SessionError> {
        self.start_session_with_context(user, params, Vec::new()).await
    }

    /// Like [`Self::start_session`], giving the first task earlier conversation as `(role, content)`
    /// (chat completions).
    pub async fn start_session_with_context(
        &self,
        user: &User,
        params: SessionParams,
        context: Vec<(String, String)>,
    ) -> Result<StartedSession, SessionError> {
        let inner = &*self.inner;
        let starter =
            Starter { env: &inner.env, admission: &inner.admission, hooks: &inner.hooks, profiles: &inner.profiles };
        starter.session(user, params, context).await
    }

    fn session(&self, id: &str) -> Option<SessionHandle> {
        self.env().sessions().get(&SessionId::from_string(id))
    }

    /// The live session `session_id` if it belongs to `user`; another user's session is reported as
    /// not found, so its existence does not leak.
    fn owned(&self, user: &UserId, session_id: &str) -> Result<SessionHandle, SessionError> {
        self.env().sessions().owned(user, &SessionId::from_string(session_id)).ok_or_else(no_session)
    }

    /// Handles one send-message message (or the same message from the WebSocket), parsed by its transport:
    /// the session is looked up first, then a message that did not parse is refused.
    pub async fn send(&self, user: &User, message: SendMessage) -> Result<SendOutcome, SessionError> {
        let handle = self.owned(&user.id, &message.session_id)?;
        let id = SessionId::from_string(&message.session_id);
        match message.message? {
            Message::NewTask(task) => {
                let task = task.with_defaults(handle.defaults());
                let balance = self.balance(&user.id).await?;
                let hold = self.inner.admission.hold(&user.id, balance).await?;
                start_task(self.env(), &id, &handle, task, Vec::new(), hold).await.map(SendOutcome::Task)
            }
            Message::State(command) => handle.state(command).await.map(SendOutcome::Ack),
            Message::Interaction(action) => handle.interact(action).await.map(SendOutcome::Ack),
            Message::Guardrail { answer } => handle.answer_guardrail(answer).await.map(SendOutcome::Ack),
        }
    }

    /// The user's balance now, in micro-dollars.
    pub async fn balance(&self, user: &UserId) -> Result<i64, SessionError> {
        let u = self.store().get_user(user).await?;
        Ok(u.map(|u| u.balance_micros).unwrap_or(0))
    }

    /// Waits up to the configured inline wait for `task` to end (or to ask a human), then returns its view.
    pub async fn wait_task(&self, task: &StartedTask) -> Result<TaskView, SessionError> {
        self.wait_task_for(task, self.config().task_wait).await
    }

    /// Waits up to `timeout` for `task` to end (or to ask a human), then returns its view.
    pub async fn wait_task_for(&self, task: &StartedTask, timeout: Duration) -> Result<TaskView, SessionError> {
        if !task.live.wait_settled(timeout).await || task.live.control.pending_guardrail().is_some() {
            return Ok(task.live.view());
        }
        self.poll(task.session_id.as_str(), task.task_id.as_str()).await
    }

    /// Terminates a session whoever owns it (the caller has checked ownership) and waits until its
    /// browser context is released; an already ended session is fine.
    pub async fn terminate(&self, session_id: &SessionId) {
        let Some(handle) = self.session(session_id.as_str()) else {
            return;
        };
        if let Err(e) = handle.state(StateCommand::Terminate).await {
            tracing::debug!(session = %session_id, error = %e, "terminate: the session had already ended");
        }
    }

    /// Ends the sessions live now for `reason`: they are picked at once, and the future returned ends them
    /// and waits until each is closed (sessions started meanwhile are left alone); it yields how many.
    pub fn end_live(&self, reason: EndReason) -> impl std::future::Future<Output = usize> + Send + 'static {
        let handles = self.env().sessions().picked(|_| true);
        async move {
            let ends = handles.iter().map(|(_, h)| h.end(reason));
            futures::future::join_all(ends).await.len()
        }
    }

    /// Ends `user`'s live sessions for `reason` and waits until each is closed; yields how many.
    pub async fn end_sessions_of(&self, user: &UserId, reason: EndReason) -> usize {
        let handles = self.env().sessions().picked(|owner| owner == user);
        let ends = handles.iter().map(|(_, h)| h.end(reason));
        futures::future::join_all(ends).await.len()
    }

    /// The owners of the live sessions.
    pub(crate) fn owners(&self) -> std::collections::HashSet<UserId> {
        self.env().sessions().owners()
    }

    /// Terminates a session in the background (used from `Drop`, e.g. when a client disconnects);
    /// the work is owned by the manager's group of tasks.
    pub fn terminate_detached(&self, session_id: SessionId) {
        let me = self.clone();
        self.spawn("detached end", async move {
            me.terminate(&session_id).await;
            tracing::info!(session = %session_id, "session terminated after its client went away");
        });
    }

    /// Ids of `user`'s live sessions.
    pub fn live_sessions(&self, user: &UserId) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> =
            self.env().sessions().picked(|owner| owner == user).into_iter().map(|(id, _)| id).collect();
        ids.sort();
        ids
    }

    /// The upstream proxies of `user`'s live session `id`, as answers show them (no credentials).
    pub fn session_proxies(&self, user: &UserId, id: &SessionId) -> Vec<webpilot_core::proxies::ShownProxy> {
        self.env().sessions().owned(user, id).map(|h| h.proxies().to_vec()).unwrap_or_default()
    }

    /// The names of the operator's proxies (`GET /proxies`).
    pub fn proxy_names(&self) -> Vec<String> {
        self.config().proxies.names().map(str::to_owned).collect()
    }

    /// Whether `session_id` is live and belongs to `user`.
    pub fn owns_session(&self, user: &UserId, session_id: &str) -> bool {
        self.owned(user, session_id).is_ok()
    }

    /// The poll view of a task: live state while it runs, the stored outcome afterwards.
    pub async fn poll(&self, session_id: &str, task_id: &str) -> Result<TaskView, SessionError> {
        let live = self.env().tasks().get(&TaskId::from_string(task_id));
        if let Some(live) = live.filter(|l| l.session_id.as_str() == session_id) {
            return Ok(live.view());
        }
        let record = self
            .store()
            .get_task(session_id, task_id)
            .await?
            .ok_or_else(|| SessionError::refused(ErrorCode::TaskNotFound))?;
        Ok(TaskView::from_record(&record))
    }

    /// The user owning live session `session_id` (the WebSocket channel acts as this user); an unknown or
    /// ended session is `SESSION_NOT_FOUND`.
    pub async fn owner(&self, session_id: &str) -> Result<User, SessionError> {
        let handle = self.session(session_id).ok_or_else(no_session)?;
        let user = self.store().get_user(handle.user_id()).await?;
        user.ok_or_else(no_session)
    }

    /// Whether `session_id` is a live session now.
    pub fn is_live(&self, session_id: &str) -> bool {
        self.session(session_id).is_some()
    }

    /// Subscribes to a live session's events (the WebSocket channel uses this).
    pub fn subscribe(&self, session_id: &str) -> Option<broadcast::Receiver<SessionEvent>> {
        self.session(session_id).map(|h| h.subscribe())
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
        match self.store().get_session(session_id).await {
            Ok(Some(s)) if s.ended_at.is_some() => self.store().session_cost(session_id).await.ok().flatten(),
            _ => None,
        }
    }

    /// Tells a live session's listeners (its sockets, its recording's timeline) how many DevTools clients
    /// are connected now.
    pub fn announce_devtools(&self, session_id: &str, connections: usize) {
        if let Some(h) = self.session(session_id) {
            h.announce(SessionEvent::Devtools { connections });
        }
    }

    /// What the live view of a live session watches: its pages, replaced when its browser is, and
    /// closed when the session ends.
    pub fn pages(&self, session_id: &str) -> Option<tokio::sync::watch::Receiver<SessionPage>> {
        self.session(session_id).map(|h| h.pages())
    }

    /// The secret values the live view of a live session must mask in what it draws (the session's and
    /// every task's so far; it only grows).
    pub fn shown_secrets(&self, session_id: &str) -> Option<tokio::sync::watch::Receiver<Vec<Secrets>>> {
        self.session(session_id).map(|h| h.shown_secrets())
    }

    /// Tells every session to end now (running tasks are recorded as interrupted); `shutdown` waits.
    pub fn begin_shutdown(&self) {
        self.env().shutdown().cancel();
    }

    /// Ends every session (running tasks are recorded as interrupted) and waits for the actors to finish.
    pub async fn shutdown(&self) {
        self.env().stop_and_wait().await;
    }
}
