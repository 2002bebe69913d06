//! A lease's storage state, for profiles: every cookie of its context (`Storage.getCookies`), and the
//! localStorage and IndexedDB of given origins, read and written by a script in a document of each origin.
//! Those documents are made by the browser itself (`Fetch` answers their navigation with an empty page),
//! so loading or saving a profile sends no request to any site. Also the log of the origins a lease's
//! pages visited.

use crate::error::{within, BrowserError};
use crate::lease::BrowserLease;
use base64::Engine;
use chromiumoxide::cdp::browser_protocol::fetch::{
    DisableParams, EnableParams, EventRequestPaused, FulfillRequestParams, HeaderEntry, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::ResourceType;
use chromiumoxide::cdp::browser_protocol::page::ResetNavigationHistoryParams;
use chromiumoxide::cdp::browser_protocol::target::EventTargetInfoChanged;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::Page;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::task::AbortOnDropHandle;
use webpilot_core::profile::{normalize_origin, OriginState, StorageState};

/// Most origins whose storage one profile carries (the first ones, in order).
pub use webpilot_core::profile::MAX_PROFILE_ORIGINS;

const EXPORT: &str = include_str!("js/storage_export.js");
const IMPORT: &str = include_str!("js/storage_import.js");

/// The empty page each origin's storage is reached through.
const BLANK: &str = "<!doctype html><title></title>";

/// The http(s) origins a lease's pages have been on (top-level documents of every tab).
#[derive(Clone, Default)]
pub struct OriginLog {
    origins: Arc<Mutex<BTreeSet<String>>>,
    _watch: Option<Arc<AbortOnDropHandle<()>>>,
}

impl OriginLog {
    /// Adds the origin of `url` (anything but http(s) is ignored).
    pub fn add_url(&self, url: &str) {
        if let Some(origin) = normalize_origin(url) {
            let mut set = self.origins.lock();
            set.insert(origin);
        }
    }

    /// Adds an origin already normalized (from another log).
    pub fn add_origin(&self, origin: String) {
        let mut set = self.origins.lock();
        set.insert(origin);
    }

    pub fn origins(&self) -> Vec<String> {
        self.origins.lock().iter().cloned().collect()
    }
}

impl BrowserLease {
    /// Starts logging the origins the lease's pages navigate to.
    pub async fn track_origins(&self) -> Result<OriginLog, BrowserError> {
        let browser = &self.guard.process.browser;
        let mut changed =
            within(self.guard.timeout, "listen for navigations", browser.event_listener::<EventTargetInfoChanged>())
                .await?;
        let log = OriginLog::default();
        let (writer, context) = (log.clone(), self.guard.context.clone());
        let watch = webpilot_tasks::spawn_owned("origin watcher", async move {
            while let Some(event) = changed.next().await {
                let info = &event.target_info;
                if info.r#type == "page" && info.browser_context_id.as_ref() == Some(&context) {
                    writer.add_url(&info.url);
                }
            }
        });
        Ok(OriginLog { _watch: Some(Arc::new(AbortOnDropHandle::new(watch))), ..log })
    }

    /// Loads `state` into the lease's context before its first navigation: its cookies, then each origin's
    /// storage; the active tab is left on `about:blank` with no history.
    pub async fn load_state(&self, state: &StorageState) -> Result<(), BrowserError> {
        let timeout = self.guard.timeout;
        crate::cookies::write_stored(&self.guard.process.browser, &self.guard.context, &state.cookies, timeout).await?;
        let origins: Vec<&OriginState> =
            state.origins.iter().filter(|o| !o.is_empty()).take(MAX_PROFILE_ORIGINS).collect();
        if origins.is_empty() {
            return Ok(());
        }
        let page = self.page.active_page()?;
        let blank = Blank::open(&page, timeout).await?;
        let mut result = Ok(());
        for origin in origins {
            let arg = serde_json::to_value(origin).map_err(|e| BrowserError::Cdp(e.to_string()))?;
            if let Err(e) = blank.run(&origin.origin, IMPORT, &arg).await {
                result = Err(e);
                break;
            }
        }
        blank.close().await;
        within(timeout, "leave the profile pages", page.goto("about:blank")).await?;
        within(timeout, "forget the profile pages", page.execute(ResetNavigationHistoryParams::default())).await?;
        result
    }

    /// The context's storage state now: every cookie, and the storage of `origins` (at most
    /// [`MAX_PROFILE_ORIGINS`]; origins with nothing stored are left out). The active tab is used to
    /// reach them: call it when the session is over. Returns the state and how many IndexedDB records
    /// were not carried (not plain JSON data).
    pub async fn save_state(&self, origins: &[String]) -> Result<(StorageState, u64), BrowserError> {
        let timeout = self.guard.timeout;
        let cookies = crate::cookies::read_stored(&self.guard.process.browser, &self.guard.context, timeout).await?;
        let mut state = StorageState { cookies, origins: Vec::new() };
        let mut skipped = 0;
        let origins: Vec<&String> = origins.iter().take(MAX_PROFILE_ORIGINS).collect();
        if origins.is_empty() {
            return Ok((state, 0));
        }
        let page = self.page.active_page()?;
        let blank = Blank::open(&page, timeout).await?;
        for origin in origins {
            let read = blank.run(origin, EXPORT, &Value::String(origin.clone())).await;
            let value = match read {
                Ok(v) => v,
                Err(e) => {
                    blank.close().await;
                    return Err(e);
                }
            };
            skipped += value.get("skipped").and_then(Value::as_u64).unwrap_or(0);
            let read: OriginState = serde_json::from_value(value)
                .map_err(|e| BrowserError::Cdp(format!("reading the storage of an origin: {e}")))?;
            if !read.is_empty() {
                state.origins.push(read);
            }
        }
        blank.close().await;
        Ok((state, skipped))
    }

    /// The http(s) URLs of the lease's tabs now.
    pub async fn tab_urls(&self) -> Vec<String> {
        self.page.tabs().await.map(|tabs| tabs.into_iter().map(|t| t.url).collect()).unwrap_or_default()
    }
}

