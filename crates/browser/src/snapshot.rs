//! What a person sees on the page, for the model: one tree in document order where text and
//! interactive elements are interleaved (`js/snapshot.js`), with open shadow roots, same-origin iframes
//! and — through their own DevTools targets — cross-origin iframes included. Interactive elements carry
//! indices (kept on the elements as `data-wp-index`, so an index stays valid while the element lives).
//! How the tree becomes text is the agent's business (`webpilot_agent`'s observation).

use serde::{Deserialize, Serialize};

/// One interactive element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Control {
    /// The index the model refers to it by.
    #[serde(rename = "i")]
    pub index: u32,
    /// `link`, `button`, `input`, `input:email`, `checkbox`, `radio`, `select`, `textarea`, a role, …
    #[serde(rename = "k")]
    pub kind: String,
    /// Its text or label.
    #[serde(rename = "t", default)]
    pub label: String,
    /// Placeholder of a field, when it differs from the label.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Current value (a select's chosen option; `••••` for a filled password field).
    #[serde(rename = "v", default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A select's options, as shown.
    #[serde(rename = "o", default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// A checkbox's or radio's state.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    #[serde(rename = "d", default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Top edge in page coordinates.
    #[serde(default)]
    pub y: f64,
    /// Its box in the viewport when the snapshot was taken, `[left, top, width, height]` in CSS pixels
    /// (where a screenshot's marks go).
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub rect: Option<[f64; 4]>,
}

/// A node of the page tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Node {
    Text(String),
    Control(Control),
    /// A block-level element's content.
    Block {
        #[serde(rename = "b")]
        children: Vec<Node>,
        #[serde(default)]
        y: f64,
    },
    /// A cross-origin iframe not read (yet): its frame number on the page, and its title.
    Frame {
        #[serde(rename = "f")]
        frame: u32,
        #[serde(rename = "t", default)]
        title: String,
        #[serde(default)]
        y: f64,
        /// Where its content starts in the viewport (`[left, top]`, CSS pixels).
        #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
        origin: Option<[f64; 2]>,
    },
}

