//! Browser settings, filled from the service configuration.

use crate::sandbox::RunAs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use webpilot_core::egress::AllowEntry;

#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium executable (Debian: /usr/bin/chromium).
    pub executable: PathBuf,
    /// Chromium processes to spread sessions over.
    pub processes: usize,
    /// Most sessions (browser contexts) open at once, over all processes.
    pub max_sessions: usize,
    /// Time allowed for one DevTools command.
    pub cdp_timeout: Duration,
    /// Time allowed for a navigation to load.
    pub navigation_timeout: Duration,
    /// Time allowed for Chromium to start.
    pub launch_timeout: Duration,
    /// Run Chromium without its sandbox (only when asked for: `--browser-no-sandbox`).
    pub no_sandbox: bool,
    /// The unprivileged user Chromium drops to when the service runs as root.
    pub run_as: Option<RunAs>,
    /// Extra command-line flags.
    pub extra_args: Vec<String>,
    /// Most tabs one session may have open; pages the site opens beyond it are closed at once.
    pub max_tabs: usize,
    /// Destinations the operator allows although they are not public (`--egress-allow`).
    pub egress_allow: Arc<[AllowEntry]>,
    /// Most contexts being prepared at once; more wait their turn, so a burst of session starts does
    /// not starve every one of them past its DevTools timeouts.
    pub max_preparing: usize,
    /// Contexts kept ready for the next session starts (0: every start prepares its own).
    pub warm_contexts: usize,
    /// Most private memory (MiB) one renderer may hold; one that passes it is killed and its session's
    /// page reports PAGE_CRASH (0: no cap).
    pub session_memory_mib: u64,
    /// Remote Chromium DevTools endpoints (`ws://host:port/devtools/browser/<id>` or `http://host:port`);
    /// when any are given the pool uses them, one slot each, and launches no Chromium of its own.
    pub endpoints: Vec<String>,
    /// The address each context's egress proxy listens on. Loopback for local Chromium; for remote
    /// browsers an address of this host they can reach (each proxy then serves its browser's host alone).
    pub egress_listen: std::net::IpAddr,
    /// Largest download kept, in bytes; a bigger one is cancelled.
    pub max_file_bytes: u64,
    /// Most bytes of downloads one session's context keeps.
    pub max_session_file_bytes: u64,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            executable: PathBuf::from("/usr/bin/chromium"),
            processes: 1,
            max_sessions: 4,
            cdp_timeout: Duration::from_secs(15),
            navigation_timeout: Duration::from_secs(20),
            launch_timeout: Duration::from_secs(20),
            no_sandbox: false,
            run_as: None,
            extra_args: Vec::new(),
            max_tabs: 8,
            egress_allow: Arc::from(Vec::new()),
            max_preparing: 4,
            warm_contexts: 2,
            session_memory_mib: 1024,
            endpoints: Vec::new(),
            egress_listen: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            max_file_bytes: 50 * 1024 * 1024,
            max_session_file_bytes: 200 * 1024 * 1024,
        }
    }
}
