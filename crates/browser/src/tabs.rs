//! The tabs of a session: pages in its browser context (whose requests all go through the session's
//! egress proxy), each with a crash watch, one of them active. Background tasks of a tab stop when the tab is dropped.

use crate::error::{within, BrowserError};
use crate::process::BrowserProcess;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::page::{EventJavascriptDialogOpening, HandleJavaScriptDialogParams};
use chromiumoxide::cdp::browser_protocol::target::CreateTargetParams;
use chromiumoxide::Page;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::task::AbortOnDropHandle;

/// Whether a tab's renderer has died since it was last navigated; set by the tab's crash watch the moment
/// Chromium reports it, so whatever waits on the tab ends at once.
#[derive(Clone)]
pub(crate) struct CrashFlag(Arc<watch::Sender<bool>>);

impl CrashFlag {
    fn new() -> Self {
        CrashFlag(Arc::new(watch::Sender::new(false)))
    }

    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    fn set(&self) {
        self.0.send_replace(true);
    }

    /// A crashed tab may be navigated again: that starts a new renderer.
    pub fn clear(&self) {
        self.0.send_replace(false);
    }

    /// Resolves once the tab has crashed (at once if it has).
    pub async fn crashed(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives as long as `self`, so this only ends when the flag is set.
        let _ = rx.wait_for(|c| *c).await;
    }
}

pub(crate) struct Tab {
    pub page: Page,
    pub crashed: CrashFlag,
    _watch: AbortOnDropHandle<()>,
    _dialogs: AbortOnDropHandle<()>,
}

impl Tab {
    /// Wraps a fresh page with a watch for renderer crashes and an answerer of its dialogs.
    pub async fn prepare(page: Page, timeout: Duration) -> Result<Tab, BrowserError> {
        let crashed = CrashFlag::new();
        let mut crashes = within(timeout, "listen for crashes", page.event_listener::<EventTargetCrashed>()).await?;
        let flag = crashed.clone();
        // Every crash, also of a renderer started by navigating the crashed tab again.
        let watcher = webpilot_tasks::spawn_owned("crash watcher", async move {
            while crashes.next().await.is_some() {
                tracing::warn!("a page crashed");
                flag.set();
            }
        });
        let dialogs = answer_dialogs(&page, timeout).await?;
        Ok(Tab { page, crashed, _watch: AbortOnDropHandle::new(watcher), _dialogs: AbortOnDropHandle::new(dialogs) })
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

/// Accepts every JavaScript dialog of `page` as it opens (`alert`, `confirm` as OK, `prompt` with its
/// default, `beforeunload` as leave): while one is open the page's scripts, and every evaluation the
/// agent makes, would wait for a person who is not there.
async fn answer_dialogs(page: &Page, timeout: Duration) -> Result<JoinHandle<()>, BrowserError> {
    let mut opened =
        within(timeout, "listen for dialogs", page.event_listener::<EventJavascriptDialogOpening>()).await?;
    let page = page.clone();
    Ok(webpilot_tasks::spawn_owned("dialog answerer", async move {
        while let Some(dialog) = opened.next().await {
            tracing::debug!(kind = ?dialog.r#type, "accepting a page dialog");
            let mut answer = HandleJavaScriptDialogParams::new(true);
            answer.prompt_text = dialog.default_prompt.clone();
            if let Err(e) = within(timeout, "answer a dialog", page.execute(answer)).await {
                tracing::debug!(error = %e, "answering a page dialog failed");
            }
        }
    }))
}
