//! `/newsletter`: an email field and a subscribe button that writes `Subscribed: <email>` into `#status`.
//! The page is switchable ([`crate::FixtureSite::set_newsletter_redesign`]): redesigned, the button reads
//! "Sign up" and sits above the field, under the same URL and title. The action cache tests replay a run
//! recorded on the first design against the second.

use axum::extract::State;
use axum::response::Html;
use std::sync::atomic::Ordering;

use super::html::page;
use super::SiteState;

pub(crate) async fn newsletter(State(state): State<SiteState>) -> Html<String> {
    let field = "<label>Email <input id=\"email\" type=\"email\" name=\"email\"></label>";
    let script = "<script>function subscribe(){document.getElementById('status').textContent=\
                  'Subscribed: '+document.getElementById('email').value;}</script>";
    let body = if state.newsletter_redesign.load(Ordering::SeqCst) {
        format!(
            "<h1>Our newsletter</h1>\n<p><button id=\"join\" type=\"button\" onclick=\"subscribe()\">Sign up</button></p>\n\
             <p>{field}</p>\n<p id=\"status\"></p>\n{script}"
        )
    } else {
        format!(
            "<h1>Our newsletter</h1>\n<p>{field}</p>\n\
             <p><button type=\"button\" onclick=\"subscribe()\">Subscribe</button></p>\n<p id=\"status\"></p>\n{script}"
        )
    };
    page("Newsletter", &body)
}
