//! A DevTools client's large commands that Chromium has not answered yet: what makes a command large,
//! and how many of their bytes may wait at once before the relay stops reading the client.

use std::collections::HashMap;

/// A client command this large is parsed and serialized off the runtime's threads, and counted in flight.
pub(super) const LARGE: usize = 1024 * 1024;
/// Bytes of one client's large commands Chromium may have unanswered at once (one bigger passes alone).
const IN_FLIGHT: usize = 16 * 1024 * 1024;

/// Large client commands sent and not answered yet: their bytes and session, by the relay's id.
#[derive(Default)]
pub(super) struct InFlight {
    commands: HashMap<u64, (usize, String)>,
    bytes: usize,
}

impl InFlight {
    /// Command `id` of `bytes`, sent in `session`, waits for its answer.
    pub(super) fn sent(&mut self, id: u64, bytes: usize, session: &str) {
        self.commands.insert(id, (bytes, session.to_owned()));
        self.bytes += bytes;
    }

    /// Whether the relay reads the client's next command: not while `IN_FLIGHT` bytes of its large
    /// commands wait for Chromium's answers, so Chromium (which all sessions share, in order) never holds
    /// more than that of one client's in front of another's.
    pub(super) fn may_read(&self) -> bool {
        self.bytes < IN_FLIGHT
    }

    /// Command `id` was answered.
    pub(super) fn landed(&mut self, id: u64) {
        if let Some((bytes, _)) = self.commands.remove(&id) {
            self.bytes = self.bytes.saturating_sub(bytes);
        }
    }

    /// A DevTools session detached: its unanswered commands never will be.
    pub(super) fn session_gone(&mut self, session: &str) {
        let gone: Vec<u64> = self.commands.iter().filter(|(_, (_, s))| s == session).map(|(id, _)| *id).collect();
        for id in gone {
            self.landed(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_stops_at_the_in_flight_cap_and_resumes_as_answers_land() {
        let mut f = InFlight::default();
        f.sent(1, IN_FLIGHT - 1, "a");
        assert!(f.may_read(), "one byte under the cap");
        f.sent(2, 1, "b");
        assert!(!f.may_read(), "at the cap, the client's next command waits");
        f.landed(2);
        assert!(f.may_read());
        f.sent(3, LARGE, "b");
        f.session_gone("a");
        assert!(f.may_read(), "a detached session's commands never land: they stop counting");
        f.landed(3);
        f.landed(3);
        assert_eq!(f.bytes, 0, "an answer counts once");
    }
}
