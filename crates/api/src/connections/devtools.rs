//! The open DevTools connections (`/cdp/{id}`) per session on this node, and the cap on them. The DevTools
//! route takes a slot for each connection; the slot gives its place back when dropped.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// DevTools connections one session may have open at once.
pub const MAX_CONNECTIONS_PER_SESSION: usize = 4;
/// Open DevTools connections per session on this node.
#[derive(Default)]
pub struct CdpConnections(Mutex<HashMap<String, usize>>);

/// One open connection; its place is given back when dropped.
pub(crate) struct Slot {
    all: Arc<CdpConnections>,
    session: String,
}

impl CdpConnections {
    pub(crate) fn take(self: &Arc<Self>, session: &str) -> Option<Slot> {
        let mut open = self.0.lock();
        let n = open.entry(session.to_owned()).or_default();
        if *n >= MAX_CONNECTIONS_PER_SESSION {
            return None;
        }
        *n += 1;
        Some(Slot { all: self.clone(), session: session.to_owned() })
    }

    /// Connections `session` has open now.
    pub(crate) fn count(&self, session: &str) -> usize {
        self.0.lock().get(session).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.all.0.lock();
        if let Some(n) = open.get_mut(&self.session) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.session);
            }
        }
    }
}
