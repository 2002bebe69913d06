//! `/account/login`, `/account/signin` and `/account`: a shop account for the profile tests. Signing in
//! sets an httpOnly session cookie with no expiry, a localStorage value and an IndexedDB record; the
//! account page shows all three (the cookie as the server received it).

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{Html, IntoResponse, Response};

use super::html::{escape, js_string, page, page_string};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "shop_session";

/// The session cookie's value for `user` (what the tests look for, also in the database files).
pub fn session_token(user: &str) -> String {
    format!("SHOPSESSION-{user}-7f3c9a1e")
}

/// The localStorage value signing in as `user` stores (key `shop_cart`).
pub fn cart_of(user: &str) -> String {
    format!("cart-of-{user}")
}

/// The IndexedDB record signing in as `user` stores (database `shop`, store `orders`, key 1, `item`).
pub fn order_of(user: &str) -> String {
    format!("order-of-{user}")
}

/// `/account/login`: a username field and a Sign in button.
pub(crate) async fn login() -> Html<String> {
    page(
        "Shop sign in",
        r#"<h1>Shop sign in</h1>
<form method="get" action="/account/signin">
<p><label for="user">Username</label> <input id="user" name="user" autocomplete="off"></p>
<p><button type="submit">Sign in</button></p>
</form>"#,
    )
}

/// `/account/signin?user=U`: sets the session cookie (httpOnly, no expiry), and by script the
/// localStorage value and the IndexedDB record; shows "Saved" once the record is committed.
pub(crate) async fn signin(Query(q): Query<HashMap<String, String>>) -> Response {
    let user: String = q.get("user").map_or("", String::as_str).chars().filter(char::is_ascii_alphanumeric).collect();
    let cookie = format!("{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax", session_token(&user));
    let Ok(header) = HeaderValue::from_str(&cookie) else {
        return Html(page_string("Bad user", "<p>bad user</p>")).into_response();
    };
    let script = format!(
        r#"<script>
localStorage.setItem('shop_cart', {cart});
const open = indexedDB.open('shop', 1);
open.onupgradeneeded = () => open.result.createObjectStore('orders', {{ keyPath: 'id' }});
open.onsuccess = () => {{
  const tx = open.result.transaction('orders', 'readwrite');
  tx.objectStore('orders').put({{ id: 1, item: {order} }});
  tx.oncomplete = () => {{ document.getElementById('saved').textContent = 'Saved'; open.result.close(); }};
}};
</script>"#,
        cart = js_string(&cart_of(&user)),
        order = js_string(&order_of(&user)),
    );
    let body = page_string(
        "Signed in",
        &format!("<h1>Signed in as {}</h1>\n<p id=\"saved\">Saving</p>\n{script}", escape(&user)),
    );
    ([(SET_COOKIE, header)], Html(body)).into_response()
}

/// `/account`: shows the session cookie the request carried, the localStorage value and the IndexedDB
/// record (`none` for each that is missing) in `#summary`, then "Loaded".
pub(crate) async fn account(headers: HeaderMap) -> Html<String> {
    let cookie = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|raw| raw.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map_or_else(|| "none".to_owned(), |(_, v)| v.to_owned());
    let script = r#"<script>
const show = (order) => {
  const cart = localStorage.getItem('shop_cart') || 'none';
  document.getElementById('summary').textContent =
    'cookie=' + document.getElementById('cookie').textContent + ' cart=' + cart + ' order=' + order;
  document.getElementById('ready').textContent = 'Loaded';
};
const open = indexedDB.open('shop');
open.onupgradeneeded = () => open.transaction.abort();
open.onerror = () => show('none');
open.onsuccess = () => {
  const db = open.result;
  if (!db.objectStoreNames.contains('orders')) { db.close(); show('none'); return; }
  const get = db.transaction('orders').objectStore('orders').get(1);
  get.onsuccess = () => { db.close(); show(get.result ? get.result.item : 'none'); };
  get.onerror = () => show('none');
};
</script>"#;
    page(
        "Account",
        &format!(
            "<h1>Account</h1>\n<p id=\"cookie\">{}</p>\n<p id=\"summary\"></p>\n<p id=\"ready\">Loading</p>\n{script}",
            escape(&cookie)
        ),
    )
}