impl Node {
    /// Calls `f` on every control in the subtree.
    pub fn for_each_control(&self, f: &mut impl FnMut(&Control)) {
        match self {
            Node::Control(c) => f(c),
            Node::Block { children, .. } => children.iter().for_each(|n| n.for_each_control(f)),
            Node::Text(_) | Node::Frame { .. } => {}
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSnapshot {
    pub url: String,
    pub title: String,
    pub tree: Vec<Node>,
    pub scroll_y: f64,
    pub page_height: f64,
    pub viewport_height: f64,
}

/// Collects the tree of one document (the page's, or a cross-origin frame's in its own target).
pub(crate) const SNAPSHOT: &str = include_str!("js/snapshot.js");

/// Scrolls the element with ARG as its index into view; returns its centre, or null when it is gone.
pub(crate) const LOCATE_INDEX: &str = r#"
const el = __deepFind(ARG);
if (!el || !el.isConnected || !__visible(el)) return null;
return __center(el, {text: __name(el).slice(0, 120)});
"#;

/// Focuses the element with index ARG and selects its content; returns its centre or null.
pub(crate) const FOCUS_INDEX: &str = r#"
const el = __deepFind(ARG);
if (!el || !el.isConnected || !__visible(el)) return null;
const at = __center(el);
el.focus();
if (typeof el.select === 'function') el.select();
return at;
"#;

/// Selects the content of the focused field (a click may have collapsed the selection).
pub(crate) const SELECT_FOCUSED: &str = r#"
let el = document.activeElement;
while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
while (el && (el.tagName === 'IFRAME' || el.tagName === 'FRAME')) {
  let doc = null;
  try { doc = el.contentDocument; } catch (e) { doc = null; }
  el = doc ? doc.activeElement : null;
}
if (el && typeof el.select === 'function') el.select();
return null;
"#;

/// Selects the option whose text or value matches ARG.option in the select with index ARG.index.
pub(crate) const SELECT_OPTION: &str = r#"
const el = __deepFind(ARG.index);
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

/// A CSS path to the element with index ARG, from the top document: ` >>> ` enters a shadow root,
/// ` >>| ` a same-origin iframe's document. Null when the element is gone.
pub(crate) const CSS_PATH: &str = r#"
const el = __deepFind(ARG);
if (!el) return null;
const within = (e) => {
  const parts = [];
  for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
    if (n.id && n.getRootNode().querySelectorAll('#' + CSS.escape(n.id)).length === 1) {
      parts.unshift('#' + CSS.escape(n.id));
      break;
    }
    const tag = n.tagName.toLowerCase();
    const same = n.parentElement ? [...n.parentElement.children].filter((c) => c.tagName === n.tagName) : [n];
    parts.unshift(same.length > 1 ? tag + ':nth-of-type(' + (same.indexOf(n) + 1) + ')' : tag);
  }
  return parts.join(' > ');
};
const path = (e) => {
  const root = e.getRootNode();
  if (root instanceof ShadowRoot) return path(root.host) + ' >>> ' + within(e);
  const win = e.ownerDocument.defaultView;
  if (win && win.frameElement) return path(win.frameElement) + ' >>| ' + within(e);
  return within(e);
};
return path(el);
"#;

/// The index of the element at CSS path ARG (as `CSS_PATH` writes it), or null.
pub(crate) const INDEX_AT_CSS: &str = r#"
let root = document, el = null;
const parts = String(ARG).split(/ (>>>|>>\|) /);
for (let i = 0; i < parts.length; i += 2) {
  try { el = root ? root.querySelector(parts[i]) : null; } catch (e) { el = null; }
  if (!el) return null;
  const sep = parts[i + 1];
  if (sep === '>>>') root = el.shadowRoot;
  else if (sep === '>>|') { try { root = el.contentDocument; } catch (e) { root = null; } }
}
const idx = el ? Number(el.getAttribute('data-wp-index') || '0') : 0;
return idx || null;
"#;

/// The offset (in the page's viewport) of the content box of the cross-origin iframe numbered ARG.frame,
/// after scrolling the page (at once, in this document) so that the frame's point ARG.x, ARG.y is in view.
/// After a scroll it answers two frames later: the browser routes a click to a frame by where the last
/// composited frame showed it, not by the page's layout.
pub(crate) const FRAME_OFFSET: &str = r#"
const el = document.querySelector('[data-wp-frame="' + String(ARG.frame) + '"]');
if (!el) return null;
const offset = () => {
  const r = el.getBoundingClientRect(), s = getComputedStyle(el);
  return {x: r.left + el.clientLeft + parseFloat(s.paddingLeft || '0'),
          y: r.top + el.clientTop + parseFloat(s.paddingTop || '0')};
};
let o = offset();
const px = o.x + ARG.x, py = o.y + ARG.y;
if (px < 0 || py < 0 || px > innerWidth || py > innerHeight) {
  window.scrollBy({left: px - innerWidth / 2, top: py - innerHeight / 2, behavior: 'instant'});
  return new Promise(done => {
    const settle = () => done(offset());
    requestAnimationFrame(() => requestAnimationFrame(settle));
    setTimeout(settle, 250);
  });
}
return o;
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_tree_reads_from_the_script_json() {
        let v = json!([{"b": ["Product 1", {"i": 4, "k": "button", "t": "Add", "y": 10}], "y": 8},
                       {"f": 1, "t": "ads", "y": 300}, "tail"]);
        let tree: Vec<Node> = serde_json::from_value(v).expect("tree");
        assert!(matches!(&tree[0], Node::Block { children, .. } if children.len() == 2));
        assert!(matches!(&tree[1], Node::Frame { frame: 1, .. }));
        let mut seen = Vec::new();
        tree[0].for_each_control(&mut |c| seen.push(c.index));
        assert_eq!(seen, [4]);
    }
}
