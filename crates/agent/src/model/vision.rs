//! The screenshot beside an observation: whether this turn carries one (the rule is
//! `webpilot_core::vision::wants_image`, fed here from the snapshot and the page), and taking it.

use crate::AgentContext;
use webpilot_browser::PageSnapshot;
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
}
