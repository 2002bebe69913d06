//! One frame of the live view: the browser-chrome band the service draws (tab strip, toolbar with the
//! address, the page title) above the active tab's picture, encoded as a 1024 x 600 JPEG. The band's
//! height is `core::geometry::CHROME_BAND`, the same one manual clicks are mapped with, so a point a
//! viewer clicks on the frame is exactly the interaction coordinate.

use ab_glyph::{FontRef, PxScale};
use image::codecs::jpeg::{JpegDecoder, JpegEncoder};
use image::{imageops, ColorType, ImageDecoder, ImageFormat, Rgb, RgbImage};
use imageproc::drawing::{draw_filled_rect_mut, draw_text_mut, text_size};
use imageproc::rect::Rect;
use std::io::Cursor;
use std::sync::LazyLock;
use webpilot_browser::TabInfo;
use webpilot_core::geometry::{CHROME_BAND, FRAME_HEIGHT, FRAME_WIDTH, PAGE_HEIGHT};

/// The font the band is written in (DejaVu Sans, shipped in `assets/` with its licence).
static FONT: LazyLock<Option<FontRef<'static>>> =
    LazyLock::new(|| FontRef::try_from_slice(include_bytes!("../assets/DejaVuSans.ttf")).ok());

/// Colours of the band (close to a light browser theme).
pub const TAB_STRIP: Rgb<u8> = Rgb([222, 225, 230]);
pub const ACTIVE_TAB: Rgb<u8> = Rgb([255, 255, 255]);
pub const TOOLBAR: Rgb<u8> = Rgb([255, 255, 255]);
pub const ADDRESS_BAR: Rgb<u8> = Rgb([241, 243, 244]);
pub const TITLE_BAR: Rgb<u8> = Rgb([248, 249, 250]);
const TEXT: Rgb<u8> = Rgb([32, 33, 36]);
const MUTED: Rgb<u8> = Rgb([95, 99, 104]);
const RULE: Rgb<u8> = Rgb([218, 220, 224]);

/// Rows of the band, top to bottom.
pub const TAB_STRIP_HEIGHT: u32 = 40;
pub const TOOLBAR_BOTTOM: u32 = 84;

#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("the page picture could not be decoded: {0}")]
    Decode(image::ImageError),
    #[error("the frame could not be encoded: {0}")]
    Encode(image::ImageError),
}

/// What the band shows: the tabs (one of them active).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BandInfo {
    pub tabs: Vec<TabInfo>,
}

impl BandInfo {
    fn active(&self) -> Option<&TabInfo> {
        self.tabs.iter().find(|t| t.active)
    }
}

/// Draws the browser-chrome band (1024 x 155).
pub fn draw_band(info: &BandInfo) -> RgbImage {
    let mut band = RgbImage::from_pixel(FRAME_WIDTH, CHROME_BAND, TOOLBAR);
    fill(&mut band, 0, 0, FRAME_WIDTH, TAB_STRIP_HEIGHT, TAB_STRIP);
    draw_tabs(&mut band, &info.tabs);
    // Back, forward and reload glyphs, then the address bar with the active tab's URL.
    let glyph_y = TAB_STRIP_HEIGHT as i32 + 9;
    for (x, glyph) in [(14, "←"), (46, "→"), (78, "↻")] {
        write(&mut band, x, glyph_y, 22.0, MUTED, glyph, 30);
    }
    fill(&mut band, 112, TAB_STRIP_HEIGHT + 7, FRAME_WIDTH - 124, 30, ADDRESS_BAR);
    let url = info.active().map(|t| t.url.as_str()).unwrap_or("about:blank");
    write(&mut band, 126, TAB_STRIP_HEIGHT as i32 + 13, 15.0, TEXT, url, FRAME_WIDTH - 150);
    // The page title, large, above a rule that separates the band from the page.
    fill(&mut band, 0, TOOLBAR_BOTTOM, FRAME_WIDTH, CHROME_BAND - TOOLBAR_BOTTOM - 1, TITLE_BAR);
    let title = info.active().map(|t| t.title.as_str()).filter(|t| !t.is_empty()).unwrap_or("(untitled)");
    write(&mut band, 16, TOOLBAR_BOTTOM as i32 + 20, 22.0, TEXT, title, FRAME_WIDTH - 32);
    fill(&mut band, 0, CHROME_BAND - 1, FRAME_WIDTH, 1, RULE);
    band
}

