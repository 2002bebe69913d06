//! Service configuration: command-line flags, each also settable as a `WEBPILOT_*` environment variable.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use webpilot_browser::TrustedKey;
use webpilot_core::egress::AllowEntry;
use webpilot_core::proxies::NamedProxy;

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "WEBPILOT_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Address clients use to reach the service (socketURL, pollUrl); defaults to http://<listen>.
    #[arg(long, env = "WEBPILOT_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// The IP address WebRTC (WHEP) viewers reach the service's UDP ports at (its ICE host
    /// candidate); defaults to the address of the interface the default route leaves by.
    #[arg(long, env = "WEBPILOT_WEBRTC_IP")]
    pub webrtc_ip: Option<std::net::IpAddr>,
    /// Serve `/metrics` (Prometheus) on this address only, instead of on the main listener.
    #[arg(long, env = "WEBPILOT_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Chromium executable.
    #[arg(long, env = "WEBPILOT_CHROMIUM", default_value = "/usr/bin/chromium")]
    pub chromium: PathBuf,
    /// Destinations the browser may reach although they are loopback, private or otherwise non-public:
    /// comma-separated hostnames, IPs or CIDRs, each optionally with `:port` (`wiki.corp`,
    /// `10.0.0.0/8`, `127.0.0.1:3000`, `[fd00::/8]:443`). Everything non-public is refused otherwise.
    #[arg(long, env = "WEBPILOT_EGRESS_ALLOW", value_delimiter = ',', value_parser = AllowEntry::parse)]
    pub egress_allow: Vec<AllowEntry>,
    /// Upstream proxies sessions may use by name (`{"name": "de"}` in `proxies`), repeatable or
    /// comma-separated: `NAME=URL`, the URL `http://`, `https://` or `socks5://` with credentials in it
    /// (`de=socks5://user:pass@proxy.example:1080`). Users see the names only (`GET /proxies`).
    #[arg(long = "proxy", env = "WEBPILOT_PROXIES", value_delimiter = ',', value_parser = NamedProxy::parse)]
    pub proxies: Vec<NamedProxy>,
    /// Remote Chromium DevTools endpoints to use instead of local Chromium processes (repeatable or
    /// comma-separated): `ws://host:9222/devtools/browser/<id>` or `http://host:9222` (docs/scaling.md).
    #[arg(long = "browser-endpoint", env = "WEBPILOT_BROWSER_ENDPOINT", value_delimiter = ',')]
    pub browser_endpoints: Vec<String>,
    /// The address the sessions' egress proxies listen on: loopback for local Chromium; with remote
    /// browsers, this host's address on the network they reach it by (each proxy serves its browser's
    /// host alone).
    #[arg(long, env = "WEBPILOT_EGRESS_LISTEN", default_value = "127.0.0.1")]
    pub egress_listen: std::net::IpAddr,
    /// Public keys local Chromium accepts TLS certificates for though no public CA signed them (repeatable
    /// or comma-separated): the base64 SHA-256 of a certificate's SubjectPublicKeyInfo, e.g. of a
    /// TLS-inspecting upstream proxy's CA or of an internal site's own key. Every certificate error of a
    /// chain holding such a key is ignored, for any host, so name only keys you hold (docs/security.md).
    #[arg(long = "browser-trust-spki", env = "WEBPILOT_BROWSER_TRUST_SPKI", value_delimiter = ',', value_parser = TrustedKey::parse)]
    pub browser_trust_spki: Vec<TrustedKey>,
    /// The unprivileged user Chromium runs as when the service runs as root (its sandbox stays on).
    #[arg(long, env = "WEBPILOT_BROWSER_USER", default_value = "webpilot-browser")]
    pub browser_user: String,
    /// Run Chromium without its sandbox (as root, if the service is root). Not recommended.
    #[arg(long, env = "WEBPILOT_BROWSER_NO_SANDBOX", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub browser_no_sandbox: bool,
    /// Most tabs a session may have open (pages the site opens beyond it are closed at once).
    #[arg(long, env = "WEBPILOT_MAX_TABS_PER_SESSION", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=50))]
    pub max_tabs_per_session: u64,
    /// Chromium processes to spread sessions over; 0 (the default) picks one per 16 sessions of
    /// --max-sessions, so a hung or crashed browser process does not take every session down.
    #[arg(long, env = "WEBPILOT_BROWSER_PROCESSES", default_value_t = 0)]
    pub browser_processes: usize,
    /// Browser contexts kept ready (page, viewport, scripts and egress proxy set up) for the next
    /// session starts; each counts against --max-sessions while it waits. 0 turns the warm pool off.
    #[arg(long, env = "WEBPILOT_WARM_CONTEXTS", default_value_t = 2)]
    pub warm_contexts: usize,
    /// Most private memory (MiB) a session's page renderer may hold; one that passes it is killed and the
    /// session's task sees PAGE_CRASH, the other sessions go on. 0 turns the cap off.
    #[arg(long, env = "WEBPILOT_SESSION_MEMORY_MIB", default_value_t = 1024)]
    pub session_memory_mib: u64,
    /// Largest file a session keeps (bytes): a bigger download is cancelled, a bigger upload refused.
    #[arg(long, env = "WEBPILOT_MAX_FILE_BYTES", default_value_t = 50 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_file_bytes: u64,
    /// Most bytes of files (downloads and uploads) one session keeps.
    #[arg(long, env = "WEBPILOT_MAX_SESSION_FILE_BYTES", default_value_t = 200 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_session_file_bytes: u64,
    /// How long a session's files are kept after they were made (hours); then they are purged.
    #[arg(long, env = "WEBPILOT_FILE_RETENTION_HOURS", default_value_t = 24, value_parser = clap::value_parser!(u64).range(1..=8760))]
    pub file_retention_hours: u64,
    /// The key profiles are sealed with (AES-256-GCM; 64 hex digits). Without it, `profile.key` in the data
    /// directory is used, made on first start (mode 0600).
    #[arg(long, env = "WEBPILOT_PROFILE_KEY", hide_env_values = true)]
    pub profile_key: Option<String>,
    /// Older profile keys (hex, comma-separated) that still open the profiles they sealed, for a rotation;
    /// each save seals with the current key.
    #[arg(long, env = "WEBPILOT_PROFILE_PREVIOUS_KEYS", value_delimiter = ',', hide_env_values = true)]
    pub profile_previous_keys: Vec<String>,
    /// Largest profile (bytes, as stored): a bigger save is refused (logged; the session still ends).
    #[arg(long, env = "WEBPILOT_MAX_PROFILE_BYTES", default_value_t = 20 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_profile_bytes: u64,
    /// Most bytes of profiles one user keeps.
    #[arg(long, env = "WEBPILOT_MAX_USER_PROFILE_BYTES", default_value_t = 200 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_user_profile_bytes: u64,
    /// Most sessions open at once; more get 503 NO_INSTANCES_AVAILABLE.
    #[arg(long, env = "WEBPILOT_MAX_SESSIONS", default_value_t = 4)]
    pub max_sessions: usize,
    /// Most sessions one user may have open at once (below --max-sessions, so no user takes every
    /// browser); more get 429 SESSION_LIMIT_REACHED.
    #[arg(long, env = "WEBPILOT_MAX_SESSIONS_PER_USER", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions_per_user: u64,
    /// USD set aside from a user's balance while each of their tasks runs (released when its real cost is
    /// charged); new work is refused when the balance less these holds is at or below zero.
    #[arg(long, env = "WEBPILOT_TASK_HOLD_USD", default_value_t = 0.05)]
    pub task_hold_usd: f64,
    /// Requests per user per sliding minute on the limited endpoints.
    #[arg(long, env = "WEBPILOT_RATE_LIMIT", default_value_t = 10)]
    pub rate_limit: u32,
    /// Length of the rate-limit window (ms); the spec's is 60000.
    #[arg(long, env = "WEBPILOT_RATE_WINDOW_MS", default_value_t = 60_000, hide = true)]
    pub rate_window_ms: u64,
    /// Redis shared by several nodes (rate limits): `redis://[:password@]host:6379[/db]`. Without it a
    /// node counts alone (docs/scaling.md).
    #[arg(long, env = "WEBPILOT_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// This node's id in the cluster; by default one made at first start and kept in the data directory.
    #[arg(long, env = "WEBPILOT_NODE_ID")]
    pub node_id: Option<String>,
    /// Where the other nodes reach this one to forward requests for its sessions (`http://10.0.0.5:8080`);
    /// by default `http://` and the address the service listens on.
    #[arg(long, env = "WEBPILOT_NODE_ADDRESS")]
    pub node_address: Option<String>,
    /// A node silent for this long is declared lost by another: its sessions end as `instance_lost` and
    /// their running tasks fail with `INSTANCE_UNAVAILABLE` (ms).
    #[arg(long, env = "WEBPILOT_NODE_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1000..=300_000))]
    pub node_timeout_ms: u64,
    /// How often a node heartbeats and looks for silent ones (ms).
    #[arg(long, env = "WEBPILOT_NODE_HEARTBEAT_MS", default_value_t = 1_000, hide = true, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub node_heartbeat_ms: u64,
    /// Prefix of every Redis key and channel this deployment uses (several deployments may share a Redis).
    #[arg(long, env = "WEBPILOT_REDIS_PREFIX", default_value = "webpilot")]
    pub redis_prefix: String,
    /// How long run-task and newTask wait inline before answering pending (ms).
    #[arg(long, env = "WEBPILOT_TASK_WAIT_MS", default_value_t = 50_000)]
    pub task_wait_ms: u64,
    /// A session with no task and no message for this long expires (ms, at most 300000).
    #[arg(long, env = "WEBPILOT_IDLE_TIMEOUT_MS", default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(1000..=300_000))]
    pub idle_timeout_ms: u64,
    /// An HTTP service the operator runs that solves CAPTCHAs (docs/agent.md, "Human checks"): it gets
    /// `POST {type, sitekey, pageUrl, action?}` and answers `{token}`. Checked like a webhook URL: loopback
    /// and private addresses only when `--egress-allow` names them. Without it, a check pauses the task with a
    /// `human_verification_needed` guardrail.
    #[arg(long, env = "WEBPILOT_CAPTCHA_SOLVER_URL")]
    pub captcha_solver_url: Option<String>,
    /// How long the CAPTCHA solver may take for one token (seconds); then the task falls back to the guardrail.
    #[arg(long, env = "WEBPILOT_CAPTCHA_SOLVER_TIMEOUT", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub captcha_solver_timeout: u64,
    /// The waits between webhook delivery attempts (comma-separated durations: `500ms`, `5s`, `5m`, `2h`);
    /// after the last, a message is marked failed.
    #[arg(long, env = "WEBPILOT_WEBHOOK_RETRY_SCHEDULE", default_value = "5s,5m,30m,2h,5h,10h")]
    pub webhook_retry_schedule: webpilot_webhooks::RetrySchedule,
    /// How often each node looks for owners of its live sessions that were deactivated (by `webpilot users
    /// deactivate`) and ends their sessions (ms).
    #[arg(long, env = "WEBPILOT_ACCOUNT_CHECK_MS", default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub account_check_ms: u64,
    /// How long to try for a replacement when a session's Chromium dies, before ending the session as
    /// `instance_lost` (ms, at most the spec's 300000 grace period, which is what clients are told).
    #[arg(long, env = "WEBPILOT_INSTANCE_RECONNECT_WINDOW_MS", default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(100..=300_000))]
    pub instance_reconnect_window_ms: u64,
    /// Time allowed for a page to load (ms).
    #[arg(long, env = "WEBPILOT_NAVIGATION_TIMEOUT_MS", default_value_t = 20_000)]
    pub navigation_timeout_ms: u64,
    /// Model provider: `openai` (any OpenAI-compatible server) or `anthropic`; none means the offline planner.
    #[arg(long, env = "WEBPILOT_LLM_PROVIDER")]
    pub llm_provider: Option<String>,
    /// Model API base URL (default: the provider's public API).
    #[arg(long, env = "WEBPILOT_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model API key.
    #[arg(long, env = "WEBPILOT_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// Model name, e.g. gpt-4o-mini, claude-sonnet-4-5, qwen2.5:7b.
    #[arg(long, env = "WEBPILOT_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// Time allowed for one model request (ms).
    #[arg(long, env = "WEBPILOT_LLM_TIMEOUT_MS", default_value_t = 120_000)]
    pub llm_timeout_ms: u64,
    /// Retries of a model request on 429, 5xx and connection errors.
    #[arg(long, env = "WEBPILOT_LLM_MAX_RETRIES", default_value_t = 3)]
    pub llm_max_retries: u32,
    /// First retry backoff (ms), doubled each retry.
    #[arg(long, env = "WEBPILOT_LLM_BACKOFF_MS", default_value_t = 1_000)]
    pub llm_backoff_ms: u64,
    /// The model accepts images: a task's `vision` (default `auto`) may then send it page screenshots.
    #[arg(long, env = "WEBPILOT_LLM_VISION", default_value_t = false, action = clap::ArgAction::Set)]
    pub llm_vision: bool,
    /// Record sessions that do not say otherwise (their `recording` parameter): video and timeline
    /// under `<data-dir>/recordings/`.
    #[arg(long, env = "WEBPILOT_RECORD_SESSIONS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub record_sessions: bool,
    /// How long a recording is kept after its session ended (days); then its video and timeline are purged.
    #[arg(long, env = "WEBPILOT_RECORDING_RETENTION_DAYS", default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub recording_retention_days: u64,
    /// How long an action cache entry (a user's successful model run, replayed without the model when the
    /// same task starts again; docs/agent.md) is kept after it was last written (days).
    #[arg(long, env = "WEBPILOT_CACHE_TTL_DAYS", default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub cache_ttl_days: u64,
    /// Storage each user's recordings may take (`5GiB`, `500MB`, `0`: no quota). A user at or over it
    /// gets new sessions that record nothing, and their start answer says so.
    #[arg(long, env = "WEBPILOT_RECORDING_QUOTA", default_value = "5GiB")]
    pub recording_quota: bytesize::ByteSize,
    /// Storage each user's files and recordings may take together (`10GiB`, `500MB`, `0`: no quota). A new
    /// file past it (upload or download) is refused with 413 `STORAGE_QUOTA_EXCEEDED`, and a user at or over
    /// it gets new sessions that record nothing.
    #[arg(long, env = "WEBPILOT_STORAGE_QUOTA", default_value = "10GiB")]
    pub storage_quota: bytesize::ByteSize,
    /// An object store every node reads, for finished recordings (`s3://bucket/prefix`, `gs://…`,
    /// `az://…`, or `file:///a/shared/directory`). Credentials and endpoints come from the environment
    /// (`AWS_*`, `GOOGLE_*`, `AZURE_*`) or `--object-store-option`. Without one, a recording stays on the
    /// node that made it, and other nodes forward requests for it there.
    #[arg(long, env = "WEBPILOT_OBJECT_STORE")]
    pub object_store: Option<String>,
    /// An option of the object store (`key=value`, repeatable), such as `aws_endpoint=http://…` or
    /// `aws_allow_http=true`; the environment's `AWS_*` (and `GOOGLE_*`, `AZURE_*`) variables are read too.
    #[arg(long = "object-store-option", value_name = "KEY=VALUE")]
    pub object_store_options: Vec<String>,
    /// Model turns a task may take.
    #[arg(long, env = "WEBPILOT_AGENT_MAX_STEPS", default_value_t = 40)]
    pub agent_max_steps: usize,
    /// Time between SSE `: keep-alive` comments of a streaming chat completion (ms).
    #[arg(long, env = "WEBPILOT_CHAT_KEEP_ALIVE_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub chat_keep_alive_ms: u64,
    /// Host header values (`host` or `host:port`, comma-separated) the MCP endpoint accepts, against DNS
    /// rebinding; the host of --public-url is always added. `*` accepts any Host.
    #[arg(long, env = "WEBPILOT_MCP_ALLOWED_HOSTS", value_delimiter = ',', default_value = "localhost,127.0.0.1,::1")]
    pub mcp_allowed_hosts: Vec<String>,
    /// Live MCP sessions one user may hold on this node; a further `initialize` gets 429
    /// `SESSION_LIMIT_REACHED` until one is deleted or idles out.
    #[arg(long, env = "WEBPILOT_MAX_MCP_SESSIONS_PER_USER", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_mcp_sessions_per_user: u64,
    /// Live MCP sessions this node keeps for all users together (429 `SESSION_LIMIT_REACHED` beyond).
    #[arg(long, env = "WEBPILOT_MAX_MCP_SESSIONS", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_mcp_sessions: u64,
    /// An MCP session that receives no message for this long ends and gives its place back (ms).
    #[arg(long, env = "WEBPILOT_MCP_IDLE_TIMEOUT_MS", default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(1000..=3_600_000))]
    pub mcp_idle_timeout_ms: u64,
    /// USD per million input tokens.
    #[arg(long, env = "WEBPILOT_PRICE_INPUT_PER_MILLION", default_value_t = 3.0)]
    pub price_input_per_million: f64,
    /// USD per million output tokens.
    #[arg(long, env = "WEBPILOT_PRICE_OUTPUT_PER_MILLION", default_value_t = 15.0)]
    pub price_output_per_million: f64,
    /// USD per second of task compute time.
    #[arg(long, env = "WEBPILOT_PRICE_COMPUTE_PER_SECOND", default_value_t = 0.0005)]
    pub price_compute_per_second: f64,
    /// USD per second a session is open (start to end), on top of its tasks; a session holds its
    /// maxDuration's worth of it on the balance while it is open.
    #[arg(long, env = "WEBPILOT_PRICE_SESSION_PER_SECOND", default_value_t = 0.00005)]
    pub price_session_per_second: f64,
}

