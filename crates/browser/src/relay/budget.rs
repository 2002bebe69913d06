//! What one DevTools client may have in front of the others on the shared DevTools pipe: its large
//! commands (1 MiB or more) count until Chromium answers them, and past [`IN_FLIGHT`] bytes its next large
//! command is held back (one bigger passes alone), so Chromium, which handles the pipe in order for every
//! session, never has more than that of one client's before another's. Small commands are never held
//! back: a large command awaiting what a later small one does (a promise it resolves) is not stuck.

use super::queue::Queued;
use std::collections::HashMap;

/// A command this large or larger counts in flight.
pub(super) const LARGE: usize = 1024 * 1024;
/// Bytes of one client's large commands Chromium may have unanswered at once.
const IN_FLIGHT: usize = 16 * 1024 * 1024;

#[derive(Default)]
pub(super) struct Budget {
    /// Large commands sent and not answered yet: their bytes and DevTools session, by the relay's id.
    sent: HashMap<u64, (usize, String)>,
    bytes: usize,
    /// The client's next large command, read while the budget was spent (its bytes still count against
    /// the client's queue); nothing more is read from the client until it is sent.
    held: Option<Queued>,
}

impl Budget {
    /// Large command `id` was sent in `session`.
    pub(super) fn sent(&mut self, id: u64, bytes: usize, session: &str) {
        self.sent.insert(id, (bytes, session.to_owned()));
        self.bytes += bytes;
    }

    /// Command `id` was answered (or never will be).
    pub(super) fn landed(&mut self, id: u64) {
        if let Some((bytes, _)) = self.sent.remove(&id) {
            self.bytes = self.bytes.saturating_sub(bytes);
        }
    }

    /// DevTools session `session` detached: its unanswered commands never will be.
    pub(super) fn session_gone(&mut self, session: &str) {
        let gone: Vec<u64> = self.sent.iter().filter(|(_, (_, s))| s == session).map(|(id, _)| *id).collect();
        for id in gone {
            self.landed(id);
        }
    }

    /// Whether the relay reads the client's next command: not while a large one is held back.
    pub(super) fn may_read(&self) -> bool {
        self.held.is_none()
    }

    /// Keeps `message` back when it is large and the budget is spent; gives it back otherwise.
    pub(super) fn hold(&mut self, message: Queued) -> Option<Queued> {
        if message.text.len() >= LARGE && self.bytes >= IN_FLIGHT {
            self.held = Some(message);
            return None;
        }
        Some(message)
    }

    /// The held command, once the budget has room for it again.
    pub(super) fn release(&mut self) -> Option<Queued> {
        if self.bytes < IN_FLIGHT {
            return self.held.take();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{Budget, IN_FLIGHT, LARGE};
    use crate::relay::queue;

    #[tokio::test]
    async fn small_commands_pass_a_spent_budget_and_a_large_one_waits_for_room() {
        let (tx, mut rx) = queue::queue(4 * IN_FLIGHT);
        let mut budget = Budget::default();
        budget.sent(1, IN_FLIGHT + 1, "s");
        for text in ["small".to_owned(), "x".repeat(LARGE)] {
            tx.try_send(text).expect("queued");
        }
        let small = rx.recv().await.expect("small");
        assert!(budget.hold(small).is_some(), "a small command is never held back");
        assert!(budget.may_read());
        let large = rx.recv().await.expect("large");
        assert!(budget.hold(large).is_none(), "held back");
        assert!(!budget.may_read() && budget.release().is_none());
        budget.landed(1);
        assert_eq!(budget.release().map(|q| q.text.len()), Some(LARGE));
        assert!(budget.may_read());
        budget.sent(2, IN_FLIGHT, "s");
        budget.session_gone("s");
        assert!(budget.bytes == 0 && budget.sent.is_empty());
    }
}
