//! Where an agent's events go: the session's event bus, tagged with the task id, with every secret
//! value masked to `<secret:NAME>` on the way out.

use tokio::sync::broadcast;
use webpilot_core::events::{Guardrail, SessionEvent, TaskEvent};
use webpilot_core::secrets::Secrets;
use webpilot_core::TaskId;

#[derive(Clone)]
pub struct EventSink {
    task_id: TaskId,
    bus: broadcast::Sender<SessionEvent>,
    secrets: Secrets,
}

impl EventSink {
    pub fn new(task_id: TaskId, bus: broadcast::Sender<SessionEvent>, secrets: Secrets) -> Self {
        EventSink { task_id, bus, secrets }
    }

    /// Publishes an event, secrets masked; having no listener is fine.
    pub fn emit(&self, event: TaskEvent) {
        let event = if self.secrets.is_empty() { event } else { self.masked(event) };
        let _ = self.bus.send(SessionEvent::Task { task_id: self.task_id.to_string(), event });
    }

    /// `text` with every secret value masked.
    pub fn mask(&self, text: &str) -> String {
        self.secrets.mask(text)
    }

    fn masked(&self, event: TaskEvent) -> TaskEvent {
        let s = &self.secrets;
        match event {
            TaskEvent::Agent { content } => TaskEvent::Agent { content: s.mask(&content) },
            TaskEvent::Action { name, detail } => TaskEvent::Action { name, detail: s.mask_json(&detail) },
            TaskEvent::ResponseUpdate { message } => TaskEvent::ResponseUpdate { message: s.mask(&message) },
            TaskEvent::GuardrailTrigger(g) => {
                TaskEvent::GuardrailTrigger(Guardrail { kind: g.kind, value: s.mask(&g.value) })
            }
            TaskEvent::Error { error, code } => TaskEvent::Error { error: s.mask(&error), code },
            // Completed is published by the runner from an already masked result.
            other @ TaskEvent::Completed { .. } => other,
        }
    }

    pub fn agent(&self, content: impl Into<String>) {
        self.emit(TaskEvent::Agent { content: content.into() });
    }

    pub fn action(&self, name: &str, detail: serde_json::Value) {
        self.emit(TaskEvent::Action { name: name.to_owned(), detail });
    }

    pub fn update(&self, message: impl Into<String>) {
        self.emit(TaskEvent::ResponseUpdate { message: message.into() });
    }
}
