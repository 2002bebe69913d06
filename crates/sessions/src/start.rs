//! Starting a session: a place under the user's caps, a browser context, the actor and its registry
//! entry, the hooks that follow it (events, recording), and its first task when it has one.

use crate::actor::{Command, SessionActor};
use crate::admission::Hold;
use crate::manager::{RecordedSession, SessionHandle, SessionManager, StartedSession, StartedTask};
use crate::runner::TaskStart;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, Mutex as AsyncMutex};
use tokio::task::JoinSet;
use tokio::time::Instant;
use webpilot_core::params::{NewTask, SessionParams, TaskLimits};
use webpilot_core::proxies::ShownProxy;
use webpilot_core::secrets::Secrets;
use webpilot_core::state::SessionState;
use webpilot_core::{ApiError, SessionId};
use webpilot_store::User;

impl SessionManager {
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
        let proxies: Arc<[ShownProxy]> = params.proxies.iter().map(ShownProxy::of).collect();
        let record = serde_json::json!({
            "maxDuration": params.limits.max_duration_ms,
            "maxInputTokens": params.limits.max_input_tokens,
            "maxOutputTokens": params.limits.max_output_tokens,
            "startingUrl": params.limits.starting_url,
            "avoidDomains": params.limits.avoid_domains,
            "terminateOnCompletion": params.terminate_on_completion,
            "profile": params.profile,
            "persistProfile": params.persist_profile,
            // Without credentials: they live in the session's memory only (docs/proxies-and-identity.md).
            "proxies": proxies,
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
        let handle = SessionHandle { user_id: user.id.clone(), defaults, tx, bus, pages, shown_secrets, proxies };
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
            crate::recording::Quotas { recordings: config.recording_quota_bytes, storage: config.storage_quota_bytes },
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

    pub(crate) async fn start_task(
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
        // The action cache serves model runs that replay nothing (docs/agent.md).
        let cache: Option<Arc<dyn webpilot_agent::cache::ActionCache>> = (self.shared.agent.uses_model()
            && replay.is_none()
            && task.limits.cache == webpilot_core::params::CacheMode::Auto)
            .then(|| {
                Arc::new(crate::cache::StoredCache {
                    store: self.shared.store.clone(),
                    user: handle.user_id.clone(),
                    ttl: self.shared.config.cache_ttl,
                }) as Arc<dyn webpilot_agent::cache::ActionCache>
            });
        let start = TaskStart { task, context, hold, replay, cache };
        let live = self.ask(handle, |reply| Command::NewTask { start: Box::new(start), reply }).await?;
        Ok(StartedTask { session_id: session_id.clone(), task_id: live.id.clone(), live })
    }
}

/// Adds a task's secrets to those the live view masks (each set once).
pub(crate) fn add_shown_secrets(shown: &tokio::sync::watch::Sender<Vec<Secrets>>, secrets: &Secrets) {
    shown.send_if_modified(|all| {
        // By identity: an equal set parsed again remembers the one-time codes typed through it alone.
        let new = !secrets.is_empty() && !all.iter().any(|s| s.same(secrets));
        if new {
            all.push(secrets.clone());
        }
        new
    });
}
