//! The screenshot beside an observation: whether this turn carries one (the rule is
//! `webpilot_core::vision::wants_image`, fed here from the snapshot and the page), its marks (`on` only),
//! and the secrets painted over it.

use crate::AgentContext;
use webpilot_browser::{Mark, PageSnapshot};
use webpilot_core::vision::{wants_image, Cues, VisionMode};

/// What the loop knows of the turn before the page is observed.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Turn {
    /// The fingerprint of the observation the last step acted on, when it acted.
    pub acted_on: Option<u64>,
    /// The model asked for a screenshot on the last step.
    pub asked: bool,
}

/// Elements in the visible area of the snapshot.
fn visible_elements(snap: &PageSnapshot) -> usize {
    let (top, bottom) = (snap.scroll_y - 1.0, snap.scroll_y + snap.viewport_height);
    let mut n = 0;
    for node in &snap.tree {
        node.for_each_control(&mut |c| {
            if c.y >= top && c.y < bottom {
                n += 1;
            }
        });
    }
    n
}

/// Whether this turn carries a screenshot of `snap`'s page, whose observation has fingerprint `print`.
pub(super) async fn wanted(
    ctx: &AgentContext,
    mode: VisionMode,
    takes_images: bool,
    snap: &PageSnapshot,
    print: u64,
    turn: Turn,
) -> bool {
    let mut cues = Cues {
        picture_share: 0.0,
        elements: visible_elements(snap),
        blank: snap.url.is_empty() || snap.url.starts_with("about:"),
        unchanged: turn.acted_on == Some(print),
        asked: turn.asked,
    };
    let without_pictures = wants_image(mode, takes_images, &cues);
    if without_pictures || mode != VisionMode::Auto || !takes_images || cues.blank {
        return without_pictures;
    }
    // Only now is the page asked how much of it is pictures.
    cues.picture_share = ctx.control.act(ctx.page.picture_share()).await.unwrap_or(0.0);
    wants_image(mode, takes_images, &cues)
}

/// The marks a screenshot of `snap` carries under `mode`: with `on`, every element the text observation
/// lists (`listed`) whose box shows in the viewport; with `auto` or `off`, none.
pub(super) fn marks(mode: VisionMode, snap: &PageSnapshot, listed: Vec<Mark>) -> Vec<Mark> {
    if mode != VisionMode::On {
        return Vec::new();
    }
    let shows = |[left, top, width, height]: [f64; 4]| {
        width > 0.0 && height > 0.0 && left + width > 0.0 && top + height > 0.0 && top < snap.viewport_height
    };
    listed.into_iter().filter(|m| shows(m.rect)).collect()
}

/// `jpeg` as a model may see it: `marks` drawn, then every place the task's secrets show on the page painted
/// over (secrets win over marks). `shown` is each secret value with how many times the text observation shows
/// it; `None` (the picture is left out) when the page could not be searched, or shows a value more often than
/// the search found it (a cross-origin frame, a closed shadow root, the address bar's URL): a picture is never
/// sent with a secret in it.
pub(super) async fn dressed(
    ctx: &AgentContext,
    jpeg: Vec<u8>,
    marks: &[Mark],
    shown: &[(String, usize)],
    quality: i64,
) -> Option<Vec<u8>> {
    let mut secrets = Vec::new();
    if !shown.is_empty() {
        let values: Vec<String> = shown.iter().map(|(v, _)| v.clone()).collect();
        let found = match ctx.control.act(ctx.page.secret_boxes(&values)).await {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!(error = %e, "the page could not be searched for secrets; its picture is left out");
                return None;
            }
        };
        let covered = shown.iter().enumerate().all(|(i, (_, times))| found.found.get(i).is_some_and(|n| n >= times));
        if !covered {
            tracing::debug!("a secret shows where the page's search did not find it; the picture is left out");
            return None;
        }
        secrets = found.boxes;
    }
    if marks.is_empty() && secrets.is_empty() {
        return Some(jpeg);
    }
    let quality = u8::try_from(quality.clamp(1, 100)).unwrap_or(80);
    match webpilot_browser::dress(&jpeg, marks, &secrets, quality) {
        Ok(dressed) => Some(dressed),
        // Unmarked is fine; unpainted is not.
        Err(e) if secrets.is_empty() => {
            tracing::debug!(error = %e, "the marks could not be drawn; the picture is sent without them");
            Some(jpeg)
        }
        Err(e) => {
            tracing::debug!(error = %e, "the secrets could not be painted over; the picture is left out");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_elements_in_the_visible_area_count() {
        let snap: PageSnapshot = serde_json::from_value(json!({"url": "u", "title": "t", "scroll_y": 400,
            "page_height": 2000, "viewport_height": 445, "tree": [
                {"b": [{"i": 1, "k": "link", "t": "above", "y": 100}, {"i": 2, "k": "link", "t": "in", "y": 500}], "y": 0},
                {"i": 3, "k": "button", "t": "in", "y": 844}, {"i": 4, "k": "button", "t": "below", "y": 845}]}))
        .expect("snapshot");
        assert_eq!(visible_elements(&snap), 2);
    }

    #[test]
    fn only_on_marks_and_only_what_shows_in_the_viewport() {
        let snap: PageSnapshot = serde_json::from_value(json!({"url": "u", "title": "t", "scroll_y": 0,
            "page_height": 2000, "viewport_height": 445, "tree": []}))
        .expect("snapshot");
        let mark = |index, rect| Mark { index, rect };
        let listed = vec![
            mark(1, [10.0, 10.0, 50.0, 20.0]),
            mark(2, [10.0, 500.0, 50.0, 20.0]),
            mark(3, [-80.0, 10.0, 50.0, 20.0]),
            mark(4, [10.0, 430.0, 50.0, 40.0]),
            mark(5, [10.0, 10.0, 0.0, 0.0]),
        ];
        let kept: Vec<u32> = marks(VisionMode::On, &snap, listed.clone()).iter().map(|m| m.index).collect();
        assert_eq!(kept, [1, 4]);
        assert!(marks(VisionMode::Auto, &snap, listed.clone()).is_empty());
        assert!(marks(VisionMode::Off, &snap, listed).is_empty());
    }
}
