//! A person's browser, for tests of what people use: a headless Chromium of its own (not one of the
//! service's sandboxed, proxied ones), driven over the DevTools protocol, that opens pages and
//! evaluates scripts in them (the WHEP player, the console).

use chromiumoxide::browser::{Browser, BrowserConfig};
pub use chromiumoxide::Page;
use futures::StreamExt;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// A running viewer browser; dropping it kills the process.
pub struct Viewer {
    browser: Browser,
    handler: JoinHandle<()>,
    _profile: tempfile::TempDir,
}

impl Viewer {
    /// Starts `/usr/bin/chromium` headless (without its sandbox: tests run as root, and this browser
    /// only opens the tests' own pages).
    pub async fn launch() -> Viewer {
        let profile = tempfile::tempdir().expect("a profile dir");
        let config = BrowserConfig::builder()
            .chrome_executable("/usr/bin/chromium")
            .new_headless_mode()
            .no_sandbox()
            .user_data_dir(profile.path())
            .window_size(1440, 1000)
            .viewport(None)
            .arg("autoplay-policy=no-user-gesture-required")
            .arg("disable-gpu")
            .build()
            .expect("a viewer browser config");
        let (browser, mut events) = Browser::launch(config).await.expect("the viewer browser starts");
        let handler =
            webpilot_tasks::spawn_owned(
                "viewer handler",
                async move { while let Some(Ok(())) = events.next().await {} },
            );
        Viewer { browser, handler, _profile: profile }
    }

    /// A new tab on `url`, loaded.
    pub async fn open(&self, url: &str) -> Page {
        let page = self.browser.new_page(url).await.expect("a viewer tab");
        page.wait_for_navigation().await.expect("the page loads");
        page
    }

    /// Closes the browser.
    pub async fn close(mut self) {
        let _ = self.browser.close().await;
        let _ = self.browser.wait().await;
        self.handler.abort();
    }
}

/// Evaluates `script` in `page` (awaiting a promise) and returns its JSON value.
pub async fn eval(page: &Page, script: &str) -> serde_json::Value {
    let result = page.evaluate(script).await.unwrap_or_else(|e| panic!("evaluating `{script}`: {e}"));
    result.into_value().unwrap_or(serde_json::Value::Null)
}

/// Evaluates `script` until `pred` holds for its value (at most `limit`); returns that value.
pub async fn eval_until(
    page: &Page,
    script: &str,
    limit: Duration,
    what: &str,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + limit;
    loop {
        let value = eval(page, script).await;
        if pred(&value) {
            return value;
        }
        if Instant::now() > deadline {
            panic!("{what} did not happen in {limit:?}; last: {value}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A real mouse click (DevTools input events) at page coordinates `(x, y)`.
pub async fn click_at(page: &Page, x: f64, y: f64) {
    page.click(chromiumoxide::layout::Point { x, y }).await.expect("a mouse click");
}

/// A real mouse click on the element `selector` matches.
pub async fn click(page: &Page, selector: &str) {
    let element = page.find_element(selector).await.unwrap_or_else(|e| panic!("no {selector}: {e}"));
    element.click().await.unwrap_or_else(|e| panic!("clicking {selector}: {e}"));
}

/// Focuses the element `selector` matches and types `text` into it with key events.
pub async fn type_into(page: &Page, selector: &str, text: &str) {
    let element = page.find_element(selector).await.unwrap_or_else(|e| panic!("no {selector}: {e}"));
    element.click().await.unwrap_or_else(|e| panic!("focusing {selector}: {e}"));
    element.type_str(text).await.unwrap_or_else(|e| panic!("typing into {selector}: {e}"));
}

/// Saves a PNG of the visible page at `path`.
pub async fn screenshot(page: &Page, path: &std::path::Path) {
    let params = chromiumoxide::page::ScreenshotParams::builder().build();
    page.save_screenshot(params, path).await.expect("a screenshot");
}
