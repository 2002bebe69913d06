//! Running one task: spawning the agent with its context and deadline, and recording the outcome
//! (stored with its charge, published as `task_completed` or `error`) when it ends.

use crate::admission::Hold;
use crate::live::{result_data, LiveTask, TaskView};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tracing::Instrument;
use webpilot_agent::cache::{ActionCache, CacheUse};
use webpilot_agent::replay::ReplaySource;
use webpilot_agent::{Agent, AgentContext, AgentError, AgentTask, EventSink, TaskControl, UsageMeter};
use webpilot_browser::SessionPage;
use webpilot_core::events::{SessionEvent, TaskEvent};
use webpilot_core::params::NewTask;
use webpilot_core::secrets::Secrets;
use webpilot_core::usage::{micros_to_usd, Prices, Usage};
use webpilot_core::{ErrorCode, SessionId, TaskId};
use webpilot_store::{Store, StoreError, TaskOutcome, WebhookEvent};

/// What a new task brings: its parameters, earlier conversation (chat completions), its hold, and
/// the trace to replay (`replayOf`).
pub(crate) struct TaskStart {
    pub task: NewTask,
    pub context: Vec<(String, String)>,
    pub hold: Hold,
    pub replay: Option<ReplaySource>,
    /// The user's action cache, when this task may use it.
    pub cache: Option<Arc<dyn ActionCache>>,
}

pub(crate) struct RunningTask {
    pub live: Arc<LiveTask>,
    /// Released once the task's outcome and real cost are recorded (or when dropped).
    pub hold: Hold,
    pub join: JoinHandle<Result<String, AgentError>>,
    pub terminate_on_completion: bool,
}

pub(crate) fn spawn(
    agent: Arc<dyn Agent>,
    page: SessionPage,
    bus: broadcast::Sender<SessionEvent>,
    session_id: SessionId,
    task_id: TaskId,
    start: TaskStart,
    checks: webpilot_agent::TaskChecks,
) -> RunningTask {
    let TaskStart { task, context, hold, replay, cache } = start;
    let uses_model = agent.uses_model();
    let secrets = task.limits.secrets.clone();
    let structured = task.limits.output_schema.is_some();
    let sink = EventSink::new(task_id.clone(), bus, secrets.clone());
    let control = TaskControl::new(sink.clone());
    let meter = UsageMeter::new(task.limits.max_input_tokens, task.limits.max_output_tokens);
    let live = LiveTask::new(task_id.clone(), session_id, control.clone(), meter.clone(), structured);
    page.policy().set(task.limits.avoid_domains.clone());
    let trace = live.trace.clone();
    let ctx = AgentContext {
        page,
        control,
        events: sink,
        usage: meter,
        secrets: secrets.clone(),
        trace,
        checks,
        fresh: Default::default(),
    };
    let report_to = live.clone();
    let max = Duration::from_millis(task.limits.max_duration_ms);
    let starting_url = task.limits.starting_url.clone();
    // Inside the session's span (the actor starts tasks), so every log line of the task names both.
    let span = tracing::info_span!("task", id = %task_id);
    let agent_task = AgentTask { task_id, details: task.task_details, context, limits: task.limits };
    // A bare spawn on purpose: the task's join handle is the actor's, which awaits or aborts it, and the
    // session's own group (the manager's `Tasks`) waits for the actor.
    let join = tokio::spawn(
        async move {
            let work = async {
                if let Some(url) = &starting_url {
                    ctx.control.act(ctx.page.goto(url)).await?;
                    ctx.events.action("navigate", serde_json::json!({ "url": url }));
                }
                let cache_use = |used: CacheUse| *report_to.cache.lock() = uses_model.then_some(used.as_str());
                match (replay, cache) {
                    (None, Some(cache)) => {
                        let (result, used) = webpilot_agent::cache::run(&*agent, agent_task, &ctx, &*cache).await;
                        cache_use(used);
                        result
                    }
                    (None, None) => {
                        cache_use(CacheUse::Off);
                        agent.run(agent_task, ctx.clone()).await
                    }
                    (Some(source), _) => {
                        cache_use(CacheUse::Off);
                        let (result, report) = webpilot_agent::replay::run(&*agent, agent_task, &ctx, source).await;
                        *report_to.replay.lock() = Some(report.to_json());
                        result
                    }
                }
            };
            masked(within(max, work).await, &secrets, structured)
        }
        .instrument(span),
    );
    RunningTask { live, join, terminate_on_completion: task.terminate_on_completion, hold }
}