/// Tabs share the strip, at most 220 pixels each; the active one is white.
fn draw_tabs(band: &mut RgbImage, tabs: &[TabInfo]) {
    if tabs.is_empty() {
        return;
    }
    let width = ((FRAME_WIDTH - 16) / tabs.len() as u32).min(220);
    for (i, tab) in tabs.iter().enumerate() {
        let x = 8 + i as u32 * width;
        if tab.active {
            fill(band, x, 6, width - 2, TAB_STRIP_HEIGHT - 6, ACTIVE_TAB);
        } else if i + 1 < tabs.len() {
            fill(band, x + width - 1, 12, 1, TAB_STRIP_HEIGHT - 20, RULE);
        }
        let title = if tab.title.is_empty() { tab.url.as_str() } else { tab.title.as_str() };
        write(band, x as i32 + 10, 14, 13.0, TEXT, title, width.saturating_sub(20));
    }
}

fn fill(img: &mut RgbImage, x: u32, y: u32, w: u32, h: u32, colour: Rgb<u8>) {
    if w > 0 && h > 0 {
        draw_filled_rect_mut(img, Rect::at(x as i32, y as i32).of_size(w, h), colour);
    }
}

/// Writes `text` at (`x`, `y`), cut with an ellipsis to fit `max_width` pixels.
fn write(img: &mut RgbImage, x: i32, y: i32, px: f32, colour: Rgb<u8>, text: &str, max_width: u32) {
    let Some(font) = FONT.as_ref() else { return };
    let scale = PxScale::from(px);
    let line: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    let fits = |s: &str| text_size(scale, font, s).0 <= max_width;
    let shown = if fits(&line) {
        line
    } else {
        // The longest prefix that fits with an ellipsis (binary search: titles can be long).
        let cut = |n: usize| line.chars().take(n).collect::<String>() + "…";
        let (mut lo, mut hi) = (0, line.chars().count());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(&cut(mid)) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        cut(lo)
    };
    draw_text_mut(img, colour, x, y, scale, font, &shown);
}

/// The whole frame: `band` on top of the page picture (`None` before the first one arrives: a white
/// page). A picture of another size is scaled into the 1024 x 445 viewport.
pub fn compose_rgb(band: &RgbImage, page_jpeg: Option<&[u8]>) -> Result<RgbImage, ComposeError> {
    let mut frame = RgbImage::new(FRAME_WIDTH, FRAME_HEIGHT);
    let buf: &mut [u8] = &mut frame;
    buf.fill(255);
    // Done for every frame: a band of the usual size is copied row for row.
    if band.dimensions() == (FRAME_WIDTH, CHROME_BAND) {
        buf[..band.as_raw().len()].copy_from_slice(band.as_raw());
    } else {
        imageops::replace(&mut frame, band, 0, 0);
    }
    if let Some(jpeg) = page_jpeg {
        draw_page(&mut frame, jpeg)?;
    }
    Ok(frame)
}

/// Draws the page picture below the band: a picture of the viewport's size is decoded straight into the
/// frame's rows (no intermediate image); one of another size is scaled into the viewport.
fn draw_page(frame: &mut RgbImage, jpeg: &[u8]) -> Result<(), ComposeError> {
    let decoder = JpegDecoder::new(Cursor::new(jpeg)).map_err(ComposeError::Decode)?;
    if decoder.dimensions() == (FRAME_WIDTH, PAGE_HEIGHT) && decoder.color_type() == ColorType::Rgb8 {
        let below_band = FRAME_WIDTH as usize * 3 * CHROME_BAND as usize;
        let rows: &mut [u8] = frame;
        return decoder.read_image(&mut rows[below_band..]).map_err(ComposeError::Decode);
    }
    let mut page =
        image::load_from_memory_with_format(jpeg, ImageFormat::Jpeg).map_err(ComposeError::Decode)?.to_rgb8();
    if page.dimensions() != (FRAME_WIDTH, PAGE_HEIGHT) {
        page = imageops::resize(&page, FRAME_WIDTH, PAGE_HEIGHT, imageops::FilterType::Triangle);
    }
    imageops::replace(frame, &page, 0, i64::from(CHROME_BAND));
    Ok(())
}

