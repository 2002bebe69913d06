//! Cookie snapshots of a session's browser context (`Storage.getCookies` / `Storage.setCookies` on the
//! browser endpoint), so a session whose Chromium died can get its cookies back in a new context. A
//! snapshot must be taken while the browser lives: nothing can be read from a dead process.

use crate::error::{within, BrowserError};
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::network::{Cookie, CookieParam, TimeSinceEpoch};
use chromiumoxide::cdp::browser_protocol::storage::{GetCookiesParams, SetCookiesParams};
use chromiumoxide::Browser;
use std::time::Duration;

/// Every cookie of one browser context at one moment (session cookies included).
#[derive(Debug, Clone, Default)]
pub struct CookieJar {
    cookies: Vec<Cookie>,
}

impl CookieJar {
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// The cookie names (for logs and tests; values are never logged).
    pub fn names(&self) -> Vec<String> {
        self.cookies.iter().map(|c| c.name.clone()).collect()
    }
}

pub(crate) async fn read(
    browser: &Browser,
    context: &BrowserContextId,
    timeout: Duration,
) -> Result<CookieJar, BrowserError> {
    let params = GetCookiesParams { browser_context_id: Some(context.clone()) };
    let res = within(timeout, "read cookies", browser.execute(params)).await?;
    Ok(CookieJar { cookies: res.result.cookies.clone() })
}

pub(crate) async fn write(
    browser: &Browser,
    context: &BrowserContextId,
    jar: &CookieJar,
    timeout: Duration,
) -> Result<(), BrowserError> {
    if jar.is_empty() {
        return Ok(());
    }
    let mut params = SetCookiesParams::new(jar.cookies.iter().map(to_param).collect());
    params.browser_context_id = Some(context.clone());
    within(timeout, "restore cookies", browser.execute(params)).await?;
    Ok(())
}

/// The settable form of a read cookie: a session cookie stays a session cookie (no `expires`).
fn to_param(c: &Cookie) -> CookieParam {
    let mut p = CookieParam::new(c.name.clone(), c.value.clone());
    p.domain = Some(c.domain.clone());
    p.path = Some(c.path.clone());
    p.secure = Some(c.secure);
    p.http_only = Some(c.http_only);
    p.same_site = c.same_site.clone();
    p.expires = (!c.session && c.expires > 0.0).then(|| TimeSinceEpoch::new(c.expires));
    p.priority = Some(c.priority.clone());
    p.source_scheme = Some(c.source_scheme.clone());
    p.source_port = Some(c.source_port);
    p.partition_key = c.partition_key.clone();
    p
}
