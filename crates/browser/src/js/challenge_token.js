// Puts a solver's token where the widget would: every response field named ARG.field (in same-origin
// frames and open shadow roots too; one is added to the widget, or the first form, when there is none),
// then the widget's registered callback (`data-callback`), if any. Returns {fields, callback}.
const token = String(ARG.token), field = String(ARG.field), widgetClass = String(ARG.widget);
let fields = 0, callback = false, widget = null, widgetDoc = document;
const visit = (root, doc, depth) => {
  if (depth > 8) return;
  for (const el of root.querySelectorAll('[name="' + CSS.escape(field) + '"]')) {
    el.value = token;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    fields += 1;
  }
  if (!widget) {
    const w = root.querySelector('.' + CSS.escape(widgetClass));
    if (w) { widget = w; widgetDoc = doc; }
  }
  for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) visit(el.shadowRoot, doc, depth + 1);
    if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
      let inner = null;
      try { inner = el.contentDocument; } catch (e) { inner = null; }
      if (inner && inner.documentElement) visit(inner, inner, depth + 1);
    }
  }
};
visit(document, document, 0);
if (fields === 0) {
  const host = widget || document.querySelector('form');
  if (host) {
    const t = (host.ownerDocument || document).createElement('textarea');
    t.name = field; t.style.display = 'none'; t.value = token;
    host.appendChild(t);
    fields = 1;
  }
}
const name = widget ? widget.getAttribute('data-callback') : null;
if (name) {
  const win = widgetDoc.defaultView || window;
  const fn = name.split('.').reduce((o, k) => (o == null ? undefined : o[k]), win);
  if (typeof fn === 'function') { fn(token); callback = true; }
}
return { fields, callback };
