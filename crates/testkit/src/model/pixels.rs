//! What the scripted model "sees" in a picture: the centre of the pixels of one colour in the latest image
//! of a request (an OpenAI `image_url` data URL or an Anthropic base64 `image` block), so a scripted click
//! can be computed from the screenshot the service sent, as a model looking at it would.

use base64::Engine;
use serde_json::Value;

/// How far (per channel) a pixel may be from the colour asked for: JPEG shifts colours a little.
const TOLERANCE: i32 = 60;

/// The latest image of a request, decoded.
pub(crate) fn latest_image(request: &Value) -> Option<image::RgbImage> {
    let messages = request["messages"].as_array()?;
    let data = messages.iter().rev().find_map(|m| {
        m["content"].as_array()?.iter().rev().find_map(|part| match part["type"].as_str()? {
            "image_url" => part["image_url"]["url"].as_str()?.split_once("base64,").map(|(_, d)| d.to_owned()),
            "image" => part["source"]["data"].as_str().map(str::to_owned),
            _ => None,
        })
    })?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).ok()?;
    Some(image::load_from_memory(&bytes).ok()?.to_rgb8())
}

/// The pixels within [`TOLERANCE`] of `rgb` (`"e00000"`); `None` for a colour that is not six hex digits.
pub(crate) fn pixels_of<'a>(image: &'a image::RgbImage, rgb: &str) -> Option<impl Iterator<Item = (u32, u32)> + 'a> {
    let want = u32::from_str_radix(rgb, 16).ok().filter(|_| rgb.len() == 6)?;
    let want = [(want >> 16) as i32 & 0xff, (want >> 8) as i32 & 0xff, want as i32 & 0xff];
    Some(image.enumerate_pixels().filter_map(move |(x, y, p)| {
        p.0.iter().zip(want).all(|(&c, w)| (i32::from(c) - w).abs() <= TOLERANCE).then_some((x, y))
    }))
}

/// The centre (x, y) of the pixels within [`TOLERANCE`] of `rgb` (`"e00000"`), in image pixels.
pub(crate) fn centre_of(image: &image::RgbImage, rgb: &str) -> Option<(u32, u32)> {
    let (mut sx, mut sy, mut n) = (0u64, 0u64, 0u64);
    for (x, y) in pixels_of(image, rgb)? {
        sx += u64::from(x);
        sy += u64::from(y);
        n += 1;
    }
    (n > 0).then(|| ((sx / n) as u32, (sy / n) as u32))
}

/// The top-left corner (least x, least y) of the pixels within [`TOLERANCE`] of `rgb`.
pub(crate) fn top_left_of(image: &image::RgbImage, rgb: &str) -> Option<(u32, u32)> {
    pixels_of(image, rgb)?.fold(None, |acc, (x, y)| match acc {
        None => Some((x, y)),
        Some((ax, ay)) => Some((ax.min(x), ay.min(y))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_centre_of_a_coloured_block_is_found_and_a_missing_colour_is_none() {
        let mut img = image::RgbImage::from_pixel(100, 50, image::Rgb([240, 240, 240]));
        for x in 60..70 {
            for y in 10..30 {
                img.put_pixel(x, y, image::Rgb([224, 0, 0]));
            }
        }
        assert_eq!(centre_of(&img, "e00000"), Some((64, 19)));
        assert_eq!(centre_of(&img, "0000e0"), None);
        assert_eq!(centre_of(&img, "nope"), None);
    }
}
