//! The action trace of a task: each action the model agent carried out, as data, with a locator for
//! the element it acted on (kind + accessible name + the text of its line + a CSS path), so a later
//! task can replay it without the model (`replay.rs`). Typed text is kept as the model wrote it: a
//! secret stays `<secret:NAME>`.

use crate::model::actions::Action;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How to find an element again on a later visit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Locator {
    /// `button`, `link`, `input`, `checkbox`, a role, …
    pub kind: String,
    /// Its accessible name (text or label).
    pub name: String,
    /// The other text of its line on the page (`Product 29 $38.99`), which tells alike elements apart.
    #[serde(default)]
    pub context: String,
    /// A CSS path in its document; empty when it was in a cross-origin frame.
    #[serde(default)]
    pub css: String,
}

/// One step of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStep {
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Locator>,
}

/// The steps of the running task; shared with the runner, which stores them when the task ends.
#[derive(Clone, Default)]
pub struct TraceRecorder(Arc<Mutex<Vec<TraceStep>>>);

impl TraceRecorder {
    pub fn record(&self, step: TraceStep) {
        let mut steps = self.0.lock();
        steps.push(step);
    }

    pub fn steps(&self) -> Vec<TraceStep> {
        self.0.lock().clone()
    }

    /// The trace as stored (JSON), or `None` when nothing was recorded.
    pub fn to_json(&self) -> Option<String> {
        let steps = self.steps();
        if steps.is_empty() {
            None
        } else {
            serde_json::to_string(&steps).ok()
        }
    }
}

/// Reads a stored trace.
pub fn parse(json: &str) -> Result<Vec<TraceStep>, serde_json::Error> {
    serde_json::from_str(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_round_trip_as_json() {
        let r = TraceRecorder::default();
        assert_eq!(r.to_json(), None);
        r.record(TraceStep { action: Action::Navigate { url: "http://a.test/".into() }, target: None });
        r.record(TraceStep {
            action: Action::Type { index: 3, text: "<secret:pw>".into(), press_enter: true },
            target: Some(Locator {
                kind: "input:password".into(),
                name: "Password".into(),
                context: String::new(),
                css: "#pw".into(),
            }),
        });
        let json = r.to_json().expect("json");
        assert!(json.contains("<secret:pw>"));
        assert_eq!(parse(&json).expect("parse"), r.steps());
    }
}
