//! One Chromium process: launched with its own profile directory and DevTools on a pipe only this process
//! reaches (`launch.rs`, `pipe.rs`), or, for a remote browser, connected to over its DevTools endpoint
//! (`remote.rs`); its DevTools handler driven by an owned task. The handler
//! loop ends at its first error (a dead browser otherwise makes later calls hang, see crate-notes), which
//! marks the process dead so the pool replaces (or reconnects) it.
//!
//! Responsiveness (`ping`): every process is pinged (`Browser.getVersion`) once a second; one that has
//! not answered within a few seconds (stopped, hung, overloaded) is marked unresponsive until it answers again.
//! Health reports it and new sessions are refused meanwhile, instead of being handed a browser that will
//! not move.

use crate::config::BrowserSettings;
use crate::error::BrowserError;
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::Browser;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use webpilot_core::geometry::{FRAME_WIDTH, PAGE_HEIGHT};

/// What this service owns of a Chromium it launched: the child (killed when dropped) and the task
/// bridging its DevTools pipe (whose end, when Chromium dies, marks the browser dead).
struct Owned {
    child: tokio::process::Child,
    bridge: JoinHandle<()>,
}

/// Flags every instance gets: quiet on a closed network, no first-run work, no spare renderer, and no
/// omnibox popup WebUI. Chromium 156 preloads that popup (`chrome://omnibox-popup.top-chrome/`) in a renderer
/// of its own for every window, and every browser context made over DevTools gets a window: measured on this
/// machine it cost 39 MiB PSS and ~300 ms of a 2-core machine per context. No headless session shows an
/// omnibox, and the pages' own renderers are untouched (docs/benchmarks.md, "Memory").
const BASE_ARGS: &[&str] = &[
    "--disable-gpu",
    "--disable-quic",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--no-default-browser-check",
    "--disable-features=SpareRendererForSitePerProcess,Translate,OptimizationHints,MediaRouter,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup",
];

/// Every page's viewport: the frame's width, the page's height, no device scaling.
pub(crate) fn page_viewport() -> Viewport {
    Viewport {
        width: FRAME_WIDTH,
        height: PAGE_HEIGHT,
        device_scale_factor: Some(1.0),
        emulating_mobile: false,
        is_landscape: true,
        has_touch: false,
    }
}

pub(crate) struct BrowserProcess {
    pub browser: Browser,
    /// Cancelled when the connection's handler loop ends (the browser died or its connection dropped),
    /// also if that task panics or is aborted.
    died: CancellationToken,
    /// False while the browser does not answer a ping (`responsiveness`): stopped, hung or overloaded.
    pub(crate) responsive: AtomicBool,
    pinger: JoinHandle<()>,
    /// Contexts currently leased from this process.
    pub contexts: AtomicUsize,
    pub pid: Option<u32>,
    handler: JoinHandle<()>,
    /// The per-session memory cap's watchdog over this process's renderers.
    memory_cap: Option<JoinHandle<()>>,
    /// Set by the first `kill`, so a pid is never signalled twice.
    killed: AtomicBool,
    /// For a remote browser: the addresses of its host, the only peers its contexts' egress proxies serve.
    pub remote_peers: Option<Arc<[std::net::IpAddr]>>,
    /// The launched child and its DevTools bridge; none for a remote browser.
    owned: parking_lot::Mutex<Option<Owned>>,
    /// How this process's frame clients share the DevTools pipe; none for a remote browser (they connect).
    pub(crate) link: std::sync::OnceLock<crate::pipe::Link>,
    // Removed when the process is dropped (after Chromium is killed); none for a remote browser.
    _profile: Option<tempfile::TempDir>,
}

