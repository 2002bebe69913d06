//! `/challenges/*`: pages with human checks as the real sites embed them — the markup only, since the
//! widgets' own hosts are unreachable here (frames carry their real `src` but load `srcdoc`, and script
//! tags are not fetched) — behind a sign-up form whose server-side check accepts [`CHALLENGE_TOKEN`] in
//! the widget's response field. A fixed "person's" button at (800, 45) on the page passes each check the
//! way a person would, and reports its click to `/challenges/clicked` (so tests see the agent never did).

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::html::{escape, page, page_string};
use super::SiteState;

/// The token the fixture's checks accept (the fake solver answers it; the person's button fills it in).
pub const CHALLENGE_TOKEN: &str = "fixture-solved-token-7f3a";
/// The page point of the person's button on every challenge page (its centre).
pub const PERSON_BUTTON: (f64, f64) = (800.0, 45.0);

pub(crate) fn routes() -> Router<SiteState> {
    Router::new()
        .route("/challenges/check", get(check))
        .route("/challenges/clicked", get(clicked))
        .route("/challenges/{kind}", get(challenge))
}

const BUTTON_STYLE: &str =
    "position:fixed;left:700px;top:20px;width:200px;height:50px;z-index:10;background:#eee;border:1px solid #888";

/// The sign-up form around a check, sent to `/challenges/check`.
fn form(kind: &str, inside: &str) -> String {
    format!(
        r#"<h1>Sign up</h1>
<form method="get" action="/challenges/check">
<input type="hidden" name="kind" value="{kind}">
<input type="hidden" name="callback" id="callback" value="no">
<p><label for="name">Name</label> <input id="name" name="name" autocomplete="off"></p>
{inside}
<p><button type="submit">Submit</button></p>
</form>
<script>
function onCheck(token) {{ document.getElementById('callback').value = 'yes'; }}
function personSolves(field) {{
  for (const el of document.querySelectorAll('[name="' + field + '"]')) el.value = '{CHALLENGE_TOKEN}';
  onCheck('{CHALLENGE_TOKEN}');
  fetch('/challenges/clicked?kind={kind}');
}}
</script>"#
    )
}

/// A page that asks a person to pass it: sets `cookie` and reloads.
fn pass_button(kind: &str, cookie: &str, label: &str) -> String {
    format!(
        r#"<button type="button" id="person" style="{BUTTON_STYLE}" onclick="document.cookie = '{cookie}=ok; path=/'; fetch('/challenges/clicked?kind={kind}').then(() => location.reload())">{label}</button>"#
    )
}

fn has_cookie(headers: &HeaderMap, name: &str) -> bool {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|c| c.trim() == format!("{name}=ok"))
}

