//! Cookie snapshots of a session's browser context (`Storage.getCookies` / `Storage.setCookies` on the
//! browser endpoint), so a session whose Chromium died can get its cookies back in a new context. A
//! snapshot must be taken while the browser lives: nothing can be read from a dead process.

use crate::error::{within, BrowserError};
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::network::{Cookie, CookieParam, TimeSinceEpoch};
use chromiumoxide::cdp::browser_protocol::storage::{GetCookiesParams, SetCookiesParams};
use chromiumoxide::Browser;
use std::time::Duration;
use webpilot_core::profile::StoredCookie;

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

/// A read cookie in the saved form (a session cookie has `expires: -1`).
pub(crate) fn to_stored(c: &Cookie) -> StoredCookie {
    StoredCookie {
        name: c.name.clone(),
        value: c.value.clone(),
        domain: c.domain.clone(),
        path: c.path.clone(),
        expires: if c.session { -1.0 } else { c.expires },
        http_only: c.http_only,
        secure: c.secure,
        same_site: c.same_site.as_ref().map(|s| s.as_ref().to_owned()),
    }
}

/// The settable form of a saved cookie: a host-only cookie (no leading dot) is set by URL, so it stays
/// host-only; an expired one is left out by the caller.
pub(crate) fn from_stored(c: &StoredCookie) -> CookieParam {
    let mut p = CookieParam::new(c.name.clone(), c.value.clone());
    if c.domain.starts_with('.') {
        p.domain = Some(c.domain.clone());
    } else {
        let scheme = if c.secure { "https" } else { "http" };
        p.url = Some(format!("{scheme}://{}{}", c.domain, c.path));
    }
    p.path = Some(c.path.clone());
    p.secure = Some(c.secure);
    p.http_only = Some(c.http_only);
    p.same_site = c.same_site.as_deref().and_then(|s| s.parse().ok());
    p.expires = (c.expires > 0.0).then(|| TimeSinceEpoch::new(c.expires));
    p
}

pub(crate) async fn read_stored(
    browser: &Browser,
    context: &BrowserContextId,
    timeout: Duration,
) -> Result<Vec<StoredCookie>, BrowserError> {
    Ok(read(browser, context, timeout).await?.cookies.iter().map(to_stored).collect())
}

pub(crate) async fn write_stored(
    browser: &Browser,
    context: &BrowserContextId,
    cookies: &[StoredCookie],
    timeout: Duration,
) -> Result<(), BrowserError> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let params: Vec<CookieParam> =
        cookies.iter().filter(|c| c.expires <= 0.0 || c.expires > now).map(from_stored).collect();
    if params.is_empty() {
        return Ok(());
    }
    let mut all = SetCookiesParams::new(params.clone());
    all.browser_context_id = Some(context.clone());
    if within(timeout, "load profile cookies", browser.execute(all)).await.is_ok() {
        return Ok(());
    }
    // Chromium refuses the whole list for one cookie it will not take: set them one by one, leaving
    // those out.
    let mut refused = 0;
    for cookie in params {
        let mut one = SetCookiesParams::new(vec![cookie]);
        one.browser_context_id = Some(context.clone());
        match within(timeout, "load a profile cookie", browser.execute(one)).await {
            Ok(_) => {}
            Err(BrowserError::Cdp(_)) => refused += 1,
            Err(e) => return Err(e),
        }
    }
    tracing::warn!(refused, "cookies of a profile the browser would not take were left out");
    Ok(())
}