/// A frame as a JPEG of `quality`.
pub fn encode_jpeg(frame: &RgbImage, quality: u8) -> Result<Vec<u8>, ComposeError> {
    let mut out = Vec::with_capacity(96 * 1024);
    JpegEncoder::new_with_quality(&mut out, quality.clamp(1, 100)).encode_image(frame).map_err(ComposeError::Encode)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tab(index: usize, title: &str, active: bool) -> TabInfo {
        TabInfo { index, url: format!("https://example.com/{index}"), title: title.into(), active }
    }

    fn page_of(colour: Rgb<u8>) -> Vec<u8> {
        let img = RgbImage::from_pixel(FRAME_WIDTH, PAGE_HEIGHT, colour);
        let mut out = Vec::new();
        JpegEncoder::new_with_quality(&mut out, 90).encode_image(&img).expect("encode");
        out
    }

    #[test]
    fn the_frame_is_the_band_over_the_page() {
        let info = BandInfo { tabs: vec![tab(0, "First", false), tab(1, "Second", true)] };
        let band = draw_band(&info);
        let jpeg =
            encode_jpeg(&compose_rgb(&band, Some(&page_of(Rgb([200, 30, 30])))).expect("compose"), 85).expect("encode");
        let frame = image::load_from_memory(&jpeg).expect("decode").to_rgb8();
        assert_eq!(frame.dimensions(), (FRAME_WIDTH, FRAME_HEIGHT));
        let near = |p: &Rgb<u8>, c: Rgb<u8>| p.0.iter().zip(c.0).all(|(a, b)| a.abs_diff(b) < 12);
        // The tab strip's background, the active (second) tab, and the page below the band.
        assert!(near(frame.get_pixel(1010, 3), TAB_STRIP));
        assert!(near(frame.get_pixel(8 + 220 + 200, 8), ACTIVE_TAB));
        assert!(near(frame.get_pixel(500, CHROME_BAND + 200), Rgb([200, 30, 30])));
        // Text was drawn into the title row.
        let row = (TOOLBAR_BOTTOM + 20..TOOLBAR_BOTTOM + 40).flat_map(|y| (16..200).map(move |x| (x, y)));
        assert!(row.into_iter().any(|(x, y)| frame.get_pixel(x, y).0[0] < 128), "no title text");
    }

    #[test]
    fn a_picture_of_another_size_is_scaled_and_bad_bytes_are_an_error() {
        let band = draw_band(&BandInfo::default());
        let small = RgbImage::from_pixel(512, 222, Rgb([0, 0, 255]));
        let mut jpeg = Vec::new();
        JpegEncoder::new_with_quality(&mut jpeg, 90).encode_image(&small).expect("encode");
        let frame = compose_rgb(&band, Some(&jpeg)).expect("compose");
        assert_eq!((frame.width(), frame.height()), (FRAME_WIDTH, FRAME_HEIGHT));
        assert!(matches!(compose_rgb(&band, Some(b"not a jpeg")), Err(ComposeError::Decode(_))));
    }

    #[test]
    fn long_titles_are_cut_to_their_tab() {
        let long = "A very long title ".repeat(30);
        let info = BandInfo { tabs: (0..12).map(|i| tab(i, &long, i == 3)).collect() };
        let band = draw_band(&info);
        assert_eq!(band.dimensions(), (FRAME_WIDTH, CHROME_BAND));
    }
}