/// The task's result, or `TASK_TIMEOUT` once it has run for `max` (its maxDuration).
async fn within(max: Duration, work: impl Future<Output = Result<String, AgentError>>) -> Result<String, AgentError> {
    match tokio::time::timeout(max, work).await {
        Ok(r) => r,
        Err(_) => Err(AgentError::new(
            ErrorCode::TaskTimeout,
            format!("the task exceeded its maxDuration of {} ms", max.as_millis()),
        )),
    }
}

/// The result with every secret value masked: no value is stored, published or returned.
fn masked(result: Result<String, AgentError>, secrets: &Secrets, structured: bool) -> Result<String, AgentError> {
    if secrets.is_empty() {
        return result;
    }
    match result {
        Ok(message) if structured => Ok(match serde_json::from_str::<serde_json::Value>(&message) {
            Ok(v) => secrets.mask_json(&v).to_string(),
            Err(_) => secrets.mask(&message),
        }),
        Ok(message) => Ok(secrets.mask(&message)),
        Err(e) => Err(AgentError::new(e.code, secrets.mask(&e.message))),
    }
}

/// How long a stopped task may take to wind down before it is given up as stopped.
const HALT_WAIT: Duration = Duration::from_secs(5);

/// Stops a running task at once and waits (at most [`HALT_WAIT`]) for its result.
pub(crate) async fn halt(task: &mut RunningTask) -> Result<String, AgentError> {
    task.live.control.stop();
    match tokio::time::timeout(HALT_WAIT, &mut task.join).await {
        Ok(r) => joined(r),
        Err(_) => Err(AgentError::stopped()),
    }
}

/// Turns a join result into the task's result.
pub(crate) fn joined(r: Result<Result<String, AgentError>, tokio::task::JoinError>) -> Result<String, AgentError> {
    r.unwrap_or_else(|e| {
        tracing::error!(error = %e, "the agent task panicked or was aborted");
        Err(AgentError::new(ErrorCode::InternalError, "the agent failed unexpectedly"))
    })
}

/// An outcome the store did not take yet (it failed even after its own retries).
pub(crate) struct PendingOutcome {
    outcome: TaskOutcome,
    usage: Usage,
    cost: i64,
    /// The task's hold, given back once the charge is stored (not before: the balance is not yet charged).
    hold: Hold,
    /// The webhook message queued with the outcome.
    webhook: Option<WebhookEvent>,
}

impl PendingOutcome {
    /// Writes the outcome, retrying every second until it is stored or `stop` is cancelled (then the
    /// next start fails the task as interrupted, as after a crash).
    pub async fn store_eventually(mut self, store: &Store, id: &TaskId, stop: &tokio_util::sync::CancellationToken) {
        let webhook = self.webhook.take();
        let (outcome, usage, cost) = (&self.outcome, self.usage, self.cost);
        let write = || store.finish_task(id, outcome, usage, cost, webhook.as_ref());
        match write_until_stored(id, stop, write).await {
            Retried::Stored => {
                self.hold.release().await;
                tracing::info!(task = %id, "a task outcome was stored on a later attempt");
            }
            Retried::Gone => {
                self.hold.release().await;
                tracing::warn!(task = %id, "the task was ended by another node meanwhile; not stored");
            }
            Retried::Stopped => {}
        }
    }
}

/// How often an outcome the store did not take is written again.
const STORE_EVERY: Duration = Duration::from_secs(1);

/// What became of an outcome written again and again.
#[derive(Debug, PartialEq, Eq)]
enum Retried {
    Stored,
    /// The task is no longer running in the database (another node ended it).
    Gone,
    Stopped,
}

