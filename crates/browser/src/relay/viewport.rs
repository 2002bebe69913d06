//! The session's viewport after a DevTools client leaves. A client's device-metrics override (browser-use's
//! 1920 × 1080, Puppeteer's 800 × 600 at connect) is Chromium's only one while it lasts, and when the client's
//! session detaches Chromium drops it for the window's size, not the service's override: the page would be
//! 1024 × 302, and the live view, recordings, take-over clicks and the agent would see it so. So once the
//! client's sessions are detached, every tab of the session gets the service's metrics again.

use super::tabs::RelayTabs;
use crate::error::within;
use chromiumoxide::cdp::browser_protocol::emulation::{
    ClearDeviceMetricsOverrideParams, SetDeviceMetricsOverrideParams,
};
use webpilot_core::geometry::{FRAME_WIDTH, PAGE_HEIGHT};

/// Sets the service's metrics (1024 × 445, scale 1) on every tab again, through the service's own
/// connection. Chromium ignores a repeated override that it thinks is in force, so it is cleared first.
pub(super) async fn restore(tabs: &dyn RelayTabs) {
    let pages = tabs.pages();
    let timeout = tabs.cdp_timeout();
    let metrics = SetDeviceMetricsOverrideParams::new(i64::from(FRAME_WIDTH), i64::from(PAGE_HEIGHT), 1.0, false);
    for page in pages {
        let clear = within(timeout, "clear the viewport", page.execute(ClearDeviceMetricsOverrideParams {}));
        let set = async { within(timeout, "restore the viewport", page.execute(metrics.clone())).await };
        if let Err(e) = async {
            clear.await?;
            set.await
        }
        .await
        {
            tracing::debug!(error = %e, "restoring a tab's viewport after a DevTools client failed");
        }
    }
}
