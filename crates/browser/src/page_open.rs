//! Opening a session's pages: the first tab, the shared state of its pages, and the watcher that adopts
//! every new page of its context as a tab (`adopt.rs`).

use crate::config::BrowserSettings;
use crate::error::{within, BrowserError};
use crate::page::{Inner, SessionPage};
use crate::tabs::{Tab, TabOpener, Tabs};
use crate::DomainPolicy;
use chromiumoxide::cdp::browser_protocol::target::{EventTargetCreated, EventTargetDestroyed};
use chromiumoxide::Page;
use parking_lot::Mutex;
use std::sync::Arc;
use tokio_util::task::AbortOnDropHandle;

impl SessionPage {
    pub(crate) async fn new(
        page: Page,
        opener: TabOpener,
        settings: &BrowserSettings,
        policy: DomainPolicy,
        (files_dir, download_events): (Option<std::path::PathBuf>, Option<tokio::sync::broadcast::Sender<String>>),
    ) -> Result<Self, BrowserError> {
        let tab = Tab::prepare(page, settings.cdp_timeout).await?;
        let created = within(
            settings.cdp_timeout,
            "listen for new tabs",
            opener.process.browser.event_listener::<EventTargetCreated>(),
        )
        .await?;
        let inner = Arc::new(Inner {
            tabs: Mutex::new(Tabs { list: vec![tab], active: 0 }),
            opener,
            policy,
            cdp_timeout: settings.cdp_timeout,
            nav_timeout: settings.navigation_timeout,
            max_tabs: settings.max_tabs.max(1),
            popups: Mutex::new(None),
            adoptions: tokio::sync::watch::Sender::new(Default::default()),
            tab_changes: tokio::sync::watch::Sender::new(0),
            frames: Default::default(),
            files_dir,
            download_events,
            identity: Mutex::new(None),
            challenge_served: Mutex::new(None),
            relay_claims: Default::default(),
        });
        let destroyed = within(
            settings.cdp_timeout,
            "listen for closed tabs",
            inner.opener.process.browser.event_listener::<EventTargetDestroyed>(),
        )
        .await?;
        let watcher = webpilot_tasks::spawn_owned(
            "tab adopter",
            crate::adopt::adopt_pages(Arc::downgrade(&inner), created, destroyed),
        );
        {
            let mut slot = inner.popups.lock();
            *slot = Some(AbortOnDropHandle::new(watcher));
        }
        Ok(SessionPage { inner })
    }
}