/// Runs `write` every [`STORE_EVERY`] (the first a period from now: it has just failed) until it
/// succeeds, finds the task gone, or `stop` is cancelled.
async fn write_until_stored<T, Fut>(
    id: &TaskId,
    stop: &tokio_util::sync::CancellationToken,
    mut write: impl FnMut() -> Fut,
) -> Retried
where
    Fut: Future<Output = Result<T, StoreError>>,
{
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Retried::Stopped,
            _ = tokio::time::sleep(STORE_EVERY) => {}
        }
        match write().await {
            Ok(_) => return Retried::Stored,
            Err(StoreError::NotFound(_)) => return Retried::Gone,
            Err(e) => tracing::warn!(task = %id, error = %e, "storing a task outcome failed again"),
        }
    }
}

/// Records a task's outcome: stored with its charge, published, and the task marked done. When the
/// store fails, the final view is kept on the live task (so no poll says `active` for it) and the
/// outcome is handed back to be stored later.
pub(crate) async fn finish(
    store: &Store,
    prices: &Prices,
    bus: &broadcast::Sender<SessionEvent>,
    live: &LiveTask,
    hold: &mut Hold,
    result: Result<String, AgentError>,
) -> Option<PendingOutcome> {
    let usage = live.meter.snapshot();
    let cost = usage.cost_micros(prices);
    let replay = live.replay.lock().as_ref().map(|v| v.to_string());
    let trace = live.trace.to_json();
    if trace.is_some() || replay.is_some() {
        if let Err(e) = store.set_task_trace(&live.id, trace.as_deref(), replay.as_deref()).await {
            tracing::warn!(task = %live.id, error = %e, "storing a task's trace failed; it cannot be replayed");
        }
    }
    let cache = *live.cache.lock();
    if let Some(used) = cache {
        if let Err(e) = store.set_task_cache(&live.id, used).await {
            tracing::warn!(task = %live.id, error = %e, "storing a task's cache use failed");
        }
    }
    let (outcome, mut event) = match result {
        Ok(message) => {
            // A structured answer's message is its JSON text (the agent checked it against the schema).
            let output = live.structured.then(|| message.clone());
            let data = result_data(message.clone(), output.as_deref(), (replay.as_deref(), cache), usage);
            (TaskOutcome::Complete { message, output }, TaskEvent::Completed { data, cost: micros_to_usd(cost) })
        }
        Err(e) => (
            TaskOutcome::Failed { error: e.message.clone(), code: e.code },
            TaskEvent::Error { error: e.message, code: e.code },
        ),
    };
    let webhook = task_webhook(live, &event);
    metrics::counter!("webpilot_tasks_total", "outcome" => outcome_name(&outcome)).increment(1);
    metrics::counter!("webpilot_model_tokens_total", "kind" => "input").increment(usage.input_tokens);
    metrics::counter!("webpilot_model_tokens_total", "kind" => "output").increment(usage.output_tokens);
    metrics::histogram!("webpilot_task_duration_seconds").record(live.started.elapsed().as_secs_f64());
    let pending = match store.finish_task(&live.id, &outcome, usage, cost, Some(&webhook)).await {
        Ok(balance) => {
            tracing::info!(task = %live.id, outcome = outcome_name(&outcome), cost_micros = cost, balance_micros = balance, "task finished");
            // Charged: the hold is given back before anyone hears the task ended, so the user's next task
            // is not refused for a hold already settled. (An uncharged outcome keeps its hold until the
            // task is dropped.)
            hold.release().await;
            None
        }
        Err(StoreError::NotFound(_)) => {
            // No longer running in the database: another node declared this one lost and failed the
            // task (charging nothing). That record stands; polls read it once the task is forgotten.
            tracing::warn!(task = %live.id, "the task had already been ended by another node; its outcome is not stored");
            hold.release().await;
            let lost = crate::recovery::instance_lost_error();
            event = TaskEvent::Error { error: lost.message, code: lost.code };
            None
        }
        Err(e) => {
            tracing::error!(task = %live.id, error = %e, "storing a task outcome failed; kept in memory, retrying");
            live.keep_final_view(final_view(&outcome, (replay.as_deref(), cache), usage, cost));
            Some(PendingOutcome { outcome, usage, cost, hold: hold.take(), webhook: Some(webhook) })
        }
    };
    let _ = bus.send(SessionEvent::Task { task_id: live.id.to_string(), event });
    live.mark_done();
    pending
}

