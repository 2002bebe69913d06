//! Fixture pages that depend on the request: form result, cookies, tracker, slow, echo, 404.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::header::{CONTENT_TYPE, COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;

use super::html::{escape, js_string, page, page_string};
use super::{cookie_header, SiteState};

/// A valid 1x1 transparent PNG (RGBA, 68 bytes).
pub(crate) const PIXEL_PNG: [u8; 68] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0b, 0x49,
    0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01, 0xe9, 0xfa, 0xdc, 0xd8, 0x00,
    0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Default and maximum delay of `/slow`, in milliseconds.
const SLOW_DEFAULT_MS: u64 = 3000;
const SLOW_MAX_MS: u64 = 60_000;

/// The url-decoded query parameters of `uri` (empty if there are none or they are malformed).
fn query_params(uri: &Uri) -> HashMap<String, String> {
    Query::<HashMap<String, String>>::try_from_uri(uri).map(|Query(params)| params).unwrap_or_default()
}

/// `/form/submitted?name=..&email=..`: echoes the submitted values, HTML-escaped.
pub(crate) async fn form_submitted(uri: Uri) -> Html<String> {
    let params = query_params(&uri);
    let name = params.get("name").map_or("", String::as_str);
    let email = params.get("email").map_or("", String::as_str);
    page(
        "Thanks",
        &format!(
            "<h1>Thanks</h1>\n<p id=\"result\">Thanks {} ({})</p>\n<p><a href=\"/\">Back home</a></p>",
            escape(name),
            escape(email)
        ),
    )
}

/// `/set-cookie?value=V`: sets cookie `fixture=V` and `localStorage.fixture = V` (default "yes").
pub(crate) async fn set_cookie(uri: Uri) -> Response {
    let params = query_params(&uri);
    let value = params.get("value").map_or("yes", String::as_str);
    let Ok(header) = HeaderValue::from_bytes(format!("fixture={value}; Path=/").as_bytes()) else {
        let body = page_string("Bad cookie", "<p id=\"status\">cookie value not allowed in a header</p>");
        return (StatusCode::BAD_REQUEST, Html(body)).into_response();
    };
    let body = page_string(
        "Cookie set",
        &format!(
            "<p id=\"status\">cookie set</p>\n<script>localStorage.setItem('fixture', {});</script>",
            js_string(value)
        ),
    );
    ([(SET_COOKIE, header)], Html(body)).into_response()
}

/// `/show-cookie`: shows the `fixture` cookie from the request and the `fixture` localStorage item.
pub(crate) async fn show_cookie(headers: HeaderMap) -> Html<String> {
    let cookie = cookie_header(&headers).and_then(|raw| fixture_cookie(&raw)).unwrap_or_else(|| "none".to_owned());
    page(
        "Cookie view",
        &format!(
            "<p id=\"cookie\">{}</p>\n<p id=\"storage\"></p>\n<script>\n\
             document.getElementById('storage').textContent = \
             localStorage.getItem('fixture') || 'none';\n</script>",
            escape(&cookie)
        ),
    )
}

/// The value of the `fixture` cookie in a `Cookie` header value, if present.
fn fixture_cookie(raw: &str) -> Option<String> {
    raw.split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| name.trim() == "fixture")
        .map(|(_, value)| value.trim().to_owned())
}

/// `/tracker`: one image from `tracker.localhost` and one from `127.0.0.1`, same port.
pub(crate) async fn tracker(State(state): State<SiteState>) -> Html<String> {
    let port = state.port;
    page(
        "Tracker page",
        &format!(
            "<h1>Tracker page</h1>\n\
             <img src=\"http://tracker.localhost:{port}/pixel.png\" alt=\"pixel\" width=\"1\" height=\"1\">\n\
             <img src=\"http://127.0.0.1:{port}/ok.png\" alt=\"ok\" width=\"1\" height=\"1\">"
        ),
    )
}

/// `/popup`: links that open new tabs, one on this host and one on the tracker host.
pub(crate) async fn popup(State(state): State<SiteState>) -> Html<String> {
    let port = state.port;
    page(
        "Popups",
        &format!(
            "<h1>Popups</h1>\n\
             <p><a href=\"/pricing\" target=\"_blank\">Open pricing</a></p>\n\
             <p><a href=\"http://tracker.localhost:{port}/pricing\" target=\"_blank\">Open tracker</a></p>"
        ),
    )
}

/// `/pixel.png` and `/ok.png`: the 1x1 transparent PNG.
pub(crate) async fn png() -> Response {
    ([(CONTENT_TYPE, HeaderValue::from_static("image/png"))], PIXEL_PNG.as_slice()).into_response()
}

/// `/slow?ms=N`: waits N ms (default 3000, at most 60000) before answering.
pub(crate) async fn slow(uri: Uri) -> Html<String> {
    let ms = query_params(&uri)
        .get("ms")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(SLOW_DEFAULT_MS)
        .min(SLOW_MAX_MS);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    page("Slow page", &format!("<h1>Slow page</h1>\n<p id=\"waited\">Waited {ms} ms</p>"))
}

/// `/echo-headers`: the request headers (except `Cookie`) as a JSON object of name -> value;
/// repeated headers are joined with `", "`.
pub(crate) async fn echo_headers(headers: HeaderMap) -> Json<BTreeMap<String, String>> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers.iter().filter(|(name, _)| **name != COOKIE) {
        let value = String::from_utf8_lossy(value.as_bytes());
        out.entry(name.as_str().to_owned())
            .and_modify(|existing| {
                existing.push_str(", ");
                existing.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    Json(out)
}

/// Fallback: 404 with a small HTML page.
pub(crate) async fn not_found(uri: Uri) -> (StatusCode, Html<String>) {
    (
        StatusCode::NOT_FOUND,
        page(
            "Not found",
            &format!("<h1>Not found</h1>\n<p id=\"path\">{}</p>\n<p><a href=\"/\">Home</a></p>", escape(uri.path())),
        ),
    )
}

/// `/later`: clicks whose effect comes at different times: a link to a page that answers after 700 ms, a
/// link whose handler navigates one task later, a form submitted to a slow page, a button that only changes
/// the title, and a link that opens a slow page in a new tab.
pub(crate) async fn later() -> Html<String> {
    page(
        "Later",
        r##"<h1>Later</h1>
<p><a href="/slow?ms=700">Slow link</a></p>
<p><a href="#" onclick="setTimeout(() => { location.href = '/pricing'; }, 0); return false;">Late link</a></p>
<form action="/slow"><input type="hidden" name="ms" value="300"><button>Send form</button></form>
<p><button onclick="document.title = 'Clicked';">Change title</button></p>
<p><a href="/slow?ms=500" target="_blank">Slow tab</a></p>"##,
    )
}

#[cfg(test)]
mod tests {
    use super::fixture_cookie;

    #[test]
    fn finds_fixture_cookie() {
        assert_eq!(fixture_cookie("a=1; fixture=abc; b=2").as_deref(), Some("abc"));
        assert_eq!(fixture_cookie("fixture=").as_deref(), Some(""));
        assert_eq!(fixture_cookie("a=1; fixtures=2"), None);
    }
}
