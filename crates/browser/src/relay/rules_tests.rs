//! One test per refusal of the DevTools allow-list, and the rewrites that pin calls to the session.

use super::*;

/// Session "A": context ctxA, targets tA1 and tA2, session sA, window 7, files under /files/A.
struct A;

impl Scope for A {
    fn context(&self) -> &str {
        "ctxA"
    }
    fn owns_target(&self, target: &str) -> bool {
        matches!(target, "tA1" | "tA2")
    }
    fn owns_session(&self, session: &str) -> bool {
        session == "sA"
    }
    fn owns_window(&self, window: i64) -> bool {
        window == 7
    }
    fn may_upload(&self, path: &str) -> bool {
        path.starts_with("/files/A/")
    }
    fn pages(&self) -> (usize, usize) {
        (2, 3)
    }
    fn is_last_page(&self, target: &str) -> bool {
        target == "tLast"
    }
}

fn at_browser(method: &str, params: Value) -> Verdict {
    check(method, &params, Level::Browser, &A)
}

fn in_session(method: &str, params: Value) -> Verdict {
    check(method, &params, Level::Session, &A)
}

fn refused(v: &Verdict) -> bool {
    matches!(v, Verdict::Refuse(_))
}

#[test]
fn contexts_cannot_be_made_or_disposed() {
    assert!(refused(&at_browser("Target.createBrowserContext", json!({}))));
    assert!(refused(&at_browser("Target.disposeBrowserContext", json!({"browserContextId": "ctxB"}))));
    assert!(refused(&at_browser("Target.disposeBrowserContext", json!({"browserContextId": "ctxA"}))));
}

#[test]
fn only_the_sessions_context_is_listed() {
    assert_eq!(
        at_browser("Target.getBrowserContexts", json!({})),
        Verdict::Answer(json!({"browserContextIds": ["ctxA"]}))
    );
}

#[test]
fn another_contexts_targets_cannot_be_attached_closed_or_activated() {
    for method in ["Target.closeTarget", "Target.activateTarget", "Target.getTargetInfo", "Target.autoAttachRelated"] {
        assert!(refused(&at_browser(method, json!({"targetId": "tB"}))), "{method}");
        assert!(!refused(&at_browser(method, json!({"targetId": "tA1"}))), "{method}");
    }
    assert!(refused(&at_browser("Target.attachToTarget", json!({"targetId": "tB", "flatten": true}))));
    assert_eq!(at_browser("Target.attachToTarget", json!({"targetId": "tA1", "flatten": true})), Verdict::Forward);
    // The non-flattened protocol would route messages the relay could not check.
    assert!(refused(&at_browser("Target.attachToTarget", json!({"targetId": "tA1"}))));
    assert!(refused(&at_browser("Target.closeTarget", json!({}))), "a target must be named");
    assert!(refused(&at_browser("Target.closeTarget", json!({"targetId": "tLast"}))), "the last tab stays");
}

#[test]
fn another_clients_sessions_cannot_be_detached_or_messaged() {
    assert!(refused(&at_browser("Target.detachFromTarget", json!({"sessionId": "sB"}))));
    assert!(refused(&at_browser("Target.detachFromTarget", json!({"targetId": "tA1"}))));
    assert_eq!(at_browser("Target.detachFromTarget", json!({"sessionId": "sA"})), Verdict::Forward);
    let nested = json!({"sessionId": "sB", "message": "{\"id\":1,\"method\":\"Runtime.evaluate\"}"});
    assert!(refused(&at_browser("Target.sendMessageToTarget", nested)));
}

#[test]
fn new_targets_open_in_the_sessions_context_whatever_is_named() {
    let v = at_browser("Target.createTarget", json!({"url": "about:blank", "browserContextId": "ctxB"}));
    assert_eq!(v, Verdict::ForwardWith(json!({"url": "about:blank", "browserContextId": "ctxA"})));
    let v = at_browser("Target.createTarget", json!({"url": "https://example.com"}));
    assert_eq!(v, Verdict::ForwardWith(json!({"url": "https://example.com", "browserContextId": "ctxA"})));
}

