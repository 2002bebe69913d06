//! One session as an actor: a tokio task that owns the browser lease, the state machine, the running
//! task and the session's parts (recovery, files, input, profile), and handles one command at a time.
//! Timers (maxDuration, idle, snapshots) and the end of the running task arrive in the same loop, so state
//! changes never race. [`open`] builds the actor and its [`SessionHandle`]; the handle is all others see.

use crate::error::SessionError;
mod clock;
mod registry;

pub use registry::Activity;
pub(crate) use registry::{Env, Opening, SessionHandle, Status};

use crate::admission::SessionSlot;
use crate::files::Files;
use crate::input::Inputs;
use crate::live::LiveTask;
use crate::profiles::SessionProfile;
use crate::recovery::{instance_lost_error, unavailable, Recovery};
use crate::runner::{self, RunningTask, TaskStart};
use clock::Clock;
use registry::{Command, Reply};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};
use webpilot_agent::AgentError;
use webpilot_browser::{BrowserError, BrowserLease, SessionPage};
use webpilot_core::events::{EndReason, SessionEvent};
use webpilot_core::params::{Interaction, StateCommand};
use webpilot_core::state::{transition, Input, SessionState};
use webpilot_core::{ErrorCode, SessionId, TaskId, UserId};

/// How long a session that closes itself after its task waits for a download to begin.
const DOWNLOAD_QUIET: Duration = Duration::from_secs(1);

pub(crate) struct SessionActor {
    id: SessionId,
    user_id: UserId,
    env: Env,
    lease: BrowserLease,
    state: SessionState,
    /// Session-level terminateOnCompletion (run-task, or start-session's flag).
    terminate_on_completion: bool,
    /// When it opened, expires and goes idle.
    clock: Clock,
    rx: mpsc::Receiver<Command>,
    bus: broadcast::Sender<SessionEvent>,
    task: Option<RunningTask>,
    manual: bool,
    inputs: Inputs,
    /// Replies to `terminate`, sent once the session is really closed.
    end_replies: Vec<Reply<String>>,
    /// Cookies and URL to restore if the browser dies, and how to replace it.
    recovery: Recovery,
    files: Files,
    /// The user's place for this session, given back when the actor ends.
    slot: SessionSlot,
    /// Tells the live view which pages to watch (a recovery installs new ones).
    pages: watch::Sender<SessionPage>,
    /// Tells the session list the state and the running task (after each state change).
    status: watch::Sender<Status>,
    /// The profile the session started from, saved back when it ends if it persists it.
    profile: Option<SessionProfile>,
}

/// What woke the actor up.
enum Wake {
    Command(Option<Command>),
    TaskEnd(Result<String, AgentError>),
    InstanceLost,
    Snapshot,
    End(EndReason),
    Download(webpilot_browser::DownloadOutcome),
}

/// What woke a recovering actor up.
enum RecoveryWake {
    Replaced(Result<webpilot_browser::Replacement, BrowserError>),
    Command(Option<Command>),
    End(EndReason),
}

/// A session built and registered but not yet running: its hooks subscribe before its first event.
pub(crate) struct Opened {
    actor: SessionActor,
    handle: SessionHandle,
}

/// Builds the actor of a new session and its handle, and registers the handle.
pub(crate) fn open(env: Env, o: Opening) -> Opened {
    let (tx, rx) = mpsc::channel(32);
    let (bus, _) = broadcast::channel(256);
    let (pages, pages_rx) = watch::channel(o.lease.page().clone());
    let (config, cap) = (env.config(), env.pool().settings().max_session_file_bytes);
    let (id, user) = (o.id.clone(), o.user_id.clone());
    let files =
        Files::new(env.files().clone(), env.store().clone(), id, user, cap, config.storage_quota_bytes, bus.clone());
    let (status, status_rx) = watch::channel(Status { state: SessionState::Active, task: None });
    let handle = SessionHandle::new(o.user_id.clone(), o.defaults, tx, bus.clone(), pages_rx, o.proxies, status_rx);
    handle.show_secrets(&o.secrets);
    env.sessions().insert(o.id.clone(), o.user_id.clone(), handle.clone());
    let actor = SessionActor {
        recovery: Recovery::new(env.pool().clone(), config),
        id: o.id,
        user_id: o.user_id,
        lease: o.lease,
        state: SessionState::Active,
        terminate_on_completion: o.terminate_on_completion,
        clock: Clock::start(o.max_duration, config.idle_timeout),
        rx,
        bus,
        task: None,
        manual: false,
        inputs: Inputs::default(),
        end_replies: Vec::new(),
        files,
        slot: o.slot,
        pages,
        status,
        profile: o.profile,
        env,
    };
    Opened { actor, handle }
}

impl Opened {
    pub fn handle(&self) -> &SessionHandle {
        &self.handle
    }

    /// Runs the actor in the manager's group of tasks; every log line of it (and of its tasks) carries the
    /// session's id and user.
    pub fn spawn(self) -> SessionHandle {
        let actor = self.actor;
        let span = tracing::info_span!("session", id = %actor.id, user = %actor.user_id);
        let env = actor.env.clone();
        env.spawn("session actor", tracing::Instrument::instrument(actor.run(), span));
        self.handle
    }
}

