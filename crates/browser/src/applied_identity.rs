//! A session's identity as sent to each page: the DevTools overrides (user agent with the locale's
//! `Accept-Language`, locale, time zone, geolocation) set on a page's session, and given to its
//! cross-origin frames (`identity_frames.rs`). `identity.rs` makes one; every page it opens gets it.

use crate::error::{within, BrowserError};
use crate::identity_frames::{FrameIdentity, Overrides};
use chromiumoxide::cdp::browser_protocol::emulation::{
    SetGeolocationOverrideParams, SetLocaleOverrideParams, SetTimezoneOverrideParams, SetUserAgentOverrideParams,
};
use chromiumoxide::Page;
use serde_json::json;
use std::time::Duration;
use webpilot_core::identity::Identity;

/// An identity as sent to each page.
pub(crate) struct Applied {
    pub(crate) identity: Identity,
    /// The browser's own user agent, sent with the locale's `Accept-Language` when no userAgent is given.
    pub(crate) default_user_agent: Option<String>,
    /// Gives the pages' cross-origin frames the identity (`identity_frames.rs`).
    pub(crate) frames: Option<FrameIdentity>,
}

impl Applied {
    fn user_agent(&self) -> Option<&String> {
        self.identity.user_agent.as_ref().or(self.default_user_agent.as_ref())
    }

    /// The same overrides as raw DevTools commands, for frames.
    pub(crate) fn overrides(&self) -> Overrides {
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
