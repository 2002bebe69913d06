//! webpilot: assembles the service (store, browser pool, agent, sessions, HTTP API) from its
//! configuration, and serves it until told to stop. `main.rs` adds the command line and admin commands.

pub mod admin;
pub mod config;
mod data_dir;
mod keys;
mod node;
mod purge;
pub mod telemetry;

use config::{ServeConfig, StoreConfig};
use keys::RootKeys;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use webpilot_agent::model::{ModelAgent, ModelAgentSettings};
use webpilot_agent::planner::OfflinePlanner;
use webpilot_agent::Agent;
use webpilot_api::{ApiConfig, AppState, McpLimits, RateLimiter, SocketRegistry, StreamKey};
use webpilot_browser::{BrowserPool, BrowserSettings};
use webpilot_core::proxies::OperatorProxies;
use webpilot_core::usage::Prices;
use webpilot_liveview::{LiveView, LiveViewConfig, WhepConfig, WhepViewers};
use webpilot_llm::{LlmConfig, Provider};
use webpilot_sessions::{SessionConfig, SessionManager};
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

/// Sessions per Chromium process when `--browser-processes` is left to choose.
const SESSIONS_PER_PROCESS: usize = 16;

fn browser_processes(serve: &ServeConfig) -> usize {
    match serve.browser_processes {
        0 => serve.max_sessions.div_ceil(SESSIONS_PER_PROCESS).max(1),
        n => n,
    }
}

