//! Browser settings, filled from the service configuration.

use std::path::PathBuf;
use std::time::Duration;

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
    /// Run Chromium without its sandbox (needed when running as root).
    pub no_sandbox: bool,
    /// Extra command-line flags.
    pub extra_args: Vec<String>,
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
            no_sandbox: true,
            extra_args: Vec::new(),
        }
    }
}
