//! Set-of-marks: the element indices of the text observation drawn as small labels on the screenshot a
//! model gets, at each element's box's top-left, so the model can say "click 14" about what it sees. They
//! are drawn on the decoded picture in the service, never in the page: the page cannot see or change them,
//! and the live view and recordings never show them. A label is black digits of a built-in 3 × 5 bitmap
//! font (each font pixel 2 × 2 image pixels) on [`MARK_FILL`], in a black frame.
//!
//! Secrets win: [`dress`] paints the secrets' boxes after the marks, so a label over a secret is painted
//! over with it.

use crate::BrowserError;
use image::{ImageFormat, Rgb, RgbImage};
use std::io::Cursor;

/// The labels' background colour (orange; black digits on it).
pub const MARK_FILL: [u8; 3] = [255, 160, 0];
/// The digits' and the frame's colour.
pub const MARK_INK: [u8; 3] = [0, 0, 0];
/// Image pixels per font pixel.
pub const MARK_SCALE: u32 = 2;
/// A label's height in image pixels: frame, padding, five font rows, padding, frame.
pub const MARK_HEIGHT: u32 = 4 + 5 * MARK_SCALE;

/// The digits 0 to 9, five rows of three font pixels each (bit 2 is the left column).
pub const DIGITS: [[u8; 5]; 10] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b001, 0b001, 0b001],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
];

/// One label: an element's index and its box in the viewport `[left, top, width, height]` (CSS pixels, one
/// image pixel each).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub index: u32,
    pub rect: [f64; 4],
}

/// A label's width for `digits` digits: frame and padding either side, three font pixels a digit and one
/// between digits.
pub fn mark_width(digits: u32) -> u32 {
    4 + digits * 3 * MARK_SCALE + digits.saturating_sub(1) * MARK_SCALE
}

fn fill(picture: &mut RgbImage, x0: u32, y0: u32, w: u32, h: u32, colour: [u8; 3]) {
    let (pw, ph) = picture.dimensions();
    for y in y0..(y0 + h).min(ph) {
        for x in x0..(x0 + w).min(pw) {
            picture.put_pixel(x, y, Rgb(colour));
        }
    }
}

/// Draws `mark`'s label at its box's top-left, the box clipped to the picture; a box wholly outside the
/// picture (an element scrolled away) or without area gets none. A label that would stick out of the
/// picture is moved in.
fn draw(picture: &mut RgbImage, mark: &Mark) {
    let (pw, ph) = picture.dimensions();
    let [left, top, width, height] = mark.rect;
    let (right, bottom) = (left + width, top + height);
    if width <= 0.0 || height <= 0.0 || right <= 0.0 || bottom <= 0.0 || left >= f64::from(pw) || top >= f64::from(ph) {
        return;
    }
    let digits = mark.index.to_string();
    let w = mark_width(digits.len() as u32);
    let h = MARK_HEIGHT;
    if w > pw || h > ph {
        return;
    }
    let x0 = (left.max(0.0).floor() as u32).min(pw - w);
    let y0 = (top.max(0.0).floor() as u32).min(ph - h);
    fill(picture, x0, y0, w, h, MARK_INK);
    fill(picture, x0 + 1, y0 + 1, w - 2, h - 2, MARK_FILL);
    for (k, d) in digits.bytes().enumerate() {
        let glyph = DIGITS[usize::from(d - b'0')];
        let gx = x0 + 2 + k as u32 * 4 * MARK_SCALE;
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..3u32 {
                if bits & (0b100 >> col) != 0 {
                    let (x, y) = (gx + col * MARK_SCALE, y0 + 2 + row as u32 * MARK_SCALE);
                    fill(picture, x, y, MARK_SCALE, MARK_SCALE, MARK_INK);
                }
            }
        }
    }
}

/// Paints each box (viewport CSS pixels) opaque `colour`, with a pixel of margin (JPEG blurs edges, and a box
/// may fall between pixels); boxes past the edges are clipped.
fn paint_boxes(picture: &mut RgbImage, boxes: &[[f64; 4]], colour: [u8; 3]) {
    let (w, h) = picture.dimensions();
    for [left, top, width, height] in boxes {
        let x0 = (left - 1.0).floor().clamp(0.0, f64::from(w)) as u32;
        let y0 = (top - 1.0).floor().clamp(0.0, f64::from(h)) as u32;
        let x1 = (left + width + 1.0).ceil().clamp(0.0, f64::from(w)) as u32;
        let y1 = (top + height + 1.0).ceil().clamp(0.0, f64::from(h)) as u32;
        fill(picture, x0, y0, x1.saturating_sub(x0), y1.saturating_sub(y0), colour);
    }
}

