//! The pages of one session: navigation, clicks, typing, keys, scrolling, reading and tabs, each
//! bounded by a timeout and reported as a `BrowserError` whose code the agent or the client understands.

use crate::error::{within, BrowserError};
use crate::snapshot;
use crate::tabs::{CrashFlag, Tab, TabOpener, Tabs};
use crate::DomainPolicy;
use crate::{input, scripts};
use chromiumoxide::cdp::browser_protocol::page::{CaptureScreenshotFormat, CaptureScreenshotParams};
use chromiumoxide::cdp::browser_protocol::target::{TargetId, TargetInfo};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::Page;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::task::AbortOnDropHandle;
use webpilot_core::geometry::PagePoint;

/// What a click by text or index hit.
#[derive(Debug, Clone, PartialEq)]
pub struct ClickTarget {
    pub tag: String,
    pub text: String,
    pub at: PagePoint,
}

/// One open tab, as the agent sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TabInfo {
    pub index: usize,
    pub url: String,
    pub title: String,
    pub active: bool,
}

/// A session's browser pages; cheap to clone (the agent and manual control share it).
#[derive(Clone)]
pub struct SessionPage {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) tabs: Mutex<Tabs>,
    pub(crate) opener: TabOpener,
    pub(crate) policy: DomainPolicy,
    pub(crate) cdp_timeout: Duration,
    pub(crate) nav_timeout: Duration,
    pub(crate) max_tabs: usize,
    /// Adopts pages the site opens itself (target=_blank, window.open) as tabs.
    pub(crate) popups: Mutex<Option<AbortOnDropHandle<()>>>,
    /// The pages being adopted now, by target (`adopt.rs`).
    pub(crate) adoptions: tokio::sync::watch::Sender<std::collections::HashSet<TargetId>>,
    /// Bumped whenever a tab opens or closes or another tab becomes active (the live view follows it).
    pub(crate) tab_changes: tokio::sync::watch::Sender<u64>,
    /// Where the frames of the latest snapshot are (`elements.rs`).
    pub(crate) frames: crate::frame_index::FrameState,
    /// The session's files as the browser may read them (`upload.rs`); none on a remote browser.
    pub(crate) files_dir: Option<std::path::PathBuf>,
    /// The context's download events for DevTools clients (`downloads.rs`); none on a remote browser.
    pub(crate) download_events: Option<tokio::sync::broadcast::Sender<String>>,
    /// The session's browser identity, given to every page it opens (`identity.rs`).
    pub(crate) identity: Mutex<Option<Arc<crate::applied_identity::Applied>>>,
    /// The address of the last document opened that came with `cf-mitigated: challenge` (`challenges.rs`).
    pub(crate) challenge_served: Mutex<Option<String>>,
    /// Pages the session's DevTools connections are opening or closing (`relay/scope.rs`).
    pub(crate) relay_claims: Arc<crate::relay::scope::TabClaims>,
}

impl SessionPage {
    pub(crate) fn cdp_timeout(&self) -> Duration {
        self.inner.cdp_timeout
    }

    /// The session's domain policy (set it before each task).
    pub fn policy(&self) -> &DomainPolicy {
        &self.inner.policy
    }

    /// What a DevTools client of this session reaches: its context, its file area, its tab cap.
    pub fn devtools(&self) -> crate::relay::DevtoolsScope {
        crate::relay::DevtoolsScope {
            process: self.inner.opener.process.clone(),
            tabs: Arc::<Inner>::downgrade(&self.inner),
            context: self.inner.opener.context.inner().clone(),
            files_dir: self.inner.files_dir.clone(),
            downloads: self.inner.download_events.clone(),
            max_tabs: self.inner.max_tabs,
            claims: self.inner.relay_claims.clone(),
            timeout: self.inner.cdp_timeout,
        }
    }

