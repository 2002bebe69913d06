//! The page tree the model observes, and acting on its elements by index. The page's own document
//! (with its open shadow roots and same-origin iframes) is read in one script; each cross-origin iframe
//! is read through its own DevTools target (`frames.rs`) and spliced in where it sits, its elements
//! given indices after the page's. An index then resolves to the page or to that frame.

use crate::error::{within, BrowserError};
use crate::frame_index::FrameElement;
use crate::frames::FrameClient;
use crate::page::{point_of, ClickTarget, SessionPage};
use crate::scripts::with_arg;
use crate::snapshot::{self, Node, PageSnapshot};
use chromiumoxide::cdp::browser_protocol::dom::{GetFrameOwnerParams, ResolveNodeParams};
use chromiumoxide::cdp::js_protocol::runtime::CallFunctionOnParams;
use chromiumoxide::Page;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use webpilot_core::geometry::PagePoint;

/// Most cross-origin frames read per observation.
const MAX_FRAMES: usize = 16;
/// How long one cross-origin frame may take to be read.
const FRAME_BUDGET: std::time::Duration = std::time::Duration::from_secs(3);

/// Where to act.
enum Place {
    Page,
    Frame(FrameElement),
}

/// What the snapshot script returns besides the tree.
#[derive(serde::Deserialize)]
struct Raw {
    #[serde(flatten)]
    snapshot: PageSnapshot,
    #[serde(default)]
    next: u32,
}

fn has_frames(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Frame { .. } => true,
        Node::Block { children, .. } => has_frames(children),
        _ => false,
    })
}

impl SessionPage {
    fn frame_timeout(&self) -> std::time::Duration {
        self.cdp_timeout()
    }

    async fn frame_client(&self) -> Result<Arc<FrameClient>, BrowserError> {
        let mut slot = self.inner.frames.client.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let process = &self.inner.opener.process;
        // A local browser is reached over its DevTools pipe alone (`pipe.rs`), a remote one over its endpoint.
        let client = match process.link.get().and_then(crate::pipe::Link::attach) {
            Some((out, answers)) => FrameClient::over(out, answers),
            None => FrameClient::connect(process.browser.websocket_address(), self.frame_timeout()).await?,
        };
        let client = Arc::new(client);
        *slot = Some(client.clone());
        Ok(client)
    }

    /// The page as a tree of text and indexed elements, cross-origin frames included.
    pub async fn snapshot(&self) -> Result<PageSnapshot, BrowserError> {
        let page = self.page()?;
        let raw: Raw = serde_json::from_value(self.run_script(snapshot::SNAPSHOT, Value::Null).await?)
            .map_err(|e| BrowserError::Cdp(format!("unreadable snapshot: {e}")))?;
        let mut snap = raw.snapshot;
        let mut found = HashMap::new();
        if has_frames(&snap.tree) {
            let mut next = raw.next.max(1);
            match self.frame_documents(&page).await {
                Ok(docs) => splice(&mut snap.tree, &docs, &mut next, &mut found),
                Err(e) => tracing::debug!(error = %e, "reading cross-origin frames failed"),
            }
        }
        {
            let mut index = self.inner.frames.index.lock();
            *index = (page.target_id().as_ref().to_owned(), found);
        }
        Ok(snap)
    }

