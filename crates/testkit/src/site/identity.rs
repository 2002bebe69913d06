//! `/identity` and `/totp`: what a page learns of the browser (the headers it was requested with, and
//! what its script reads: languages, time zone, user agent, position), and a sign-in that checks a
//! one-time code (RFC 6238, one step either side) made from a known seed.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::header::{ACCEPT_LANGUAGE, USER_AGENT};
use axum::http::HeaderMap;
use axum::response::Html;
use hmac::{Hmac, Mac};

use super::html::{escape, js_string, page};
use super::SiteState;

/// The seed the `/totp` sign-in checks codes against (base32 of "12345678901234567890", RFC 6238's).
pub const TOTP_SEED: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
const TOTP_KEY: &[u8] = b"12345678901234567890";

/// `/identity`: the request's `Accept-Language` and `User-Agent`, and `window.identity()`, a promise of
/// everything page script sees (with the position, or the geolocation error). The top page also holds a
/// cross-origin frame (`frame.localhost`) of the same page, whose `identity()` reaches the top page's
/// `window.frameIdentity()` by `postMessage`, and a form (`#post-identity`) that POSTs to `/identity?first=post`
/// in a new window, and `window.workerIdentity()`, what a dedicated worker of the page sees.
pub(crate) async fn identity(
    State(state): State<SiteState>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Html<String> {
    let frame = if q.contains_key("frame") {
        "<script>window.identity().then((seen) => parent.postMessage(seen, '*'));</script>".to_owned()
    } else {
        format!(
            "<p><a href=\"/identity?popup=1\" target=\"_blank\">Open identity popup</a></p>\n\
             <form id=\"post-identity\" method=\"post\" action=\"/identity?first=post\" target=\"_blank\">\
             <input type=\"hidden\" name=\"sent\" value=\"1\"></form>\n<iframe src=\"http://frame.localhost:{}/identity?frame=1\" title=\"Frame\" allow=\"geolocation\" \
             width=\"300\" height=\"80\"></iframe>\n<script>\nconst __frameSeen = new Promise((done) => \
             addEventListener('message', (e) => done(e.data)));\nwindow.frameIdentity = () => __frameSeen;\n\
             window.workerIdentity = () => new Promise((done) => {{ \
             new Worker('/identity/worker.js').onmessage = (e) => done(e.data); }});\n</script>",
            state.port
        )
    };
    let header =
        |name| headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).unwrap_or_default();
    let (lang, agent) = (header(ACCEPT_LANGUAGE), header(USER_AGENT));
    page(
        "Identity",
        &format!(
            "<h1>Identity</h1>\n<p id=\"accept-language\">{}</p>\n<p id=\"user-agent\">{}</p>\n\
             <script>\nwindow.identity = () => new Promise((done) => {{\n\
               const seen = {{ headers: {{ acceptLanguage: {}, userAgent: {} }},\n\
                 language: navigator.language, languages: navigator.languages, userAgent: navigator.userAgent,\n\
                 timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,\n\
                 offset: new Date(Date.UTC(2026, 0, 15, 12)).getTimezoneOffset(),\n\
                 number: (1234.5).toLocaleString() }};\n\
               navigator.geolocation.getCurrentPosition(\n\
                 (p) => done(Object.assign(seen, {{ position: {{ latitude: p.coords.latitude, longitude: p.coords.longitude, accuracy: p.coords.accuracy }} }})),\n\
                 (e) => done(Object.assign(seen, {{ position: {{ error: e.message || String(e.code) }} }})),\n\
                 {{ timeout: 5000 }});\n\
             }});\n</script>\n{}",
            escape(&lang),
            escape(&agent),
            js_string(&lang),
            js_string(&agent),
            frame,
        ),
    )
}

/// `/identity/worker.js`: a dedicated worker that posts what its script sees.
pub(crate) async fn worker() -> ([(axum::http::header::HeaderName, &'static str); 1], &'static str) {
    (
        [(axum::http::header::CONTENT_TYPE, "text/javascript")],
        "postMessage({ language: navigator.language, languages: navigator.languages, \
         userAgent: navigator.userAgent, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone });",
    )
}

/// `/totp`: a one-time code form, submitted by GET to `/totp/check`.
pub(crate) async fn totp() -> Html<String> {
    page(
        "Two-step sign in",
        r#"<h1>Two-step sign in</h1>
<form method="get" action="/totp/check">
<p><label for="code">Code</label> <input id="code" name="code" autocomplete="one-time-code" inputmode="numeric"></p>
<p><button type="submit">Verify</button></p>
</form>"#,
    )
}

/// `/totp/check?code=..`: accepts the code of the current 30 s step or of the one before or after, and
/// echoes the code it got (as careless sites do).
pub(crate) async fn totp_check(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let code = q.get("code").map_or("", |c| c.trim());
    let step = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 30);
    let accepted = !code.is_empty() && [step.saturating_sub(1), step, step + 1].iter().any(|s| hotp(*s) == code);
    let verdict = if accepted { "accepted" } else { "rejected" };
    page("Code check", &format!("<h1>Code check</h1>\n<p id=\"result\">Code {} {verdict}</p>", escape(code)))
}

/// RFC 4226 with SHA-1 and six digits, over the fixture's seed.
fn hotp(counter: u64) -> String {
    let Ok(mut mac) = <Hmac<sha1::Sha1> as Mac>::new_from_slice(TOTP_KEY) else { return String::new() };
    mac.update(&counter.to_be_bytes());
    let sum = mac.finalize().into_bytes();
    let at = usize::from(sum[sum.len() - 1] & 0x0f);
    let word = u32::from_be_bytes([sum[at] & 0x7f, sum[at + 1], sum[at + 2], sum[at + 3]]);
    format!("{:06}", word % 1_000_000)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fixture_code_matches_rfc_6238() {
        // RFC 6238 appendix B, T = 59 s: 94287082 in eight digits.
        assert_eq!(super::hotp(59 / 30), "287082");
    }
}