#[test]
fn new_targets_count_toward_the_tab_cap() {
    struct Full;
    impl Scope for Full {
        fn context(&self) -> &str {
            "ctxA"
        }
        fn owns_target(&self, _: &str) -> bool {
            true
        }
        fn owns_session(&self, _: &str) -> bool {
            true
        }
        fn owns_window(&self, _: i64) -> bool {
            true
        }
        fn may_upload(&self, _: &str) -> bool {
            true
        }
        fn pages(&self) -> (usize, usize) {
            (3, 3)
        }
        fn is_last_page(&self, _: &str) -> bool {
            false
        }
    }
    assert!(refused(&check("Target.createTarget", &json!({"url": "about:blank"}), Level::Browser, &Full)));
}

#[test]
fn browser_internal_and_local_file_urls_are_refused() {
    for url in ["file:///etc/passwd", "chrome://version", "view-source:http://x", "javascript:1", "devtools://x"] {
        assert!(refused(&at_browser("Target.createTarget", json!({"url": url}))), "{url}");
        assert!(refused(&in_session("Page.navigate", json!({"url": url}))), "{url}");
    }
    assert_eq!(in_session("Page.navigate", json!({"url": "HTTPS://example.com"})), Verdict::Forward);
    assert!(refused(&in_session("Page.navigate", json!({}))));
}

#[test]
fn browser_wide_calls_are_refused() {
    for method in [
        "Browser.crash",
        "Browser.getBrowserCommandLine",
        "Browser.getHistograms",
        "Browser.cancelDownload",
        "Browser.executeBrowserCommand",
        "SystemInfo.getInfo",
        "SystemInfo.getProcessInfo",
        "Tethering.bind",
        "Tracing.start",
        "Memory.getBrowserSamplingProfile",
        "Target.attachToBrowserTarget",
        "Target.exposeDevToolsProtocol",
        "Target.setRemoteLocations",
        "Target.openDevTools",
        "Fetch.enable",
        "Network.enable",
        "Runtime.evaluate",
        "Storage.clearDataForOrigin",
        "Security.setIgnoreCertificateErrors",
    ] {
        assert!(refused(&at_browser(method, json!({}))), "{method} at browser level");
    }
    for method in ["SystemInfo.getInfo", "Tethering.bind", "Tracing.start", "Memory.getDOMCounters", "Extensions.x"] {
        assert!(refused(&in_session(method, json!({}))), "{method} in a session");
    }
}

#[test]
fn browser_close_ends_only_the_connection() {
    assert_eq!(at_browser("Browser.close", json!({})), Verdict::Emulate(Emulated::CloseConnection));
    assert!(refused(&in_session("Browser.close", json!({}))));
}

#[test]
fn cookies_of_another_context_are_refused_and_the_rest_pinned_to_the_session() {
    for method in ["Storage.getCookies", "Storage.setCookies", "Storage.clearCookies"] {
        assert!(refused(&at_browser(method, json!({"browserContextId": "ctxB"}))), "{method}");
        assert!(refused(&in_session(method, json!({"browserContextId": "ctxB"}))), "{method}");
        assert_eq!(at_browser(method, json!({})), Verdict::ForwardWith(json!({"browserContextId": "ctxA"})));
    }
    assert!(refused(&in_session("Storage.getUsageAndQuota", json!({"browserContextId": "ctxB"}))));
    // In a page's session, Network's cookie calls reach that page's context only.
    assert_eq!(in_session("Network.getAllCookies", json!({})), Verdict::Forward);
    assert!(refused(&in_session("Network.loadNetworkResource", json!({"url": "file:///etc/passwd"}))));
}

#[test]
fn permissions_are_pinned_to_the_sessions_context() {
    let v = at_browser("Browser.grantPermissions", json!({"permissions": ["geolocation"]}));
    assert_eq!(v, Verdict::ForwardWith(json!({"permissions": ["geolocation"], "browserContextId": "ctxA"})));
    assert!(refused(&at_browser("Browser.resetPermissions", json!({"browserContextId": "ctxB"}))));
}