/// A tab whose document navigations are answered by the browser with an empty page.
struct Blank<'a> {
    page: &'a Page,
    timeout: Duration,
    _answer: AbortOnDropHandle<()>,
}

impl<'a> Blank<'a> {
    async fn open(page: &'a Page, timeout: Duration) -> Result<Blank<'a>, BrowserError> {
        let mut paused = within(timeout, "listen for requests", page.event_listener::<EventRequestPaused>()).await?;
        let answerer = page.clone();
        let answer = webpilot_tasks::spawn_owned("blank answerer", async move {
            let body = base64::engine::general_purpose::STANDARD.encode(BLANK);
            while let Some(event) = paused.next().await {
                let mut reply = FulfillRequestParams::new(event.request_id.clone(), 200);
                reply.response_headers = Some(vec![HeaderEntry::new("Content-Type", "text/html; charset=utf-8")]);
                reply.body = Some(body.clone().into());
                if let Err(e) = within(timeout, "answer a profile page", answerer.execute(reply)).await {
                    tracing::debug!(error = %e, "answering a profile page failed");
                }
            }
        });
        let pattern = RequestPattern {
            url_pattern: Some("*".into()),
            resource_type: Some(ResourceType::Document),
            request_stage: Some(RequestStage::Request),
        };
        let enable = EnableParams { patterns: Some(vec![pattern]), handle_auth_requests: None };
        within(timeout, "intercept profile pages", page.execute(enable)).await?;
        Ok(Blank { page, timeout, _answer: AbortOnDropHandle::new(answer) })
    }

    /// Opens `origin`'s empty page and runs `script` (an async function of one argument) in it.
    async fn run(&self, origin: &str, script: &str, arg: &Value) -> Result<Value, BrowserError> {
        within(self.timeout, "open a profile page", self.page.goto(format!("{origin}/"))).await?;
        let mut params = EvaluateParams::new(format!("({script})({arg})"));
        params.return_by_value = Some(true);
        params.await_promise = Some(true);
        // The evaluation may reach the document the navigation replaces: the script says so, and is
        // run again.
        for _ in 0..20 {
            let res = within(self.timeout, "profile storage", self.page.execute(params.clone())).await?;
            if let Some(ex) = &res.result.exception_details {
                let text = ex.exception.as_ref().and_then(|e| e.description.clone()).unwrap_or_else(|| ex.text.clone());
                return Err(BrowserError::Cdp(format!("profile storage script failed: {text}")));
            }
            let value = res.result.result.value.clone().unwrap_or(Value::Null);
            if value.get("wrongOrigin").is_none() {
                return Ok(value);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(BrowserError::Cdp("the profile page of an origin did not open".into()))
    }

    async fn close(self) {
        if let Err(e) = within(self.timeout, "stop intercepting", self.page.execute(DisableParams::default())).await {
            tracing::debug!(error = %e, "ending the profile page interception failed");
        }
    }
}
