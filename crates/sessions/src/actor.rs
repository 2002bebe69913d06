//! One session as an actor: a tokio task that owns the browser lease, the state machine and the
//! running task, and handles one command at a time. Timers (maxDuration, idle) and the end of the
//! running task arrive in the same loop, so state changes never race.

use crate::admission::SessionSlot;
use crate::live::LiveTask;
use crate::manager::Shared;
use crate::recovery::{instance_lost_error, Snapshot};
use crate::runner::{self, RunningTask, TaskStart};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, Mutex};
use tokio::task::JoinSet;
use tokio::time::Instant;
use webpilot_agent::AgentError;
use webpilot_browser::{BrowserLease, DownloadOutcome, SessionPage};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::geometry::frame_to_page;
use webpilot_core::params::{Interaction, StateCommand};
use webpilot_core::state::{transition, Input, SessionState};
use webpilot_core::{ApiError, ErrorCode, SessionId, TaskId, UserId};

pub(crate) type Reply<T> = oneshot::Sender<Result<T, ApiError>>;

/// How long a session that closes itself after its task waits for a download to begin.
const DOWNLOAD_QUIET: Duration = Duration::from_secs(1);

/// Manual interactions one session may have waiting for their turn or running.
pub(crate) const MAX_INTERACTIONS_IN_FLIGHT: usize = 8;

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

pub(crate) struct SessionActor {
    pub id: SessionId,
    pub user_id: UserId,
    pub lease: BrowserLease,
    pub state: SessionState,
    /// Session-level terminateOnCompletion (run-task, or start-session's flag).
    pub terminate_on_completion: bool,
    /// When the session opened: its open time, up to `expires_at`, is charged when it ends.
    pub opened_at: Instant,
    pub expires_at: Instant,
    pub rx: mpsc::Receiver<Command>,
    pub bus: broadcast::Sender<SessionEvent>,
    pub shared: Arc<Shared>,
    pub task: Option<RunningTask>,
    pub manual: bool,
    pub last_activity: Instant,
    pub interactions: JoinSet<()>,
    pub input_lock: Arc<Mutex<()>>,
    /// Replies to `terminate`, sent once the session is really closed.
    pub end_replies: Vec<Reply<String>>,
    /// Cookies and URL to restore if the browser dies, refreshed at `next_snapshot` and after tasks.
    pub snapshot: Snapshot,
    pub next_snapshot: Instant,
    /// The user's place for this session, given back when the actor ends.
    pub slot: SessionSlot,
    /// Tells the live view which pages to watch (a recovery installs new ones).
    pub pages: tokio::sync::watch::Sender<SessionPage>,
    /// The profile the session started from, saved back when it ends if it persists it.
    pub profile: Option<crate::profiles::SessionProfile>,
}

/// What woke the actor up.
enum Wake {
    Command(Option<Command>),
    TaskEnd(Result<String, AgentError>),
    InstanceLost,
    Snapshot,
    End(EndReason),
    Download(DownloadOutcome),
}

/// Awaits the running task, or never when there is none.
async fn task_end(task: &mut Option<RunningTask>) -> Result<String, AgentError> {
    match task {
        Some(t) => runner::joined((&mut t.join).await),
        None => std::future::pending().await,
    }
}

impl SessionActor {
    pub async fn run(mut self) {
        let shutdown = self.shared.shutdown.clone();
        let reason = loop {
            let idle_deadline = match self.task {
                Some(_) => self.expires_at,
                None => self.last_activity + self.shared.config.idle_timeout,
            };
            // Expiry is looked at first: a task whose own maxDuration runs out in the same timer tick as
            // the session's (a task started within a millisecond of its session) ends as SESSION_EXPIRED.
            let wake = tokio::select! {
                biased;
                _ = tokio::time::sleep_until(self.expires_at) => Wake::End(EndReason::Expired),
                _ = tokio::time::sleep_until(idle_deadline) => Wake::End(EndReason::Expired),
                result = task_end(&mut self.task) => Wake::TaskEnd(result),
                cmd = self.rx.recv() => Wake::Command(cmd),
                _ = self.lease.died() => Wake::InstanceLost,
                _ = tokio::time::sleep_until(self.next_snapshot) => Wake::Snapshot,
                download = self.lease.next_download() => Wake::Download(download),
                _ = shutdown.cancelled() => Wake::End(EndReason::Terminated),
            };
            let end = match wake {
                Wake::Command(Some(cmd)) => {
                    self.last_activity = Instant::now();
                    self.handle(cmd).await
                }
                Wake::Command(None) => Some(EndReason::Terminated),
                Wake::TaskEnd(result) => self.on_task_end(result).await,
                Wake::InstanceLost => self.recover().await,
                Wake::Snapshot => {
                    self.take_snapshot().await;
                    self.next_snapshot = Instant::now() + self.shared.config.snapshot_every;
                    None
                }
                Wake::End(reason) => Some(reason),
                Wake::Download(outcome) => {
                    self.on_download(outcome).await;
                    None
                }
            };
            if let Some(reason) = end {
                break reason;
            }
        };
        self.end(reason).await;
    }