/// `/challenges/{recaptcha,recaptcha-v3,hcaptcha,turnstile,interstitial,mitigated,generic}`.
async fn challenge(Path(kind): Path<String>, headers: HeaderMap) -> Response {
    let person = |field: &str| {
        format!(
            r#"<button type="button" id="person" style="{BUTTON_STYLE}" onclick="personSolves('{field}')">Solve the check</button>"#
        )
    };
    let body = match kind.as_str() {
        "recaptcha" => form(
            &kind,
            &format!(
                r#"<div class="g-recaptcha" data-sitekey="6Lc-fixture-recaptcha" data-callback="onCheck">
<iframe title="reCAPTCHA" width="304" height="78" src="https://www.google.com/recaptcha/api2/anchor?ar=1&amp;k=6Lc-fixture-recaptcha&amp;size=normal" srcdoc="&lt;p&gt;reCAPTCHA&lt;/p&gt;"></iframe>
<textarea name="g-recaptcha-response" style="display:none"></textarea>
{}</div>"#,
                person("g-recaptcha-response")
            ),
        ),
        "recaptcha-v3" => form(
            &kind,
            r#"<script type="text/plain" src="https://www.google.com/recaptcha/api.js?render=6Lc-fixture-v3"></script>
<input type="hidden" name="g-recaptcha-response" value="">
<span class="g-recaptcha" data-sitekey="6Lc-fixture-v3" data-action="signup" data-callback="onCheck"></span>"#,
        ),
        // The widget's frame inside an open shadow root, and no `.h-captcha` element: found by its frame.
        "hcaptcha" => form(
            &kind,
            &format!(
                r#"<div id="hc-host"></div>
<textarea name="h-captcha-response" style="display:none"></textarea>
<script>
const root = document.getElementById('hc-host').attachShadow({{mode: 'open'}});
root.innerHTML = '<iframe title="hCaptcha" width="303" height="78" src="https://newassets.hcaptcha.com/captcha/v1/b1c2/static/hcaptcha.html#frame=checkbox&amp;id=0x1&amp;sitekey=10000000-ffff-ffff-ffff-fixture00001" srcdoc="hCaptcha"></iframe>'
  + {};
</script>"#,
                super::html::js_string(&person("h-captcha-response"))
            ),
        ),
        "turnstile" => form(
            &kind,
            &format!(
                r#"<div class="cf-turnstile" data-sitekey="0x4AAAAAAAfixture" data-action="signup" data-callback="onCheck">
<iframe title="Widget containing a Cloudflare security challenge" src="https://challenges.cloudflare.com/cdn-cgi/challenge-platform/h/b/turnstile/if/ov2/av0/rcv0/0/abc12/0x4AAAAAAAfixture/light/normal" srcdoc="Turnstile"></iframe>
<input type="hidden" name="cf-turnstile-response" value="">
{}</div>"#,
                person("cf-turnstile-response")
            ),
        ),
        "interstitial" if has_cookie(&headers, "wp_clearance") => form(&kind, ""),
        "interstitial" => {
            let body = format!(
                r#"<div class="main-wrapper" id="cf-chl-widget-x1"><h1>127.0.0.1</h1>
<h2 id="challenge-body-text">Checking if the site connection is secure</h2>
<iframe src="https://challenges.cloudflare.com/cdn-cgi/challenge-platform/h/b/turnstile/if/ov2/av0/rcv0/0/zz/0x4AAAAAAAinterstitial/light/normal" srcdoc="..."></iframe>
{}</div>
<script>window._cf_chl_opt = {{ cvId: '3', cType: 'managed' }};</script>"#,
                pass_button(&kind, "wp_clearance", "Continue")
            );
            let mut r = (StatusCode::FORBIDDEN, Html(page_string("Just a moment...", &body))).into_response();
            r.headers_mut().insert("cf-mitigated", HeaderValue::from_static("challenge"));
            return r;
        }
        // Known by its `cf-mitigated: challenge` header alone: no title, marker or phrase gives it away.
        "mitigated" if has_cookie(&headers, "wp_mitigated") => form(&kind, ""),
        "mitigated" => {
            let body = format!(
                "<h1>One more step</h1>\n<p>Please wait while we look at your connection.</p>\n{}",
                pass_button(&kind, "wp_mitigated", "Continue")
            );
            let mut r = (StatusCode::FORBIDDEN, page("One more step", &body)).into_response();
            r.headers_mut().insert("cf-mitigated", HeaderValue::from_static("challenge"));
            return r;
        }
        "generic" if has_cookie(&headers, "wp_human") => form(&kind, ""),
        "generic" => {
            let body = format!(
                "<h1>Please verify you are human</h1>\n<p>We need to make sure you are not a bot.</p>\n{}",
                pass_button(&kind, "wp_human", "Continue")
            );
            return page("Security check", &body).into_response();
        }
        _ => return (StatusCode::NOT_FOUND, page("Not found", "<h1>No such check</h1>")).into_response(),
    };
    page(&format!("Sign up ({kind})"), &body).into_response()
}

/// `/challenges/clicked?kind=..`: a person's button was clicked (recorded by the request log).
async fn clicked() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// `/challenges/check?kind=..&name=..&<response field>=..`: accepts the form when its check was passed.
async fn check(Query(q): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    let kind = q.get("kind").map_or("", String::as_str);
    let field = match kind {
        "recaptcha" | "recaptcha-v3" => Some("g-recaptcha-response"),
        "hcaptcha" => Some("h-captcha-response"),
        "turnstile" => Some("cf-turnstile-response"),
        _ => None,
    };
    let passed = match (kind, field) {
        (_, Some(f)) => q.get(f).is_some_and(|t| t == CHALLENGE_TOKEN),
        ("interstitial", None) => has_cookie(&headers, "wp_clearance"),
        ("generic", None) => has_cookie(&headers, "wp_human"),
        ("mitigated", None) => has_cookie(&headers, "wp_mitigated"),
        _ => false,
    };
    let name = escape(q.get("name").map_or("", String::as_str));
    let callback = escape(q.get("callback").map_or("no", String::as_str));
    let kind = escape(kind);
    if passed {
        let body = format!("<h1>Accepted</h1>\n<p id=\"result\">accepted {kind} for {name}; callback: {callback}</p>");
        page("Accepted", &body).into_response()
    } else {
        let body = format!("<h1>Rejected</h1>\n<p id=\"result\">rejected {kind}: the check was not passed</p>");
        (StatusCode::FORBIDDEN, page("Rejected", &body)).into_response()
    }
}
