//! Reading the marks (set-of-marks labels) on a picture the service sent, as a model looking at it would:
//! the number on the label at the top-left of a coloured region. A label is black 3 × 5 digits (each font
//! pixel 2 × 2 image pixels) on orange, in a one-pixel black frame; this reader knows the digits' shapes the
//! way a model knows what digits look like, and reads them from the JPEG's brightness alone.

use image::RgbImage;

/// The labels' background colour, as the service documents it (`docs/agent.md`, "Vision").
pub const MARK_FILL: &str = "ffa000";

/// The digits 0 to 9, five rows of three font pixels each (bit 2 is the left column).
const DIGITS: [[u8; 5]; 10] = [
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
/// A label's height: frame, padding, 10 pixels of digits, padding, frame.
const HEIGHT: u32 = 14;
/// Brightness below which a pixel is ink (the frame, a digit); the orange is about 170, white 255.
const INK: f64 = 95.0;

fn luma(image: &RgbImage, x: u32, y: u32) -> f64 {
    match image.get_pixel_checked(x, y) {
        Some(p) => 0.299 * f64::from(p.0[0]) + 0.587 * f64::from(p.0[1]) + 0.114 * f64::from(p.0[2]),
        None => 255.0,
    }
}

/// How well a label's frame fits with its top-left at (x, y): pixels of the left and top frame lines that are
/// dark, plus pixels of the padding just inside them that are light.
fn frame_fit(image: &RgbImage, x: u32, y: u32) -> usize {
    let dark = |x, y| luma(image, x, y) < INK;
    let left = (y..y + HEIGHT).filter(|&yy| dark(x, yy)).count();
    let top = (x..x + 10).filter(|&xx| dark(xx, y)).count();
    let inside = (y + 2..y + HEIGHT - 2).filter(|&yy| !dark(x + 1, yy)).count();
    left + top + inside
}

/// The number on the label whose frame's top-left is near (x, y) (within 3 pixels).
fn read_label(image: &RgbImage, x: u32, y: u32) -> Option<u64> {
    let candidates = (x.saturating_sub(3)..=x + 3).flat_map(|cx| (y.saturating_sub(3)..=y + 3).map(move |cy| (cx, cy)));
    let (x, y) = candidates.max_by_key(|&(cx, cy)| frame_fit(image, cx, cy))?;
    // The right frame line: a dark column the label's height, where a gap between digits would be light.
    let dark_column = |cx: u32| (y + 2..y + HEIGHT - 2).filter(|&yy| luma(image, cx, yy) < INK).count() >= 8;
    let digits = (1..=6u32).find(|n| dark_column(x + 8 * n + 1))?;
    let mut number = 0u64;
    for k in 0..digits {
        let gx = x + 2 + 8 * k;
        let glyph: Vec<u8> = (0..5u32)
            .map(|row| {
                (0..3u32).fold(0u8, |bits, col| {
                    let (px, py) = (gx + 2 * col, y + 2 + 2 * row);
                    let mean = (luma(image, px, py)
                        + luma(image, px + 1, py)
                        + luma(image, px, py + 1)
                        + luma(image, px + 1, py + 1))
                        / 4.0;
                    (bits << 1) | u8::from(mean < INK)
                })
            })
            .collect();
        let digit = DIGITS.iter().position(|g| g[..] == glyph[..])?;
        number = number * 10 + digit as u64;
    }
    Some(number)
}

/// The number on the label at the top-left of the region of colour `rgb` (`"00b000"`): the element's
/// index, as the picture shows it.
pub(crate) fn mark_on(image: &RgbImage, rgb: &str) -> Option<u64> {
    let (x, y) = super::pixels::top_left_of(image, rgb)?;
    read_label(image, x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A label drawn the way the service documents it, `number` at (x, y).
    fn draw(image: &mut RgbImage, x: u32, y: u32, number: u64) {
        let digits = number.to_string();
        let w = 8 * digits.len() as u32 + 2;
        let put = |image: &mut RgbImage, x0: u32, y0: u32, w: u32, h: u32, c: [u8; 3]| {
            for yy in y0..y0 + h {
                for xx in x0..x0 + w {
                    image.put_pixel(xx, yy, image::Rgb(c));
                }
            }
        };
        put(image, x, y, w, HEIGHT, [0, 0, 0]);
        put(image, x + 1, y + 1, w - 2, HEIGHT - 2, [255, 160, 0]);
        for (k, d) in digits.bytes().enumerate() {
            for (row, bits) in DIGITS[usize::from(d - b'0')].iter().enumerate() {
                for col in 0..3u32 {
                    if bits & (0b100 >> col) != 0 {
                        put(image, x + 2 + 8 * k as u32 + 2 * col, y + 2 + 2 * row as u32, 2, 2, [0, 0, 0]);
                    }
                }
            }
        }
    }

    #[test]
    fn the_number_at_a_coloured_region_is_read_through_a_jpeg() {
        let mut img = RgbImage::from_pixel(300, 120, image::Rgb([255, 255, 255]));
        for x in 100..260 {
            for y in 30..90 {
                img.put_pixel(x, y, image::Rgb([0, 176, 0]));
            }
        }
        draw(&mut img, 100, 30, 1_234_567_890 % 1_000_000);
        draw(&mut img, 10, 10, 8);
        let mut jpeg = std::io::Cursor::new(Vec::new());
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 50).encode_image(&img).expect("jpeg");
        let back = image::load_from_memory(&jpeg.into_inner()).expect("decode").to_rgb8();
        assert_eq!(mark_on(&back, "00b000"), Some(567_890));
        assert_eq!(read_label(&back, 11, 9), Some(8));
        assert_eq!(mark_on(&back, "0000e0"), None);
    }
}
