//! rmcp's in-memory `LocalSessionManager` with the registry kept in step: a session rmcp makes is
//! recorded, a session that ends (DELETE, idle expiry, shutdown) is forgotten and its place given back,
//! and a request's id stops being in flight once the handler's answer is routed to its stream.

use crate::connections::mcp::Registry;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use rmcp::transport::{Transport, WorkerTransport};
use rmcp::RoleServer;
use std::future::Future;
use std::sync::Arc;

/// The JSON text of a request id, as the guard keys it (`5`, `"a"`).
pub fn id_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

pub struct BoundSessions {
    inner: LocalSessionManager,
    registry: Arc<Registry>,
}

impl BoundSessions {
    pub fn new(registry: Arc<Registry>) -> BoundSessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(registry.limits().idle);
        BoundSessions { inner, registry }
    }
}

/// A session's transport that tells the registry when an answer has been routed.
pub struct Tracked {
    inner: WorkerTransport<LocalSessionWorker>,
    session: SessionId,
    registry: Arc<Registry>,
}

impl Transport<RoleServer> for Tracked {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(id_key(&r.id)),
            JsonRpcMessage::Error(e) => e.id.as_ref().map(id_key),
            _ => None,
        };
        let sent = self.inner.send(item);
        let (registry, session) = (self.registry.clone(), self.session.clone());
        async move {
            // Once sent, the session worker has routed the answer and forgotten the id.
            let result = sent.await;
            if let Some(id) = answered {
                registry.answered(&session, &id);
            }
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl SessionManager for BoundSessions {
    type Error = LocalSessionManagerError;
    type Transport = Tracked;

    async fn create_session(&self) -> Result<(SessionId, Tracked), Self::Error> {
        let (id, inner) = self.inner.create_session().await?;
        self.registry.created(&id);
        Ok((id.clone(), Tracked { inner, session: id, registry: self.registry.clone() }))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.registry.closed(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}
