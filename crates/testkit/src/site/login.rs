//! `/login` and `/login/welcome`: a sign-in form whose result page echoes what was typed, password
//! included (as careless sites do), for the secrets tests; `/login/framed`: the same form in a frame that
//! covers the whole viewport.

use std::collections::HashMap;

use axum::extract::Query;
use axum::response::Html;

use super::html::{escape, page};

/// `/login`: username, password and a Sign in button, submitted by GET.
pub(crate) async fn login() -> Html<String> {
    page(
        "Sign in",
        r#"<h1>Sign in</h1>
<form method="get" action="/login/welcome">
<p><label for="user">Username</label> <input id="user" name="user" autocomplete="off"></p>
<p><label for="pw">Password</label> <input id="pw" name="pw" type="password"></p>
<p><button type="submit">Sign in</button></p>
</form>"#,
    )
}

/// `/login/welcome?user=..&pw=..`: greets the user and shows the password it got.
pub(crate) async fn welcome(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let user = q.get("user").map_or("", String::as_str);
    let pw = q.get("pw").map_or("", String::as_str);
    page(
        "Welcome",
        &format!(
            "<h1>Welcome</h1>\n<p id=\"who\">Signed in as {}</p>\n<p id=\"pw\">Your password is {}</p>",
            escape(user),
            escape(pw)
        ),
    )
}

/// `/login/framed`: `/login` in an iframe over the whole viewport (a page whose every point is a frame).
pub(crate) async fn framed() -> Html<String> {
    page(
        "Framed sign in",
        r#"<style>html,body{margin:0}</style>
<iframe src="/login" title="Sign in" style="position:fixed;left:0;top:0;width:100vw;height:100vh;border:0"></iframe>"#,
    )
}
