//! `/marks`: three coloured buttons at known places, for the set-of-marks tests. A click on one puts its
//! name in the title with what the page saw happen to itself since it was parsed: `Clicked Green; 0 changes;
//! 12 of 12 elements`. A change is any mutation of the page's DOM but the service's own `data-wp-*`
//! bookkeeping attributes, so marks drawn into the page would show. With `?frames=1` the buttons sit at the
//! same places, Green in a same-origin iframe and Red in a cross-origin one (`frame.localhost`), each frame
//! telling the page of its click; the title then says only `Clicked Red`. With `?edges=1` they sit at
//! [`EDGE_BUTTONS`]: Blue half above the viewport, Green inside an open shadow root, Red half past the right
//! edge; a click puts `Clicked NAME` in the title.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Html;

use super::html::{escape, page};
use super::SiteState;

/// A box `(left, top, width, height)` in CSS pixels.
pub type Box4 = (u32, u32, u32, u32);
/// A box that may start left of or above the viewport.
pub type EdgeBox = (i32, i32, u32, u32);

/// Each button: its name, colour (`RRGGBB`) and box.
pub const BUTTONS: [(&str, &str, Box4); 3] = [
    ("Blue", "0000e0", (80, 60, 160, 60)),
    ("Green", "00b000", (420, 200, 160, 60)),
    ("Red", "e00000", (760, 330, 160, 60)),
];
/// With `?edges=1`: each button's name, colour and box `(left, top, width, height)`, partly out of view or in a
/// shadow root.
pub const EDGE_BUTTONS: [(&str, &str, EdgeBox); 3] = [
    ("Blue", "0000e0", (80, -30, 160, 60)),
    ("Green", "00b000", (420, 200, 160, 60)),
    ("Red", "e00000", (904, 330, 160, 60)),
];
/// With `?frames=1`: where Green's and Red's frames start, `(left, top)`.
const FRAMES: [(u32, u32); 2] = [(400, 100), (700, 230)];

const STYLE: &str = "<style>html,body{margin:0;background:#fff;overflow:hidden;height:445px}\n\
    button{position:absolute;border:0;padding:0;margin:0;color:#fff;font:18px sans-serif}\n\
    iframe{position:absolute;border:0;width:300px;height:200px}</style>\n";

/// `/marks?edges=1`: [`EDGE_BUTTONS`], Green's inside a shadow root attached while the page is parsed.
fn at_edges() -> Html<String> {
    let [(blue, blue_rgb, (bl, bt, bw, bh)), (green, green_rgb, (gl, gt, gw, gh)), (red, red_rgb, (rl, rt, rw, rh))] =
        EDGE_BUTTONS;
    let style = |rgb: &str, l: i32, t: i32, w: u32, h: u32| {
        format!("position:absolute;left:{l}px;top:{t}px;width:{w}px;height:{h}px;background:#{rgb}")
    };
    let body = format!(
        "{STYLE}<button style=\"{}\">{blue}</button>\n<div id=\"host\"></div>\n\
         <button style=\"{}\">{red}</button>\n<script>\n\
         const root = document.getElementById('host').attachShadow({{mode: 'open'}});\n\
         root.innerHTML = '<button style=\"{};border:0;padding:0;margin:0;color:#fff;font:18px sans-serif\">{green}</button>';\n\
         for (const b of [...document.querySelectorAll('button'), ...root.querySelectorAll('button')]) {{\n\
           b.addEventListener('click', () => {{ document.title = 'Clicked ' + b.textContent; }});\n\
         }}\n</script>",
        style(blue_rgb, bl, bt, bw, bh),
        style(red_rgb, rl, rt, rw, rh),
        style(green_rgb, gl, gt, gw, gh),
    );
    page("Marks at the edges", &body)
}

fn button(name: &str, rgb: &str, (l, t, w, h): Box4) -> String {
    format!("<button style=\"left:{l}px;top:{t}px;width:{w}px;height:{h}px;background:#{rgb}\">{name}</button>\n")
}

pub(crate) async fn marks(State(state): State<SiteState>, Query(q): Query<HashMap<String, String>>) -> Html<String> {
    if q.contains_key("edges") {
        return at_edges();
    }
    if q.contains_key("frames") {
        let [(blue, blue_rgb, blue_at), (green, green_rgb, (gl, gt, ..)), (red, red_rgb, (rl, rt, ..))] = BUTTONS;
        let [(fl0, ft0), (fl1, ft1)] = FRAMES;
        let port = state.port;
        // The same origin by a relative address; another by another host.
        let inner = |origin: &str, name: &str, rgb: &str, x: u32, y: u32| {
            format!("{origin}/marks/one?name={name}&rgb={rgb}&x={x}&y={y}")
        };
        let body = format!(
            "{STYLE}{}<iframe style=\"left:{fl0}px;top:{ft0}px\" src=\"{}\"></iframe>\n\
             <iframe style=\"left:{fl1}px;top:{ft1}px\" src=\"{}\"></iframe>\n\
             <script>addEventListener('message', (e) => {{ document.title = 'Clicked ' + e.data; }});\n\
             document.querySelector('button').addEventListener('click', () => {{ document.title = 'Clicked Blue'; }});\n\
             </script>",
            button(blue, blue_rgb, blue_at),
            inner("", green, green_rgb, gl - fl0, gt - ft0),
            inner(&format!("http://frame.localhost:{port}"), red, red_rgb, rl - fl1, rt - ft1),
        );
        return page("Marks in frames", &body);
    }
    let buttons: String = BUTTONS.iter().map(|(name, rgb, at)| button(name, rgb, *at)).collect();
    page(
        "Marks",
        &format!(
            r#"{STYLE}{buttons}<script>
// Counted from the end of parsing (the parser's own additions are no change).
let changes = 0, before = 0;
addEventListener('DOMContentLoaded', () => {{
  before = document.querySelectorAll('*').length;
  new MutationObserver((records) => {{
    for (const r of records) if (!(r.type === 'attributes' && r.attributeName.startsWith('data-wp-'))) changes += 1;
  }}).observe(document, {{subtree: true, childList: true, attributes: true, characterData: true}});
}});
for (const b of document.querySelectorAll('button')) {{
  b.addEventListener('click', () => {{
    const now = document.querySelectorAll('*').length;
    document.title = 'Clicked ' + b.textContent + '; ' + changes + ' changes; ' + now + ' of ' + before + ' elements';
  }});
}}
</script>"#
        ),
    )
}

/// `/marks/one?name=&rgb=&x=&y=`: one button for a frame of `/marks?frames=1`; a click tells the parent.
pub(crate) async fn one(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let get = |k: &str| q.get(k).map(String::as_str).unwrap_or_default();
    let num = |k: &str| get(k).parse::<u32>().unwrap_or(0);
    let rgb = get("rgb");
    let rgb = if rgb.len() == 6 && rgb.chars().all(|c| c.is_ascii_hexdigit()) { rgb } else { "808080" };
    let name = escape(get("name"));
    let body = format!(
        "{STYLE}{}<script>document.querySelector('button').addEventListener('click', \
         () => parent.postMessage({}, '*'));</script>",
        button(&name, rgb, (num("x"), num("y"), 160, 60)),
        super::html::js_string(&name),
    );
    page(&name, &body)
}