impl BrowserProcess {
    pub async fn launch(settings: &BrowserSettings) -> Result<Arc<BrowserProcess>, BrowserError> {
        let profile = tempfile::Builder::new()
            .prefix(crate::orphans::PROFILE_PREFIX)
            .tempdir()
            .map_err(|e| BrowserError::Launch(e.to_string()))?;
        write_preferences(profile.path()).map_err(|e| BrowserError::Launch(format!("profile preferences: {e}")))?;
        // Who made it: a later start removes it should this process be killed before it can.
        crate::orphans::claim(profile.path()).map_err(|e| BrowserError::Launch(format!("profile owner: {e}")))?;
        // Chromium's own temp files (its singleton socket directory among them) go inside the profile, which
        // is removed with the process: a killed Chromium cannot clean up after itself.
        let tmp = profile.path().join("tmp");
        std::fs::create_dir(&tmp).map_err(|e| BrowserError::Launch(format!("browser temp dir: {e}")))?;
        // As root, Chromium is started through a launcher that drops to the unprivileged user, whose home
        // is the profile (so nothing is written to root's home).
        let launcher = match settings.run_as {
            Some(who) => {
                crate::sandbox::give(profile.path(), who)?;
                Some(crate::sandbox::wrapper(&settings.executable, who)?)
            }
            None => None,
        };
        let executable = launcher.as_ref().map_or(settings.executable.clone(), |d| d.path().join("chromium"));
        let home = profile.path().display().to_string();
        let env = [
            ("HOME", home.clone()),
            ("XDG_CONFIG_HOME", format!("{home}/.config")),
            ("XDG_CACHE_HOME", format!("{home}/.cache")),
            ("TMPDIR", tmp.display().to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v));
        let trust = crate::config::TrustedKey::flag(&settings.trusted_keys);
        let extra = settings.extra_args.iter().chain(&trust).map(String::as_str);
        let flags = BASE_ARGS.iter().copied().chain(extra);
        let args = crate::launch::arguments(flags, profile.path(), settings.no_sandbox);
        // DevTools goes over a pipe, never a port: only this process can reach the bridge (`pipe.rs`).
        let (mut child, bridge) = crate::launch::spawn(&executable, &args, &env, profile.path())
            .await
            .map_err(|e| BrowserError::Launch(format!("starting Chromium: {e}")))?;
        let config = HandlerConfig {
            ignore_https_errors: false,
            request_timeout: settings.cdp_timeout,
            viewport: Some(page_viewport()),
            ..HandlerConfig::default()
        };
        let connected = crate::error::within(settings.launch_timeout, "connect to Chromium", async {
            Browser::connect_with_config(bridge.url.clone(), config)
                .await
                .map_err(|e| BrowserError::Launch(e.to_string()))
        })
        .await;
        let (browser, handler) = match connected {
            Ok(pair) => pair,
            Err(e) => {
                let _ = child.start_kill();
                return Err(BrowserError::Launch(format!("Chromium did not answer on its DevTools pipe: {e}")));
            }
        };
        let pid = child.id();
        tracing::info!(pid = ?pid, "chromium started");
        let memory_cap = match (pid, settings.session_memory_mib) {
            (Some(pid), mib) if mib > 0 => Some(crate::memory::watch(pid, mib * 1024)),
            _ => None,
        };
        let process = Self::drive(browser, handler, pid, memory_cap, None, Some(profile));
        let _ = process.link.set(bridge.link.clone());
        {
            let mut owned = process.owned.lock();
            *owned = Some(Owned { child, bridge: bridge.task });
        }
        // The handler is running: the first command proves Chromium answers on its pipe.
        if let Err(e) =
            crate::error::within(settings.launch_timeout, "browser version", process.browser.version()).await
        {
            if let Some(owned) = process.owned.lock().as_mut() {
                tracing::warn!(exit = ?owned.child.try_wait(), "Chromium did not answer on its DevTools pipe");
            }
            process.kill();
            return Err(BrowserError::Launch(format!("Chromium did not answer on its DevTools pipe: {e}")));
        }
        // Only now has the shell surely read the launcher script: Chromium answers.
        drop(launcher);
        Ok(process)
    }

