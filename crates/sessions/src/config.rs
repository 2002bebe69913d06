//! The tunables of the session layer (`SessionConfig`), as the service's flags set them.

use std::time::Duration;
use webpilot_core::usage::Prices;

/// Tunables of the session layer.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// How long run-task and newTask wait inline before answering `pending` (spec: 50 s).
    pub task_wait: Duration,
    /// A session with no task and no message for this long ends as `expired` (at most 5 min).
    pub idle_timeout: Duration,
    pub prices: Prices,
    /// The reconnection grace period announced in `instance:disconnected` (spec: 300000 ms); also the
    /// longest the replacement attempts may run.
    pub instance_grace_period: Duration,
    /// How long to try for a replacement browser instance before ending as `instance_lost`.
    pub reconnect_window: Duration,
    /// How often the session's cookies and URL are snapshotted for recovery (also after every task).
    pub snapshot_every: Duration,
    /// Most sessions one user may have open at once (429 `SESSION_LIMIT_REACHED` beyond).
    pub max_sessions_per_user: usize,
    /// What a running task holds of its user's balance until its real cost is charged (micro-USD).
    pub task_hold_micros: i64,
    /// This node's id: the sessions it starts are recorded as held by it.
    pub node_id: String,
    /// Count the per-user session cap and task holds in the database, which other nodes share, instead
    /// of in this node's memory.
    pub shared_limits: bool,
    /// Whether a session that does not say (`recording`) is recorded (`--record-sessions`).
    pub record_sessions: bool,
    /// Bytes each user's recordings may take before new sessions record nothing (`None`: no quota).
    pub recording_quota_bytes: Option<i64>,
    /// Bytes each user's files and recordings may take together (`None`: no quota): a new file past it is
    /// refused with `STORAGE_QUOTA_EXCEEDED`, and a new session records nothing once it is reached.
    pub storage_quota_bytes: Option<i64>,
    /// The key profiles are sealed with, and their caps.
    pub profiles: crate::profiles::ProfileSettings,
    /// Human checks met by the agent: the operator's CAPTCHA solver, if any (`--captcha-solver-url`).
    pub human_checks: webpilot_agent::HumanChecks,
    /// The operator's named upstream proxies (`--proxy NAME=URL`).
    pub proxies: std::sync::Arc<webpilot_core::proxies::OperatorProxies>,
    /// How long an action cache entry lives after it is written (`--cache-ttl-days`).
    pub cache_ttl: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            task_wait: Duration::from_secs(50),
            idle_timeout: Duration::from_secs(300),
            prices: Prices::default(),
            instance_grace_period: Duration::from_secs(300),
            reconnect_window: Duration::from_secs(300),
            snapshot_every: Duration::from_secs(5),
            max_sessions_per_user: 3,
            task_hold_micros: 50_000,
            node_id: "local".into(),
            shared_limits: false,
            record_sessions: false,
            recording_quota_bytes: None,
            storage_quota_bytes: None,
            profiles: Default::default(),
            human_checks: Default::default(),
            proxies: Default::default(),
            cache_ttl: Duration::from_secs(7 * 86_400),
        }
    }
}
