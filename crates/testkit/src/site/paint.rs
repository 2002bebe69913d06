//! `/paint?bg=RRGGBB[&open=RRGGBB]`: a page of one solid colour, for the live-view tests to recognise
//! in a frame. With `open`, a link "Open" opens another colour in a new tab (a popup). A click anywhere
//! else puts the click's page coordinates in the title (`clicked X,Y`).

use std::collections::HashMap;

use axum::extract::Query;
use axum::response::Html;

use super::html::{escape, page};

/// A six-digit hex colour from the query, or white.
fn colour(q: &HashMap<String, String>, name: &str) -> Option<String> {
    q.get(name).filter(|c| c.len() == 6 && c.chars().all(|ch| ch.is_ascii_hexdigit())).cloned()
}

pub(crate) async fn paint(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let bg = colour(&q, "bg").unwrap_or_else(|| "ffffff".into());
    let link = match colour(&q, "open") {
        Some(other) => format!(
            "<a id=\"open\" target=\"_blank\" href=\"/paint?bg={}\" \
             style=\"position:absolute;left:10px;top:10px;background:#fff;padding:4px\">Open</a>",
            escape(&other)
        ),
        None => String::new(),
    };
    page(
        &format!("Paint {bg}"),
        &format!(
            "<style>html,body{{margin:0;height:100%;background:#{bg}}}</style>\n{link}\n\
             <script>document.addEventListener('click', (e) => {{\n\
               if (e.target.id !== 'open') {{ document.title = `clicked ${{e.clientX}},${{e.clientY}}`; }}\n\
             }});</script>"
        ),
    )
}
