//! A task while it runs (shared by its session actor, the registry and waiting requests), and the view
//! of a task a poll returns, whether it is live or stored.

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::watch;
use webpilot_agent::{TaskControl, TraceRecorder, UsageMeter};
use webpilot_core::events::{Guardrail, ResultData};
use webpilot_core::usage::{Prices, Usage};
use webpilot_core::{ErrorCode, SessionId, TaskId};
use webpilot_store::{TaskRecord, TaskStatus};

pub struct LiveTask {
    pub id: TaskId,
    pub session_id: SessionId,
    pub control: TaskControl,
    pub meter: UsageMeter,
    /// The task has an outputSchema: its message is the JSON of its answer.
    pub structured: bool,
    /// The actions carried out (stored with the outcome, for `replayOf`).
    pub trace: TraceRecorder,
    /// What a replay did (`data.replay`), once it is over.
    pub replay: Mutex<Option<serde_json::Value>>,
    /// What the action cache did (`data.cache`), once the agent is done; `None` without a model.
    pub cache: Mutex<Option<&'static str>>,
    /// When the task started.
    pub started: std::time::Instant,
    /// Becomes true once the outcome is stored (or kept here, see `final_view`).
    done: watch::Sender<bool>,
    /// The outcome, when the store could not take it yet: polls show it while the write is retried.
    final_view: Mutex<Option<TaskView>>,
}

impl LiveTask {
    pub fn new(
        id: TaskId,
        session_id: SessionId,
        control: TaskControl,
        meter: UsageMeter,
        structured: bool,
    ) -> Arc<Self> {
        Arc::new(LiveTask {
            id,
            session_id,
            control,
            meter,
            structured,
            trace: TraceRecorder::default(),
            replay: Mutex::new(None),
            cache: Mutex::new(None),
            started: std::time::Instant::now(),
            done: watch::Sender::new(false),
            final_view: Mutex::new(None),
        })
    }

    /// Keeps the task's final view for polls until its outcome is stored.
    pub fn keep_final_view(&self, view: TaskView) {
        let mut slot = self.final_view.lock();
        *slot = Some(view);
    }

    pub fn mark_done(&self) {
        self.done.send_replace(true);
    }

    /// Waits until the outcome is stored or a guardrail asks for a human; false on timeout.
    pub async fn wait_settled(&self, timeout: std::time::Duration) -> bool {
        let mut done = self.done.subscribe();
        let settled = async {
            tokio::select! {
                _ = self.control.guardrail_asked() => {}
                _ = done.wait_for(|d| *d) => {}
            }
        };
        tokio::time::timeout(timeout, settled).await.is_ok()
    }

    /// The poll view while running.
    pub fn view(&self) -> TaskView {
        if let Some(v) = self.final_view.lock().clone() {
            return v;
        }
        match self.control.pending_guardrail() {
            Some(g) => TaskView::Guardrail(g),
            None => TaskView::Running { usage: self.meter.snapshot() },
        }
    }
}

/// What a poll of a task shows.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskView {
    Running { usage: Usage },
    Guardrail(Guardrail),
    Complete { data: ResultData, usage: Usage, cost_micros: i64, completed_at: DateTime<Utc> },
    Failed { error: String, code: Option<ErrorCode>, usage: Usage, cost_micros: i64 },
}

impl TaskView {
    /// The view of a stored task.
    pub fn from_record(r: &TaskRecord) -> TaskView {
        match r.status {
            TaskStatus::Running => TaskView::Running { usage: r.usage },
            TaskStatus::Guardrail => match &r.guardrail {
                Some((kind, value)) => TaskView::Guardrail(Guardrail { kind: kind.clone(), value: value.clone() }),
                None => TaskView::Running { usage: r.usage },
            },
            TaskStatus::Complete => TaskView::Complete {
                data: result_data(
                    r.result_message.clone().unwrap_or_default(),
                    r.output.as_deref(),
                    (r.replay.as_deref(), r.cache.as_deref()),
                    r.usage,
                ),
                usage: r.usage,
                cost_micros: r.cost_micros,
                completed_at: r.completed_at.and_then(DateTime::from_timestamp_millis).unwrap_or_else(Utc::now),
            },
            TaskStatus::Failed => TaskView::Failed {
                error: r.error.clone().unwrap_or_else(|| "the task failed".into()),
                code: r.code,
                usage: r.usage,
                cost_micros: r.cost_micros,
            },
        }
    }

    /// Cost in USD at `prices` for running tasks, as charged for finished ones.
    pub fn cost_usd(&self, prices: &Prices) -> f64 {
        use webpilot_core::usage::micros_to_usd;
        match self {
            TaskView::Running { usage } => micros_to_usd(usage.cost_micros(prices)),
            TaskView::Guardrail(_) => 0.0,
            TaskView::Complete { cost_micros, .. } | TaskView::Failed { cost_micros, .. } => {
                micros_to_usd(*cost_micros)
            }
        }
    }
}

/// The spec's result data object.
/// `output` is the JSON text of a structured answer, `replay` that of a replay's report and what the
/// action cache did.
pub fn result_data(
    message: String,
    output: Option<&str>,
    (replay, cache): (Option<&str>, Option<&str>),
    usage: Usage,
) -> ResultData {
    ResultData {
        cache: cache.map(str::to_owned),
        message,
        output: output.and_then(|o| serde_json::from_str(o).ok()),
        replay: replay.and_then(|r| serde_json::from_str(r).ok()),
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.input_tokens + usage.output_tokens,
        completion_time: usage.compute_ms as f64 / 1000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::broadcast;
    use tokio::time::{sleep, Instant};
    use webpilot_agent::EventSink;

    const WAIT: Duration = Duration::from_secs(50);

    fn live() -> Arc<LiveTask> {
        let (bus, _) = broadcast::channel(16);
        let id = TaskId::generate();
        let control = TaskControl::new(EventSink::new(id.clone(), bus, Default::default()));
        LiveTask::new(id, SessionId::generate(), control, UsageMeter::new(u64::MAX, u64::MAX), false)
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_task_gives_up_at_its_timeout() {
        let task = live();
        let start = Instant::now();
        assert!(!task.wait_settled(WAIT).await, "nothing happened: not settled");
        assert_eq!(start.elapsed(), WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_task_ends_when_its_outcome_is_stored() {
        let task = live();
        let start = Instant::now();
        let done_in_3s = async {
            sleep(Duration::from_secs(3)).await;
            task.mark_done();
        };
        let (settled, ()) = tokio::join!(task.wait_settled(WAIT), done_in_3s);
        assert!(settled);
        assert_eq!(start.elapsed(), Duration::from_secs(3), "as it is stored, not at the timeout");
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_task_ends_when_it_asks_a_human() {
        let task = live();
        let start = Instant::now();
        let asks_in_2s = async {
            sleep(Duration::from_secs(2)).await;
            tokio::select! {
                _ = task.control.ask_human("which account?") => {}
                _ = sleep(WAIT * 2) => {}
            }
        };
        let wait = async {
            let settled = task.wait_settled(WAIT).await;
            (settled, start.elapsed())
        };
        let ((settled, at), ()) = tokio::join!(wait, asks_in_2s);
        assert!(settled);
        assert_eq!(at, Duration::from_secs(2), "as the guardrail is asked");
    }
}