    fn task_running(&self) -> bool {
        self.task.is_some()
    }

    async fn set_state(&mut self, next: SessionState) {
        if self.state != next {
            self.state = next;
            if let Err(e) = self.shared.store.set_session_state(&self.id, next.as_str()).await {
                tracing::warn!(error = %e, "storing the session state failed");
            }
        }
    }

    /// Applies an input to the state machine.
    pub(crate) async fn apply(&mut self, input: Input) -> Result<bool, ApiError> {
        let t = transition(self.state, self.task_running(), input)?;
        self.set_state(t.next).await;
        Ok(t.changed)
    }

    /// Handles one command; returns an end reason when the session must end.
    pub(crate) async fn handle(&mut self, cmd: Command) -> Option<EndReason> {
        match cmd {
            Command::NewTask { start, reply } => {
                let r = self.start_task(*start).await;
                let _ = reply.send(r);
                None
            }
            Command::State { command, reply } => {
                let (r, end) = self.state_command(command).await;
                if end.is_some() && r.is_ok() {
                    self.end_replies.push(reply);
                } else {
                    let _ = reply.send(r);
                }
                end
            }
            Command::Interaction { action, reply } => {
                self.interaction(action, reply).await;
                None
            }
            Command::End { reason, reply } => {
                self.end_replies.push(reply);
                Some(reason)
            }
            Command::Guardrail { answer, reply } => {
                let answered = self.task.as_ref().is_some_and(|t| t.live.control.answer(answer));
                let _ = reply.send(if answered {
                    Ok("guardrail answered; the task continues".into())
                } else {
                    Err(ApiError::new(ErrorCode::InvalidState, "no guardrail is waiting for an answer"))
                });
                None
            }
        }
    }

    async fn start_task(&mut self, mut start: TaskStart) -> Result<Arc<LiveTask>, ApiError> {
        self.reap_stopped_task().await;
        let task_id = TaskId::generate();
        let admitted = async {
            let next = transition(self.state, self.task_running(), Input::NewTask)?.next;
            let store = &self.shared.store;
            let details = &start.task.task_details;
            store.insert_task(&task_id, &self.id, &self.user_id, details).await?;
            Ok::<_, ApiError>(next)
        };
        let next = match admitted.await {
            Ok(next) => next,
            Err(e) => {
                // Refused: the hold is free again before the caller hears it (on every node).
                start.hold.release().await;
                return Err(e);
            }
        };
        self.place_files().await;
        let running = runner::spawn(
            self.shared.agent.clone(),
            self.lease.page().clone(),
            self.bus.clone(),
            self.id.clone(),
            task_id.clone(),
            start,
            self.shared.config.human_checks.for_task(),
        );
        if self.manual {
            running.live.control.set_manual(true);
        }
        let live = running.live.clone();
        self.shared.register_task(live.clone());
        self.task = Some(running);
        self.set_state(next).await;
        tracing::info!(task = %task_id, agent = self.shared.agent.name(), "task started");
        Ok(live)
    }

    /// A task told to stop may still be winding down when the next `newTask` arrives (its end and the
    /// command can be ready together): wait for it and record it as stopped first, so it is neither
    /// replaced unrecorded (polled as `active` forever) nor recorded over the new one.
    async fn reap_stopped_task(&mut self) {
        if self.state != SessionState::Stopped {
            return;
        }
        if let Some(mut task) = self.task.take() {
            let result = runner::halt(&mut task).await;
            self.record(&mut task, result).await;
        }
    }

