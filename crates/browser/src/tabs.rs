//! The tabs of a session: pages in its browser context, each with request interception and a crash
//! watch, one of them active. Background tasks of a tab stop when the tab is dropped.

use crate::error::{within, BrowserError};
use crate::intercept::DomainPolicy;
use crate::process::BrowserProcess;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::target::CreateTargetParams;
use chromiumoxide::Page;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Aborts a background task when dropped.
pub(crate) struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) struct Tab {
    pub page: Page,
    pub crashed: Arc<AtomicBool>,
    _tasks: [AbortOnDrop; 2],
}

impl Tab {
    /// Wraps a fresh page: interception of its requests by `policy`, and a watch for renderer crashes.
    pub async fn prepare(page: Page, policy: DomainPolicy, timeout: Duration) -> Result<Tab, BrowserError> {
        let interceptor = crate::intercept::start(&page, policy, timeout).await?;
        let crashed = Arc::new(AtomicBool::new(false));
        let mut crashes = within(timeout, "listen for crashes", page.event_listener::<EventTargetCrashed>()).await?;
        let flag = crashed.clone();
        let watcher = tokio::spawn(async move {
            if crashes.next().await.is_some() {
                tracing::warn!("a page crashed");
                flag.store(true, Ordering::SeqCst);
            }
        });
        Ok(Tab { page, crashed, _tasks: [AbortOnDrop(interceptor), AbortOnDrop(watcher)] })
    }
}

pub(crate) struct Tabs {
    pub list: Vec<Tab>,
    pub active: usize,
}

/// What opening a tab needs: the process and the session's context.
pub(crate) struct TabOpener {
    pub process: Arc<BrowserProcess>,
    pub context: BrowserContextId,
}

impl TabOpener {
    pub async fn open(&self, url: &str, timeout: Duration) -> Result<Page, BrowserError> {
        let mut target = CreateTargetParams::new(url);
        target.browser_context_id = Some(self.context.clone());
        within(timeout, "create page", self.process.browser.new_page(target)).await
    }
}
