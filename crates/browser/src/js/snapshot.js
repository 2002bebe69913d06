// The page as the model reads it, in document order: text and interactive elements interleaved,
// grouped into blocks (block-level elements). Open shadow roots and same-origin iframes are walked in
// place; a cross-origin iframe becomes a placeholder `{f: k}` (its frame is read through its own
// DevTools target, see frames.rs). Interactive elements keep a stable index as `data-wp-index`.
//
// Output nodes: a string (text), {i, k, t, v, o, c, y, r} (an element: index, kind, label, value,
// options, checked, page y, box in the viewport), {f, t, y, o} (a cross-origin frame, o: where its
// content starts in the viewport), {b: [...], y} (a block).
const CONTROL = 'a[href], button, input:not([type=hidden]), textarea, select, summary, [role=button], [role=link], '
  + '[role=checkbox], [role=radio], [role=switch], [role=tab], [role=menuitem], [role=option], [role=combobox], '
  + '[role=textbox], [contenteditable=""], [contenteditable=true], [onclick]';
const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'svg', 'SVG', 'CANVAS', 'OBJECT']);
const top = document.documentElement;
let next = Number(top.getAttribute('data-wp-next') || '1');
let frames = Number(top.getAttribute('data-wp-frames') || '0');
let count = 0;
const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

// A label's own words: its text without that of the control it holds (a select's options).
const textWithout = (label, el) => {
  let s = '';
  const w = label.ownerDocument.createTreeWalker(label, NodeFilter.SHOW_TEXT);
  while (w.nextNode()) if (!el.contains(w.currentNode)) s += ' ' + w.currentNode.data;
  return s;
};
const labelOf = (el) => {
  const parts = [];
  const doc = el.ownerDocument;
  if (el.id) {
    const root = el.getRootNode();
    (root.querySelectorAll ? root : doc).querySelectorAll('label[for="' + CSS.escape(el.id) + '"]')
      .forEach((l) => parts.push(textWithout(l, el)));
  }
  const wrap = el.closest('label');
  if (wrap && wrap !== el) parts.push(textWithout(wrap, el));
  for (const a of ['aria-label', 'title']) if (el.getAttribute(a)) parts.push(el.getAttribute(a));
  const by = el.getAttribute('aria-labelledby');
  if (by) by.split(/\s+/).forEach((id) => { const l = doc.getElementById(id); if (l) parts.push(l.innerText); });
  return __norm2(parts.join(' '));
};

const kindOf = (el, tag) => {
  const role = el.getAttribute('role');
  if (tag === 'input') {
    const t = (el.getAttribute('type') || 'text').toLowerCase();
    return ['checkbox', 'radio', 'submit', 'button', 'reset', 'image'].includes(t) ? (t === 'submit' || t === 'reset' || t === 'image' ? 'button' : t) : 'input' + (t === 'text' ? '' : ':' + t);
  }
  if (tag === 'a') return 'link';
  if (tag === 'button' || tag === 'summary') return 'button';
  if (tag === 'textarea' || tag === 'select') return tag;
  if (role) return role;
  return el.isContentEditable ? 'textbox' : 'clickable';
};

// Where an iframe's content starts in the top viewport: same-origin frames around it added (a cross-origin
// frame's own offset is added by the service, which splices the frame in).
const originOf = (frame) => {
  const r = frame.getBoundingClientRect(), s = getComputedStyle(frame);
  let x = r.left + frame.clientLeft + parseFloat(s.paddingLeft || '0');
  let y = r.top + frame.clientTop + parseFloat(s.paddingTop || '0');
  const outer = (frame.ownerDocument.defaultView || {}).frameElement;
  if (outer) { const o = originOf(outer); x += o[0]; y += o[1]; }
  return [x, y];
};
// An element's box in the top viewport [left, top, width, height], for the marks on a screenshot.
const boxOf = (el) => {
  const r = el.getBoundingClientRect();
  const outer = (el.ownerDocument.defaultView || {}).frameElement;
  const o = outer ? originOf(outer) : [0, 0];
  return [Math.round(r.left + o[0]), Math.round(r.top + o[1]), Math.round(r.width), Math.round(r.height)];
};