/// Opens the store (recovering tasks cut off by a crash), builds everything and starts serving.
pub async fn start(serve: &ServeConfig, store_cfg: &StoreConfig) -> Result<RunningApp, StartError> {
    // Checked before anything starts: a store that cannot be used stops the start with its reason.
    let blobs = match &serve.object_store {
        Some(address) => {
            let blobs = webpilot_blobs::Blobs::open(address, &serve.object_store_options)?;
            tracing::info!(store = blobs.address(), "finished recordings and session files go to the object store");
            Some(blobs)
        }
        None => None,
    };
    crate::data_dir::secure(&store_cfg.data_dir)
        .map_err(|source| StartError::DataDir { path: store_cfg.data_dir.clone(), source })?;
    let root_keys = RootKeys::load(serve, &store_cfg.data_dir)?;
    let store = store_cfg.open().await?.with_sealer(root_keys.sealer()?);
    let resealed = store.reseal_secrets().await?;
    if resealed > 0 {
        tracing::info!(secrets = resealed, "sealed the database's secrets under the current key");
    }
    let node_id = node::node_id(serve, &store_cfg.data_dir)?;
    let (tasks, sessions) = store.recover_interrupted(&node_id).await?;
    if tasks + sessions > 0 {
        tracing::warn!(
            tasks,
            sessions,
            "recovered work cut off by an unexpected stop: tasks failed with TASK_INTERRUPTED"
        );
    }
    let listener =
        TcpListener::bind(serve.listen).await.map_err(|source| StartError::Listen { addr: serve.listen, source })?;
    let addr = listener.local_addr().map_err(|source| StartError::Listen { addr: serve.listen, source })?;
    let browser = webpilot_browser::identity(&serve.browser_user, serve.browser_no_sandbox)?;
    let tasks = ServiceTasks::new();
    let settings = BrowserSettings {
        executable: serve.chromium.clone(),
        processes: browser_processes(serve),
        max_sessions: serve.max_sessions,
        navigation_timeout: Duration::from_millis(serve.navigation_timeout_ms),
        no_sandbox: browser.no_sandbox,
        run_as: browser.run_as,
        egress_allow: serve.egress_allow.clone().into(),
        max_tabs: serve.max_tabs_per_session as usize,
        warm_contexts: serve.warm_contexts.min(serve.max_sessions),
        session_memory_mib: serve.session_memory_mib,
        endpoints: serve.browser_endpoints.iter().map(|e| e.trim().to_owned()).filter(|e| !e.is_empty()).collect(),
        egress_listen: serve.egress_listen,
        max_file_bytes: serve.max_file_bytes,
        max_session_file_bytes: serve.max_session_file_bytes,
        trusted_keys: serve.browser_trust_spki.clone(),
        ..BrowserSettings::default()
    };
    let pool = BrowserPool::new(settings, tasks.browsers.clone());
    let profiles = root_keys.profiles(serve)?;
    let proxies = OperatorProxies::new(&serve.proxies).map_err(StartError::Proxies)?;
    if store_cfg.is_shared() && serve.profile_key.is_none() {
        tracing::warn!(
            "a shared database without --profile-key: this node seals profiles with its own profile.key, which \
             the other nodes cannot open; give every node the same --profile-key"
        );
    }
    let agent = build_agent(serve)?;
    tracing::info!(agent = agent.name(), "agent ready");
    let human_checks = captcha_solver(serve).await?;
    let files = purge::file_store(&store, &store_cfg.data_dir, blobs.clone(), &node_id)?;
    let manager = SessionManager::new(
        store.clone(),
        pool,
        agent,
        SessionConfig {
            task_wait: Duration::from_millis(serve.task_wait_ms),
            idle_timeout: Duration::from_millis(serve.idle_timeout_ms),
            reconnect_window: Duration::from_millis(serve.instance_reconnect_window_ms),
            max_sessions_per_user: serve.max_sessions_per_user as usize,
            task_hold_micros: webpilot_core::usage::usd_to_micros(serve.task_hold_usd.max(0.0)),
            node_id: node_id.clone(),
            shared_limits: store_cfg.is_shared(),
            record_sessions: serve.record_sessions,
            recording_quota_bytes: quota(serve.recording_quota),
            storage_quota_bytes: quota(serve.storage_quota),
            profiles,
            human_checks,
            proxies: Arc::new(proxies),
            cache_ttl: Duration::from_secs(serve.cache_ttl_days * 86_400),
            prices: Prices {
                input_per_million: serve.price_input_per_million,
                output_per_million: serve.price_output_per_million,
                compute_per_second: serve.price_compute_per_second,
                session_per_second: serve.price_session_per_second,
            },
            ..SessionConfig::default()
        },
        files.clone(),
    );
    let public_url =
        serve.public_url.clone().unwrap_or_else(|| format!("http://{addr}")).trim_end_matches('/').to_owned();
    let redis = match serve.redis_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => Some(webpilot_cluster::RedisLink::connect(url).await?),
        None => None,
    };
    let rate_window = Duration::from_millis(serve.rate_window_ms);
    let rate = Arc::new(match &redis {
        Some(link) => RateLimiter::shared(
            serve.rate_limit,
            rate_window,
            webpilot_cluster::SharedWindow::new(link.clone(), &serve.redis_prefix),
        ),
        None => RateLimiter::new(serve.rate_limit, rate_window),
    });
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
    let mcp_allowed_hosts = mcp_hosts(&serve.mcp_allowed_hosts, &public_url);
    let secret = store_cfg.data_dir.join("stream.key");
    let local = StreamKey::load_or_create(&secret)
        .map_err(|source| StartError::StreamSecret { path: secret.clone(), source })?;
    // Every node signs and checks links with one key (a recording's share link is served by any node):
    // the first node's, kept in the database beside the socket key.
    let shared = store.shared_secret("stream", &local.to_hex()).await?;
    let stream_key = StreamKey::from_hex(&shared)
        .map_err(|_| webpilot_store::StoreError::Corrupt("the shared stream key".into()))?;
    let live_view = Arc::new(LiveView::new(LiveViewConfig::default()));
    let recordings_dir = store_cfg.data_dir.join("recordings");
    let recorders = webpilot_recordings::Recorders::new(
        live_view.clone(),
        store.clone(),
        recordings_dir.clone(),
        recording_node,
        blobs.clone(),
    );
    let settled = recorders.settle_unfinished().await?;
    if settled > 0 {
        tracing::warn!(recordings = settled, "recordings cut off by an unexpected stop were marked failed");
    }
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
        config: Arc::new(ApiConfig {
            public_url,
            chat_keep_alive: Duration::from_millis(serve.chat_keep_alive_ms),
            mcp_allowed_hosts,
            mcp_limits: McpLimits {
                per_user: usize::try_from(serve.max_mcp_sessions_per_user).unwrap_or(usize::MAX),
                total: usize::try_from(serve.max_mcp_sessions).unwrap_or(usize::MAX),
                idle: Duration::from_millis(serve.mcp_idle_timeout_ms),
            },
            shutdown: stop.clone(),
            metrics_on_main: serve.metrics_listen.is_none(),
            egress_allow: serve.egress_allow.clone().into(),
            recordings_dir,
            blobs,
        }),
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
    let router = webpilot_api::router(state);
    let stop_server = stop.clone();
    let sessions_ending = manager.clone();
    tasks.serving.spawn_until_stopped("rate-limit pruner", async move {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            rate.prune();
        }
    });
    let server = tasks.serving.spawn("http server", async move {
        // At the stop signal the sessions start ending at once (their running tasks recorded as
        // interrupted), so requests waiting inline for a task answer now instead of draining for up
        // to the 50 s inline wait before any session is ended.
        let stopping = async move {
            stop_server.cancelled().await;
            sessions_ending.begin_shutdown();
        };
        let result = axum::serve(listener, router).with_graceful_shutdown(stopping).await;
        if let Err(e) = result {
            tracing::error!(error = %e, "the HTTP server failed");
        }
    });
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

