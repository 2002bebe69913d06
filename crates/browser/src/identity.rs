//! A session's browser identity (locale, time zone, user agent, geolocation) on every page of its context:
//! the first page before its first navigation, each tab the session opens, and each page a site or a
//! DevTools client opens (`adopt.rs`). The overrides live on chromiumoxide's session of each page, which
//! stays attached for the page's life; the geolocation permission is granted to the whole context.

use crate::error::{within, BrowserError};
use crate::identity_frames::{FrameIdentity, Overrides};
use crate::page::SessionPage;
use chromiumoxide::cdp::browser_protocol::browser::{PermissionDescriptor, PermissionSetting, SetPermissionParams};
use chromiumoxide::cdp::browser_protocol::emulation::{
    SetGeolocationOverrideParams, SetLocaleOverrideParams, SetTimezoneOverrideParams, SetUserAgentOverrideParams,
};
use chromiumoxide::Page;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
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
        if let Ok(mut slot) = self.inner.identity.lock() {
            *slot = Some(applied.clone());
        }
        let pages: Vec<Page> =
            self.inner.tabs.lock().map(|t| t.list.iter().map(|tab| tab.page.clone()).collect()).unwrap_or_default();
        for page in pages {
            applied.apply(&page, timeout).await?;
        }
        Ok(())
    }

    /// The session's identity (empty when it has none).
    pub fn identity(&self) -> Identity {
        self.inner.identity.lock().ok().and_then(|s| s.as_ref().map(|a| a.identity.clone())).unwrap_or_default()
    }
}

impl crate::page::Inner {
    /// The session's identity as sent to each page, when it has one.
    pub(crate) fn applied_identity(&self) -> Option<Arc<Applied>> {
        self.identity.lock().ok().and_then(|s| s.clone())
    }
}

/// An identity as sent to each page.
pub(crate) struct Applied {
    identity: Identity,
    /// The browser's own user agent, sent with the locale's `Accept-Language` when no userAgent is given.
    default_user_agent: Option<String>,
    /// Gives the pages' cross-origin frames the identity (`identity_frames.rs`).
    frames: Option<FrameIdentity>,
}

impl Applied {
    fn user_agent(&self) -> Option<&String> {
        self.identity.user_agent.as_ref().or(self.default_user_agent.as_ref())
    }

    /// The same overrides as raw DevTools commands, for frames.
    fn overrides(&self) -> Overrides {
        let id = &self.identity;
        let mut out: Overrides = Vec::new();
        if let Some(ua) = self.user_agent() {
            out.push((
                "Emulation.setUserAgentOverride",
                json!({ "userAgent": ua, "acceptLanguage": id.accept_language() }),
            ));
        }
        if let Some(locale) = &id.locale {
            out.push(("Emulation.setLocaleOverride", json!({ "locale": locale })));
        }
        if let Some(zone) = &id.timezone {
            out.push(("Emulation.setTimezoneOverride", json!({ "timezoneId": zone })));
        }
        if let Some(g) = &id.geolocation {
            out.push((
                "Emulation.setGeolocationOverride",
                json!({ "latitude": g.latitude, "longitude": g.longitude, "accuracy": g.accuracy }),
            ));
        }
        out
    }

    /// Sets the overrides on one page (its DevTools session).
    pub(crate) async fn apply(&self, page: &Page, timeout: Duration) -> Result<(), BrowserError> {
        let id = &self.identity;
        if let Some(ua) = self.user_agent() {
            let mut p = SetUserAgentOverrideParams::new(ua.clone());
            p.accept_language = id.accept_language();
            within(timeout, "set the user agent", page.execute(p)).await?;
        }
        if let Some(locale) = &id.locale {
            let p = SetLocaleOverrideParams::builder().locale(locale.clone()).build();
            within(timeout, "set the locale", page.execute(p)).await?;
        }
        if let Some(zone) = &id.timezone {
            within(timeout, "set the time zone", page.execute(SetTimezoneOverrideParams::new(zone.clone()))).await?;
        }
        if let Some(geo) = &id.geolocation {
            let p = SetGeolocationOverrideParams {
                latitude: Some(geo.latitude),
                longitude: Some(geo.longitude),
                accuracy: Some(geo.accuracy),
                ..Default::default()
            };
            within(timeout, "set the geolocation", page.execute(p)).await?;
        }
        if let Some(frames) = &self.frames {
            // A page whose frames cannot be watched still has its own identity.
            if let Err(e) = frames.watch(page.target_id().inner(), timeout).await {
                tracing::warn!(error = %e, "watching a page's frames for the identity failed");
            }
        }
        Ok(())
    }

    /// Applies the identity to a page opened by a site or a DevTools client. Its first request had the
    /// identity already: the frame identity client auto-attached the page, paused, and set the overrides
    /// before it ran (`identity_frames.rs`); this sets them on chromiumoxide's session of the page too.
    pub(crate) async fn apply_to_new(&self, page: &Page, timeout: Duration) -> Result<(), BrowserError> {
        self.apply(page, timeout).await
    }
}
