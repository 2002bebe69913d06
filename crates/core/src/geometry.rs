//! The frame geometry shared by manual interaction and (later) the live view: a 1024 x 600 frame whose
//! top 155 pixels are a browser-chrome band drawn by the service, above a 1024 x 445 page viewport.

/// Width of the frame and of the page viewport, in CSS pixels.
pub const FRAME_WIDTH: u32 = 1024;
/// Height of the whole frame the caller sees (chrome band + page).
pub const FRAME_HEIGHT: u32 = 600;
/// Height of the browser-chrome band on top of the frame; not clickable.
pub const CHROME_BAND: u32 = 155;
/// Height of the page viewport Chromium renders.
pub const PAGE_HEIGHT: u32 = FRAME_HEIGHT - CHROME_BAND;

/// A point on the page, in CSS pixels relative to the viewport's top-left corner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PagePoint {
    pub x: f64,
    pub y: f64,
}

/// Maps frame coordinates (as sent in interaction messages) to page coordinates. The caller must have
/// validated the bounds (x 0..=1024, y 155..=600); see `params::Interaction`.
pub fn frame_to_page(x: f64, y: f64) -> PagePoint {
    // y = 600 is the frame's last edge; keep the point inside the page.
    let page_y = (y - CHROME_BAND as f64).min(PAGE_HEIGHT as f64 - 1.0).max(0.0);
    let page_x = x.min(FRAME_WIDTH as f64 - 1.0).max(0.0);
    PagePoint { x: page_x, y: page_y }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_y_maps_below_the_chrome_band() {
        assert_eq!(frame_to_page(10.0, 155.0), PagePoint { x: 10.0, y: 0.0 });
        assert_eq!(frame_to_page(10.0, 255.0), PagePoint { x: 10.0, y: 100.0 });
        assert_eq!(frame_to_page(1024.0, 600.0), PagePoint { x: 1023.0, y: 444.0 });
    }
}