impl SessionActor {
    async fn run(mut self) {
        let shutdown = self.env.shutdown().clone();
        let reason = loop {
            let expired = self.clock.expired(self.task.is_some());
            // Expiry is looked at first: a task whose own maxDuration runs out in the same timer tick as
            // the session's (a task started within a millisecond of its session) ends as SESSION_EXPIRED.
            let wake = tokio::select! {
                biased;
                _ = expired => Wake::End(EndReason::Expired),
                result = runner::task_end(&mut self.task) => Wake::TaskEnd(result),
                cmd = self.rx.recv() => Wake::Command(cmd),
                _ = self.lease.died() => Wake::InstanceLost,
                _ = tokio::time::sleep_until(self.recovery.snapshot_due()) => Wake::Snapshot,
                download = self.lease.next_download() => Wake::Download(download),
                _ = shutdown.cancelled() => Wake::End(EndReason::Terminated),
            };
            let end = match wake {
                Wake::Command(Some(cmd)) => {
                    self.clock.touch();
                    self.handle(cmd).await
                }
                Wake::Command(None) => Some(EndReason::Terminated),
                Wake::TaskEnd(result) => self.on_task_end(result).await,
                Wake::InstanceLost => self.recover().await,
                Wake::Snapshot => {
                    self.recovery.periodic_snapshot(&self.lease).await;
                    None
                }
                Wake::End(reason) => Some(reason),
                Wake::Download(outcome) => {
                    self.files.on_download(outcome).await;
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
        self.status.send_replace(Status { state: next, task: self.task.as_ref().map(|t| t.live.clone()) });
        if self.state != next {
            self.state = next;
            if let Err(e) = self.env.store().set_session_state(&self.id, next.as_str()).await {
                tracing::warn!(error = %e, "storing the session state failed");
            }
        }
    }

    /// Applies an input to the state machine.
    async fn apply(&mut self, input: Input) -> Result<bool, SessionError> {
        let t = transition(self.state, self.task_running(), input)?;
        self.set_state(t.next).await;
        Ok(t.changed)
    }

    /// Handles one command; returns an end reason when the session must end.
    async fn handle(&mut self, cmd: Command) -> Option<EndReason> {
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
                    Err(SessionError::new(ErrorCode::InvalidState, "no guardrail is waiting for an answer"))
                });
                None
            }
        }
    }

    async fn start_task(&mut self, mut start: TaskStart) -> Result<Arc<LiveTask>, SessionError> {
        self.reap_stopped_task().await;
        let task_id = TaskId::generate();
        let admitted = async {
            let next = transition(self.state, self.task_running(), Input::NewTask)?.next;
            let details = &start.task.task_details;
            self.env.store().insert_task(&task_id, &self.id, &self.user_id, details).await?;
            Ok::<_, SessionError>(next)
        };
        let next = match admitted.await {
            Ok(next) => next,
            Err(e) => {
                // Refused: the hold is free again before the caller hears it (on every node).
                start.hold.release().await;
                return Err(e);
            }
        };
        self.files.place_files(self.lease.page()).await;
        let agent = self.env.agent().clone();
        let checks = self.env.config().human_checks.for_task();
        let page = self.lease.page().clone();
        let running = runner::spawn(agent, page, self.bus.clone(), self.id.clone(), task_id.clone(), start, checks);
        if self.manual {
            running.live.control.set_manual(true);
        }
        let live = running.live.clone();
        self.env.tasks().insert(live.clone());
        self.task = Some(running);
        self.set_state(next).await;
        tracing::info!(task = %task_id, agent = self.env.agent().name(), "task started");
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

    async fn state_command(&mut self, command: StateCommand) -> (Result<String, SessionError>, Option<EndReason>) {
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
        let manual = match action {
            Interaction::TakeOverControl => {
                Some((true, "manual control enabled; the agent waits until releaseControl"))
            }
            Interaction::ReleaseControl => Some((false, "control returned to the agent")),
            _ => None,
        };
        if let Some((manual, answer)) = manual {
            self.manual = manual;
            if let Some(c) = control {
                c.set_manual(manual);
            }
            let _ = reply.send(Ok(answer.into()));
            return;
        }
        if self.task_running() && !self.manual && self.state != SessionState::Paused {
            let _ = reply.send(Err(SessionError::new(
                ErrorCode::TaskAlreadyRunning,
                "a task is running: send takeOverControl (or pause or stop the task) before manual input",
            )));
            return;
        }
        if let Some(refusal) = self.inputs.refusal() {
            let _ = reply.send(Err(refusal));
            return;
        }
        if matches!(action, Interaction::Upload { .. }) {
            self.files.place_files(self.lease.page()).await;
        }
        self.inputs.perform(self.lease.page().clone(), action, reply);
    }

    /// Records a task's outcome (stored, charged, published) and forgets it.
    async fn record(&self, task: &mut RunningTask, result: Result<String, AgentError>) {
        let live = &task.live;
        let (store, prices) = (self.env.store(), &self.env.config().prices);
        match runner::finish(store, prices, &self.bus, live, &mut task.hold, result).await {
            None => self.env.tasks().remove(&live.id),
            // Still registered, so polls show the kept final view until the write goes through.
            Some(pending) => {
                let (env, live) = (self.env.clone(), live.clone());
                self.env.spawn("task outcome write", async move {
                    pending.store_eventually(env.store(), &live.id, env.shutdown()).await;
                    env.tasks().remove(&live.id);
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
        self.recovery.snapshot(&self.lease).await;
        None
    }

    /// Handles the loss of the browser (see `recovery.rs`); returns an end reason when the session cannot
    /// go on.
    async fn recover(&mut self) -> Option<EndReason> {
        tracing::warn!(pid = ?self.lease.pid(), "browser instance lost");
        let grace_period_ms = self.recovery.grace_ms();
        let _ = self.bus.send(SessionEvent::InstanceDisconnected { grace_period_ms });
        if let Some(mut task) = self.task.take() {
            let result = runner::halt(&mut task).await.map_err(|_| instance_lost_error());
            self.record(&mut task, result).await;
            if let Err(e) = self.apply(Input::TaskFinished).await {
                tracing::warn!(error = %e, "task end in an unexpected state");
            }
            if task.terminate_on_completion || self.terminate_on_completion {
                // The session existed for that task only: nothing to recover for.
                return Some(EndReason::InstanceLost);
            }
        }
        let mut attempt = self.recovery.attempt(&self.lease);
        let shutdown = self.env.shutdown().clone();
        loop {
            let wake = tokio::select! {
                r = &mut attempt => RecoveryWake::Replaced(r.unwrap_or(Err(BrowserError::InstanceLost))),
                cmd = self.rx.recv() => RecoveryWake::Command(cmd),
                _ = tokio::time::sleep_until(self.clock.expires_at()) => RecoveryWake::End(EndReason::Expired),
                _ = shutdown.cancelled() => RecoveryWake::End(EndReason::Terminated),
            };
            match wake {
                RecoveryWake::Replaced(Ok(replacement)) => {
                    self.recovery.install(&mut self.lease, replacement).await;
                    self.pages.send_replace(self.lease.page().clone());
                    self.recovery.restore(&self.lease).await;
                    if let Some(profile) = self.profile.as_mut() {
                        profile.follow_replacement(&self.lease).await;
                    }
                    self.clock.touch();
                    let _ = self.bus.send(SessionEvent::InstanceReconnected);
                    tracing::info!(pid = ?self.lease.pid(), "browser instance replaced");
                    return None;
                }
                RecoveryWake::Replaced(Err(e)) => {
                    tracing::warn!(error = %e, "no replacement browser instance");
                    return Some(EndReason::InstanceLost);
                }
                RecoveryWake::Command(None) => return Some(EndReason::Terminated),
                // State commands and guardrail answers behave as usual (there is no task now); work that
                // needs the browser is refused until it is back.
                RecoveryWake::Command(Some(Command::NewTask { reply, .. })) => drop(reply.send(Err(unavailable()))),
                RecoveryWake::Command(Some(Command::Interaction { reply, .. })) => drop(reply.send(Err(unavailable()))),
                RecoveryWake::Command(Some(other)) => {
                    if let Some(end) = self.handle(other).await {
                        return Some(end);
                    }
                }
                RecoveryWake::End(reason) => return Some(reason),
            }
        }
    }

    /// Ends the session: the running task is stopped and recorded, the browser context closed,
    /// `end_session` published and the session forgotten.
    async fn end(mut self, reason: EndReason) {
        if let Some(mut task) = self.task.take() {
            let halted = runner::halt(&mut task).await;
            let result = runner::cut_off(halted, reason, self.env.shutdown().is_cancelled());
            self.record(&mut task, result).await;
        }
        self.inputs.abort_all();
        if let Some(profile) = self.profile.take() {
            // Saved while the session still holds the profile (and before its end is recorded, which
            // would make its lock stale); never from a lost instance, whose state cannot be read.
            let readable = reason != EndReason::InstanceLost && self.lease.is_alive();
            profile.close(&self.lease, readable).await;
        }
        self.state = SessionState::Terminated;
        let cost = self.env.config().prices.session_micros(self.clock.open_ms());
        // Charged before the hold is given back, so the user's balance never shows both freed.
        if let Err(e) = self.env.store().end_session(&self.id, reason.as_str(), cost).await {
            tracing::warn!(error = %e, "storing the session end (and its charge) failed");
        }
        // The user's place is free on every node before anyone is told the session ended.
        self.slot.release().await;
        self.env.sessions().remove(&self.id);
        // Downloads still under way are kept (stored under the ended session's id). The context lingers
        // for them alone: its browser slot is free meanwhile, and the wait is not charged.
        if reason != EndReason::InstanceLost {
            self.lease.release_slot();
            let quiet = match reason {
                // The session closes itself after its task: a download the last step started is kept.
                EndReason::TerminateOnCompletion | EndReason::Completed => DOWNLOAD_QUIET,
                _ => Duration::ZERO,
            };
            self.files.settle_downloads(&self.lease, quiet).await;
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
