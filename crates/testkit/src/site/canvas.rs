//! `/canvas`: a page that is one big canvas, with its targets drawn only on it (no element, no text), for
//! the vision tests. A red square waits for a click; once clicked, a blue square appears elsewhere and
//! waits for a double-click, which puts the answer in the title (`Solved 4711`).

use axum::response::Html;

use super::html::page;

/// The answer the double-click reveals.
pub const ANSWER: &str = "Solved 4711";

pub(crate) async fn canvas() -> Html<String> {
    page(
        "Canvas",
        &format!(
            r#"<style>html,body{{margin:0;background:#fff}} canvas{{display:block}}</style>
<canvas id="c" width="1024" height="445"></canvas>
<script>
const c = document.getElementById('c'), g = c.getContext('2d');
const red = {{x: 700, y: 300, w: 60, h: 60, fill: '#e00000'}};
const blue = {{x: 150, y: 80, w: 60, h: 60, fill: '#0000e0'}};
let stage = 0;
const inside = (t, e) => {{
  const r = c.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
  return x >= t.x && x < t.x + t.w && y >= t.y && y < t.y + t.h;
}};
const draw = () => {{
  g.fillStyle = '#f0f0f0'; g.fillRect(0, 0, c.width, c.height);
  const t = stage === 0 ? red : blue;
  if (stage < 2) {{ g.fillStyle = t.fill; g.fillRect(t.x, t.y, t.w, t.h); }}
}};
c.addEventListener('click', (e) => {{ if (stage === 0 && inside(red, e)) {{ stage = 1; draw(); }} }});
c.addEventListener('dblclick', (e) => {{
  if (stage === 1 && inside(blue, e)) {{ stage = 2; draw(); document.title = '{ANSWER}'; }}
}});
draw();
</script>"#
        ),
    )
}