#[test]
fn windows_of_other_sessions_are_refused() {
    assert!(refused(&at_browser("Browser.setWindowBounds", json!({"windowId": 8, "bounds": {}}))));
    assert_eq!(at_browser("Browser.getWindowBounds", json!({"windowId": 7})), Verdict::Forward);
    assert!(refused(&at_browser("Browser.getWindowForTarget", json!({"targetId": "tB"}))));
    assert!(refused(&at_browser("Browser.getWindowForTarget", json!({}))));
}

#[test]
fn only_the_sessions_own_files_can_be_set_on_an_input() {
    let set = |files: Value| in_session("DOM.setFileInputFiles", json!({"files": files, "nodeId": 1}));
    assert!(refused(&set(json!(["/etc/passwd"]))));
    assert!(refused(&set(json!(["/files/A/ok.txt", "/etc/passwd"]))));
    assert!(refused(&set(json!("/files/A/ok.txt"))));
    assert!(refused(&in_session("DOM.setFileInputFiles", json!({"nodeId": 1}))));
    assert_eq!(set(json!(["/files/A/ok.txt"])), Verdict::Forward);
}

#[test]
fn only_the_sessions_own_files_can_be_dropped_on_a_page() {
    let drop =
        |data: Value| in_session("Input.dispatchDragEvent", json!({"type": "drop", "x": 1, "y": 1, "data": data}));
    let items = |files: Value| json!({"items": [], "files": files, "dragOperationsMask": 1});
    for kind in ["dragEnter", "dragOver", "drop"] {
        let params = json!({"type": kind, "x": 1, "y": 1, "data": items(json!(["/etc/passwd"]))});
        assert!(refused(&in_session("Input.dispatchDragEvent", params)), "{kind}");
    }
    assert!(refused(&drop(items(json!(["/files/A/ok.txt", "/proc/self/cwd/data/webpilot.db"])))));
    assert!(refused(&drop(items(json!("/etc/passwd")))));
    assert!(refused(&drop(items(json!([1])))));
    assert_eq!(drop(items(json!(["/files/A/ok.txt"]))), Verdict::Forward);
    assert_eq!(
        drop(json!({"items": [{"mimeType": "text/plain", "data": "hi"}], "dragOperationsMask": 1})),
        Verdict::Forward
    );
    let nested = json!({"id": 1, "method": "Input.dispatchDragEvent", "params": {"type": "drop", "data": items(json!(["/etc/passwd"]))}});
    assert!(refused(&check_nested(&nested.to_string(), &A)));
}

#[test]
fn intercepted_requests_go_on_to_the_web_only() {
    for method in ["Fetch.continueRequest", "Network.continueInterceptedRequest"] {
        for url in ["file:///etc/passwd", "filesystem:http://x/temporary/a", "chrome://version", " file:///etc/passwd"]
        {
            assert!(refused(&in_session(method, json!({"requestId": "r", "url": url}))), "{method} {url}");
        }
        assert_eq!(in_session(method, json!({"requestId": "r"})), Verdict::Forward);
        assert_eq!(in_session(method, json!({"requestId": "r", "url": "https://example.com/x"})), Verdict::Forward);
    }
}

#[test]
fn about_pages_are_blank_and_srcdoc_only() {
    for url in ["about:blank", "about:blank#x", "ABOUT:BLANK", "about:srcdoc", "data:text/html,hi"] {
        assert_eq!(in_session("Page.navigate", json!({"url": url})), Verdict::Forward, "{url}");
    }
    for url in ["about:version", "about:settings", "about:inspect", "about://flags", "filesystem:http://x/a", "blob:x"]
    {
        assert!(refused(&in_session("Page.navigate", json!({"url": url}))), "{url}");
        assert!(refused(&at_browser("Target.createTarget", json!({"url": url}))), "{url}");
    }
}

#[test]
fn downloads_cannot_be_sent_elsewhere() {
    let anywhere = json!({"behavior": "allow", "downloadPath": "/etc"});
    assert_eq!(at_browser("Browser.setDownloadBehavior", anywhere.clone()), Verdict::Answer(json!({})));
    assert_eq!(in_session("Browser.setDownloadBehavior", anywhere.clone()), Verdict::Answer(json!({})));
    assert_eq!(in_session("Page.setDownloadBehavior", anywhere), Verdict::Answer(json!({})));
    // Playwright's: the events of the session's downloads, never a path of its own.
    let with_events = json!({"behavior": "allowAndName", "downloadPath": "/tmp/pw", "eventsEnabled": true});
    assert_eq!(
        at_browser("Browser.setDownloadBehavior", with_events.clone()),
        Verdict::Emulate(Emulated::DownloadEvents)
    );
    assert_eq!(in_session("Browser.setDownloadBehavior", with_events), Verdict::Answer(json!({})));
}

