//! What a DevTools client of one session may send: an allow-list of domains and methods, with the checks
//! that keep it inside its session's browser context (targets, sessions, windows, cookies, files, URLs).
//! The relay (`relay/mod.rs`) asks [`check`] about every command, nested ones included, before anything
//! reaches Chromium; what it refuses is answered with a DevTools error and never forwarded.

use serde_json::{json, Value};
use webpilot_core::geometry::{FRAME_WIDTH, PAGE_HEIGHT};

/// Where a command is sent: to the browser (no `sessionId`), or to a session the client attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Browser,
    Session,
}

/// What the rules need to know of the client's scope.
pub(crate) trait Scope {
    /// The session's browser context.
    fn context(&self) -> &str;
    /// Whether a target is one of the context's (a page, its frames and workers).
    fn owns_target(&self, target: &str) -> bool;
    /// Whether a DevTools session is one this client attached (or one attached under those).
    fn owns_session(&self, session: &str) -> bool;
    /// Whether a window id was handed to this client (`Browser.getWindowForTarget`).
    fn owns_window(&self, window: i64) -> bool;
    /// Whether a path is a file of the session's own file area.
    fn may_upload(&self, path: &str) -> bool;
    /// Pages open in the context, and how many it may have.
    fn pages(&self) -> (usize, usize);
    /// Whether a target is the context's only page (the session keeps one).
    fn is_last_page(&self, target: &str) -> bool;
}

/// What the relay does with a command.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Sent to Chromium as it is.
    Forward,
    /// Sent to Chromium with these parameters instead.
    ForwardWith(Value),
    /// Sent to Chromium as this other method, with these parameters.
    ForwardAs(&'static str, Value),
    /// Answered by the relay with this result; Chromium never sees it.
    Answer(Value),
    /// Carried out by the relay itself over the session's own targets.
    Emulate(Emulated),
    /// Answered with a DevTools error carrying this message.
    Refuse(String),
}

impl Verdict {
    /// Whether the command reaches Chromium (as it is, or rewritten).
    pub(crate) fn forwards(&self) -> bool {
        matches!(self, Verdict::Forward | Verdict::ForwardWith(_) | Verdict::ForwardAs(..))
    }
}

/// Browser-wide calls the relay answers for the one context the client may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emulated {
    /// `Target.setAutoAttach` at browser level: the relay attaches to the context's targets itself, and
    /// never pauses a target (other contexts' would wait for this client).
    AutoAttach,
    /// `Target.setDiscoverTargets`: events of the context's targets only.
    Discover,
    /// `Target.getTargets`: the context's targets only.
    GetTargets,
    /// `Browser.close`: ends this client's connection; the session lives on.
    CloseConnection,
    /// `Target.sendMessageToTarget`: its inner message passed the same rules.
    Nested,
    /// `Browser.setDownloadBehavior` with `eventsEnabled`: answered `{}` (downloads still land in the
    /// session's file area), and the context's download events are passed on to this client.
    DownloadEvents,
}

/// Domains a client may use on a session it attached (a page, a frame, a worker), method checks aside.
const SESSION_DOMAINS: &[&str] = &[
    "Accessibility",
    "Animation",
    "Audits",
    "Autofill",
    "CacheStorage",
    "Console",
    "CSS",
    "Debugger",
    "DeviceOrientation",
    "DOM",
    "DOMDebugger",
    "DOMSnapshot",
    "DOMStorage",
    "Emulation",
    "EventBreakpoints",
    "Fetch",
    "HeapProfiler",
    "IndexedDB",
    "Input",
    "Inspector",
    "IO",
    "LayerTree",
    "Log",
    "Media",
    "Network",
    "Overlay",
    "Page",
    "Performance",
    "PerformanceTimeline",
    "Preload",
    "Profiler",
    "Runtime",
    "Schema",
    "Security",
    "ServiceWorker",
    "Storage",
    "WebAudio",
    "WebAuthn",
];

