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

/// What `/board`'s title says once all three of its tasks are done.
pub const BOARD_DONE: &str = "Board: dragged scrolled typed";

/// `/board`: three things that only points reach, for the vision tests. On a canvas, a red block
/// (`#e00000`) to drag onto a green zone (`#00b000`), and a yellow box (`#e0e000`) that takes keys once
/// clicked (`4711`); beside it a blue list (`#0000e0`) that scrolls on its own while the page cannot. The
/// title names what is done.
pub(crate) async fn board() -> Html<String> {
    page(
        "Board:",
        r#"<style>html,body{margin:0;background:#fff;overflow:hidden;height:445px}
canvas{position:absolute;left:0;top:0}
#list{position:absolute;left:640px;top:40px;width:300px;height:200px;overflow:auto;background:#0000e0}</style>
<canvas id="c" width="600" height="445"></canvas>
<div id="list"><div style="height:2000px"></div></div>
<script>
const c = document.getElementById('c'), g = c.getContext('2d'), list = document.getElementById('list');
const block = {x: 60, y: 60, w: 50, h: 50}, zone = {x: 400, y: 250, w: 90, h: 90}, box = {x: 60, y: 330, w: 160, h: 40};
const done = new Set();
let grab = null, armed = false, typed = '';
const inside = (t, x, y) => x >= t.x && x < t.x + t.w && y >= t.y && y < t.y + t.h;
const mark = (what) => { done.add(what); document.title = 'Board: ' + ['dragged', 'scrolled', 'typed'].filter(w => done.has(w)).join(' '); };
const draw = () => {
  g.fillStyle = '#f0f0f0'; g.fillRect(0, 0, c.width, c.height);
  g.fillStyle = '#00b000'; g.fillRect(zone.x, zone.y, zone.w, zone.h);
  g.fillStyle = '#e0e000'; g.fillRect(box.x, box.y, box.w, box.h);
  g.fillStyle = '#e00000'; g.fillRect(block.x, block.y, block.w, block.h);
};
c.addEventListener('mousedown', (e) => {
  if (inside(block, e.offsetX, e.offsetY)) grab = {dx: e.offsetX - block.x, dy: e.offsetY - block.y};
});
addEventListener('mousemove', (e) => { if (grab) { block.x = e.clientX - grab.dx; block.y = e.clientY - grab.dy; draw(); } });
addEventListener('mouseup', () => {
  if (grab && inside(zone, block.x + block.w / 2, block.y + block.h / 2)) mark('dragged');
  grab = null;
});
c.addEventListener('click', (e) => { armed = inside(box, e.offsetX, e.offsetY); typed = ''; });
addEventListener('keydown', (e) => {
  if (!armed || e.key.length !== 1) return;
  typed += e.key;
  if (typed === '4711') mark('typed');
});
list.addEventListener('scroll', () => { if (list.scrollTop >= 300) mark('scrolled'); });
draw();
</script>"#,
    )
}
