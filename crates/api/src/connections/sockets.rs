//! The connected Socket.IO sockets (for `GET /start/active-sockets`), the channel's handle to close
//! them at shutdown, and the key of the sessions' socket capabilities. The channel (`socket/`) owns it.

use crate::capability::SocketKey;
use parking_lot::Mutex;
use socketioxide::SocketIo;
use std::collections::BTreeMap;
use tokio::task::AbortHandle;

/// The connected sockets (for `GET /start/active-sockets`), each with the task forwarding its
/// session's events; the Socket.IO handle, to close every socket at shutdown; and the key of the
/// sessions' socket capabilities.
#[derive(Default)]
pub struct SocketRegistry {
    /// By Socket.IO socket id (never shown: with the transport's id it would let anyone post as it).
    sockets: Mutex<BTreeMap<String, Entry>>,
    io: Mutex<Option<SocketIo>>,
    key: SocketKey,
}

struct Entry {
    /// The id `active-sockets` shows: random, it grants nothing.
    public_id: String,
    session_id: String,
    forwarder: AbortHandle,
}

impl SocketRegistry {
    /// A registry whose socket tokens are signed with `key` (shared by the nodes).
    pub fn new(key: SocketKey) -> Self {
        SocketRegistry { sockets: Mutex::default(), io: Mutex::default(), key }
    }

    /// Public ids of the connected sockets, sorted. They are not the Socket.IO or Engine.IO ids.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.sockets.lock().values().map(|e| e.public_id.clone()).collect();
        ids.sort();
        ids
    }

    /// The `socketURL` of a session: the public base with the session's capability token.
    pub fn socket_url(&self, public_url: &str, session_id: &str) -> String {
        format!("{public_url}/?token={}", self.key.token(session_id))
    }

    pub(crate) fn add(&self, id: String, session_id: String, forwarder: AbortHandle) {
        let public_id = format!("sock_{}", uuid::Uuid::new_v4().simple());
        let mut m = self.sockets.lock();
        m.insert(id, Entry { public_id, session_id, forwarder });
    }

    pub(crate) fn remove(&self, id: &str) {
        if let Some(entry) = self.sockets.lock().remove(id) {
            entry.forwarder.abort();
            tracing::debug!(session = %entry.session_id, "socket forgotten");
        }
    }

    /// The Socket.IO handle of the channel, kept to close every socket at shutdown.
    pub(crate) fn serve_with(&self, io: SocketIo) {
        let mut slot = self.io.lock();
        *slot = Some(io);
    }

    /// Whether `token` is the socket capability of session `session_id`.
    pub(crate) fn verify(&self, session_id: &str, token: &str) -> bool {
        self.key.verify(session_id, token)
    }

    /// Disconnects every socket (graceful shutdown); the channel accepts no one afterwards.
    pub async fn close(&self) {
        let io = self.io.lock().take();
        if let Some(io) = io {
            io.close().await;
        }
    }
}