    /// Each cross-origin frame of the page by its number: its target and its tree.
    async fn frame_documents(&self, page: &Page) -> Result<HashMap<u32, (String, Vec<Node>)>, BrowserError> {
        let client = self.frame_client().await?;
        let context = self.inner.opener.context.as_ref().to_owned();
        let targets = client.frames_in(&context, self.frame_timeout()).await?;
        // Frames are read together, each within its own short budget, so a hung frame (an ad, say)
        // delays an observation by at most FRAME_BUDGET and costs only its own content.
        let reads = targets.into_iter().take(MAX_FRAMES).map(|target| {
            let client = client.clone();
            async move {
                let work = async {
                    // Only frames whose iframe is in this page's document answer; the others are skipped.
                    let number = self.frame_number(page, &target).await?;
                    let script = with_arg(snapshot::SNAPSHOT, &Value::Null);
                    let v = match client.evaluate(&target, &script, FRAME_BUDGET).await {
                        Ok(v) => v,
                        Err(e) => {
                            tracing::debug!(error = %e, "a frame could not be read");
                            return None;
                        }
                    };
                    let raw = serde_json::from_value::<Raw>(v).ok()?;
                    Some((number, (target, raw.snapshot.tree)))
                };
                tokio::time::timeout(FRAME_BUDGET, work).await.ok().flatten()
            }
        });
        Ok(futures::future::join_all(reads).await.into_iter().flatten().collect())
    }

    /// The `data-wp-frame` number of the iframe element that holds frame target `target`.
    async fn frame_number(&self, page: &Page, target: &str) -> Option<u32> {
        let timeout = self.frame_timeout();
        let owner =
            within(timeout, "frame owner", page.execute(GetFrameOwnerParams::new(target.to_owned()))).await.ok()?;
        let node = ResolveNodeParams::builder().backend_node_id(owner.result.backend_node_id).build();
        let object = within(timeout, "resolve frame owner", page.execute(node)).await.ok()?;
        let mut call = CallFunctionOnParams::new("function () { return this.getAttribute('data-wp-frame'); }");
        call.object_id = object.result.object.object_id.clone();
        call.return_by_value = Some(true);
        let v = within(timeout, "read frame number", page.execute(call)).await.ok()?;
        v.result.result.value.as_ref()?.as_str()?.parse().ok()
    }

    fn place(&self, index: u32) -> Place {
        let Ok(page) = self.page() else { return Place::Page };
        let map = self.inner.frames.index.lock();
        match map.1.get(&index) {
            Some(f) if map.0 == page.target_id().as_ref() => Place::Frame(f.clone()),
            _ => Place::Page,
        }
    }

    /// Runs an index script (LOCATE / FOCUS / SELECT) where the element lives; points come back in
    /// page viewport coordinates.
    pub(crate) async fn run_on_element(
        &self,
        index: u32,
        body: &str,
        arg: impl Fn(u32) -> Value,
    ) -> Result<Value, BrowserError> {
        match self.place(index) {
            Place::Page => self.run_script(body, arg(index)).await,
            Place::Frame(f) => {
                let client = self.frame_client().await?;
                let mut v = client.evaluate(&f.target_id, &with_arg(body, &arg(f.local)), self.frame_timeout()).await?;
                if let (Some(x), Some(y)) = (v.get("x").and_then(Value::as_f64), v.get("y").and_then(Value::as_f64)) {
                    let off =
                        self.run_script(snapshot::FRAME_OFFSET, json!({ "frame": f.frame, "x": x, "y": y })).await?;
                    let at = point_of(&off).ok_or_else(|| BrowserError::ElementNotFound("its frame is gone".into()))?;
                    v["x"] = json!(x + at.x);
                    v["y"] = json!(y + at.y);
                }
                Ok(v)
            }
        }
    }

    /// Clicks the element with snapshot index `index`.
    pub async fn click_index(&self, index: u32) -> Result<ClickTarget, BrowserError> {
        let found = self.run_on_element(index, snapshot::LOCATE_INDEX, |i| json!(i)).await?;
        let missing = format!("element [{index}] is no longer on the page");
        self.click_element(Some(index), snapshot::LOCATE_INDEX, found, missing).await
    }

