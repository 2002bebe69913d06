//! A session's browser identity (locale, time zone, user agent, geolocation) on every page of its context:
//! the first page before its first navigation, each tab the session opens, and each page a site or a
//! DevTools client opens (`adopt.rs`). The overrides live on chromiumoxide's session of each page, which
//! stays attached for the page's life; the geolocation permission is granted to the whole context.

use crate::applied_identity::Applied;
use crate::error::{within, BrowserError};
use crate::identity_frames::FrameIdentity;
use crate::page::SessionPage;
use chromiumoxide::cdp::browser_protocol::browser::{PermissionDescriptor, PermissionSetting, SetPermissionParams};
use chromiumoxide::Page;
use std::sync::Arc;
use webpilot_core::identity::Identity;

impl SessionPage {
    /// Gives the session's pages `identity`: every open tab now, and every page opened from now on. The
    /// user agent the browser reports is kept when only the locale is given (the header follows the locale).
    pub async fn set_identity(&self, identity: Identity) -> Result<(), BrowserError> {
        if identity.is_empty() {
            return Ok(());
        }
        let timeout = self.inner.cdp_timeout;
        let mut applied = Applied { identity, default_user_agent: None, frames: None };
        let process = &self.inner.opener.process;
        if applied.identity.user_agent.is_none() && applied.identity.locale.is_some() {
            let version = within(timeout, "browser version", process.browser.version()).await?;
            applied.default_user_agent = Some(version.user_agent);
        }
        let context = self.inner.opener.context.inner().as_str();
        applied.frames = Some(FrameIdentity::start(process, applied.overrides(), context, timeout).await?);
        if applied.identity.geolocation.is_some() {
            let mut grant =
                SetPermissionParams::new(PermissionDescriptor::new("geolocation"), PermissionSetting::Granted);
            grant.browser_context_id = Some(self.inner.opener.context.clone());
            within(timeout, "grant geolocation", self.inner.opener.process.browser.execute(grant)).await?;
        }
        let applied = Arc::new(applied);
        {
            let mut slot = self.inner.identity.lock();
            *slot = Some(applied.clone());
        }
        let pages: Vec<Page> = self.inner.tabs.lock().list.iter().map(|tab| tab.page.clone()).collect();
        for page in pages {
            applied.apply(&page, timeout).await?;
        }
        Ok(())
    }

    /// The session's identity (empty when it has none).
    pub fn identity(&self) -> Identity {
        self.inner.identity.lock().as_ref().map(|a| a.identity.clone()).unwrap_or_default()
    }
}

impl crate::page::Inner {
    /// The session's identity as sent to each page, when it has one.
    pub(crate) fn applied_identity(&self) -> Option<Arc<Applied>> {
        self.identity.lock().clone()
    }
}
