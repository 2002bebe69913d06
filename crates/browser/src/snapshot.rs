//! A compact snapshot of what a person sees on the page, for the model: visible interactive elements
//! with stable indices (kept on the elements as `data-wp-index`, so an index stays valid while the
//! element lives), and the visible text around them.

use serde::{Deserialize, Serialize};

/// One visible interactive element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElementInfo {
    pub index: u32,
    pub tag: String,
    #[serde(default)]
    pub role: String,
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub placeholder: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub href: String,
    /// Options of a select, as shown.
    #[serde(default)]
    pub options: Vec<String>,
    /// Centre in page coordinates.
    pub x: f64,
    pub y: f64,
    /// Inside the viewport now (else reachable by scrolling).
    #[serde(default)]
    pub in_view: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSnapshot {
    pub url: String,
    pub title: String,
    pub elements: Vec<ElementInfo>,
    /// Visible text of the page, whitespace-folded and cut short.
    pub text: String,
    pub scroll_y: f64,
    pub page_height: f64,
    pub viewport_height: f64,
}

/// Collects the snapshot. ARG is `{maxElements, maxText}`.
pub(crate) const SNAPSHOT: &str = r#"
const max = ARG.maxElements, maxText = ARG.maxText;
const sel = 'a[href], button, input:not([type=hidden]), textarea, select, summary, [role=button], [role=link], [role=checkbox], [role=tab], [role=menuitem], [role=option], [contenteditable=""], [contenteditable=true], [onclick]';
let next = Number(document.documentElement.getAttribute('data-wp-next') || '1');
const out = [];
const vh = innerHeight, vw = innerWidth;
for (const el of document.querySelectorAll(sel)) {
  if (out.length >= max) break;
  if (!__visible(el) || el.disabled) continue;
  let idx = Number(el.getAttribute('data-wp-index') || '0');
  if (!idx) { idx = next++; el.setAttribute('data-wp-index', String(idx)); }
  const r = el.getBoundingClientRect();
  const labels = [];
  if (el.id) document.querySelectorAll('label[for="' + CSS.escape(el.id) + '"]').forEach((l) => labels.push(l.innerText));
  const wrap = el.closest('label'); if (wrap && wrap !== el) labels.push(wrap.innerText);
  if (el.getAttribute('aria-label')) labels.push(el.getAttribute('aria-label'));
  const tag = el.tagName.toLowerCase();
  const isField = tag === 'input' || tag === 'textarea' || tag === 'select';
  out.push({
    index: idx, tag, role: el.getAttribute('role') || '', type: el.getAttribute('type') || '',
    text: isField ? '' : __norm2(el.innerText || el.value || el.title || el.alt || '').slice(0, 80),
    label: __norm2(labels.join(' ')).slice(0, 80), placeholder: (el.placeholder || '').slice(0, 80),
    value: isField && el.type !== 'password' ? String(el.value || '').slice(0, 80) : '',
    href: tag === 'a' ? (el.getAttribute('href') || '').slice(0, 120) : '',
    options: tag === 'select' ? [...el.options].slice(0, 20).map((o) => o.text.trim().slice(0, 40)) : [],
    x: r.left + r.width / 2, y: r.top + r.height / 2,
    in_view: r.bottom > 0 && r.top < vh && r.right > 0 && r.left < vw,
  });
}
document.documentElement.setAttribute('data-wp-next', String(next));
const text = __norm2(document.body ? document.body.innerText : '').slice(0, maxText);
return { url: location.href, title: document.title, elements: out, text, scroll_y: scrollY,
         page_height: document.documentElement.scrollHeight, viewport_height: vh };
"#;

/// Scrolls the element with ARG as its index into view; returns its centre, or null when it is gone.
pub(crate) const LOCATE_INDEX: &str = r#"
const el = document.querySelector('[data-wp-index="' + String(ARG) + '"]');
if (!el || !el.isConnected || !__visible(el)) return null;
return __center(el, {text: __name(el).slice(0, 120)});
"#;

/// Focuses the element with index ARG and selects its content; returns its centre or null.
pub(crate) const FOCUS_INDEX: &str = r#"
const el = document.querySelector('[data-wp-index="' + String(ARG) + '"]');
if (!el || !el.isConnected || !__visible(el)) return null;
const at = __center(el);
el.focus();
if (typeof el.select === 'function') el.select();
return at;
"#;

/// Selects the option whose text or value matches ARG.option in the select with index ARG.index.
pub(crate) const SELECT_OPTION: &str = r#"
const el = document.querySelector('[data-wp-index="' + String(ARG.index) + '"]');
if (!el || el.tagName.toLowerCase() !== 'select') return {error: 'not a select element'};
const want = __norm(ARG.option);
const opt = [...el.options].find((o) => __norm(o.text) === want || __norm(o.value) === want)
  || [...el.options].find((o) => __norm(o.text).includes(want));
if (!opt) return {error: 'no option ' + JSON.stringify(ARG.option)};
el.value = opt.value;
el.dispatchEvent(new Event('input', {bubbles: true}));
el.dispatchEvent(new Event('change', {bubbles: true}));
return {selected: opt.text.trim()};
"#;
