//! In-page JavaScript used to find elements the way a person names them (by visible text, label or
//! placeholder). Each script is an expression over `ARG` (a JSON value spliced in by `with_arg`) and
//! returns JSON. Finding happens in the page; clicking and typing are real input events (see input.rs).

/// Shared helpers: visibility and the human-readable name of an element.
const PRELUDE: &str = r#"
const __visible = (el) => {
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return false;
  const s = getComputedStyle(el);
  return s.visibility !== 'hidden' && s.display !== 'none' && s.opacity !== '0';
};
const __norm2 = (s) => (s || '').replace(/\s+/g, ' ').trim();
const __norm = (s) => __norm2(s).toLowerCase();
const __name = (el) => __norm(el.innerText || el.value || el.getAttribute('aria-label') || el.title || el.alt || '');
const __pick = (cands, want, nameOf) => {
  const vis = cands.filter(__visible);
  return vis.find((e) => nameOf(e) === want) || vis.find((e) => nameOf(e).includes(want)) || null;
};
// The offset of an element's document inside the top document (same-origin iframes).
const __frameOffset = (el) => {
  let x = 0, y = 0, win = el.ownerDocument.defaultView;
  while (win && win.frameElement) {
    const f = win.frameElement, r = f.getBoundingClientRect();
    x += r.left + f.clientLeft; y += r.top + f.clientTop;
    win = f.ownerDocument.defaultView;
  }
  return {x, y};
};
// Scrolls `el` to the middle of the view. In a cross-origin frame only the frame's own document is
// scrolled: scrollIntoView would also scroll the page around it, later and from another process, after
// the click point was computed (the page brings the point into view itself: FRAME_OFFSET).
const __reveal = (el) => {
  if (window.top !== window && window.frameElement === null) {
    const r = el.getBoundingClientRect();
    window.scrollBy({left: r.left + r.width / 2 - innerWidth / 2, top: r.top + r.height / 2 - innerHeight / 2,
                     behavior: 'instant'});
  } else {
    el.scrollIntoView({block: 'center', inline: 'center'});
  }
};
const __center = (el, extra) => {
  __reveal(el);
  const r = el.getBoundingClientRect(), o = __frameOffset(el);
  return Object.assign({x: o.x + r.left + r.width / 2, y: o.y + r.top + r.height / 2, tag: el.tagName.toLowerCase()}, extra || {});
};
// The element with snapshot index `idx`, searched through open shadow roots and same-origin iframes.
const __deepFind = (idx) => {
  const sel = '[data-wp-index="' + String(idx) + '"]';
  const search = (root) => {
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll('*')) {
      let sub = null;
      if (el.shadowRoot) sub = search(el.shadowRoot);
      else if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        try { if (el.contentDocument) sub = search(el.contentDocument); } catch (e) { sub = null; }
      }
      if (sub) return sub;
    }
    return null;
  };
  return search(document);
};
"#;

/// Finds a clickable element by its visible text; returns `{x, y, tag, text}` or null.
pub const FIND_CLICKABLE: &str = r#"
const want = __norm(ARG);
const sel = 'a, button, input[type=submit], input[type=button], input[type=reset], [role=button], [role=link], [role=tab], [role=menuitem], summary, label, [onclick]';
const el = __pick([...document.querySelectorAll(sel)], want, __name);
return el ? __center(el, {text: __name(el).slice(0, 120)}) : null;
"#;

/// Finds a form field by its label, placeholder, aria-label, name or id; focuses it and selects its
/// content so typed text replaces it. Returns `{x, y, tag}` or null.
pub const FIND_FIELD: &str = r#"
const want = __norm(ARG);
const fields = [...document.querySelectorAll('input:not([type=hidden]):not([type=submit]):not([type=button]):not([type=reset]), textarea, select, [contenteditable=""], [contenteditable=true]')];
const labelOf = (el) => {
  const parts = [];
  if (el.id) document.querySelectorAll('label[for="' + CSS.escape(el.id) + '"]').forEach((l) => parts.push(l.innerText));
  const wrap = el.closest('label');
  if (wrap) parts.push(wrap.innerText);
  return parts;
};
const namesOf = (el) => [...labelOf(el), el.placeholder, el.getAttribute('aria-label'), el.name, el.id].map(__norm).filter(Boolean);
const vis = fields.filter(__visible);
const el = vis.find((e) => namesOf(e).some((n) => n === want)) || vis.find((e) => namesOf(e).some((n) => n.includes(want)));
if (!el) return null;
const at = __center(el);
el.focus();
if (typeof el.select === 'function') el.select();
return at;
"#;

/// The text of the first visible element matching a CSS selector, or else containing the given text.
pub const TEXT_OF: &str = r#"
let el = null;
try { el = document.querySelector(ARG); } catch (e) { el = null; }
if (!el) {
  const want = __norm(ARG);
  const all = [...document.querySelectorAll('body *')].filter((e) => e.children.length === 0 && __visible(e));
  el = all.find((e) => __norm(e.innerText).includes(want)) || null;
}
return el ? (el.innerText || el.value || el.textContent || '').trim() : null;
"#;

/// Scrolls the page by ARG pixels vertically; returns the new scroll offset.
pub const SCROLL_BY: &str = r#"
window.scrollBy(0, ARG);
return window.scrollY;
"#;

/// Wraps a script body as an expression with `ARG` bound to `arg`.
pub fn with_arg(body: &str, arg: &serde_json::Value) -> String {
    format!("(() => {{ const ARG = {arg};\n{PRELUDE}\n{body}\n}})()")
}
