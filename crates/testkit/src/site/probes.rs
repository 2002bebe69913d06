//! Pages that try to reach another host in every way a page can: iframe, image, fetch, WebSocket,
//! dedicated worker, service worker, window.open, WebRTC (STUN over UDP), and a redirect; and pages that
//! push the browser's limits: a download, a burst of popups. The egress tests point them at decoys.

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, LOCATION};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::html::{escape, js_string, page};

fn target(q: &HashMap<String, String>) -> String {
    q.get("target").cloned().unwrap_or_default().trim_end_matches('/').to_owned()
}

/// `/probe?target=http://host:port[&stun=host:port]`: reaches for `target` in every way at once, and for
/// `stun` with a WebRTC STUN request (UDP).
pub(crate) async fn probe(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let t = target(&q);
    let stun = js_string(&format!("stun:{}", q.get("stun").map_or("", String::as_str)));
    let ws = t.replacen("http", "ws", 1);
    let (ht, jt, jws) = (escape(&t), js_string(&t), js_string(&ws));
    let worker = js_string(&format!("/probe/worker.js?target={t}"));
    let sw = js_string(&format!("/probe/sw.js?target={t}"));
    page(
        "Egress probes",
        &format!(
            "<h1>Egress probes</h1>\n\
             <iframe src=\"{ht}/iframe\"></iframe>\n\
             <img src=\"{ht}/img.png\" alt=\"probe\">\n\
             <link rel=\"stylesheet\" href=\"{ht}/style.css\">\n\
             <script>\n\
             fetch({jt} + '/fetch').catch(() => {{}});\n\
             try {{ new WebSocket({jws} + '/ws'); }} catch (e) {{}}\n\
             try {{ new Worker({worker}); }} catch (e) {{}}\n\
             if (navigator.serviceWorker) {{ navigator.serviceWorker.register({sw}).catch(() => {{}}); }}\n\
             if ({stun} !== 'stun:') {{ const pc = new RTCPeerConnection({{ iceServers: [{{ urls: {stun} }}] }});\n\
               pc.createDataChannel('probe'); pc.createOffer().then((o) => pc.setLocalDescription(o)); }}\n\
             window.open({jt} + '/popup');\n\
             </script>"
        ),
    )
}

/// `/probe/worker.js?target=...`: a dedicated worker that fetches `target`.
pub(crate) async fn worker(Query(q): Query<HashMap<String, String>>) -> Response {
    let js = format!("fetch({} + '/worker').catch(() => {{}});", js_string(&target(&q)));
    ([(CONTENT_TYPE, "text/javascript")], js).into_response()
}

/// `/probe/sw.js?target=...`: a service worker that fetches `target` when installed.
pub(crate) async fn service_worker(Query(q): Query<HashMap<String, String>>) -> Response {
    let js = format!(
        "self.addEventListener('install', (e) => {{ e.waitUntil(fetch({} + '/sw').catch(() => {{}})); }});",
        js_string(&target(&q))
    );
    ([(CONTENT_TYPE, "text/javascript")], js).into_response()
}

/// `/redirect?to=URL`: 302 to any URL.
pub(crate) async fn redirect(Query(q): Query<HashMap<String, String>>) -> Response {
    let to = q.get("to").cloned().unwrap_or_else(|| "/".to_owned());
    (StatusCode::FOUND, [(LOCATION, to)]).into_response()
}

/// `/download`: a file the browser would save (`Content-Disposition: attachment`).
pub(crate) async fn download() -> Response {
    let headers =
        [(CONTENT_TYPE, "text/csv"), (CONTENT_DISPOSITION, "attachment; filename=\"webpilot-download-probe.csv\"")];
    (headers, "a,b\n1,2\n").into_response()
}

/// `/popups?n=N`: opens N new windows on `/pricing` at once (N at most 50).
pub(crate) async fn popups(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let n: u32 = q.get("n").and_then(|v| v.parse().ok()).unwrap_or(5).min(50);
    page(
        "Popups burst",
        &format!(
            "<h1>Popups burst</h1>\n<script>for (let i = 0; i < {n}; i++) window.open('/pricing?n=' + i);</script>"
        ),
    )
}

/// `/dialogs`: alert, confirm and prompt on load, then the title changes; leaving asks first
/// (`beforeunload`). A browser whose dialogs nobody answers never shows "after dialogs".
pub(crate) async fn dialogs() -> Html<String> {
    page(
        "Dialogs",
        "<h1>Dialogs</h1>\n<script>\n\
         window.addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'stay?'; });\n\
         alert('hello');\n\
         const ok = confirm('continue?');\n\
         const name = prompt('your name?', 'nobody');\n\
         document.title = 'after dialogs';\n\
         document.body.dataset.answers = ok + '/' + name;\n\
         </script>",
    )
}