/// Where the state lives; shared by `serve` and the admin commands.
#[derive(Debug, Clone, Args)]
pub struct StoreConfig {
    /// Directory for the embedded SQLite database (and the stream-token secret when there is no
    /// database URL).
    #[arg(long, env = "WEBPILOT_DATA_DIR", default_value = "./data", global = true)]
    pub data_dir: PathBuf,
    /// PostgreSQL instead of the embedded SQLite: `postgres://user:password@host:5432/db`. Required for
    /// several nodes (docs/scaling.md).
    #[arg(long, env = "WEBPILOT_DATABASE_URL", hide_env_values = true, global = true)]
    pub database_url: Option<String>,
}

impl StoreConfig {
    /// The embedded SQLite store in `dir`.
    pub fn sqlite(dir: &std::path::Path) -> StoreConfig {
        StoreConfig { data_dir: dir.to_path_buf(), database_url: None }
    }

    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("webpilot.db")
    }

    fn url(&self) -> Option<&str> {
        self.database_url.as_deref().map(str::trim).filter(|u| !u.is_empty())
    }

    /// Whether other nodes may share this store (a database URL rather than the embedded SQLite): then
    /// per-user limits are counted in it, not in each node's memory.
    pub fn is_shared(&self) -> bool {
        self.url().is_some()
    }

    /// Opens the configured store and brings its schema up to date.
    pub async fn open(&self) -> Result<webpilot_store::Store, webpilot_store::StoreError> {
        match self.url() {
            Some(url) => webpilot_store::Store::open_url(url).await,
            None => webpilot_store::Store::open_sqlite(&self.sqlite_path()).await,
        }
    }
}