fn refuse(why: impl Into<String>) -> Verdict {
    Verdict::Refuse(why.into())
}

fn str_param<'a>(params: &'a Value, name: &str) -> Option<&'a str> {
    params.get(name).and_then(Value::as_str)
}

/// URLs a client may open: the web (through the session's egress proxy), `about:blank`, `about:srcdoc`
/// and `data:`; never `file:`, `filesystem:`, `chrome:` or other browser-internal schemes, nor another
/// `about:` page (Chromium rewrites `about:version` and the like to `chrome://` pages).
pub(crate) fn allowed_url(url: &str) -> bool {
    let url = url.trim_start();
    let Some((scheme, rest)) = url.split_once(':') else { return false };
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" | "data" => true,
        "about" => {
            let page = rest.split(['?', '#']).next().unwrap_or_default().to_ascii_lowercase();
            matches!(page.as_str(), "blank" | "srcdoc")
        }
        _ => false,
    }
}

/// Whether a request may be rewritten to `url` (`Fetch.continueRequest`): the web only, which the
/// session's egress proxy decides on like any other request.
fn allowed_request_url(url: &str) -> bool {
    let scheme = url.trim_start().split_once(':').map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
    matches!(scheme.as_str(), "http" | "https")
}

/// Whether every path of an optional `files` list is a file of the session's own file area (an absent
/// list passes; anything but a list of strings does not).
fn own_files(files: Option<&Value>, scope: &dyn Scope) -> bool {
    match files {
        None | Some(Value::Null) => true,
        Some(Value::Array(paths)) => paths.iter().all(|p| p.as_str().is_some_and(|p| scope.may_upload(p))),
        Some(_) => false,
    }
}

/// Whether a device-metrics override leaves the width or the height to the window (a 0, or none).
fn sizes_to_window(params: &Value) -> bool {
    ["width", "height"].iter().any(|k| params.get(*k).and_then(Value::as_f64).is_none_or(|v| v == 0.0))
}

/// A device-metrics override with the session's size where `params` leaves it to the window, and the
/// session's scale and desktop mode where it says nothing.
fn session_metrics(params: &Value) -> Value {
    let mut out = if params.is_object() { params.clone() } else { json!({}) };
    for (key, value) in [("width", FRAME_WIDTH), ("height", PAGE_HEIGHT)] {
        if out.get(key).and_then(Value::as_f64).is_none_or(|v| v == 0.0) {
            out[key] = json!(value);
        }
    }
    if out.get("deviceScaleFactor").is_none() {
        out["deviceScaleFactor"] = json!(1);
    }
    if out.get("mobile").is_none() {
        out["mobile"] = json!(false);
    }
    out
}

/// The command's parameters with `browserContextId` set to the session's, unless it names another
/// context (refused).
fn pinned_to_context(params: &Value, scope: &dyn Scope) -> Verdict {
    match str_param(params, "browserContextId") {
        Some(named) if named != scope.context() => refuse("that browser context is not this session's"),
        _ => {
            let mut params = if params.is_object() { params.clone() } else { json!({}) };
            params["browserContextId"] = Value::from(scope.context());
            Verdict::ForwardWith(params)
        }
    }
}

fn own_target(params: &Value, scope: &dyn Scope, then: Verdict) -> Verdict {
    match str_param(params, "targetId") {
        Some(t) if scope.owns_target(t) => then,
        Some(_) => refuse("no target with that id in this session"),
        None => refuse("targetId is required"),
    }
}

fn own_session(params: &Value, scope: &dyn Scope) -> Verdict {
    match str_param(params, "sessionId") {
        Some(s) if scope.owns_session(s) => Verdict::Forward,
        Some(_) => refuse("no session with that id"),
        None => refuse("sessionId is required"),
    }
}

