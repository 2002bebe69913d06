//! The page of one session: navigation, clicks, typing, keys, scrolling and reading, each bounded by a
//! timeout and reported as a `BrowserError` whose code the agent or the client understands.

use crate::config::BrowserSettings;
use crate::error::{within, BrowserError};
use crate::intercept::DomainPolicy;
use crate::{input, scripts};
use chromiumoxide::cdp::browser_protocol::page::NavigateParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::Page;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use webpilot_core::geometry::PagePoint;

/// What a text-based click hit.
#[derive(Debug, Clone, PartialEq)]
pub struct ClickTarget {
    pub tag: String,
    pub text: String,
    pub at: PagePoint,
}

/// A session's page; cheap to clone (the agent and manual control share it).
#[derive(Clone)]
pub struct SessionPage {
    page: Page,
    policy: DomainPolicy,
    cdp_timeout: Duration,
    nav_timeout: Duration,
    _interceptor: Arc<Interceptor>,
}

/// Stops the interception task when the last clone of the page goes.
struct Interceptor(JoinHandle<()>);

impl Drop for Interceptor {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl SessionPage {
    pub(crate) async fn new(
        page: Page,
        settings: &BrowserSettings,
        policy: DomainPolicy,
    ) -> Result<Self, BrowserError> {
        let task = crate::intercept::start(&page, policy.clone(), settings.cdp_timeout).await?;
        Ok(SessionPage {
            page,
            policy,
            cdp_timeout: settings.cdp_timeout,
            nav_timeout: settings.navigation_timeout,
            _interceptor: Arc::new(Interceptor(task)),
        })
    }

    /// The session's domain policy (set it before each task).
    pub fn policy(&self) -> &DomainPolicy {
        &self.policy
    }

    /// Evaluates a JavaScript expression and returns its JSON value (null for undefined).
    pub async fn eval(&self, expression: &str) -> Result<Value, BrowserError> {
        let mut params = EvaluateParams::new(expression);
        params.return_by_value = Some(true);
        params.await_promise = Some(true);
        let res = within(self.cdp_timeout, "evaluate", self.page.execute(params)).await?;
        if let Some(ex) = &res.result.exception_details {
            let text = ex.exception.as_ref().and_then(|e| e.description.clone()).unwrap_or_else(|| ex.text.clone());
            return Err(BrowserError::Cdp(format!("script failed: {text}")));
        }
        Ok(res.result.result.value.clone().unwrap_or(Value::Null))
    }

    async fn run_script(&self, body: &str, arg: Value) -> Result<Value, BrowserError> {
        self.eval(&scripts::with_arg(body, &arg)).await
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        if self.policy.blocks_url(url) {
            return Err(BrowserError::NavigationFailed {
                url: url.to_owned(),
                reason: "the domain is in avoidDomains".into(),
            });
        }
        let nav = async {
            let res = self.page.execute(NavigateParams::new(url)).await?;
            if let Some(err) = res.result.error_text.clone() {
                return Err(BrowserError::NavigationFailed { url: url.to_owned(), reason: err });
            }
            Ok(())
        };
        match tokio::time::timeout(self.nav_timeout, nav).await {
            Err(_) => return Err(BrowserError::NavigationTimeout(url.to_owned())),
            Ok(Err(BrowserError::Timeout(_))) => return Err(BrowserError::NavigationTimeout(url.to_owned())),
            Ok(r) => r?,
        }
        self.wait_loaded().await
    }

    /// Goes back one entry in history.
    pub async fn go_back(&self) -> Result<(), BrowserError> {
        // Deferred so the evaluation answers before the navigation replaces the document.
        self.eval("setTimeout(() => history.back(), 0)").await?;
        self.settle().await
    }

    /// Waits until the document has loaded, up to the navigation timeout.
    pub async fn wait_loaded(&self) -> Result<(), BrowserError> {
        let deadline = Instant::now() + self.nav_timeout;
        loop {
            // During a navigation the old context is destroyed; evaluation errors then are expected.
            if let Ok(Value::String(s)) = self.eval("document.readyState").await {
                if s == "complete" {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                let url = self.url().await.unwrap_or_default();
                return Err(BrowserError::NavigationTimeout(url));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// After an action that may navigate: a short pause for the navigation to begin, then wait for load.
    pub async fn settle(&self) -> Result<(), BrowserError> {
        tokio::time::sleep(Duration::from_millis(150)).await;
        self.wait_loaded().await
    }

    pub async fn url(&self) -> Result<String, BrowserError> {
        Ok(self.eval("location.href").await?.as_str().unwrap_or_default().to_owned())
    }

    pub async fn title(&self) -> Result<String, BrowserError> {
        Ok(self.eval("document.title").await?.as_str().unwrap_or_default().to_owned())
    }

    /// Clicks at a page point with real mouse events.
    pub async fn click_at(&self, at: PagePoint, double: bool) -> Result<(), BrowserError> {
        input::click(&self.page, at, double, self.cdp_timeout).await
    }

    /// Clicks the visible link or button whose text matches `text` (exact, then containing).
    pub async fn click_text(&self, text: &str) -> Result<ClickTarget, BrowserError> {
        let found = self.run_script(scripts::FIND_CLICKABLE, json!(text)).await?;
        let target =
            point_of(&found).ok_or_else(|| BrowserError::ElementNotFound(format!("no link or button {text:?}")))?;
        self.click_at(target, false).await?;
        Ok(ClickTarget {
            tag: found["tag"].as_str().unwrap_or_default().to_owned(),
            text: found["text"].as_str().unwrap_or_default().to_owned(),
            at: target,
        })
    }

    /// Focuses the field labelled `label` (label, placeholder, aria-label, name or id) by clicking it,
    /// then types `text` over its content.
    pub async fn fill(&self, label: &str, text: &str) -> Result<(), BrowserError> {
        let found = self.run_script(scripts::FIND_FIELD, json!(label)).await?;
        let at = point_of(&found).ok_or_else(|| BrowserError::ElementNotFound(format!("no field {label:?}")))?;
        self.click_at(at, false).await?;
        // The click may have collapsed the selection made by the script; select the content again.
        self.eval(
            "(() => { const el = document.activeElement; if (el && typeof el.select === 'function') el.select(); })()",
        )
        .await?;
        self.type_text(text, false).await
    }

    /// Types into whatever has focus.
    pub async fn type_text(&self, text: &str, human_like: bool) -> Result<(), BrowserError> {
        input::type_text(&self.page, text, human_like, self.cdp_timeout).await
    }

    pub async fn press_key(&self, key: &str) -> Result<(), BrowserError> {
        input::press_key(&self.page, key, self.cdp_timeout).await
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
}

fn point_of(v: &Value) -> Option<PagePoint> {
    Some(PagePoint { x: v.get("x")?.as_f64()?, y: v.get("y")?.as_f64()? })
}
