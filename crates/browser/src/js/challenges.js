// Facts about human checks on the page (see webpilot_core::challenge): widget elements, frame and
// script addresses, and response fields, through same-origin frames and open shadow roots. The decision
// is made in Rust; this only reads. An expression: evaluates to the facts object.
(() => {
  const widgets = [], frames = [], scripts = [], responses = [];
  const WIDGET = '.g-recaptcha, .h-captcha, .cf-turnstile, .grecaptcha-badge';
  const FIELDS = ['g-recaptcha-response', 'h-captcha-response', 'cf-turnstile-response'];
  const MAX = 200;
  const abs = (src, doc) => { try { return new URL(src, doc.baseURI).href; } catch (e) { return ''; } };
  const seen = new Set();
  const visit = (root, doc, depth) => {
    if (depth > 8 || seen.has(root)) return;
    seen.add(root);
    for (const el of root.querySelectorAll(WIDGET)) {
      if (widgets.length >= MAX) break;
      widgets.push({
        class: String(el.getAttribute('class') || ''),
        sitekey: el.getAttribute('data-sitekey'),
        action: el.getAttribute('data-action'),
        size: el.getAttribute('data-size'),
      });
    }
    for (const el of root.querySelectorAll('[name]')) {
      const name = el.getAttribute('name');
      if (FIELDS.includes(name) && responses.length < MAX) {
        responses.push({ name, filled: String(el.value || '').trim().length > 0 });
      }
    }
    for (const s of root.querySelectorAll('script[src]')) {
      if (scripts.length < MAX) scripts.push(abs(s.getAttribute('src'), doc));
    }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) visit(el.shadowRoot, doc, depth + 1);
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        const src = el.getAttribute('src');
        if (src && frames.length < MAX) frames.push(abs(src, doc));
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        if (inner && inner.documentElement) visit(inner, inner, depth + 1);
      }
    }
  };
  visit(document, document, 0);
  const body = document.body ? (document.body.innerText || '') : '';
  const heads = [...document.querySelectorAll('h1, h2, h3')].map((h) => h.innerText || '').join(' \n ');
  const html = document.documentElement ? document.documentElement.outerHTML.slice(0, 500000) : '';
  const nav = (performance.getEntriesByType('navigation')[0] || {});
  return {
    url: location.href,
    title: document.title || '',
    status: nav.responseStatus || null,
    text: body.slice(0, 3000),
    textLen: body.length,
    headings: heads.slice(0, 1000),
    cfChl: /cf[-_]chl/.test(html),
    widgets, frames, scripts, responses,
  };
})()
