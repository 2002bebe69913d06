//! What every handler shares.

use crate::ratelimit::RateLimiter;
use crate::socket::SocketRegistry;
use std::sync::Arc;
use webpilot_sessions::SessionManager;
use webpilot_store::Store;

#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The address clients reach this service at (for socketURL, pollUrl, streaming URLs).
    pub public_url: String,
}

#[derive(Clone)]
pub struct AppState {
    pub manager: SessionManager,
    pub store: Store,
    pub rate: Arc<RateLimiter>,
    pub config: Arc<ApiConfig>,
    /// Connected Socket.IO clients.
    pub sockets: Arc<SocketRegistry>,
}