#[test]
fn target_calls_in_a_session_are_limited_to_its_own_children() {
    assert_eq!(in_session("Target.setAutoAttach", json!({"autoAttach": true})), Verdict::Forward);
    assert_eq!(at_browser("Target.setAutoAttach", json!({})), Verdict::Emulate(Emulated::AutoAttach));
    for method in ["Target.createTarget", "Target.getTargets", "Target.setDiscoverTargets", "Target.closeTarget"] {
        assert!(refused(&in_session(method, json!({"targetId": "tA1", "url": "about:blank"}))), "{method}");
    }
}

#[test]
fn nested_messages_pass_the_same_rules() {
    let nested = |inner: Value| check_nested(&inner.to_string(), &A);
    assert_eq!(nested(json!({"id": 1, "method": "Runtime.evaluate", "params": {"expression": "1"}})), Verdict::Forward);
    for inner in [
        json!({"id": 1, "method": "Target.createBrowserContext"}),
        json!({"id": 1, "method": "Target.closeTarget", "params": {"targetId": "tB"}}),
        json!({"id": 1, "method": "Browser.close"}),
        json!({"id": 1, "method": "Storage.getCookies", "params": {"browserContextId": "ctxB"}}),
        json!({"id": 1, "method": "DOM.setFileInputFiles", "params": {"files": ["/etc/passwd"]}}),
        json!({"id": 1, "method": "Page.navigate", "params": {"url": "file:///etc/passwd"}}),
        json!({"id": 1, "method": "Runtime.evaluate", "sessionId": "sB"}),
        json!({"id": 1, "method": "Page.setDownloadBehavior", "params": {"behavior": "allow"}}),
    ] {
        assert!(refused(&nested(inner.clone())), "{inner}");
    }
    assert!(refused(&check_nested("not json", &A)));
    assert_eq!(
        at_browser("Target.sendMessageToTarget", json!({"sessionId": "sA", "message": "{}"})),
        Verdict::Emulate(Emulated::Nested)
    );
}

#[test]
fn page_close_in_the_session_of_the_last_page_is_refused() {
    assert!(check_page_close(Some("tLast"), &A).is_some_and(|v| refused(&v)));
    assert_eq!(check_page_close(Some("tA1"), &A), None, "another page remains");
    assert_eq!(check_page_close(None, &A), None, "a session the relay cannot place");
    assert_eq!(in_session("Page.close", json!({})), Verdict::Forward, "check alone lets it through");
}

#[test]
fn clearing_the_viewport_gives_the_sessions_and_a_zero_size_is_the_sessions_too() {
    let session = json!({ "width": 1024, "height": 445, "deviceScaleFactor": 1, "mobile": false });
    assert_eq!(
        in_session("Emulation.clearDeviceMetricsOverride", json!({})),
        Verdict::ForwardAs("Emulation.setDeviceMetricsOverride", session)
    );
    let zero = json!({ "width": 0, "height": 0, "deviceScaleFactor": 2, "mobile": true });
    let want = json!({ "width": 1024, "height": 445, "deviceScaleFactor": 2, "mobile": true });
    assert_eq!(in_session("Emulation.setDeviceMetricsOverride", zero), Verdict::ForwardWith(want));
    let narrow = json!({ "width": 500, "height": 0, "deviceScaleFactor": 1, "mobile": false });
    let want = json!({ "width": 500, "height": 445, "deviceScaleFactor": 1, "mobile": false });
    assert_eq!(in_session("Emulation.setDeviceMetricsOverride", narrow), Verdict::ForwardWith(want));
    let sized = json!({ "width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": false });
    assert_eq!(in_session("Emulation.setDeviceMetricsOverride", sized), Verdict::Forward);
}
