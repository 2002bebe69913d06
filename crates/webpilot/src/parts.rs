//! The parts `start` wires together, each built from the configuration by a function of its own: the
//! store, the browser pool, the model agent and the CAPTCHA solver, the sessions' settings, the rate
//! limiter, the links' signing key and the recorders.

use crate::config::{ServeConfig, StoreConfig};
use crate::keys::RootKeys;
use crate::{node, StartError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use webpilot_agent::model::{ModelAgent, ModelAgentSettings};
use webpilot_agent::planner::OfflinePlanner;
use webpilot_agent::{Agent, HumanChecks};
use webpilot_api::{RateLimiter, StreamKey};
use webpilot_blobs::Blobs;
use webpilot_browser::{BrowserPool, BrowserSettings};
use webpilot_cluster::RedisLink;
use webpilot_core::proxies::OperatorProxies;
use webpilot_core::usage::Prices;
use webpilot_liveview::LiveView;
use webpilot_llm::{LlmConfig, Provider};
use webpilot_recordings::Recorders;
use webpilot_sessions::{ProfileSettings, SessionConfig};
use webpilot_store::Store;
use webpilot_tasks::Tasks;

/// The store, opened, sealed under the current key and recovered from an unexpected stop, with what it
/// was opened with.
pub(crate) struct OpenedStore {
    pub store: Store,
    pub root_keys: RootKeys,
    /// The object store, when configured.
    pub blobs: Option<Blobs>,
    pub node_id: String,
}

/// Opens the object store and the database (checked before anything starts: a store that cannot be used
/// stops the start with its reason), and marks the work an unexpected stop cut off.
pub(crate) async fn open_store(serve: &ServeConfig, store_cfg: &StoreConfig) -> Result<OpenedStore, StartError> {
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
    Ok(OpenedStore { store, root_keys, blobs, node_id })
}

/// The pool of Chromium processes the sessions' contexts live in.
/// Its disposals of contexts run in `disposals` (waited for by `BrowserPool::shutdown`).
pub(crate) fn browser_pool(serve: &ServeConfig, disposals: Tasks) -> Result<BrowserPool, StartError> {
    let browser = webpilot_browser::identity(&serve.browser_user, serve.browser_no_sandbox)?;
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
    Ok(BrowserPool::new(settings, disposals))
}

/// Sessions per Chromium process when `--browser-processes` is left to choose.
const SESSIONS_PER_PROCESS: usize = 16;

fn browser_processes(serve: &ServeConfig) -> usize {
    match serve.browser_processes {
        0 => serve.max_sessions.div_ceil(SESSIONS_PER_PROCESS).max(1),
        n => n,
    }
}

/// The bytes a per-user quota allows (`--recording-quota`, `--storage-quota`; 0 is none).
fn quota(size: bytesize::ByteSize) -> Option<i64> {
    match size.as_u64() {
        0 => None,
        bytes => Some(i64::try_from(bytes).unwrap_or(i64::MAX)),
    }
}

/// The sessions' settings.
pub(crate) fn session_config(
    serve: &ServeConfig,
    store_cfg: &StoreConfig,
    node_id: &str,
    profiles: ProfileSettings,
    human_checks: HumanChecks,
    proxies: OperatorProxies,
) -> SessionConfig {
    SessionConfig {
        task_wait: Duration::from_millis(serve.task_wait_ms),
        idle_timeout: Duration::from_millis(serve.idle_timeout_ms),
        reconnect_window: Duration::from_millis(serve.instance_reconnect_window_ms),
        max_sessions_per_user: serve.max_sessions_per_user as usize,
        task_hold_micros: webpilot_core::usage::usd_to_micros(serve.task_hold_usd.max(0.0)),
        node_id: node_id.to_owned(),
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
    }
}

/// The per-key rate limiter: shared through Redis when the node has it, else this node's own.
pub(crate) fn rate_limiter(serve: &ServeConfig, redis: Option<&RedisLink>) -> Arc<RateLimiter> {
    let rate_window = Duration::from_millis(serve.rate_window_ms);
    Arc::new(match redis {
        Some(link) => RateLimiter::shared(
            serve.rate_limit,
            rate_window,
            webpilot_cluster::SharedWindow::new(link.clone(), &serve.redis_prefix),
        ),
        None => RateLimiter::new(serve.rate_limit, rate_window),
    })
}

/// The key that signs stream and share links: every node signs and checks with one key (a recording's
/// share link is served by any node).
pub(crate) async fn stream_key(store: &Store, data_dir: &Path) -> Result<StreamKey, StartError> {
    let secret = data_dir.join("stream.key");
    let local = StreamKey::load_or_create(&secret)
        .map_err(|source| StartError::StreamSecret { path: secret.clone(), source })?;
    // The first node's, kept in the database beside the socket key.
    let shared = store.shared_secret("stream", &local.to_hex()).await?;
    Ok(StreamKey::from_hex(&shared).map_err(|_| webpilot_store::StoreError::Corrupt("the shared stream key".into()))?)
}

/// The recorders of recorded sessions, once the recordings an unexpected stop cut off are marked failed.
pub(crate) async fn recorders(
    live_view: Arc<LiveView>,
    store: &Store,
    dir: PathBuf,
    node_id: String,
    blobs: Option<Blobs>,
) -> Result<Arc<Recorders>, StartError> {
    let recorders = Recorders::new(live_view, store.clone(), dir, node_id, blobs);
    let settled = recorders.settle_unfinished().await?;
    if settled > 0 {
        tracing::warn!(recordings = settled, "recordings cut off by an unexpected stop were marked failed");
    }
    Ok(recorders)
}

/// The configured model agent, or the offline planner when no provider is set.
pub(crate) fn build_agent(serve: &ServeConfig) -> Result<Arc<dyn Agent>, StartError> {
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

/// The human checks' solver (`--captcha-solver-url`), its address checked like a webhook's.
pub(crate) async fn captcha_solver(serve: &ServeConfig) -> Result<HumanChecks, StartError> {
    let Some(raw) = serve.captcha_solver_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(HumanChecks::default());
    };
    let target = webpilot_webhooks::check_url(raw, &serve.egress_allow)
        .await
        .map_err(|e| StartError::CaptchaSolver(e.to_string().replace("webhook url", "solver url")))?;
    let pinned = target.domain.clone().map(|d| (d, target.addrs.clone()));
    let timeout = Duration::from_secs(serve.captcha_solver_timeout);
    let solver = webpilot_agent::checks::Solver::new(target.url, pinned, timeout).map_err(StartError::CaptchaSolver)?;
    tracing::info!(timeout_s = serve.captcha_solver_timeout, "a CAPTCHA solver is configured");
    Ok(HumanChecks::new(Some(solver)))
}
