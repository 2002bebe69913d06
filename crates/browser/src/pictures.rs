//! How much of the viewport pictures cover (canvas, img, video, svg): what the agent's `vision: "auto"`
//! weighs, since the text observation says nothing of what they show.

use crate::{BrowserError, SessionPage};

/// The share of the viewport (0 to 1) covered by visible pictures, their areas summed and capped at 1.
const PICTURE_SHARE: &str = r#"(() => {
  const W = innerWidth, H = innerHeight;
  if (!W || !H) return 0;
  let covered = 0;
  for (const el of document.querySelectorAll('canvas, img, video, svg:not(svg svg)')) {
    const r = el.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, W) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, H) - Math.max(r.top, 0));
    if (w * h === 0) continue;
    const s = getComputedStyle(el);
    if (s.visibility === 'hidden' || s.display === 'none' || Number(s.opacity) === 0) continue;
    covered += w * h;
  }
  return Math.min(1, covered / (W * H));
})()"#;

impl SessionPage {
    /// The share of the active tab's viewport that pictures cover (0 to 1).
    pub async fn picture_share(&self) -> Result<f64, BrowserError> {
        Ok(self.eval(PICTURE_SHARE).await?.as_f64().unwrap_or(0.0).clamp(0.0, 1.0))
    }
}