    /// Changes whenever a tab opens or closes or another tab becomes active.
    pub fn tab_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.tab_changes.subscribe()
    }

    /// The active tab's page, crashed or not (the live view watches it).
    pub(crate) fn active_page(&self) -> Result<Page, BrowserError> {
        self.active().map(|(page, _)| page)
    }

    /// The active tab's page and its crash flag.
    pub(crate) fn active(&self) -> Result<(Page, CrashFlag), BrowserError> {
        let tabs = self.inner.tabs.lock();
        let tab = tabs.list.get(tabs.active).ok_or(BrowserError::InstanceLost)?;
        Ok((tab.page.clone(), tab.crashed.clone()))
    }

    /// The active tab's page, or PAGE_CRASH when its renderer died (navigating it again revives it).
    pub(crate) fn page(&self) -> Result<Page, BrowserError> {
        let (page, crashed) = self.active()?;
        if crashed.is_set() {
            return Err(BrowserError::PageCrash);
        }
        Ok(page)
    }

    /// Waits `duration`, or fails with PAGE_CRASH the moment the active tab's renderer dies.
    pub async fn wait(&self, duration: Duration) -> Result<(), BrowserError> {
        let (_, crashed) = self.active()?;
        tokio::select! {
            () = tokio::time::sleep(duration) => Ok(()),
            () = crashed.crashed() => Err(BrowserError::PageCrash),
        }
    }

    /// Evaluates a JavaScript expression and returns its JSON value (null for undefined).
    pub async fn eval(&self, expression: &str) -> Result<Value, BrowserError> {
        let page = self.page()?;
        let mut params = EvaluateParams::new(expression);
        params.return_by_value = Some(true);
        params.await_promise = Some(true);
        let res = within(self.inner.cdp_timeout, "evaluate", page.execute(params)).await?;
        if let Some(ex) = &res.result.exception_details {
            let text = ex.exception.as_ref().and_then(|e| e.description.clone()).unwrap_or_else(|| ex.text.clone());
            return Err(BrowserError::Cdp(format!("script failed: {text}")));
        }
        Ok(res.result.result.value.clone().unwrap_or(Value::Null))
    }

    pub(crate) async fn run_script(&self, body: &str, arg: Value) -> Result<Value, BrowserError> {
        self.eval(&scripts::with_arg(body, &arg)).await
    }

    /// Goes back one entry in history.
    pub async fn go_back(&self) -> Result<(), BrowserError> {
        // Deferred so the evaluation answers before the navigation replaces the document.
        self.settled(self.eval("setTimeout(() => history.back(), 0)")).await?;
        Ok(())
    }

    pub async fn url(&self) -> Result<String, BrowserError> {
        Ok(self.eval("location.href").await?.as_str().unwrap_or_default().to_owned())
    }

    /// The active tab's address as the browser knows it (no script runs in the page, so a busy or
    /// loading page answers at once).
    pub async fn active_url(&self) -> Result<String, BrowserError> {
        let page = self.active_page()?;
        Ok(within(self.inner.cdp_timeout, "tab url", page.url()).await?.unwrap_or_default())
    }

    /// The HTTP status of the active tab's document (`None` for documents without one, such as
    /// `about:blank`, or when the browser does not say).
    pub async fn http_status(&self) -> Result<Option<u16>, BrowserError> {
        let status = self
            .eval("(performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0")
            .await?
            .as_u64()
            .unwrap_or(0);
        Ok(u16::try_from(status).ok().filter(|s| *s > 0))
    }

    pub async fn title(&self) -> Result<String, BrowserError> {
        Ok(self.eval("document.title").await?.as_str().unwrap_or_default().to_owned())
    }

    /// Types `text` as key presses at whatever has focus (see `input::type_keys`).
    pub async fn type_keys(&self, text: &str) -> Result<(), BrowserError> {
        input::type_keys(&self.page()?, text, self.inner.cdp_timeout).await
    }

    /// Drags with the left button held from one page point to another.
    pub async fn drag(&self, from: PagePoint, to: PagePoint) -> Result<(), BrowserError> {
        input::drag(&self.page()?, from, to, self.inner.cdp_timeout).await
    }

    /// Turns the mouse wheel at a page point (`dy` pixels down; negative is up), then waits for the next
    /// frame (at most 100 ms) so the scroll has been applied; answers the page's own scroll offset.
    pub async fn scroll_at(&self, at: PagePoint, dy: f64) -> Result<f64, BrowserError> {
        input::wheel(&self.page()?, at, dy, self.inner.cdp_timeout).await?;
        let frame = "new Promise(r => { const done = () => r(scrollY); \
            requestAnimationFrame(() => setTimeout(done, 0)); setTimeout(done, 100); })";
        Ok(self.eval(frame).await?.as_f64().unwrap_or(0.0))
    }

    /// Clicks at a page point with real mouse events.
    pub async fn click_at(&self, at: PagePoint, double: bool) -> Result<(), BrowserError> {
        input::click(&self.page()?, at, double, self.inner.cdp_timeout).await
    }

    pub(crate) async fn click_found(&self, found: Value, missing: String) -> Result<ClickTarget, BrowserError> {
        let at = point_of(&found).ok_or(BrowserError::ElementNotFound(missing))?;
        self.click_at(at, false).await?;
        Ok(ClickTarget {
            tag: found["tag"].as_str().unwrap_or_default().to_owned(),
            text: found["text"].as_str().unwrap_or_default().to_owned(),
            at,
        })
    }

    /// Clicks the visible link or button whose text matches `text` (exact, then containing).
    pub async fn click_text(&self, text: &str) -> Result<ClickTarget, BrowserError> {
        let found = self.run_script(scripts::FIND_CLICKABLE, json!(text)).await?;
        self.click_found(found, format!("no link or button {text:?}")).await
    }

    /// Focuses the field labelled `label` (label, placeholder, aria-label, name or id) by clicking it,
    /// then types `text` over its content.
    pub async fn fill(&self, label: &str, text: &str) -> Result<(), BrowserError> {
        let found = self.run_script(scripts::FIND_FIELD, json!(label)).await?;
        self.fill_found(found, format!("no field {label:?}"), text, None).await
    }

    /// Clicks the field found at `found`, selects its content and types `text` over it. `element` is its
    /// snapshot index when it has one (it may live in a cross-origin frame), else it is in the page.
    pub(crate) async fn fill_found(
        &self,
        found: Value,
        missing: String,
        text: &str,
        element: Option<u32>,
    ) -> Result<(), BrowserError> {
        self.click_element(element, snapshot::FOCUS_INDEX, found, missing).await?;
        // The click may have collapsed the selection made by the script; select the content again, in
        // the document the field is in.
        match element {
            Some(index) => self.run_on_element(index, snapshot::SELECT_FOCUSED, |_| Value::Null).await?,
            None => self.run_script(snapshot::SELECT_FOCUSED, Value::Null).await?,
        };
        let in_frame = match element {
            Some(index) => self.type_in_frame(index, text).await,
            None => None,
        };
        match in_frame {
            Some(typed) => typed,
            None => self.type_text(text, false).await,
        }
    }

    /// Types into whatever has focus.
    pub async fn type_text(&self, text: &str, human_like: bool) -> Result<(), BrowserError> {
        input::type_text(&self.page()?, text, human_like, self.inner.cdp_timeout).await
    }

    pub async fn press_key(&self, key: &str) -> Result<(), BrowserError> {
        input::press_key(&self.page()?, key, self.inner.cdp_timeout).await
    }

    /// Scrolls vertically by `dy` pixels (negative is up); returns the new offset.
    pub async fn scroll(&self, dy: i64) -> Result<f64, BrowserError> {
        Ok(self.run_script(scripts::SCROLL_BY, json!(dy)).await?.as_f64().unwrap_or(0.0))
    }

    /// The text of the element matching a CSS selector, or else of the first visible element
    /// containing `target`.
    pub async fn text_of(&self, target: &str) -> Result<String, BrowserError> {
        match self.run_script(scripts::TEXT_OF, json!(target)).await? {
            Value::String(s) => Ok(s),
            _ => Err(BrowserError::ElementNotFound(format!("nothing matches {target:?}"))),
        }
    }

    /// The visible text of the page body, cut to `max_chars`.
    pub async fn body_text(&self, max_chars: usize) -> Result<String, BrowserError> {
        let text = self.eval("document.body ? document.body.innerText : ''").await?;
        Ok(text.as_str().unwrap_or_default().chars().take(max_chars).collect())
    }

    /// A JPEG screenshot of the viewport.
    pub async fn screenshot_jpeg(&self, quality: i64) -> Result<Vec<u8>, BrowserError> {
        let page = self.page()?;
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Jpeg),
            quality: Some(quality),
            ..Default::default()
        };
        within(self.inner.cdp_timeout, "screenshot", page.screenshot(params)).await
    }

    /// The open tabs.
    pub async fn tabs(&self) -> Result<Vec<TabInfo>, BrowserError> {
        let (pages, active) = {
            let tabs = self.inner.tabs.lock();
            let list = tabs.list.iter().map(|t| (t.page.clone(), t.crashed.is_set()));
            (list.collect::<Vec<_>>(), tabs.active)
        };
        let mut out = Vec::with_capacity(pages.len());
        for (index, (page, crashed)) in pages.into_iter().enumerate() {
            let url = within(self.inner.cdp_timeout, "tab url", page.url()).await.ok().flatten().unwrap_or_default();
            // A crashed tab has no renderer to ask for its title.
            let title = if crashed {
                "(crashed)".to_owned()
            } else {
                within(self.inner.cdp_timeout, "tab title", page.get_title()).await.ok().flatten().unwrap_or_default()
            };
            out.push(TabInfo { index, url, title, active: index == active });
        }
        Ok(out)
    }

    /// Opens a new tab (made active) at `url`.
    pub async fn open_tab(&self, url: &str) -> Result<usize, BrowserError> {
        self.check_allowed(url)?;
        let open = self.inner.tabs.lock().list.len();
        if open >= self.inner.max_tabs {
            return Err(BrowserError::TooManyTabs(self.inner.max_tabs));
        }
        let page = self.inner.opener.open("about:blank", self.inner.cdp_timeout).await?;
        if let Some(identity) = self.inner.applied_identity() {
            identity.apply(&page, self.inner.cdp_timeout).await?;
        }
        let tab = Tab::prepare(page, self.inner.cdp_timeout).await?;
        let index = {
            let mut tabs = self.inner.tabs.lock();
            // The watch over the context's new pages may have adopted it already.
            match tabs.list.iter().position(|t| t.page.target_id() == tab.page.target_id()) {
                Some(at) => tabs.active = at,
                None => {
                    tabs.list.push(tab);
                    tabs.active = tabs.list.len() - 1;
                }
            }
            tabs.active
        };
        self.inner.tabs_changed();
        self.goto(url).await?;
        Ok(index)
    }

    /// Makes tab `index` the active one.
    pub fn switch_tab(&self, index: usize) -> Result<(), BrowserError> {
        let mut tabs = self.inner.tabs.lock();
        if index >= tabs.list.len() {
            return Err(BrowserError::ElementNotFound(format!("there is no tab {index}")));
        }
        tabs.active = index;
        drop(tabs);
        self.inner.tabs_changed();
        Ok(())
    }

    /// Closes tab `index` (the last tab cannot be closed); the previous tab becomes active.
    pub async fn close_tab(&self, index: usize) -> Result<(), BrowserError> {
        let tab = {
            let mut tabs = self.inner.tabs.lock();
            if index >= tabs.list.len() {
                return Err(BrowserError::ElementNotFound(format!("there is no tab {index}")));
            }
            if tabs.list.len() == 1 {
                return Err(BrowserError::ElementNotFound("the last tab cannot be closed".into()));
            }
            let tab = tabs.list.remove(index);
            tabs.active = tabs.active.min(tabs.list.len() - 1);
            tab
        };
        self.inner.tabs_changed();
        within(self.inner.cdp_timeout, "close tab", tab.page.close()).await
    }
}

