// Runs in an isolated world of the page (the page's own scripts share no globals with it, so they can neither
// see the values nor change what this reads). Finds where any of `values` shows in the viewport: form fields
// whose value holds one, and text nodes that hold one, in the document, open shadow roots and same-origin
// frames. Answers the boxes (viewport CSS pixels) and, per value, how many times it was found.
(values) => {
  const boxes = [];
  const found = values.map(() => 0);
  const count = (text) => {
    let any = false;
    values.forEach((v, i) => {
      if (!v) return;
      let at = text.indexOf(v);
      while (at !== -1) { found[i] += 1; any = true; at = text.indexOf(v, at + v.length); }
    });
    return any;
  };
  const add = (r, dx, dy) => {
    if (r.width > 0 && r.height > 0) boxes.push([r.left + dx, r.top + dy, r.width, r.height]);
  };
  const walk = (root, dx, dy) => {
    for (const el of root.querySelectorAll('*')) {
      const tag = el.tagName;
      if ((tag === 'INPUT' || tag === 'TEXTAREA') && typeof el.value === 'string' && count(el.value)) {
        add(el.getBoundingClientRect(), dx, dy);
      }
      if (el.shadowRoot) walk(el.shadowRoot, dx, dy);
      if (tag === 'IFRAME' || tag === 'FRAME') {
        let doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }
        if (doc && doc.documentElement) {
          const r = el.getBoundingClientRect();
          walk(doc, dx + r.left + el.clientLeft, dy + r.top + el.clientTop);
        }
      }
    }
    const texts = (root.ownerDocument || root).createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */);
    for (let n = texts.nextNode(); n; n = texts.nextNode()) {
      if (!count(n.data)) continue;
      const range = (n.ownerDocument || document).createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) add(r, dx, dy);
      // The element that draws the text, too: a value spread over lines or styled text is covered whole.
      if (n.parentElement) add(n.parentElement.getBoundingClientRect(), dx, dy);
    }
  };
  walk(document, 0, 0);
  return { boxes, found };
}