const control = (el, offY) => {
  let idx = Number(el.getAttribute('data-wp-index') || '0');
  if (!idx) { idx = next++; el.setAttribute('data-wp-index', String(idx)); }
  count++;
  const tag = el.tagName.toLowerCase();
  const k = kindOf(el, tag);
  const field = tag === 'input' || tag === 'textarea' || tag === 'select';
  const own = field ? '' : __norm2(el.innerText || el.value || '');
  let t = own || labelOf(el) || el.getAttribute('placeholder') || el.getAttribute('alt') || '';
  if (!t) { const img = el.querySelector && el.querySelector('img[alt]'); if (img) t = img.alt; }
  if (!t && tag === 'a') t = (el.getAttribute('href') || '').split(/[?#]/)[0].split('/').filter(Boolean).pop() || 'link';
  if (!t && field) t = el.getAttribute('name') || '';
  const n = { i: idx, k, t: cut(__norm2(t), 80), y: Math.round(el.getBoundingClientRect().top + offY), r: boxOf(el) };
  if (field && el.getAttribute('placeholder') && el.getAttribute('placeholder') !== t) n.p = cut(el.getAttribute('placeholder'), 60);
  if (tag === 'select') {
    n.v = cut(el.selectedOptions.length ? el.selectedOptions[0].text.trim() : '', 60);
    n.o = [...el.options].slice(0, 30).map((o) => cut(o.text.trim(), 40));
    if (el.options.length > 30) n.o.push('… ' + (el.options.length - 30) + ' more');
  } else if (k === 'checkbox' || k === 'radio' || k === 'switch') {
    n.c = el.checked === true || el.getAttribute('aria-checked') === 'true';
  } else if (field && el.type !== 'password') {
    if (el.value) n.v = cut(String(el.value), 80);
  } else if (field && el.value) {
    n.v = '••••';
  }
  if (el.disabled) n.d = true;
  return n;
};

const isBlock = (style) => !style.display.startsWith('inline') && style.display !== 'contents';
const hidden = (el, style) => style.display === 'none' || style.visibility === 'hidden' || style.visibility === 'collapse'
  || (style.opacity === '0' && !el.querySelector('input,select,textarea'));
const hasControlInside = (el) => !!el.querySelector(CONTROL);

function walkChildren(parent, out, offY) {
  const kids = parent.shadowRoot ? parent.shadowRoot.childNodes : parent.childNodes;
  for (const child of kids) walk(child, out, offY);
}

function walk(node, out, offY) {
  if (node.nodeType === 3) {
    const t = __norm2(node.data);
    if (t) out.push(t);
    return;
  }
  if (node.nodeType !== 1 || SKIP.has(node.tagName)) return;
  const el = node;
  if (el.tagName === 'SLOT') {
    for (const n of el.assignedNodes({ flatten: true })) walk(n, out, offY);
    return;
  }
  const style = getComputedStyle(el);
  if (hidden(el, style)) return;
  const r = el.getBoundingClientRect();
  if (el.matches(CONTROL) && !(el.matches('[onclick], [role]') && hasControlInside(el))) {
    if (r.width > 0 && r.height > 0) out.push(control(el, offY));
    return;
  }
  if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
    let doc = null;
    try { doc = el.contentDocument; } catch (e) { doc = null; }
    const y = Math.round(r.top + offY);
    if (doc && doc.body) {
      const inner = [];
      const fr = el.getBoundingClientRect();
      walkChildren(doc.body, inner, offY + fr.top + el.clientTop);
      out.push({ b: inner, y });
    } else {
      let k = el.getAttribute('data-wp-frame');
      if (!k) { k = String(++frames); el.setAttribute('data-wp-frame', k); }
      const o = originOf(el).map(Math.round);
      out.push({ f: Number(k), t: cut(__norm2(el.title || el.name || ''), 60), y, o });
    }
    return;
  }
  if (el.tagName === 'LABEL' && el.querySelector('input,select,textarea')) {
    // The label names its control: only the control is shown.
    el.querySelectorAll('input,select,textarea').forEach((c) => { if (!hidden(c, getComputedStyle(c))) out.push(control(c, offY)); });
    return;
  }
  if (el.tagName === 'IMG') {
    const alt = __norm2(el.getAttribute('alt') || '');
    if (alt) out.push('(image: ' + cut(alt, 60) + ')');
    return;
  }
  if (isBlock(style)) {
    const inner = [];
    walkChildren(el, inner, offY);
    if (inner.length) out.push({ b: inner, y: Math.round(r.top + offY) });
  } else {
    walkChildren(el, out, offY);
  }
}

const tree = [];
if (document.body) walk(document.body, tree, scrollY);
top.setAttribute('data-wp-next', String(next));
top.setAttribute('data-wp-frames', String(frames));
return { url: location.href, title: document.title, tree, count, next, scroll_y: scrollY,
         page_height: top.scrollHeight, viewport_height: innerHeight };