impl Inner {
    pub(crate) fn tabs_changed(&self) {
        self.tab_changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn has_tab(&self, target: &TargetId) -> bool {
        self.tab_page(target).is_some()
    }

    /// The target ids of the session's tabs.
    pub(crate) fn tab_ids(&self) -> Vec<String> {
        let tabs = self.tabs.lock();
        tabs.list.iter().map(|t| t.page.target_id().inner().clone()).collect()
    }

    /// The page of tab `target`, if it is one of the session's tabs.
    pub(crate) fn tab_page(&self, target: &TargetId) -> Option<Page> {
        let tabs = self.tabs.lock();
        tabs.list.iter().find(|t| t.page.target_id() == target).map(|t| t.page.clone())
    }

    /// Whether `info` is a page of the session's browser context (a tab it has or may adopt).
    pub(crate) fn owns_page(&self, info: &TargetInfo) -> bool {
        info.r#type == "page" && info.browser_context_id.as_ref() == Some(&self.opener.context)
    }

    /// Drops the tab of a closed page (never the last tab: the session keeps a page to report on).
    pub(crate) fn let_go(&self, target: &TargetId) {
        let removed = {
            let mut tabs = self.tabs.lock();
            match tabs.list.iter().position(|t| t.page.target_id() == target) {
                Some(at) if tabs.list.len() > 1 => {
                    tabs.list.remove(at);
                    if tabs.active >= at && tabs.active > 0 {
                        tabs.active -= 1;
                    }
                    true
                }
                _ => false,
            }
        };
        if removed {
            tracing::debug!("a closed page's tab was let go");
            self.tabs_changed();
        }
    }
}

pub(crate) fn point_of(v: &Value) -> Option<PagePoint> {
    Some(PagePoint { x: v.get("x")?.as_f64()?, y: v.get("y")?.as_f64()? })
}