/// The webhook message of a task's end: the Socket.IO event's fields, with the session's id.
fn task_webhook(live: &LiveTask, event: &TaskEvent) -> WebhookEvent {
    let event_type = match event {
        TaskEvent::Completed { .. } => "task.completed",
        _ => "task.failed",
    };
    let mut data = event.to_json(live.id.as_str());
    data["sessionId"] = serde_json::Value::String(live.session_id.to_string());
    WebhookEvent { event_type, data }
}

fn final_view(outcome: &TaskOutcome, replay: (Option<&str>, Option<&str>), usage: Usage, cost_micros: i64) -> TaskView {
    match outcome {
        TaskOutcome::Complete { message, output } => TaskView::Complete {
            data: result_data(message.clone(), output.as_deref(), replay, usage),
            usage,
            cost_micros,
            completed_at: chrono::Utc::now(),
        },
        TaskOutcome::Failed { error, code } => {
            TaskView::Failed { error: error.clone(), code: Some(*code), usage, cost_micros }
        }
    }
}

fn outcome_name(o: &TaskOutcome) -> &'static str {
    match o {
        TaskOutcome::Complete { .. } => "complete",
        TaskOutcome::Failed { code, .. } => code.as_str(),
    }
}

/// The result of a task halted because its session ended for `reason` (`shutting_down`: the server
/// stops).
pub(crate) fn cut_off(
    halted: Result<String, AgentError>,
    reason: webpilot_core::events::EndReason,
    shutting_down: bool,
) -> Result<String, AgentError> {
    use webpilot_core::events::EndReason;
    match (halted, reason) {
        (Ok(m), _) => Ok(m),
        (Err(_), EndReason::Expired) => Err(AgentError::new(
            ErrorCode::SessionExpired,
            "the session reached its maxDuration (or idle timeout) while the task ran",
        )),
        (Err(_), EndReason::InstanceLost) => Err(crate::recovery::instance_lost_error()),
        // A graceful server stop cuts the task off as a crash would, not as the caller did.
        (Err(_), _) if shutting_down => {
            Err(AgentError::new(ErrorCode::TaskInterrupted, "the server shut down while the task ran"))
        }
        (Err(e), _) if e.code != ErrorCode::TaskStopped => Err(e),
        (Err(_), _) => Err(AgentError::new(ErrorCode::TaskStopped, "the session was terminated while the task ran")),
    }
}