    /// Clicks at `found`, the point of element `index` when it has one (`locate`: the index script that
    /// found it). A click on a cross-origin frame is routed to that frame's own renderer after the mouse
    /// events' dispatch has returned, by where the browser last composited the frame: a listener is armed
    /// in the frame first, the click waits (at most 1.5 s) until the frame has handled it, and when the
    /// frame saw no click on the element (the frame had just moved), it is located and clicked once more.
    pub(crate) async fn click_element(
        &self,
        index: Option<u32>,
        locate: &str,
        found: Value,
        missing: String,
    ) -> Result<ClickTarget, BrowserError> {
        let (Some(index), Some(Place::Frame(f))) = (index, index.map(|i| self.place(i))) else {
            return self.click_found(found, missing).await;
        };
        let client = self.frame_client().await?;
        let timeout = self.frame_timeout();
        let mut found = found;
        for attempt in 0..2 {
            client.evaluate(&f.target_id, CLICK_ARM, timeout).await?;
            let clicked = self.click_found(found, missing.clone()).await?;
            let seen = client.evaluate(&f.target_id, CLICK_SEEN, timeout).await.unwrap_or(Value::Null);
            if attempt == 1 || seen.as_u64() == Some(u64::from(f.local)) {
                return Ok(clicked);
            }
            tracing::debug!(index, "a click did not reach its element in a frame; clicking again");
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            found = self.run_on_element(index, locate, |i| json!(i)).await?;
        }
        unreachable!("the second attempt returns")
    }

    /// Types `text` at the focus of element `index`'s document when that is a cross-origin frame: through
    /// the frame's own target, then waits (at most 1.5 s) until its focused field ends with the text. `None`
    /// for an element of the page, which the page's keyboard reaches.
    pub(crate) async fn type_in_frame(&self, index: u32, text: &str) -> Option<Result<(), BrowserError>> {
        let Place::Frame(f) = self.place(index) else { return None };
        let typed = async {
            let client = self.frame_client().await?;
            let timeout = self.frame_timeout();
            client.insert_text(&f.target_id, text, timeout).await?;
            if let Err(e) = client.evaluate(&f.target_id, &with_arg(TYPED_SEEN, &json!(text)), timeout).await {
                tracing::debug!(error = %e, "waiting for a frame to take typed text failed");
            }
            Ok(())
        };
        Some(typed.await)
    }

    /// Types `text` over the content of the field with snapshot index `index`.
    pub async fn fill_index(&self, index: u32, text: &str) -> Result<(), BrowserError> {
        let found = self.run_on_element(index, snapshot::FOCUS_INDEX, |i| json!(i)).await?;
        self.fill_found(found, format!("element [{index}] is no longer on the page"), text, Some(index)).await
    }

    /// Chooses an option (by text or value) in the select with snapshot index `index`.
    pub async fn select_option(&self, index: u32, option: &str) -> Result<String, BrowserError> {
        let r =
            self.run_on_element(index, snapshot::SELECT_OPTION, |i| json!({ "index": i, "option": option })).await?;
        match (r.get("selected").and_then(Value::as_str), r.get("error").and_then(Value::as_str)) {
            (Some(s), _) => Ok(s.to_owned()),
            (None, Some(e)) => Err(BrowserError::ElementNotFound(format!("element [{index}]: {e}"))),
            _ => Err(BrowserError::ElementNotFound(format!("element [{index}] is no longer on the page"))),
        }
    }

    /// A CSS path to element `index` (see `snapshot::CSS_PATH`); empty for an element in a
    /// cross-origin frame or one that is gone.
    pub async fn css_path(&self, index: u32) -> Result<String, BrowserError> {
        match self.place(index) {
            Place::Frame(_) => Ok(String::new()),
            Place::Page => {
                Ok(self.run_script(snapshot::CSS_PATH, json!(index)).await?.as_str().unwrap_or_default().to_owned())
            }
        }
    }

    /// The index of the element at `css` (a path from [`Self::css_path`]) after the latest snapshot.
    pub async fn index_at_css(&self, css: &str) -> Result<Option<u32>, BrowserError> {
        let v = self.run_script(snapshot::INDEX_AT_CSS, json!(css)).await?;
        Ok(v.as_u64().and_then(|i| u32::try_from(i).ok()))
    }