/// The bytes a per-user quota allows (`--recording-quota`, `--storage-quota`; 0 is none).
fn quota(size: bytesize::ByteSize) -> Option<i64> {
    match size.as_u64() {
        0 => None,
        bytes => Some(i64::try_from(bytes).unwrap_or(i64::MAX)),
    }
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

/// The configured model agent, or the offline planner when no provider is set.
fn build_agent(serve: &ServeConfig) -> Result<Arc<dyn Agent>, StartError> {
    let provider = match serve.llm_provider.as_deref().map(str::trim) {
        None | Some("") | Some("none") | Some("offline") => return Ok(Arc::new(OfflinePlanner)),
        Some(p) => Provider::parse(p)
            .ok_or_else(|| StartError::Llm(format!("unknown provider {p:?} (openai or anthropic)")))?,
    };
    let model = serve
        .llm_model
        .clone()
        .ok_or_else(|| StartError::Llm("WEBPILOT_LLM_MODEL is required with a provider".into()))?;
    let config = LlmConfig {
        provider,
        base_url: serve.llm_base_url.clone().unwrap_or_else(|| provider.default_base_url().to_owned()),
        api_key: serve.llm_api_key.clone(),
        model,
        timeout: Duration::from_millis(serve.llm_timeout_ms),
        max_retries: serve.llm_max_retries,
        backoff: Duration::from_millis(serve.llm_backoff_ms),
        vision: serve.llm_vision,
    };
    let chat = webpilot_llm::build(&config).map_err(|e| StartError::Llm(e.to_string()))?;
    let settings = ModelAgentSettings { max_steps: serve.agent_max_steps.max(1), ..ModelAgentSettings::default() };
    Ok(Arc::new(ModelAgent::new(chat, settings)))
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

/// The human checks' solver (`--captcha-solver-url`), its address checked like a webhook's.
async fn captcha_solver(serve: &ServeConfig) -> Result<webpilot_agent::HumanChecks, StartError> {
    let Some(raw) = serve.captcha_solver_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(webpilot_agent::HumanChecks::default());
    };
    let target = webpilot_webhooks::check_url(raw, &serve.egress_allow)
        .await
        .map_err(|e| StartError::CaptchaSolver(e.to_string().replace("webhook url", "solver url")))?;
    let pinned = target.domain.clone().map(|d| (d, target.addrs.clone()));
    let timeout = Duration::from_secs(serve.captcha_solver_timeout);
    let solver = webpilot_agent::checks::Solver::new(target.url, pinned, timeout).map_err(StartError::CaptchaSolver)?;
    tracing::info!(timeout_s = serve.captcha_solver_timeout, "a CAPTCHA solver is configured");
    Ok(webpilot_agent::HumanChecks::new(Some(solver)))
}
