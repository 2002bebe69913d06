//! `/search?q=…`: a search form whose results page echoes the query in the URL and in the title
//! ("Results for …"), on a white page. The live-view tests type a secret into it and check the band.

use std::collections::HashMap;

use axum::extract::Query;
use axum::response::Html;

use super::html::page;

pub(crate) async fn search(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let (title, results) = match q.get("q").filter(|v| !v.is_empty()) {
        Some(query) => (format!("Results for {query}"), 3),
        None => ("Search".to_owned(), 0),
    };
    page(
        &title,
        &format!(
            "<style>html,body{{margin:0;background:#fff}}</style>\n\
             <form action=\"/search\" method=\"get\" style=\"margin:8px\">\
             <input name=\"q\" placeholder=\"Search the site\" aria-label=\"Search the site\"> \
             <button type=\"submit\">Search</button></form>\n<p id=\"count\">{results} results</p>"
        ),
    )
}
