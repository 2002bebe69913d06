//! Where an agent's events go: the session's event bus, tagged with the task id.

use tokio::sync::broadcast;
use webpilot_core::events::{SessionEvent, TaskEvent};
use webpilot_core::TaskId;

#[derive(Clone)]
pub struct EventSink {
    task_id: TaskId,
    bus: broadcast::Sender<SessionEvent>,
}

impl EventSink {
    pub fn new(task_id: TaskId, bus: broadcast::Sender<SessionEvent>) -> Self {
        EventSink { task_id, bus }
    }

    /// Publishes an event; having no listener is fine.
    pub fn emit(&self, event: TaskEvent) {
        let _ = self.bus.send(SessionEvent::Task { task_id: self.task_id.to_string(), event });
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
