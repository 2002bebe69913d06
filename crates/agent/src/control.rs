//! The control surface of one running task, shared by the session (which pauses, resumes, stops and
//! answers guardrails) and the agent (which checks in between actions and asks humans questions).

use crate::{AgentError, EventSink};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;
use webpilot_core::events::{Guardrail, TaskEvent};

#[derive(Clone)]
pub struct TaskControl {
    inner: Arc<Inner>,
}

struct Inner {
    /// true while the task must wait (paused, or a human has taken over the browser).
    hold: watch::Sender<Hold>,
    cancel: CancellationToken,
    /// The question waiting for a human, published so a waiter hears it at once.
    guardrail: watch::Sender<Option<Pending>>,
    sink: EventSink,
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Hold {
    paused: bool,
    manual: bool,
}

/// Whether the task was held (paused, resumed, put under manual control) since [`TaskControl::stamp`].
pub struct HoldStamp(watch::Receiver<Hold>);

impl HoldStamp {
    /// No pause, resume or manual control since the stamp was taken.
    pub fn unheld(&self) -> bool {
        matches!(self.0.has_changed(), Ok(false))
    }
}

struct Pending {
    guardrail: Guardrail,
    answer: oneshot::Sender<String>,
}

impl TaskControl {
    pub fn new(sink: EventSink) -> Self {
        TaskControl {
            inner: Arc::new(Inner {
                hold: watch::Sender::new(Hold::default()),
                cancel: CancellationToken::new(),
                guardrail: watch::Sender::new(None),
                sink,
            }),
        }
    }

    // ---- the session's side ----

    /// The agent stops at its next checkpoint, after the current action.
    pub fn pause(&self) {
        self.inner.hold.send_modify(|h| h.paused = true);
    }

    pub fn resume(&self) {
        self.inner.hold.send_modify(|h| h.paused = false);
    }

    /// Manual control: while true the agent waits at its next checkpoint, as when paused.
    pub fn set_manual(&self, manual: bool) {
        self.inner.hold.send_modify(|h| h.manual = manual);
    }

    /// Cancels the in-flight action and ends the task at once.
    pub fn stop(&self) {
        self.inner.cancel.cancel();
    }

    pub fn is_paused(&self) -> bool {
        self.inner.hold.borrow().paused
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// The question waiting for a human, if any.
    pub fn pending_guardrail(&self) -> Option<Guardrail> {
        self.inner.guardrail.borrow().as_ref().map(|p| p.guardrail.clone())
    }

    /// Resolves once a question waits for a human (at once if one does).
    pub async fn guardrail_asked(&self) {
        let mut rx = self.inner.guardrail.subscribe();
        // The sender lives as long as `self`, so this only ends when a question is asked.
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Hands a human's answer to the waiting agent; false when nothing was waiting.
    pub fn answer(&self, text: String) -> bool {
        let pending = self.take_pending();
        match pending {
            Some(p) => p.answer.send(text).is_ok(),
            None => false,
        }
    }

    // ---- the agent's side ----

    /// Resolves when the task is stopped.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// A stamp that tells later whether the task was held (paused, or under manual control) since.
    pub fn stamp(&self) -> HoldStamp {
        HoldStamp(self.inner.hold.subscribe())
    }

    /// Between actions: waits while paused or under manual control; fails once stopped.
    pub async fn checkpoint(&self) -> Result<(), AgentError> {
        let mut rx = self.inner.hold.subscribe();
        tokio::select! {
            _ = self.inner.cancel.cancelled() => Err(AgentError::stopped()),
            r = rx.wait_for(|h| !h.paused && !h.manual) => {
                r.map(|_| ()).map_err(|_| AgentError::stopped())?;
                if self.is_stopped() { Err(AgentError::stopped()) } else { Ok(()) }
            }
        }
    }

    /// Runs one action, abandoning it the moment the task is stopped.
    pub async fn act<T, E: Into<AgentError>>(
        &self,
        action: impl Future<Output = Result<T, E>>,
    ) -> Result<T, AgentError> {
        tokio::select! {
            _ = self.inner.cancel.cancelled() => Err(AgentError::stopped()),
            r = action => r.map_err(Into::into),
        }
    }

    /// Runs `work` to its own result, unless the task is stopped first (then `Err(stopped)`).
    pub async fn guard<T>(&self, work: impl Future<Output = T>) -> Result<T, AgentError> {
        tokio::select! {
            _ = self.inner.cancel.cancelled() => Err(AgentError::stopped()),
            r = work => Ok(r),
        }
    }

    /// Asks a human (a guardrail): publishes `guardrail_trigger` and waits for the answer.
    pub async fn ask_human(&self, question: &str) -> Result<String, AgentError> {
        self.ask(Guardrail::human_input_needed(self.inner.sink.mask(question))).await
    }

    /// Asks a person to pass a human check (a `human_verification_needed` guardrail) and waits for the answer.
    pub async fn ask_verification(&self, value: &str) -> Result<String, AgentError> {
        self.ask(Guardrail::human_verification_needed(self.inner.sink.mask(value))).await
    }

    async fn ask(&self, guardrail: Guardrail) -> Result<String, AgentError> {
        let (tx, rx) = oneshot::channel();
        self.inner.guardrail.send_replace(Some(Pending { guardrail: guardrail.clone(), answer: tx }));
        self.inner.sink.emit(TaskEvent::GuardrailTrigger(guardrail));
        let answer = tokio::select! {
            _ = self.inner.cancel.cancelled() => Err(AgentError::stopped()),
            a = rx => a.map_err(|_| AgentError::stopped()),
        };
        self.take_pending();
        // A human who answers with a secret's value hands the model its name instead.
        answer.map(|a| self.inner.sink.mask(&a))
    }

    /// Takes the waiting question (and its answer channel), if any, without waking anyone for nothing.
    fn take_pending(&self) -> Option<Pending> {
        let mut taken = None;
        self.inner.guardrail.send_if_modified(|p| {
            taken = p.take();
            taken.is_some()
        });
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::broadcast;
    use webpilot_core::TaskId;

    fn control() -> TaskControl {
        let (bus, _) = broadcast::channel(8);
        TaskControl::new(EventSink::new(TaskId::generate(), bus, Default::default()))
    }

    #[tokio::test]
    async fn checkpoint_waits_while_paused_and_fails_when_stopped() {
        let c = control();
        c.pause();
        let waiting = tokio::time::timeout(Duration::from_millis(50), c.checkpoint()).await;
        assert!(waiting.is_err(), "a paused task must wait");
        c.resume();
        assert!(c.checkpoint().await.is_ok());
        c.stop();
        assert_eq!(c.checkpoint().await.unwrap_err(), AgentError::stopped());
    }

    #[test]
    fn a_stamp_tells_whether_the_task_was_held_since() {
        let c = control();
        let stamp = c.stamp();
        assert!(stamp.unheld());
        c.pause();
        c.resume();
        assert!(!stamp.unheld(), "a pause in between, however short");
        let stamp = c.stamp();
        c.set_manual(true);
        assert!(!stamp.unheld());
    }

    #[tokio::test]
    async fn a_guardrail_is_answered() {
        let c = control();
        let asker = c.clone();
        let task = webpilot_tasks::spawn_owned("test guardrail", async move { asker.ask_human("which plan?").await });
        c.guardrail_asked().await;
        assert_eq!(c.pending_guardrail().unwrap().value, "which plan?");
        assert!(c.answer("pro".into()));
        assert_eq!(task.await.unwrap().unwrap(), "pro");
        assert!(!c.answer("again".into()));
    }
}