/// Awaits the running task, or never when there is none.
pub(crate) async fn task_end(task: &mut Option<RunningTask>) -> Result<String, AgentError> {
    match task {
        Some(t) => joined((&mut t.join).await),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Admission;
    use crate::paused::ends_exactly_at;
    use tokio::time::{sleep, Instant};
    use webpilot_core::UserId;

    const MS: Duration = Duration::from_millis(1);

    /// A running task whose agent is `work`, given the task's control.
    async fn running<F>(work: impl FnOnce(TaskControl) -> F) -> RunningTask
    where
        F: Future<Output = Result<String, AgentError>> + Send + 'static,
    {
        let (bus, _) = broadcast::channel(16);
        let id = TaskId::generate();
        let control = TaskControl::new(EventSink::new(id.clone(), bus, Secrets::default()));
        let meter = UsageMeter::new(u64::MAX, u64::MAX);
        let live = LiveTask::new(id, SessionId::generate(), control.clone(), meter, false);
        let hold = Admission::local(1, 0).hold(&UserId::generate(), 1).await.expect("a hold");
        // As `spawn` does: the join handle is the test's, which awaits it.
        RunningTask { live, hold, join: tokio::spawn(work(control)), terminate_on_completion: false }
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_ignores_stop_is_given_up_as_stopped_five_seconds_later() {
        let mut task = running(|_| async {
            sleep(Duration::from_secs(60)).await;
            Ok("too late".to_string())
        })
        .await;
        let start = Instant::now();
        let result = halt(&mut task).await;
        assert_eq!(result.err().map(|e| e.code), Some(ErrorCode::TaskStopped));
        assert_eq!(start.elapsed(), HALT_WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_winds_down_in_time_gives_its_own_result() {
        let mut task = running(|control| async move {
            control.cancelled().await;
            sleep(HALT_WAIT - MS).await;
            Ok("wound down".to_string())
        })
        .await;
        let start = Instant::now();
        assert_eq!(halt(&mut task).await.ok().as_deref(), Some("wound down"));
        assert_eq!(start.elapsed(), HALT_WAIT - MS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_times_out_exactly_at_its_max_duration() {
        let max = Duration::from_secs(10);
        let start = Instant::now();
        let late = within(max, async {
            sleep(max + MS).await;
            Ok("too late".to_string())
        })
        .await;
        let e = late.expect_err("timed out");
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::TaskTimeout, "the task exceeded its maxDuration of 10000 ms")
        );
        assert_eq!(start.elapsed(), max, "cut off at its maxDuration, not when its work would end");
        let start = Instant::now();
        let in_time = within(max, async {
            sleep(max - MS).await;
            Ok("in time".to_string())
        })
        .await;
        assert_eq!(in_time.ok().as_deref(), Some("in time"));
        assert_eq!(start.elapsed(), max - MS);
    }

    /// A write that answers `results` in turn (then fails), recording when (ms from the start) each began.
    fn scripted(
        results: Vec<Result<i64, StoreError>>,
        times: &Arc<std::sync::Mutex<Vec<u128>>>,
    ) -> impl FnMut() -> std::future::Ready<Result<i64, StoreError>> {
        let (start, times) = (Instant::now(), times.clone());
        let mut results = results.into_iter();
        move || {
            times.lock().expect("times").push(start.elapsed().as_millis());
            std::future::ready(results.next().unwrap_or(Err(StoreError::Corrupt("database away".into()))))
        }
    }

    fn away() -> Result<i64, StoreError> {
        Err(StoreError::Corrupt("database away".into()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_outcome_is_written_again_every_second_until_stored() {
        let (id, stop) = (TaskId::generate(), tokio_util::sync::CancellationToken::new());
        let times = Arc::new(std::sync::Mutex::new(Vec::new()));
        let write = scripted(vec![away(), away(), Ok(0)], &times);
        let retried = ends_exactly_at(Duration::from_secs(3), write_until_stored(&id, &stop, write)).await;
        assert_eq!(retried, Retried::Stored);
        assert_eq!(*times.lock().expect("times"), [1_000, 2_000, 3_000], "a second after the failed first write");
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_outcome_of_a_task_another_node_ended_is_dropped() {
        let (id, stop) = (TaskId::generate(), tokio_util::sync::CancellationToken::new());
        let times = Arc::new(std::sync::Mutex::new(Vec::new()));
        let write = scripted(vec![away(), Err(StoreError::NotFound("task"))], &times);
        let retried = ends_exactly_at(Duration::from_secs(2), write_until_stored(&id, &stop, write)).await;
        assert_eq!(retried, Retried::Gone);
        assert_eq!(*times.lock().expect("times"), [1_000, 2_000]);
    }

    #[tokio::test(start_paused = true)]
    async fn writing_a_kept_outcome_stops_at_shutdown_without_waiting_for_the_next_try() {
        let (id, stop) = (TaskId::generate(), tokio_util::sync::CancellationToken::new());
        let times = Arc::new(std::sync::Mutex::new(Vec::new()));
        let write = scripted(Vec::new(), &times);
        let shutdown = async {
            sleep(Duration::from_millis(2_500)).await;
            stop.cancel();
            std::future::pending::<Retried>().await
        };
        let writing = async {
            tokio::select! {
                r = write_until_stored(&id, &stop, write) => r,
                r = shutdown => r,
            }
        };
        let retried = ends_exactly_at(Duration::from_millis(2_500), writing).await;
        assert_eq!(retried, Retried::Stopped);
        assert_eq!(*times.lock().expect("times"), [1_000, 2_000], "no write after the stop");
    }
}
