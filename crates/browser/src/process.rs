//! One Chromium process: launched with its own profile directory, its DevTools handler driven by an
//! owned task. The handler loop ends at its first error (a dead browser otherwise makes later calls
//! hang, see crate-notes), which marks the process dead so the pool replaces it.

use crate::config::BrowserSettings;
use crate::error::BrowserError;
use chromiumoxide::browser::BrowserConfig;
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::Browser;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::task::JoinHandle;
use webpilot_core::geometry::{FRAME_WIDTH, PAGE_HEIGHT};

/// Flags every instance gets: quiet on a closed network, no first-run work, no spare renderer.
const BASE_ARGS: &[&str] = &[
    "--disable-gpu",
    "--disable-quic",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--no-default-browser-check",
    "--disable-features=SpareRendererForSitePerProcess,Translate,OptimizationHints,MediaRouter",
];

pub(crate) struct BrowserProcess {
    pub browser: Browser,
    alive: Arc<AtomicBool>,
    /// Contexts currently leased from this process.
    pub contexts: AtomicUsize,
    pub pid: Option<u32>,
    handler: JoinHandle<()>,
    // Removed when the process is dropped (after Chromium is killed).
    _profile: tempfile::TempDir,
}

impl BrowserProcess {
    pub async fn launch(settings: &BrowserSettings) -> Result<Arc<BrowserProcess>, BrowserError> {
        let profile = tempfile::Builder::new()
            .prefix("webpilot-chromium-")
            .tempdir()
            .map_err(|e| BrowserError::Launch(e.to_string()))?;
        let mut builder = BrowserConfig::builder()
            .chrome_executable(&settings.executable)
            .new_headless_mode()
            .user_data_dir(profile.path())
            .launch_timeout(settings.launch_timeout)
            .request_timeout(settings.cdp_timeout)
            .window_size(FRAME_WIDTH, PAGE_HEIGHT)
            .viewport(Viewport {
                width: FRAME_WIDTH,
                height: PAGE_HEIGHT,
                device_scale_factor: Some(1.0),
                emulating_mobile: false,
                is_landscape: true,
                has_touch: false,
            })
            .args(BASE_ARGS.iter().copied())
            .args(settings.extra_args.iter().map(String::as_str));
        if settings.no_sandbox {
            builder = builder.no_sandbox();
        }
        let config = builder.build().map_err(BrowserError::Launch)?;
        let (mut browser, mut handler) =
            Browser::launch(config).await.map_err(|e| BrowserError::Launch(e.to_string()))?;
        let pid = browser.get_mut_child().and_then(|c| c.as_mut_inner().id());
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    tracing::warn!(error = %e, "chromium connection failed; marking the browser dead");
                    break;
                }
            }
            flag.store(false, Ordering::SeqCst);
            tracing::debug!("chromium handler loop ended");
        });
        tracing::info!(pid = ?pid, "chromium started");
        Ok(Arc::new(BrowserProcess { browser, alive, contexts: AtomicUsize::new(0), pid, handler, _profile: profile }))
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst) && !self.handler.is_finished()
    }
}

impl Drop for BrowserProcess {
    fn drop(&mut self) {
        // The child was spawned with kill_on_drop; stopping the handler lets the Browser drop cleanly.
        self.handler.abort();
        tracing::info!(pid = ?self.pid, "chromium stopped");
    }
}