    async fn state_command(&mut self, command: StateCommand) -> (Result<String, ApiError>, Option<EndReason>) {
        let input = match command {
            StateCommand::Pause => Input::Pause,
            StateCommand::Resume => Input::Resume,
            StateCommand::Stop => Input::Stop,
            StateCommand::Terminate => Input::Terminate,
        };
        let changed = match self.apply(input).await {
            Ok(c) => c,
            Err(e) => return (Err(e), None),
        };
        let control = self.task.as_ref().map(|t| t.live.control.clone());
        let msg = match (command, control) {
            (StateCommand::Terminate, _) => return (Ok("session terminated".into()), Some(EndReason::Terminated)),
            (StateCommand::Pause, Some(c)) => {
                c.pause();
                "task paused; it stops after its current action"
            }
            (StateCommand::Resume, Some(c)) => {
                c.resume();
                "task resumed"
            }
            (StateCommand::Stop, Some(c)) if changed => {
                c.stop();
                "task stopped; the session is ready for a new task"
            }
            (StateCommand::Stop, _) => "no task is running",
            (_, None) => "no task is running",
        };
        (Ok(msg.into()), None)
    }

    async fn interaction(&mut self, action: Interaction, reply: Reply<String>) {
        let control = self.task.as_ref().map(|t| t.live.control.clone());
        match action {
            Interaction::TakeOverControl => {
                self.manual = true;
                if let Some(c) = control {
                    c.set_manual(true);
                }
                let _ = reply.send(Ok("manual control enabled; the agent waits until releaseControl".into()));
                return;
            }
            Interaction::ReleaseControl => {
                self.manual = false;
                if let Some(c) = control {
                    c.set_manual(false);
                }
                let _ = reply.send(Ok("control returned to the agent".into()));
                return;
            }
            _ => {}
        }
        if self.task_running() && !self.manual && self.state != SessionState::Paused {
            let _ = reply.send(Err(ApiError::new(
                ErrorCode::TaskAlreadyRunning,
                "a task is running: send takeOverControl (or pause or stop the task) before manual input",
            )));
            return;
        }
        // Reap finished interactions, then refuse past the cap (they are answered one at a time).
        while self.interactions.try_join_next().is_some() {}
        if self.interactions.len() >= MAX_INTERACTIONS_IN_FLIGHT {
            let _ = reply.send(Err(ApiError::new(
                ErrorCode::RateLimitExceeded,
                format!("at most {MAX_INTERACTIONS_IN_FLIGHT} interactions may be in flight per session; wait for their answers"),
            )));
            return;
        }
        if matches!(action, Interaction::Upload { .. }) {
            self.place_files().await;
        }
        let page = self.lease.page().clone();
        let lock = self.input_lock.clone();
        self.interactions.spawn(async move {
            let _guard = lock.lock().await;
            let result = match action {
                Interaction::Click { x, y } => page.click_at(frame_to_page(x, y), false).await.map(|_| "clicked"),
                Interaction::DoubleClick { x, y } => {
                    page.click_at(frame_to_page(x, y), true).await.map(|_| "double-clicked")
                }
                Interaction::Type { text, human_like } => page.type_text(&text, human_like).await.map(|_| "typed"),
                Interaction::KeyPress { key } => page.press_key(&key).await.map(|_| "key pressed"),
                Interaction::Upload { name, x, y } => {
                    page.upload_at(frame_to_page(x, y), &name).await.map(|_| "file set on the input")
                }
                Interaction::TakeOverControl | Interaction::ReleaseControl => Ok("done"),
            };
            let _ = reply.send(result.map(str::to_owned).map_err(ApiError::from));
        });
    }

    /// Records a task's outcome (stored, charged, published) and forgets it.
    pub(crate) async fn record(&self, task: &mut RunningTask, result: Result<String, AgentError>) {
        let live = &task.live;
        match runner::finish(&self.shared.store, &self.shared.config.prices, &self.bus, live, &mut task.hold, result)
            .await
        {
            None => self.shared.unregister_task(&live.id),
            // Still registered, so polls show the kept final view until the write goes through.
            Some(pending) => {
                let (shared, live) = (self.shared.clone(), live.clone());
                self.shared.spawn(async move {
                    pending.store_eventually(&shared.store, &live.id, &shared.shutdown).await;
                    shared.unregister_task(&live.id);
                });
            }
        }
    }