    /// The host of the document element `index` is in (a secret is typed only where its domains allow).
    pub async fn host_of_index(&self, index: u32) -> Result<String, BrowserError> {
        let v = self.run_on_element(index, "return location.hostname;", |i| json!(i)).await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// The host of the document that keys typed at page point `at` reach: the page's, or `None` when the
    /// point is over a frame or an embedded document (whose origin may be another), or over nothing.
    pub async fn host_at(&self, at: PagePoint) -> Result<Option<String>, BrowserError> {
        let v = self.run_script(HOST_AT, json!([at.x, at.y])).await?;
        Ok(v.as_str().map(str::to_owned))
    }
}

/// Arms a one-shot promise in a frame that settles once the frame has dispatched the next click, with the
/// snapshot index of the element it hit (or null after 1.5 s, when the click landed elsewhere).
const CLICK_ARM: &str = "(() => { Object.defineProperty(window, '__webpilotClick', { configurable: true, value: \
    new Promise(done => { addEventListener('click', e => { const hit = e.target && e.target.closest \
    ? e.target.closest('[data-wp-index]') : null; const i = hit ? Number(hit.getAttribute('data-wp-index')) : null; \
    setTimeout(() => done(i), 0); }, { once: true, capture: true }); setTimeout(() => done(null), 1500); }) }); \
    return true; })()";

/// Settles once the focused field of the document ends with ARG (its typed text), or after 1.5 s.
const TYPED_SEEN: &str = "return new Promise(done => { const began = Date.now(); const check = () => { \
    const el = document.activeElement; const v = el && 'value' in el ? String(el.value) : ''; \
    if (v.endsWith(ARG) || Date.now() - began > 1500) done(true); else setTimeout(check, 20); }; check(); });";

/// The page's host, or null when the element at point ARG `[x, y]` is a frame, an embedded document or
/// nothing.
const HOST_AT: &str = "const e = document.elementFromPoint(ARG[0], ARG[1]); \
    return !e || ['IFRAME', 'FRAME', 'OBJECT', 'EMBED'].includes(e.tagName) ? null : location.hostname;";

/// Waits for the promise [`CLICK_ARM`] set: the index of the element the click hit, or null.
const CLICK_SEEN: &str = "Promise.resolve(window.__webpilotClick)";

/// Replaces each frame placeholder whose document was read by that document's tree, with its indices
/// moved after the page's (`next` onwards) and remembered in `found`.
fn splice(
    nodes: &mut [Node],
    docs: &HashMap<u32, (String, Vec<Node>)>,
    next: &mut u32,
    found: &mut HashMap<u32, FrameElement>,
) {
    for node in nodes.iter_mut() {
        match node {
            Node::Block { children, .. } => splice(children, docs, next, found),
            Node::Frame { frame, y, origin, .. } => {
                if let Some((target, tree)) = docs.get(frame) {
                    let mut tree = tree.clone();
                    renumber(&mut tree, *y, origin.unwrap_or_default(), &mut |local| {
                        let global = *next;
                        *next += 1;
                        found.insert(global, FrameElement { target_id: target.clone(), local, frame: *frame });
                        global
                    });
                    *node = Node::Block { children: tree, y: *y };
                }
            }
            Node::Text(_) | Node::Control(_) => {}
        }
    }
}

/// Gives every control of a frame's tree its page index, page y and box in the page's viewport (`origin`:
/// where the frame's content starts in it).
fn renumber(nodes: &mut [Node], dy: f64, origin: [f64; 2], index_of: &mut impl FnMut(u32) -> u32) {
    for node in nodes.iter_mut() {
        match node {
            Node::Control(c) => {
                c.index = index_of(c.index);
                c.y += dy;
                if let Some(r) = &mut c.rect {
                    r[0] += origin[0];
                    r[1] += origin[1];
                }
            }
            Node::Block { children, y } => {
                *y += dy;
                renumber(children, dy, origin, index_of);
            }
            // A cross-origin frame inside a cross-origin frame is not read (one level is).
            Node::Frame { .. } | Node::Text(_) => {}
        }
    }
}
