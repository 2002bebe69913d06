//! Starting a session: a place under the user's caps, a browser context (its proxies, identity and
//! profile in place), the actor and its registry entry, the hooks that follow it (events, recording), and
//! its first task when it has one; and starting a task in a live session.

use crate::actor::{Env, Opening, SessionHandle};
use crate::admission::{Admission, Hold};
use crate::error::SessionError;
use crate::live::LiveTask;
use crate::profiles::{Profiles, SessionProfile};
use crate::recording::{Hooks, RecordedSession};
use crate::runner::TaskStart;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use webpilot_browser::{BrowserError, BrowserLease};
use webpilot_core::params::{NewTask, SessionParams, StateCommand, TaskLimits};
use webpilot_core::proxies::ShownProxy;
use webpilot_core::state::SessionState;
use webpilot_core::{ErrorCode, SessionId, TaskId, UserId};
use webpilot_store::User;

/// A created session, as start-session reports it.
pub struct StartedSession {
    pub session_id: SessionId,
    pub expires_in_ms: u64,
    pub balance_micros: i64,
    pub task: Option<StartedTask>,
    /// Whether the session is recorded (and, when it asked to be, why not).
    pub recording: crate::Recording,
}

/// A started task; wait on it with [`crate::SessionManager::wait_task`].
#[derive(Clone)]
pub struct StartedTask {
    pub session_id: SessionId,
    pub task_id: TaskId,
    pub(crate) live: Arc<LiveTask>,
}

/// The parts of the manager a start uses.
pub(crate) struct Starter<'a> {
    pub env: &'a Env,
    pub admission: &'a Arc<Admission>,
    pub hooks: &'a Hooks,
    pub profiles: &'a Profiles,
}

