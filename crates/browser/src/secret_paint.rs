//! A screenshot for a model with the secrets painted over: where any secret value shows on the active tab
//! (a field that holds it, text that holds it) is found by a script in an isolated world of the page, so the
//! page's own scripts never see the values, and those boxes are painted an opaque colour before the picture
//! leaves the service. The rest of the picture is sent as it was.

use crate::error::within;
use crate::{BrowserError, SessionPage};
use chromiumoxide::cdp::browser_protocol::page::CreateIsolatedWorldParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use image::{ImageFormat, Rgb, RgbImage};
use serde::Deserialize;
use std::io::Cursor;

const SECRET_BOXES: &str = include_str!("js/secret_boxes.js");

/// The colour secrets are painted with.
pub const PAINT: [u8; 3] = [0, 0, 0];

/// Where the secrets show: boxes in viewport CSS pixels `[left, top, width, height]`, and how many times each
/// value was found.
#[derive(Debug, Default, Deserialize)]
pub struct SecretBoxes {
    pub boxes: Vec<[f64; 4]>,
    pub found: Vec<usize>,
}

impl SessionPage {
    /// Where `values` show on the active tab, read in an isolated world of its main frame.
    pub async fn secret_boxes(&self, values: &[String]) -> Result<SecretBoxes, BrowserError> {
        let page = self.page()?;
        let timeout = self.inner.cdp_timeout;
        let frame = within(timeout, "main frame", page.mainframe())
            .await?
            .ok_or_else(|| BrowserError::Cdp("the page has no main frame".into()))?;
        let mut world = CreateIsolatedWorldParams::new(frame);
        world.world_name = Some("webpilot-secrets".into());
        let context = within(timeout, "isolated world", page.execute(world)).await?.result.execution_context_id;
        let arg = serde_json::to_string(values).map_err(|e| BrowserError::Cdp(e.to_string()))?;
        let mut params = EvaluateParams::new(format!("({SECRET_BOXES})({arg})"));
        params.context_id = Some(context);
        params.return_by_value = Some(true);
        let res = within(timeout, "find secrets", page.execute(params)).await?;
        if res.result.exception_details.is_some() {
            // Never the script's text: it would hold the values.
            return Err(BrowserError::Cdp("finding the secrets on the page failed".into()));
        }
        let value = res.result.result.value.clone().unwrap_or_default();
        serde_json::from_value(value).map_err(|_| BrowserError::Cdp("the secrets' boxes were not readable".into()))
    }
}

/// `jpeg` (a viewport screenshot at one image pixel per CSS pixel) with every box painted over, encoded again
/// at `quality`.
pub fn paint_over(jpeg: &[u8], boxes: &[[f64; 4]], quality: u8) -> Result<Vec<u8>, BrowserError> {
    let decoded = image::load_from_memory_with_format(jpeg, ImageFormat::Jpeg)
        .map_err(|e| BrowserError::Cdp(format!("the screenshot could not be decoded: {e}")))?;
    let mut picture: RgbImage = decoded.to_rgb8();
    let (w, h) = picture.dimensions();
    for [left, top, width, height] in boxes {
        // A pixel of margin around each box: JPEG blurs edges, and a box may fall between pixels.
        let x0 = (left - 1.0).floor().clamp(0.0, f64::from(w)) as u32;
        let y0 = (top - 1.0).floor().clamp(0.0, f64::from(h)) as u32;
        let x1 = (left + width + 1.0).ceil().clamp(0.0, f64::from(w)) as u32;
        let y1 = (top + height + 1.0).ceil().clamp(0.0, f64::from(h)) as u32;
        for y in y0..y1 {
            for x in x0..x1 {
                picture.put_pixel(x, y, Rgb(PAINT));
            }
        }
    }
    let mut out = Cursor::new(Vec::new());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&picture)
        .map_err(|e| BrowserError::Cdp(format!("the screenshot could not be encoded: {e}")))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_are_painted_with_a_margin_and_the_rest_is_kept() {
        let white = RgbImage::from_pixel(100, 60, Rgb([255, 255, 255]));
        let mut jpeg = Cursor::new(Vec::new());
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90).encode_image(&white).expect("encode");
        let painted =
            paint_over(&jpeg.into_inner(), &[[10.5, 10.0, 20.0, 8.0], [95.0, -5.0, 50.0, 10.0]], 90).expect("painted");
        let back = image::load_from_memory(&painted).expect("decode").to_rgb8();
        let dark = |x, y| back.get_pixel(x, y).0.iter().all(|c| *c < 40);
        let light = |x, y| back.get_pixel(x, y).0.iter().all(|c| *c > 215);
        assert!(dark(10, 10) && dark(30, 17) && dark(20, 14), "the box and its margin");
        assert!(dark(99, 0) && dark(96, 4), "a box past the edge is clipped, not refused");
        assert!(light(5, 5) && light(50, 40) && light(34, 22), "the rest is kept");
    }
}
