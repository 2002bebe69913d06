//! webpilot: assembles the service (store, browser pool, agent, sessions, HTTP API) from its
//! configuration, and serves it until told to stop. `main.rs` adds the command line and admin commands.

pub mod admin;
pub mod config;
mod data_dir;
mod keys;
mod node;
mod parts;
mod purge;
pub mod telemetry;

use config::{ServeConfig, StoreConfig};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use webpilot_api::{ApiConfig, AppState, McpLimits, SocketRegistry};
use webpilot_core::proxies::OperatorProxies;
use webpilot_liveview::{LiveView, LiveViewConfig, WhepConfig, WhepViewers};
use webpilot_sessions::SessionManager;
use webpilot_store::Store;
use webpilot_tasks::Tasks;

/// Errors that stop the service from starting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("store: {0}")]
    Store(#[from] webpilot_store::StoreError),
    #[error("model: {0}")]
    Llm(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("browser: {0}")]
    Browser(#[from] webpilot_browser::SandboxError),
    #[error("Redis: {0}")]
    Redis(#[from] webpilot_cluster::ClusterError),
    #[error("cannot read or create the node id {path}: {source}")]
    NodeId { path: std::path::PathBuf, source: std::io::Error },
    #[error("cannot read or create the stream secret {path}: {source}")]
    StreamSecret { path: std::path::PathBuf, source: std::io::Error },
    #[error("the profile key: {0}")]
    ProfileKey(#[from] webpilot_sessions::ProfileKeyError),
    #[error("cannot make the data directory {path} private: {source}")]
    DataDir { path: std::path::PathBuf, source: std::io::Error },
    #[error("the proxies: {0}")]
    Proxies(String),
    #[error("the object store: {0}")]
    ObjectStore(#[from] webpilot_blobs::BlobError),
    #[error("--captcha-solver-url: {0}")]
    CaptchaSolver(String),
}

/// A running service.
pub struct RunningApp {
    pub addr: SocketAddr,
    pub store: Store,
    pub manager: SessionManager,
    pub sockets: Arc<SocketRegistry>,
    /// The feeds of watched sessions (tests look at how many run).
    pub live_view: Arc<LiveView>,
    pub whep: Arc<WhepViewers>,
    /// Where `/metrics` is served when it has a listener of its own (`--metrics-listen`).
    pub metrics_addr: Option<SocketAddr>,
    /// This node's place in the cluster.
    pub cluster: webpilot_cluster::Membership,
    /// The background work, stopped and waited for in order (see `shutdown`).
    tasks: ServiceTasks,
    server: Option<tokio::task::JoinHandle<()>>,
    /// The recorders of recorded sessions (tests purge through them).
    pub recorders: Arc<webpilot_recordings::Recorders>,
}

impl RunningApp {
    /// Graceful stop: stops accepting requests, ends every session, closes the browsers and the store.
    pub async fn shutdown(mut self) {
        self.sockets.close().await;
        self.tasks.root.stop();
        self.wait().await;
        self.tasks.serving.wait().await;
        self.manager.shutdown().await;
        // The sessions have ended: their recordings are being written out.
        self.recorders.wait().await;
        // Messages not yet delivered stay in the outbox for the next start (or another node).
        self.tasks.webhooks.wait().await;
        self.tasks.background.wait().await;
        self.manager.pool().shutdown().await;
        self.cluster.leave().await;
        self.store.close().await;
    }

    /// Resolves when the server task ends (after a stop signal).
    pub async fn wait(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }

    pub fn stop_token(&self) -> CancellationToken {
        self.tasks.root.stop_token()
    }

    /// The service's own group of tasks (told to stop at the stop signal; not waited for).
    pub fn tasks(&self) -> Tasks {
        self.tasks.root.clone()
    }
}

/// The service's background work, in groups that one stop signal (`root`) tells to stop and that
/// `RunningApp::shutdown` waits for one by one, in the order the parts depend on each other.
struct ServiceTasks {
    root: Tasks,
    /// The HTTP servers (`/metrics` on a listener of its own) and the rate limiter's pruner.
    serving: Tasks,
    /// The webhook delivery worker and its deliveries in flight.
    webhooks: Tasks,
    /// The purges, the node's heartbeat and the announcements of lost sessions.
    background: Tasks,
    /// The browser pool's disposals of contexts (waited for by `BrowserPool::shutdown`, before its
    /// processes stop).
    browsers: Tasks,
}

impl ServiceTasks {
    fn new() -> ServiceTasks {
        let root = Tasks::new();
        let (serving, webhooks, background, browsers) = (root.child(), root.child(), root.child(), root.child());
        ServiceTasks { serving, webhooks, background, browsers, root }
    }
}

/// Opens the store (recovering tasks cut off by a crash), builds everything and starts serving.
pub async fn start(serve: &ServeConfig, store_cfg: &StoreConfig) -> Result<RunningApp, StartError> {
    let parts::OpenedStore { store, root_keys, blobs, node_id } = parts::open_store(serve, store_cfg).await?;
    let listener =
        TcpListener::bind(serve.listen).await.map_err(|source| StartError::Listen { addr: serve.listen, source })?;
    let addr = listener.local_addr().map_err(|source| StartError::Listen { addr: serve.listen, source })?;
    let tasks = ServiceTasks::new();
    let pool = parts::browser_pool(serve, tasks.browsers.clone())?;
    let profiles = root_keys.profiles(serve)?;
    let proxies = OperatorProxies::new(&serve.proxies).map_err(StartError::Proxies)?;
    if store_cfg.is_shared() && serve.profile_key.is_none() {
        tracing::warn!(
            "a shared database without --profile-key: this node seals profiles with its own profile.key, which \
             the other nodes cannot open; give every node the same --profile-key"
        );
    }
    let agent = parts::build_agent(serve)?;
    tracing::info!(agent = agent.name(), "agent ready");
    let human_checks = parts::captcha_solver(serve).await?;
    let files = purge::file_store(&store, &store_cfg.data_dir, blobs.clone(), &node_id)?;
    let config = parts::session_config(serve, store_cfg, &node_id, profiles, human_checks, proxies);
    let manager = SessionManager::new(store.clone(), pool, agent, config, files.clone());
    let public_url =
        serve.public_url.clone().unwrap_or_else(|| format!("http://{addr}")).trim_end_matches('/').to_owned();
    let redis = match serve.redis_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => Some(webpilot_cluster::RedisLink::connect(url).await?),
        None => None,
    };
    let rate = parts::rate_limiter(serve, redis.as_ref());
    let keys = node::SharedKeys::load(&store).await?;
    let sockets = Arc::new(SocketRegistry::new(keys.socket));
    let stop = tasks.root.stop_token();
    let events = redis.as_ref().map(|link| webpilot_cluster::EventFanout::new(link.clone(), &serve.redis_prefix));
    if let Some(fanout) = events.clone() {
        manager.add_event_hook(Arc::new(move |session, rx| fanout.publish_all(session.to_string(), rx)));
    }
    manager.watch_accounts(Duration::from_millis(serve.account_check_ms));
    let (hook_store, hook_url) = (store.clone(), public_url.clone());
    manager.add_event_hook(Arc::new(move |session, rx| {
        webpilot_webhooks::follow_guardrails(hook_store.clone(), hook_url.clone(), session, rx)
    }));
    let webhook_config = webpilot_webhooks::WorkerConfig {
        schedule: serve.webhook_retry_schedule.clone(),
        allow: serve.egress_allow.clone().into(),
        ..Default::default()
    };
    webpilot_webhooks::spawn_worker(store.clone(), webhook_config, &tasks.webhooks);
    let recording_node = node_id.clone();
    purge::spawn(files, Duration::from_secs(serve.file_retention_hours * 3600), &tasks.background);
    let cluster = node::join(serve, &store, node_id, addr, manager.clone(), events.clone(), &tasks.background).await?;
    let stream_key = parts::stream_key(&store, &store_cfg.data_dir).await?;
    let live_view = Arc::new(LiveView::new(LiveViewConfig::default()));
    let recordings_dir = store_cfg.data_dir.join("recordings");
    let recorders =
        parts::recorders(live_view.clone(), &store, recordings_dir.clone(), recording_node, blobs.clone()).await?;
    manager.add_record_hook(recorders.hook());
    match store.cache_purge_expired().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(entries = n, "expired action cache entries were removed"),
        Err(e) => tracing::warn!(error = %e, "removing expired action cache entries failed"),
    }
    recorders.purge_every(Duration::from_secs(serve.recording_retention_days * 86_400), &tasks.background);
    let mut whep_config = WhepConfig::default();
    if let Some(ip) = serve.webrtc_ip {
        whep_config.candidate_ip = ip;
    }
    let whep = Arc::new(WhepViewers::new(whep_config));
    let state = AppState {
        manager: manager.clone(),
        store: store.clone(),
        rate: rate.clone(),
        sockets: sockets.clone(),
        live_view: live_view.clone(),
        whep: whep.clone(),
        stream_key: Arc::new(stream_key),
        cdp: Arc::default(),
        config: Arc::new(api_config(serve, public_url, stop.clone(), recordings_dir, blobs)),
        metrics: webpilot_api::metrics::install(),
        redis,
        events,
        node_key: keys.node,
        cluster: cluster.clone(),
    };
    let metrics_addr = match serve.metrics_listen {
        Some(at) => Some(serve_metrics(at, state.clone(), &tasks.serving).await?),
        None => None,
    };
    tasks.serving.spawn_until_stopped("rate-limit pruner", async move {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            rate.prune();
        }
    });
    let server = serve_http(listener, state, stop, manager.clone(), &tasks.serving);
    tracing::info!(%addr, "webpilot listening");
    Ok(RunningApp {
        addr,
        store,
        manager,
        sockets,
        live_view,
        whep,
        metrics_addr,
        cluster,
        tasks,
        server: Some(server),
        recorders,
    })
}

/// The API's settings.
fn api_config(
    serve: &ServeConfig,
    public_url: String,
    shutdown: CancellationToken,
    recordings_dir: std::path::PathBuf,
    blobs: Option<webpilot_blobs::Blobs>,
) -> ApiConfig {
    ApiConfig {
        mcp_allowed_hosts: mcp_hosts(&serve.mcp_allowed_hosts, &public_url),
        public_url,
        chat_keep_alive: Duration::from_millis(serve.chat_keep_alive_ms),
        mcp_limits: McpLimits {
            per_user: usize::try_from(serve.max_mcp_sessions_per_user).unwrap_or(usize::MAX),
            total: usize::try_from(serve.max_mcp_sessions).unwrap_or(usize::MAX),
            idle: Duration::from_millis(serve.mcp_idle_timeout_ms),
        },
        shutdown,
        metrics_on_main: serve.metrics_listen.is_none(),
        egress_allow: serve.egress_allow.clone().into(),
        recordings_dir,
        blobs,
    }
}

/// Serves the API on `listener` (a task of `tasks`) until `stop`; at the stop signal the sessions start
/// ending at once (their running tasks recorded as interrupted), so requests waiting inline for a task
/// answer now instead of draining for up to the 50 s inline wait before any session is ended.
fn serve_http(
    listener: TcpListener,
    state: AppState,
    stop: CancellationToken,
    sessions: SessionManager,
    tasks: &Tasks,
) -> tokio::task::JoinHandle<()> {
    let router = webpilot_api::router(state);
    tasks.spawn("http server", async move {
        let stopping = async move {
            stop.cancelled().await;
            sessions.begin_shutdown();
        };
        if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(stopping).await {
            tracing::error!(error = %e, "the HTTP server failed");
        }
    })
}

/// Serves `/metrics` alone on `at` until `tasks` is told to stop (a task of `tasks`); returns the bound address.
async fn serve_metrics(at: SocketAddr, state: AppState, tasks: &Tasks) -> Result<SocketAddr, StartError> {
    let listener = TcpListener::bind(at).await.map_err(|source| StartError::Listen { addr: at, source })?;
    let addr = listener.local_addr().map_err(|source| StartError::Listen { addr: at, source })?;
    let stop = tasks.stop_token();
    tasks.spawn("metrics server", async move {
        let router = webpilot_api::metrics::router(state);
        if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await {
            tracing::error!(error = %e, "the metrics server failed");
        }
    });
    tracing::info!(%addr, "metrics listening");
    Ok(addr)
}

/// The MCP endpoint's allowed Host values: the configured ones plus the public URL's host (and
/// host:port); `*` anywhere means any Host (an empty list for rmcp).
fn mcp_hosts(configured: &[String], public_url: &str) -> Vec<String> {
    if configured.iter().any(|h| h.trim() == "*") {
        return Vec::new();
    }
    let mut hosts: Vec<String> = configured.iter().map(|h| h.trim().to_owned()).filter(|h| !h.is_empty()).collect();
    if let Some(rest) = public_url.split("://").nth(1) {
        let authority = rest.split('/').next().unwrap_or_default();
        let host = authority.rsplit_once(':').map(|(h, _)| h).unwrap_or(authority);
        for h in [authority, host] {
            if !h.is_empty() && !hosts.iter().any(|x| x == h) {
                hosts.push(h.to_owned());
            }
        }
    }
    hosts
}