    /// The running task ended by itself (or after stop); returns an end reason when the session
    /// must close (terminateOnCompletion — but a task the caller stopped leaves the session open for a
    /// new one, as the spec's States part says).
    async fn on_task_end(&mut self, result: Result<String, AgentError>) -> Option<EndReason> {
        let mut task = self.task.take()?;
        let stopped = matches!(&result, Err(e) if e.code == ErrorCode::TaskStopped);
        let lost = !self.lease.is_alive();
        // A task cut off by a dead browser fails as such, whatever its last action reported.
        let result = if lost { result.map_err(|_| instance_lost_error()) } else { result };
        self.record(&mut task, result).await;
        if let Err(e) = self.apply(Input::TaskFinished).await {
            tracing::warn!(error = %e, "task end in an unexpected state");
        }
        if (task.terminate_on_completion || self.terminate_on_completion) && (lost || !stopped) {
            return Some(if lost { EndReason::InstanceLost } else { EndReason::TerminateOnCompletion });
        }
        self.take_snapshot().await;
        None
    }

    /// Ends the session: the running task is stopped and recorded, the browser context closed,
    /// `end_session` published and the session forgotten.
    async fn end(mut self, reason: EndReason) {
        if let Some(mut task) = self.task.take() {
            let result = match (runner::halt(&mut task).await, reason) {
                (Ok(m), _) => Ok(m),
                (Err(_), EndReason::Expired) => Err(AgentError::new(
                    ErrorCode::SessionExpired,
                    "the session reached its maxDuration (or idle timeout) while the task ran",
                )),
                (Err(_), EndReason::InstanceLost) => Err(instance_lost_error()),
                // A graceful server stop cuts the task off as a crash would, not as the caller did.
                (Err(_), _) if self.shared.shutdown.is_cancelled() => {
                    Err(AgentError::new(ErrorCode::TaskInterrupted, "the server shut down while the task ran"))
                }
                (Err(e), _) if e.code != ErrorCode::TaskStopped => Err(e),
                (Err(_), _) => {
                    Err(AgentError::new(ErrorCode::TaskStopped, "the session was terminated while the task ran"))
                }
            };
            self.record(&mut task, result).await;
        }
        self.interactions.abort_all();
        if let Some(profile) = self.profile.take().filter(|p| p.persist) {
            // Saved while the session still holds the profile (and before its end is recorded, which
            // would make its lock stale); never from a lost instance, whose state cannot be read.
            if reason != EndReason::InstanceLost && self.lease.is_alive() {
                crate::profiles::save(&self.shared, &self.user_id, &profile, &self.lease).await;
            }
            crate::profiles::release(&self.shared, &self.user_id, &profile.name, &self.id).await;
        }
        self.state = SessionState::Terminated;
        let open_ms = Instant::now().min(self.expires_at).saturating_duration_since(self.opened_at).as_millis();
        let cost = self.shared.config.prices.session_micros(u64::try_from(open_ms).unwrap_or(u64::MAX));
        // Charged before the hold is given back, so the user's balance never shows both freed.
        if let Err(e) = self.shared.store.end_session(&self.id, reason.as_str(), cost).await {
            tracing::warn!(error = %e, "storing the session end (and its charge) failed");
        }
        // The user's place is free on every node before anyone is told the session ended.
        self.slot.release().await;
        self.shared.unregister_session(&self.id);
        // Downloads still under way are kept (stored under the ended session's id). The context lingers
        // for them alone: its browser slot is free meanwhile, and the wait is not charged.
        if reason != EndReason::InstanceLost {
            self.lease.release_slot();
            let quiet = match reason {
                // The session closes itself after its task: a download the last step started is kept.
                EndReason::TerminateOnCompletion | EndReason::Completed => DOWNLOAD_QUIET,
                _ => Duration::ZERO,
            };
            self.settle_downloads(quiet).await;
        }
        let _ = self.bus.send(SessionEvent::EndSession { reason });
        tracing::info!(reason = reason.as_str(), "session ended");
        let replies = std::mem::take(&mut self.end_replies);
        // Dropping self releases the lease (the browser context is disposed) before anyone is told.
        drop(self);
        for reply in replies {
            let _ = reply.send(Ok("session terminated".into()));
        }
    }
}

pub(crate) fn internal(what: &str, e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "{what} failed");
    ApiError::code(ErrorCode::InternalError)
}