impl Starter<'_> {
    /// Creates a session (one browser context) for `user`, starting its first task if it has one, with
    /// earlier conversation as `(role, content)` (chat completions).
    pub async fn session(
        &self,
        user: &User,
        params: SessionParams,
        context: Vec<(String, String)>,
    ) -> Result<StartedSession, SessionError> {
        let began = Instant::now();
        let env = self.env;
        // Counted before the browser is leased, so one user cannot take every browser.
        // The session's whole maxDuration is held on the balance; its real open time is charged when it ends.
        let session_hold = env.config().prices.session_micros(params.limits.max_duration_ms);
        let mut slot = self.admission.open_session(&user.id, user.balance_micros, session_hold).await?;
        let session_id = SessionId::generate();
        let (lease, profile) = match self.lease(&user.id, &params, &session_id).await {
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
        let (state, node) = (SessionState::Active.as_str(), &env.config().node_id);
        env.store().insert_session(&session_id, &user.id, state, &record.to_string(), node).await?;
        // Later tasks inherit the session's limits and domains, but not its startingUrl: that page is
        // opened once (now, or by the first task), and later tasks continue where the browser is.
        let defaults = TaskLimits { starting_url: None, output_schema: None, replay_of: None, ..params.limits.clone() };
        let opened = crate::actor::open(
            env.clone(),
            Opening {
                id: session_id.clone(),
                user_id: user.id.clone(),
                lease,
                profile,
                slot,
                max_duration: Duration::from_millis(params.limits.max_duration_ms),
                terminate_on_completion: params.terminate_on_completion,
                defaults,
                secrets: params.limits.secrets.clone(),
                proxies,
            },
        );
        let handle = opened.handle().clone();
        self.hooks.opened(&session_id, || handle.subscribe());
        let config = env.config();
        let recording = crate::recording::decide(
            env.store(),
            &user.id,
            params.recording,
            config.record_sessions,
            crate::recording::Quotas { recordings: config.recording_quota_bytes, storage: config.storage_quota_bytes },
        )
        .await;
        if recording == crate::Recording::On {
            self.hooks.record(|| RecordedSession {
                id: session_id.clone(),
                user_id: user.id.clone(),
                events: handle.subscribe(),
                pages: handle.pages(),
                shown_secrets: handle.shown_secrets(),
            });
        }
        let handle = opened.spawn();
        tracing::info!(session = %session_id, user = %user.id, "session started");
        let task = match params.task_details {
            Some(details) => {
                let task = NewTask {
                    task_details: details,
                    limits: params.limits.clone(),
                    terminate_on_completion: params.terminate_on_completion,
                };
                let started = match self.admission.hold(&user.id, user.balance_micros).await {
                    Ok(hold) => start_task(env, &session_id, &handle, task, context, hold).await,
                    Err(e) => Err(e),
                };
                match started {
                    Ok(t) => Some(t),
                    Err(e) => {
                        // Leave no session behind when its first task cannot start.
                        if let Err(e) = handle.state(StateCommand::Terminate).await {
                            tracing::debug!(session = %session_id, error = %e, "terminate: the session had already ended");
                        }
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

    /// A browser for a new session, with its profile loaded when it has one. With `persistProfile` the
    /// session first becomes the profile's one writer (409 PROFILE_IN_USE when another live session is),
    /// and lets go again if the browser or the profile cannot be had.
    async fn lease(
        &self,
        user: &UserId,
        params: &SessionParams,
        session: &SessionId,
    ) -> Result<(BrowserLease, Option<SessionProfile>), SessionError> {
        let (pool, profiles) = (self.env.pool(), self.profiles);
        // Checked before anything is held: a proxy that cannot be used is the caller's 400.
        let allow = pool.settings().egress_allow.clone();
        let routes = crate::proxies::routes(&params.proxies, &self.env.config().proxies, &allow).await?;
        let writes = params.profile.as_deref().filter(|_| params.persist_profile);
        if let Some(name) = writes {
            profiles.claim(user, name, session).await?;
        }
        let leased = match pool.lease(params.limits.avoid_domains.clone()).await {
            Ok(lease) => {
                // The routes and the identity are in place before the context's first request (a
                // profile's load is one) and before the first page loads anything.
                lease.page().policy().set_routes(routes);
                lease.page().set_identity(params.identity.clone()).await.map(|()| lease)
            }
            Err(e) => Err(e),
        };
        let opened = match leased {
            Ok(lease) => match &params.profile {
                Some(name) => {
                    let loaded = profiles.load((user, session), name, params.persist_profile, &lease).await;
                    loaded.map(|p| (lease, Some(p)))
                }
                None => Ok((lease, None)),
            },
            Err(BrowserError::NoCapacity) => Err(SessionError::refused(ErrorCode::NoInstancesAvailable)),
            Err(other) => {
                tracing::error!(error = %other, "preparing a browser for a session failed");
                Err(SessionError::new(
                    ErrorCode::InstanceUnavailable,
                    "the browser instance could not be prepared; retry",
                ))
            }
        };
        if let (Err(_), Some(name)) = (&opened, writes) {
            profiles.release(user, name, session).await;
        }
        opened
    }
}

/// Starts `task` in the live session `handle` (`session_id`), holding `hold` of its user's balance.
pub(crate) async fn start_task(
    env: &Env,
    session_id: &SessionId,
    handle: &SessionHandle,
    task: NewTask,
    context: Vec<(String, String)>,
    hold: Hold,
) -> Result<StartedTask, SessionError> {
    let replay = match &task.limits.replay_of {
        Some(of) => Some(crate::replays::source(env.store(), handle.user_id(), of).await?),
        None => None,
    };
    // Before the task can type one: the live view masks them from its first frame on.
    handle.show_secrets(&task.limits.secrets);
    // The action cache serves model runs that replay nothing (docs/agent.md).
    let cache: Option<Arc<dyn webpilot_agent::cache::ActionCache>> =
        (env.agent().uses_model() && replay.is_none() && task.limits.cache == webpilot_core::params::CacheMode::Auto)
            .then(|| {
                Arc::new(crate::cache::StoredCache {
                    store: env.store().clone(),
                    user: handle.user_id().clone(),
                    ttl: env.config().cache_ttl,
                }) as Arc<dyn webpilot_agent::cache::ActionCache>
            });
    let live = handle.new_task(TaskStart { task, context, hold, replay, cache }).await?;
    Ok(StartedTask { session_id: session_id.clone(), task_id: live.id.clone(), live })
}