/// The verdict on `method` with `params`, sent at `level`.
pub(crate) fn check(method: &str, params: &Value, level: Level, scope: &dyn Scope) -> Verdict {
    let (domain, _) = method.split_once('.').unwrap_or((method, ""));
    match (domain, method) {
        ("Target", _) => target(method, params, level, scope),
        ("Browser", _) => browser(method, params, level, scope),
        (_, "Storage.getCookies" | "Storage.setCookies" | "Storage.clearCookies") => pinned_to_context(params, scope),
        _ if level == Level::Browser => refuse(format!("{method} is not available on a session's browser")),
        (_, "DOM.setFileInputFiles") => match params.get("files").is_some_and(Value::is_array) {
            true if own_files(params.get("files"), scope) => Verdict::Forward,
            _ => refuse("only files of the session's own file area can be set on an input"),
        },
        // A drop hands its files to the page as Chromium reads them: the session's own files only.
        (_, "Input.dispatchDragEvent") => match own_files(params.get("data").and_then(|d| d.get("files")), scope) {
            true => Verdict::Forward,
            false => refuse("only files of the session's own file area can be dropped on a page"),
        },
        (_, "Fetch.continueRequest" | "Network.continueInterceptedRequest") => match str_param(params, "url") {
            Some(url) if !allowed_request_url(url) => refuse("a request can only be sent on to an http or https URL"),
            _ => Verdict::Forward,
        },
        (_, "Page.navigate") => match str_param(params, "url") {
            Some(url) if allowed_url(url) => Verdict::Forward,
            _ => refuse("only http, https, data, about:blank and about:srcdoc URLs can be opened"),
        },
        // The session's page size is the page's natural size: a client that clears its override, or sets
        // one of 0 (the window's size), gets 1024 × 445 back, never the headless window's (docs/cdp.md).
        (_, "Emulation.clearDeviceMetricsOverride") => {
            Verdict::ForwardAs("Emulation.setDeviceMetricsOverride", session_metrics(&json!({})))
        }
        (_, "Emulation.setDeviceMetricsOverride") if sizes_to_window(params) => {
            Verdict::ForwardWith(session_metrics(params))
        }
        // Downloads land in the session's own file area, whatever a client asks.
        (_, "Page.setDownloadBehavior") => Verdict::Answer(json!({})),
        (_, "Network.loadNetworkResource") => refuse("Network.loadNetworkResource is not available"),
        (_, "Security.setIgnoreCertificateErrors") => refuse("certificate errors cannot be ignored"),
        ("Storage", _) if params.get("browserContextId").is_some() => pinned_to_context(params, scope),
        _ if SESSION_DOMAINS.contains(&domain) => Verdict::Forward,
        _ => refuse(format!("{method} is not available to a session's DevTools client")),
    }
}

fn target(method: &str, params: &Value, level: Level, scope: &dyn Scope) -> Verdict {
    match method {
        "Target.setAutoAttach" if level == Level::Session => Verdict::Forward,
        "Target.setAutoAttach" => Verdict::Emulate(Emulated::AutoAttach),
        "Target.autoAttachRelated" => own_target(params, scope, Verdict::Forward),
        "Target.detachFromTarget" => own_session(params, scope),
        "Target.getTargetInfo" if str_param(params, "targetId").is_none() => Verdict::Forward,
        "Target.getTargetInfo" => own_target(params, scope, Verdict::Forward),
        "Target.sendMessageToTarget" => match own_session(params, scope) {
            Verdict::Forward => Verdict::Emulate(Emulated::Nested),
            refused => refused,
        },
        _ if level == Level::Session => refuse(format!("{method} is only available on the browser")),
        "Target.setDiscoverTargets" => Verdict::Emulate(Emulated::Discover),
        "Target.getTargets" => Verdict::Emulate(Emulated::GetTargets),
        "Target.getBrowserContexts" => Verdict::Answer(json!({ "browserContextIds": [scope.context()] })),
        "Target.attachToTarget" => match params.get("flatten").and_then(Value::as_bool) {
            Some(true) => own_target(params, scope, Verdict::Forward),
            _ => refuse("only flattened sessions are available (flatten: true)"),
        },
        "Target.closeTarget" if str_param(params, "targetId").is_some_and(|t| scope.is_last_page(t)) => {
            refuse(LAST_TAB)
        }
        "Target.closeTarget" | "Target.activateTarget" => own_target(params, scope, Verdict::Forward),
        "Target.createTarget" => {
            if !str_param(params, "url").is_some_and(allowed_url) {
                return refuse("only http, https, data, about:blank and about:srcdoc URLs can be opened");
            }
            let (open, max) = scope.pages();
            if open >= max {
                return refuse(format!("the session has its {max} tabs open already"));
            }
            // Always in the session's context, whichever one is named.
            let mut params = params.clone();
            params["browserContextId"] = Value::from(scope.context());
            Verdict::ForwardWith(params)
        }
        _ => refuse(format!("{method} is not available to a session's DevTools client")),
    }
}

