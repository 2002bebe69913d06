//! Navigation: opening a URL in the active tab and naming a failed load for what it was (blocked by
//! policy, a host that does not resolve, a connection refused or unreachable, from the session's egress
//! log; an HTTP error status without a body, from the page's responses; a crash, at once).

use crate::error::{within, BrowserError};
use crate::page::SessionPage;
use crate::tabs::CrashFlag;
use chromiumoxide::cdp::browser_protocol::network::{EventResponseReceived, LoaderId, ResourceType};
use chromiumoxide::cdp::browser_protocol::page::NavigateParams;
use chromiumoxide::listeners::EventStream;
use chromiumoxide::Page;
use futures::StreamExt;
use std::time::Duration;
use webpilot_core::egress::navigable_url;
use webpilot_egress::EgressFailure;

impl SessionPage {
    /// Refuses `url` when it is not a web page or the session avoids its domain; the error's code is
    /// NAVIGATION_TIMEOUT, which the spec gives to blocked navigation as well as to slow sites and network
    /// failures (see `BrowserError::code`). Addresses are decided by the egress proxy when the browser connects.
    pub(crate) fn check_allowed(&self, url: &str) -> Result<(), BrowserError> {
        if let Err(reason) = navigable_url(url) {
            return Err(BrowserError::Blocked { url: url.to_owned(), reason });
        }
        if self.inner.policy.blocks_url(url) {
            return Err(BrowserError::NavigationFailed {
                url: url.to_owned(),
                reason: "the domain is in avoidDomains and is blocked; do not visit it".into(),
            });
        }
        Ok(())
    }

    /// Opens `url` in the active tab and waits for it to load. A load the egress proxy did not connect
    /// (the URL itself, or where it redirected) is named for why: blocked by policy, a host that does not
    /// resolve, a connection refused, or unreachable; an HTTP error status without a body is the site's.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.check_allowed(url)?;
        let policy = &self.inner.policy;
        let mark = policy.failure_count();
        let (page, crashed) = self.active()?;
        let result = self.navigate(&page, crashed, url).await;
        if policy.failure_count() > mark {
            // Where this tab ended up (a redirect); the active tab may be a popup by now.
            let landed = within(self.inner.cdp_timeout, "tab url", page.url()).await.ok().flatten().unwrap_or_default();
            let failure = policy.failure_of_url_since(mark, url).or_else(|| policy.failure_of_url_since(mark, &landed));
            if let Some(f) = failure {
                let reason = f.failure.describe(&f.host, f.port);
                return Err(match f.failure {
                    EgressFailure::Denied(_) => BrowserError::Blocked { url: url.to_owned(), reason },
                    _ => BrowserError::NavigationFailed { url: url.to_owned(), reason },
                });
            }
        }
        result
    }

    async fn navigate(&self, page: &Page, crashed: CrashFlag, url: &str) -> Result<(), BrowserError> {
        // A crashed tab may be navigated: that starts a new renderer.
        crashed.clear();
        // Chromium fails a load whose error status came without a body; its status is in the responses.
        let mut responses =
            within(self.inner.cdp_timeout, "listen for responses", page.event_listener::<EventResponseReceived>())
                .await?;
        let nav = async {
            let res = page.execute(NavigateParams::new(url)).await?;
            match res.result.error_text.clone() {
                Some(err) if err == HTTP_ERROR_WITHOUT_BODY => {
                    let status = document_status(&mut responses, res.result.loader_id.as_ref()).await;
                    Err(BrowserError::HttpStatus { url: url.to_owned(), status })
                }
                Some(err) => Err(BrowserError::NavigationFailed { url: url.to_owned(), reason: err }),
                None => Ok(res.result.loader_id.clone()),
            }
        };
        let crash = crashed.crashed();
        let loader = tokio::select! {
            r = tokio::time::timeout(self.inner.nav_timeout, nav) => match r {
                Err(_) | Ok(Err(BrowserError::Timeout(_))) => return Err(BrowserError::NavigationTimeout(url.to_owned())),
                Ok(r) => r?,
            },
            _ = crash => return Err(BrowserError::PageCrash),
        };
        self.wait_loaded().await?;
        let served = challenge_served(&mut responses, loader.as_ref());
        {
            let mut slot = self.inner.challenge_served.lock();
            *slot = served;
        }
        Ok(())
    }
}

/// The address of the document loaded by `loader` when it came with Cloudflare's `cf-mitigated:
/// challenge` header, from the responses already received (the page has loaded, so its own is among them).
fn challenge_served(responses: &mut EventStream<EventResponseReceived>, loader: Option<&LoaderId>) -> Option<String> {
    use futures::FutureExt;
    while let Some(Some(event)) = responses.next().now_or_never() {
        if event.r#type != ResourceType::Document || loader.is_some_and(|l| *l != event.loader_id) {
            continue;
        }
        let headers = event.response.headers.inner().as_object().cloned().unwrap_or_default();
        let mitigated = headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("cf-mitigated") && value.as_str().is_some_and(|v| v.trim() == "challenge")
        });
        if mitigated {
            return Some(event.response.url.clone());
        }
    }
    None
}

/// Chromium's error for a load whose HTTP error status came without a body (it shows its own page).
const HTTP_ERROR_WITHOUT_BODY: &str = "net::ERR_HTTP_RESPONSE_CODE_FAILURE";

/// The HTTP status of the document loaded by `loader` among the responses received so far (they arrive
/// before the navigation's answer; a short grace covers any still on their way).
async fn document_status(responses: &mut EventStream<EventResponseReceived>, loader: Option<&LoaderId>) -> Option<u16> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(250);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, responses.next()).await {
        if event.r#type == ResourceType::Document && loader.is_none_or(|l| *l == event.loader_id) {
            return u16::try_from(event.response.status).ok();
        }
    }
    None
}
