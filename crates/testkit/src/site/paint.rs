//! `/paint?bg=RRGGBB[&open=RRGGBB][&animate=1]`: a page of one solid colour, for the live-view tests to
//! recognise in a frame. With `open`, a link "Open" opens another colour in a new tab (a popup). A click
//! anywhere else puts the click's page coordinates in the title (`clicked X,Y`). With `animate`, a box
//! moves across the page on every animation frame (the live-view benchmark's moving picture).

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
    let animation = if q.contains_key("animate") {
        "<div id=\"box\" style=\"position:absolute;top:120px;width:80px;height:80px;background:#222\"></div>\n\
         <script>const box = document.getElementById('box');\n\
         const step = (t) => { box.style.left = `${(t / 4) % 940}px`; requestAnimationFrame(step); };\n\
         requestAnimationFrame(step);</script>"
    } else {
        ""
    };
    page(
        &format!("Paint {bg}"),
        &format!(
            "<style>html,body{{margin:0;height:100%;background:#{bg}}}</style>\n{link}\n{animation}\n\
             <script>document.addEventListener('click', (e) => {{\n\
               if (e.target.id !== 'open') {{ document.title = `clicked ${{e.clientX}},${{e.clientY}}`; }}\n\
             }});</script>"
        ),
    )
}
