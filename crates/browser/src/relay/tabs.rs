//! The narrow handle a DevTools relay holds on its session's tabs: what it may ask of them (their ids,
//! whether they carry an identity, adopting a page it opened, their pages to restore the viewport of),
//! so the relay never reaches into the page's insides. The session's page implements it (`adopt.rs`).

use futures::future::BoxFuture;
use std::sync::Weak;
use std::time::Duration;

/// What the relay may do with its session's tabs.
pub(crate) trait RelayTabs: Send + Sync {
    /// The session's tabs as it has adopted them (target ids).
    fn tab_ids(&self) -> Vec<String>;
    /// Whether the session's pages get an identity (then a page a client opens is opened blank first).
    fn has_identity(&self) -> bool;
    /// Makes page `target` one of the session's tabs (see `adopt::adopt`), and, with `go`, starts its
    /// navigation to `url` once it is one (see `adopt::go_to`).
    fn adopt(&self, target: String, url: String, go: bool) -> BoxFuture<'_, ()>;
    /// The pages of the session's tabs.
    fn pages(&self) -> Vec<chromiumoxide::Page>;
    /// The time allowed for one DevTools call.
    fn cdp_timeout(&self) -> Duration;
}

/// The session's tabs, while the session lives.
pub(crate) type SessionTabs = Weak<dyn RelayTabs>;

/// A DevTools client's `Target.createTarget` with a web URL, in a session with an identity: Chromium sends
/// such a page's first request before the page can be paused for the overrides, so the page is opened
/// blank (`params` changed) and sent to the URL (returned) once it is a tab with the identity (`go_to`).
pub(crate) fn blank_first(tabs: &SessionTabs, params: &mut serde_json::Value) -> Option<String> {
    let url = params.get("url").and_then(serde_json::Value::as_str)?;
    let web = url.starts_with("http://") || url.starts_with("https://");
    if !web || !tabs.upgrade().is_some_and(|t| t.has_identity()) {
        return None;
    }
    let url = url.to_owned();
    params["url"] = serde_json::Value::from("about:blank");
    Some(url)
}