    /// A process around a connected `browser`, its `handler` driven by a task of its own.
    pub(crate) fn drive(
        browser: Browser,
        mut handler: chromiumoxide::Handler,
        pid: Option<u32>,
        memory_cap: Option<JoinHandle<()>>,
        remote_peers: Option<Arc<[std::net::IpAddr]>>,
        profile: Option<tempfile::TempDir>,
    ) -> Arc<BrowserProcess> {
        let died = CancellationToken::new();
        let ended = died.clone().drop_guard();
        let handler = webpilot_tasks::spawn_owned("devtools handler", async move {
            let _ended = ended;
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    tracing::warn!(error = %e, "chromium connection failed; marking the browser dead");
                    break;
                }
            }
            tracing::debug!("chromium handler loop ended");
        });
        Arc::new_cyclic(|me| BrowserProcess {
            browser,
            died,
            responsive: AtomicBool::new(true),
            pinger: webpilot_tasks::spawn_owned("browser pinger", ping(me.clone())),
            contexts: AtomicUsize::new(0),
            pid,
            handler,
            memory_cap,
            killed: AtomicBool::new(false),
            remote_peers,
            owned: parking_lot::Mutex::new(None),
            link: std::sync::OnceLock::new(),
            _profile: profile,
        })
    }

    /// The profile directory (removed when the process is dropped); none for a remote browser.
    pub fn profile(&self) -> Option<std::path::PathBuf> {
        self._profile.as_ref().map(|p| p.path().to_path_buf())
    }

    /// Kills Chromium and every helper process below it now, even while other handles to this process
    /// remain; returns the pids killed.
    pub fn kill(&self) -> Vec<u32> {
        let Some(pid) = self.pid.filter(|_| !self.killed.swap(true, Ordering::SeqCst)) else { return Vec::new() };
        let mut pids = crate::memory::descendants(pid);
        pids.push(pid);
        for p in &pids {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p as i32), nix::sys::signal::SIGKILL);
        }
        pids
    }

    /// Whether the browser answered its last ping in time.
    pub fn is_responsive(&self) -> bool {
        self.responsive.load(Ordering::SeqCst)
    }

    pub fn is_alive(&self) -> bool {
        // Cancelled as the handler task ends, however it ends.
        !self.died.is_cancelled()
    }

    /// Resolves once the browser died or its connection dropped.
    pub async fn died(&self) {
        self.died.cancelled().await
    }
}

/// Profile preferences every context inherits: WebRTC may not send UDP around the context's egress proxy
/// (seen on Chromium 156: the command-line switches do not reach contexts made over DevTools; this does).
fn write_preferences(profile: &std::path::Path) -> std::io::Result<()> {
    let prefs = serde_json::json!({
        "webrtc": {
            "ip_handling_policy": "disable_non_proxied_udp",
            "multiple_routes_enabled": false,
            "nonproxied_udp_enabled": false
        }
    });
    std::fs::create_dir_all(profile.join("Default"))?;
    std::fs::write(profile.join("Default").join("Preferences"), prefs.to_string())
}

impl Drop for BrowserProcess {
    fn drop(&mut self) {
        // The child was spawned with kill_on_drop; stopping the handler lets the Browser drop cleanly.
        self.handler.abort();
        self.pinger.abort();
        if let Some(w) = &self.memory_cap {
            w.abort();
        }
        if let Some(owned) = self.owned.get_mut() {
            owned.bridge.abort();
        }
        // Chromium's helpers may still write to the profile for a moment after it is killed, and the TempDir's
        // own removal gives up at the first error: try again until it is gone.
        let pids = self.kill();
        if let Some(profile) = self.profile() {
            std::thread::spawn(move || remove_profile(&profile, &pids));
        }
        tracing::info!(pid = ?self.pid, remote = self.remote_peers.is_some(), "chromium stopped");
    }
}

/// Removes a profile directory once the processes `pids` (Chromium and its helpers, killed) have exited, so
/// none of them writes it again; waits and retries for up to 5 s. True once it is gone.
pub(crate) fn remove_profile(path: &std::path::Path, pids: &[u32]) -> bool {
    let running = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z')))
    };
    for _ in 0..50 {
        if !pids.iter().any(running) && (!path.exists() || std::fs::remove_dir_all(path).is_ok()) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    tracing::warn!(path = %path.display(), "a browser profile directory could not be removed");
    false
}

/// Time between pings.
const PERIOD: Duration = Duration::from_secs(1);
/// Time a ping may take before the browser counts as unresponsive (long enough for a busy machine).
const LIMIT: Duration = Duration::from_secs(5);

/// Pings `process` until it is gone, keeping its responsive flag.
async fn ping(process: Weak<BrowserProcess>) {
    loop {
        tokio::time::sleep(PERIOD).await;
        let Some(p) = process.upgrade() else { return };
        let answered = matches!(tokio::time::timeout(LIMIT, p.browser.version()).await, Ok(Ok(_)));
        if p.responsive.swap(answered, Ordering::SeqCst) != answered {
            if answered {
                tracing::info!(pid = ?p.pid, "chromium answers again");
            } else {
                tracing::warn!(pid = ?p.pid, limit = ?LIMIT, "chromium does not answer; refusing new sessions on it");
            }
        }
    }
}