/// `jpeg` (a viewport screenshot at one image pixel per CSS pixel) as a model gets it: `marks` drawn, then
/// every box of `secrets` painted [`crate::PAINT`] over them, encoded again at `quality`. Nothing to draw
/// gives the bytes back as they were.
pub fn dress(jpeg: &[u8], marks: &[Mark], secrets: &[[f64; 4]], quality: u8) -> Result<Vec<u8>, BrowserError> {
    if marks.is_empty() && secrets.is_empty() {
        return Ok(jpeg.to_vec());
    }
    let decoded = image::load_from_memory_with_format(jpeg, ImageFormat::Jpeg)
        .map_err(|e| BrowserError::Cdp(format!("the screenshot could not be decoded: {e}")))?;
    let mut picture: RgbImage = decoded.to_rgb8();
    marks.iter().for_each(|m| draw(&mut picture, m));
    paint_boxes(&mut picture, secrets, crate::PAINT);
    let mut out = Cursor::new(Vec::new());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&picture)
        .map_err(|e| BrowserError::Cdp(format!("the screenshot could not be encoded: {e}")))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn white(w: u32, h: u32) -> RgbImage {
        RgbImage::from_pixel(w, h, Rgb([255, 255, 255]))
    }

    /// The digits of the label whose frame's top-left is (x0, y0), read back from exact pixels.
    fn read(p: &RgbImage, x0: u32, y0: u32, digits: u32) -> String {
        (0..digits)
            .map(|k| {
                let gx = x0 + 2 + k * 4 * MARK_SCALE;
                let glyph: Vec<u8> = (0..5u32)
                    .map(|row| {
                        (0..3u32).fold(0u8, |bits, col| {
                            let ink = p.get_pixel(gx + col * MARK_SCALE, y0 + 2 + row * MARK_SCALE).0 == MARK_INK;
                            (bits << 1) | u8::from(ink)
                        })
                    })
                    .collect();
                let d = DIGITS.iter().position(|g| g[..] == glyph[..]).expect("a digit");
                char::from(b'0' + d as u8)
            })
            .collect()
    }

    #[test]
    fn a_label_sits_at_its_box_top_left_and_reads_back() {
        let mut p = white(200, 100);
        draw(&mut p, &Mark { index: 1234567890, rect: [10.4, 20.0, 50.0, 30.0] });
        assert_eq!(p.get_pixel(10, 20).0, MARK_INK, "the frame's corner at the box's corner");
        assert_eq!(p.get_pixel(11, 21).0, MARK_FILL);
        assert_eq!(p.get_pixel(9, 20).0, [255; 3]);
        assert_eq!(read(&p, 10, 20, 10), "1234567890");
        assert_eq!(p.get_pixel(10 + mark_width(10), 20).0, [255; 3], "the label is as wide as it says");
    }

    #[test]
    fn boxes_off_the_picture_get_no_label_and_those_at_its_edges_are_moved_in() {
        let mut p = white(100, 60);
        for rect in [[-50.0, 10.0, 40.0, 10.0], [10.0, 60.0, 40.0, 10.0], [10.0, 10.0, 0.0, 10.0]] {
            draw(&mut p, &Mark { index: 7, rect });
        }
        assert!(p.pixels().all(|px| px.0 == [255; 3]), "nothing drawn");
        draw(&mut p, &Mark { index: 42, rect: [95.0, -5.0, 50.0, 30.0] });
        let x0 = 100 - mark_width(2);
        assert_eq!(p.get_pixel(x0, 0).0, MARK_INK);
        assert_eq!(read(&p, x0, 0, 2), "42");
    }

    #[test]
    fn secrets_are_painted_over_the_marks_with_a_margin_and_the_rest_is_kept() {
        let mut jpeg = Cursor::new(Vec::new());
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90).encode_image(&white(100, 60)).expect("jpeg");
        let marks =
            [Mark { index: 8, rect: [10.0, 10.0, 20.0, 8.0] }, Mark { index: 1, rect: [60.0, 30.0, 30.0, 20.0] }];
        let secrets = [[10.5, 10.0, 20.0, 8.0], [95.0, -5.0, 50.0, 10.0]];
        let dressed = dress(&jpeg.into_inner(), &marks, &secrets, 90).expect("dressed");
        let back = image::load_from_memory(&dressed).expect("decode").to_rgb8();
        let near = |x, y, c: [u8; 3]| back.get_pixel(x, y).0.iter().zip(c).all(|(a, b)| a.abs_diff(b) < 40);
        assert!(near(10, 10, crate::PAINT) && near(30, 17, crate::PAINT) && near(14, 14, crate::PAINT), "painted");
        assert!(near(99, 0, crate::PAINT) && near(96, 4, crate::PAINT), "a box past the edge is clipped");
        let orange = back.get_pixel(62, 32).0;
        assert!(orange[0] > 200 && orange[2] < 90, "the other mark is kept: {orange:?}");
        assert!(near(5, 5, [255; 3]) && near(50, 55, [255; 3]) && near(34, 22, [255; 3]), "the rest is kept");
        let untouched = vec![1, 2, 3];
        assert_eq!(dress(&untouched, &[], &[], 90).expect("as is"), untouched);
    }
}
