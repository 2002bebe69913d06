//! Responsiveness: every process is pinged (`Browser.getVersion`) once a second; one that has not
//! answered within a few seconds (stopped, hung, overloaded) is marked unresponsive until it answers again.
//! Health reports it and new sessions are refused meanwhile, instead of being handed a browser that will
//! not move.

use crate::process::BrowserProcess;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

/// Time between pings.
const PERIOD: Duration = Duration::from_secs(1);
/// Time a ping may take before the browser counts as unresponsive (long enough for a busy machine).
const LIMIT: Duration = Duration::from_secs(5);

/// Pings `process` until it is gone, keeping its responsive flag.
pub(crate) async fn watch(process: Weak<BrowserProcess>) {
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
