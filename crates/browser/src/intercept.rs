//! Network-level enforcement of avoidDomains: every request of a session's page is paused through the
//! Fetch domain and failed when its host is blocked by the session's current policy.

use crate::error::{within, BrowserError};
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams, EventRequestPaused, FailRequestParams, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::Page;
use futures::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::task::JoinHandle;
use webpilot_core::policy::{is_blocked, url_host};

/// The domains a session must not reach; shared by the session (which sets it per task) and the
/// interception task (which reads it per request).
#[derive(Clone, Default, Debug)]
pub struct DomainPolicy {
    avoid: Arc<RwLock<Vec<String>>>,
    blocked: Arc<AtomicU64>,
}

impl DomainPolicy {
    pub fn new(avoid: Vec<String>) -> Self {
        let p = DomainPolicy::default();
        p.set(avoid);
        p
    }
    /// Replaces the list (already normalised host names).
    pub fn set(&self, avoid: Vec<String>) {
        if let Ok(mut guard) = self.avoid.write() {
            *guard = avoid;
        }
    }
    pub fn domains(&self) -> Vec<String> {
        self.avoid.read().map(|g| g.clone()).unwrap_or_default()
    }
    pub fn blocks_host(&self, host: &str) -> bool {
        self.avoid.read().map(|g| is_blocked(host, &g)).unwrap_or(true)
    }
    pub fn blocks_url(&self, url: &str) -> bool {
        url_host(url).is_some_and(|h| self.blocks_host(&h))
    }
    /// Requests blocked so far.
    pub fn blocked_count(&self) -> u64 {
        self.blocked.load(Ordering::Relaxed)
    }
}

/// Turns on interception for `page`; the returned task answers every paused request until aborted.
pub(crate) async fn start(
    page: &Page,
    policy: DomainPolicy,
    timeout: Duration,
) -> Result<JoinHandle<()>, BrowserError> {
    let mut paused = within(timeout, "listen for requests", page.event_listener::<EventRequestPaused>()).await?;
    let pattern = RequestPattern {
        url_pattern: Some("*".into()),
        resource_type: None,
        request_stage: Some(RequestStage::Request),
    };
    let enable = EnableParams { patterns: Some(vec![pattern]), handle_auth_requests: None };
    within(timeout, "enable request interception", page.execute(enable)).await?;
    let page = page.clone();
    Ok(tokio::spawn(async move {
        while let Some(event) = paused.next().await {
            let id = event.request_id.clone();
            let result = if policy.blocks_url(&event.request.url) {
                policy.blocked.fetch_add(1, Ordering::Relaxed);
                tracing::info!(host = ?url_host(&event.request.url), "request blocked by avoidDomains");
                within(timeout, "fail request", page.execute(FailRequestParams::new(id, ErrorReason::BlockedByClient)))
                    .await
                    .map(|_| ())
            } else {
                within(timeout, "continue request", page.execute(ContinueRequestParams::new(id))).await.map(|_| ())
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "answering a paused request failed");
            }
        }
    }))
}