fn browser(method: &str, params: &Value, level: Level, scope: &dyn Scope) -> Verdict {
    match method {
        "Browser.getVersion" => Verdict::Forward,
        "Browser.setDownloadBehavior"
            if level == Level::Browser && params.get("eventsEnabled").and_then(Value::as_bool) == Some(true) =>
        {
            Verdict::Emulate(Emulated::DownloadEvents)
        }
        "Browser.setDownloadBehavior" => Verdict::Answer(json!({})),
        _ if level == Level::Session => refuse(format!("{method} is only available on the browser")),
        "Browser.close" => Verdict::Emulate(Emulated::CloseConnection),
        "Browser.getWindowForTarget" => own_target(params, scope, Verdict::Forward),
        "Browser.getWindowBounds" | "Browser.setWindowBounds" => match params.get("windowId").and_then(Value::as_i64) {
            Some(w) if scope.owns_window(w) => Verdict::Forward,
            _ => refuse("no window with that id in this session"),
        },
        "Browser.grantPermissions" | "Browser.resetPermissions" | "Browser.setPermission" => {
            pinned_to_context(params, scope)
        }
        _ => refuse(format!("{method} is not available to a session's DevTools client")),
    }
}

/// The verdict on a message nested in `Target.sendMessageToTarget`: the same rules at session level, and
/// only a command forwarded unchanged may pass (the relay cannot rewrite or answer inside it).
pub(crate) fn check_nested(message: &str, scope: &dyn Scope) -> Verdict {
    let Ok(inner) = serde_json::from_str::<Value>(message) else {
        return refuse("the nested message is not JSON");
    };
    if inner.get("sessionId").is_some() {
        return refuse("a nested message cannot name a session");
    }
    let Some(method) = inner.get("method").and_then(Value::as_str) else {
        return refuse("the nested message has no method");
    };
    let params = inner.get("params").cloned().unwrap_or_else(|| json!({}));
    match check(method, &params, Level::Session, scope) {
        Verdict::Forward => Verdict::Forward,
        Verdict::Refuse(why) => Verdict::Refuse(why),
        _ => refuse(format!("{method} cannot be nested in Target.sendMessageToTarget")),
    }
}

/// Why closing the session's last page is refused.
const LAST_TAB: &str = "the session's last tab cannot be closed; end the session instead";

/// `Page.close` sent in a DevTools session attached to `target` (when the relay knows it), directly or
/// nested: refused on the session's last page, as `Target.closeTarget` of it is (the session would hold
/// its slot with no page to run tasks in). `None` when the rules in [`check`] decide alone.
pub(crate) fn check_page_close(target: Option<&str>, scope: &dyn Scope) -> Option<Verdict> {
    target.filter(|t| scope.is_last_page(t)).map(|_| refuse(LAST_TAB))
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
