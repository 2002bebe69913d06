//! What every handler shares. It sits below the handlers: the registries it holds live in
//! `connections/`, each owned by its channel, and none of them reaches back into a route.

use crate::connections::devtools::CdpConnections;
use crate::connections::mcp::McpLimits;
use crate::connections::sockets::SocketRegistry;
use crate::ratelimit::limiter::RateLimiter;
use crate::stream_token::StreamKey;
use std::sync::Arc;
use webpilot_liveview::{LiveView, WhepViewers};
use webpilot_sessions::SessionManager;
use webpilot_store::Store;

#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The address clients reach this service at (for socketURL, pollUrl, streaming URLs).
    pub public_url: String,
    /// How often a streaming chat completion sends an SSE `: keep-alive` comment while its task runs.
    pub chat_keep_alive: std::time::Duration,
    /// `Host` header values the MCP endpoint accepts (DNS-rebinding protection); empty accepts any.
    pub mcp_allowed_hosts: Vec<String>,
    /// Bounds on the MCP sessions this node keeps.
    pub mcp_limits: McpLimits,
    /// Cancelled when the service stops: ends long-lived MCP streams so a graceful stop can finish.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Serve `/metrics` on the main listener (off when it has a listener of its own).
    pub metrics_on_main: bool,
    /// The operator's `--egress-allow` entries: the only loopback or private webhook targets allowed.
    pub egress_allow: std::sync::Arc<[webpilot_core::egress::AllowEntry]>,
    /// Where recordings are kept: `<dir>/<sessionId>/video.webm` and its timeline.
    pub recordings_dir: std::path::PathBuf,
    /// The object store finished recordings are uploaded to (`--object-store`), if any.
    pub blobs: Option<webpilot_blobs::Blobs>,
}

#[derive(Clone)]
pub struct AppState {
    pub manager: SessionManager,
    pub store: Store,
    pub rate: Arc<RateLimiter>,
    pub config: Arc<ApiConfig>,
    /// Connected Socket.IO clients.
    pub sockets: Arc<SocketRegistry>,
    /// The feeds of watched sessions.
    pub live_view: Arc<LiveView>,
    /// The WebRTC (WHEP) viewers.
    pub whep: Arc<WhepViewers>,
    /// Signs and checks the live-view URLs' tokens.
    pub stream_key: Arc<StreamKey>,
    /// Open DevTools connections per session (`/cdp/{id}`).
    pub cdp: Arc<CdpConnections>,
    /// Renders `/metrics` (none when metrics are off).
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// The link to Redis when nodes share one (`--redis-url`).
    pub redis: Option<webpilot_cluster::RedisLink>,
    /// Session events across nodes (with Redis).
    pub events: Option<webpilot_cluster::EventFanout>,
    /// What nodes present to each other on internal calls.
    pub node_key: webpilot_cluster::NodeKey,
    /// This node's place in the cluster (where sessions live, the others' free capacity).
    pub cluster: webpilot_cluster::Membership,
}
