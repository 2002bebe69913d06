//! Who owns each live MCP session, how many each user and the node hold (the caps of `McpLimits`),
//! and which JSON-RPC request ids are in flight on each session.
//!
//! A place is reserved before an `initialize` reaches rmcp and kept by the session it made; the
//! session's end (DELETE, idle expiry, shutdown) gives it back.

use parking_lot::{Mutex, MutexGuard};
use rmcp::transport::streamable_http_server::session::SessionId;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use webpilot_core::UserId;

/// Bounds on live MCP sessions (`--max-mcp-sessions-per-user`, `--max-mcp-sessions`,
/// `--mcp-idle-timeout-ms`).
#[derive(Debug, Clone)]
pub struct McpLimits {
    /// Sessions one user may hold on this node.
    pub per_user: usize,
    /// Sessions this node holds for all users together.
    pub total: usize,
    /// A session with no message for this long ends.
    pub idle: std::time::Duration,
}

/// Why an `initialize` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The user holds `--max-mcp-sessions-per-user` sessions.
    User(usize),
    /// The node holds `--max-mcp-sessions` sessions.
    Node(usize),
}

#[derive(Default)]
struct Entry {
    /// None while its `initialize` is being answered.
    owner: Option<UserId>,
    /// Request ids (as JSON text) sent and not yet answered.
    in_flight: HashSet<String>,
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<SessionId, Entry>,
    /// Places held per user: their sessions plus `initialize`s being answered.
    per_user: HashMap<UserId, usize>,
    /// Places held on the node.
    total: usize,
}

pub struct Registry {
    limits: McpLimits,
    inner: Mutex<Inner>,
}

/// A reserved place; given back when dropped unless a session keeps it.
pub struct Place {
    registry: Arc<Registry>,
    user: UserId,
    kept: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if !self.kept {
            self.registry.lock().release(&self.user);
        }
    }
}

impl Inner {
    fn release(&mut self, user: &UserId) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.per_user.get_mut(user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_user.remove(user);
            }
        }
    }
}

impl Registry {
    pub fn new(limits: McpLimits) -> Arc<Registry> {
        Arc::new(Registry { limits, inner: Mutex::new(Inner::default()) })
    }

    pub fn limits(&self) -> &McpLimits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }

    /// Reserves a place for a new session of `user`, or says which cap is reached.
    pub fn reserve(self: &Arc<Self>, user: &UserId) -> Result<Place, Full> {
        let mut inner = self.lock();
        let held = inner.per_user.get(user).copied().unwrap_or(0);
        if held >= self.limits.per_user {
            return Err(Full::User(self.limits.per_user));
        }
        if inner.total >= self.limits.total {
            return Err(Full::Node(self.limits.total));
        }
        inner.total += 1;
        *inner.per_user.entry(user.clone()).or_insert(0) += 1;
        Ok(Place { registry: self.clone(), user: user.clone(), kept: false })
    }

    /// rmcp made session `id` (its `initialize` is being answered).
    pub fn created(&self, id: &SessionId) {
        self.lock().sessions.insert(id.clone(), Entry::default());
    }

    /// The session `id` answered its `initialize`: it keeps `place` and belongs to its user. A session
    /// that already ended gives the place back.
    pub fn bind(&self, mut place: Place, id: &str) {
        let mut inner = self.lock();
        if let Some(entry) = inner.sessions.get_mut(id).filter(|e| e.owner.is_none()) {
            entry.owner = Some(place.user.clone());
            place.kept = true;
        }
        drop(inner);
    }

    /// The session ended: it is forgotten and its place given back.
    pub fn closed(&self, id: &str) {
        let mut inner = self.lock();
        if let Some(Entry { owner: Some(user), .. }) = inner.sessions.remove(id) {
            inner.release(&user);
        }
    }

    /// Whether `user` owns the live session `id` (an unknown id and another user's are alike).
    pub fn owns(&self, id: &str, user: &UserId) -> bool {
        self.lock().sessions.get(id).and_then(|e| e.owner.as_ref()) == Some(user)
    }

    /// Marks request `request` in flight on session `id`; false when it already is.
    pub fn begin(&self, id: &str, request: &str) -> bool {
        self.lock().sessions.get_mut(id).is_some_and(|e| e.in_flight.insert(request.to_owned()))
    }

    /// Request `request` on session `id` is answered (or was never taken in).
    pub fn answered(&self, id: &str, request: &str) {
        if let Some(entry) = self.lock().sessions.get_mut(id) {
            entry.in_flight.remove(request);
        }
    }

    /// Live sessions (bound or being initialized) and places held on the node.
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.sessions.len(), inner.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn registry(per_user: usize, total: usize) -> Arc<Registry> {
        Registry::new(McpLimits { per_user, total, idle: Duration::from_secs(1) })
    }

    fn session(r: &Arc<Registry>, user: &UserId, id: &str) -> Result<(), Full> {
        let place = r.reserve(user)?;
        r.created(&SessionId::from(id));
        r.bind(place, id);
        Ok(())
    }

    #[test]
    fn places_are_capped_per_user_and_in_all_and_given_back() {
        let r = registry(2, 3);
        let (a, b) = (UserId::from_string("usr_a".to_owned()), UserId::from_string("usr_b".to_owned()));
        session(&r, &a, "s1").unwrap();
        session(&r, &a, "s2").unwrap();
        assert_eq!(session(&r, &a, "s3"), Err(Full::User(2)));
        session(&r, &b, "s4").unwrap();
        assert_eq!(session(&r, &b, "s5"), Err(Full::Node(3)));
        r.closed("s1");
        r.closed("s1");
        session(&r, &b, "s5").unwrap();
        assert!(r.owns("s5", &b) && !r.owns("s5", &a) && !r.owns("s1", &a));
        assert_eq!(r.counts(), (3, 3));
    }

    #[test]
    fn a_place_not_kept_is_given_back() {
        let r = registry(1, 10);
        let a = UserId::from_string("usr_a".to_owned());
        drop(r.reserve(&a).unwrap());
        // A session that ended before its initialize was answered keeps nothing.
        let place = r.reserve(&a).unwrap();
        r.created(&SessionId::from("gone"));
        r.closed("gone");
        r.bind(place, "gone");
        assert_eq!(r.counts(), (0, 0));
        session(&r, &a, "s1").unwrap();
    }

    #[test]
    fn one_request_per_id_is_in_flight() {
        let r = registry(1, 1);
        let a = UserId::from_string("usr_a".to_owned());
        session(&r, &a, "s1").unwrap();
        assert!(r.begin("s1", "5"));
        assert!(!r.begin("s1", "5"));
        assert!(r.begin("s1", "\"5\""));
        r.answered("s1", "5");
        assert!(r.begin("s1", "5"));
        assert!(!r.begin("unknown", "5"));
    }
}
