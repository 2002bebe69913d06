//! `/newsletter`: an email field and a subscribe button that writes `Subscribed: <email>` into `#status`.
//! The page is switchable ([`crate::FixtureSite::set_newsletter_redesign`]): redesigned, the button reads
//! "Sign up" and sits above the field, under the same URL and title. The action cache tests replay a run
//! recorded on the first design against the second. Every load shows text of its own (`Visit 7 at
//! 13:05:22`), which a cached run must not depend on. `?look=archive` is another page under the same path
//! and title: three links to past issues, no form.

use axum::extract::{Query, State};
use axum::response::Html;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::html::page;
use super::SiteState;

/// Loads of the page so far, shown on it.
static VISITS: AtomicU64 = AtomicU64::new(0);

pub(crate) async fn newsletter(
    State(state): State<SiteState>,
    Query(q): Query<HashMap<String, String>>,
) -> Html<String> {
    let visit = VISITS.fetch_add(1, Ordering::SeqCst) + 1;
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) % 86_400;
    let clock = format!("<p>Visit {visit} at {:02}:{:02}:{:02}</p>", secs / 3600, secs / 60 % 60, secs % 60);
    if q.get("look").is_some_and(|l| l == "archive") {
        let issues: String =
            (1..=3).map(|n| format!("<li><a href=\"/newsletter?issue={n}\">Issue {n}</a></li>")).collect();
        return page("Newsletter", &format!("<h1>Our newsletter</h1>\n{clock}\n<ul>{issues}</ul>"));
    }
    let field = "<label>Email <input id=\"email\" type=\"email\" name=\"email\"></label>";
    let script = "<script>function subscribe(){document.getElementById('status').textContent=\
                  'Subscribed: '+document.getElementById('email').value;}</script>";
    let body = if state.newsletter_redesign.load(Ordering::SeqCst) {
        format!(
            "<h1>Our newsletter</h1>\n{clock}\n<p><button id=\"join\" type=\"button\" onclick=\"subscribe()\">Sign up</button></p>\n\
             <p>{field}</p>\n<p id=\"status\"></p>\n{script}"
        )
    } else {
        format!(
            "<h1>Our newsletter</h1>\n{clock}\n<p>{field}</p>\n\
             <p><button type=\"button\" onclick=\"subscribe()\">Subscribe</button></p>\n<p id=\"status\"></p>\n{script}"
        )
    };
    page("Newsletter", &body)
}
