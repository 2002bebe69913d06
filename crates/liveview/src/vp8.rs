//! A real-time VP8 encoder over libvpx (Debian's `libvpx-dev`, through `env-libvpx-sys`), and the
//! RGB to I420 conversion that feeds it.
//!
//! Written here rather than taken from `vpx-encode` because that crate can neither force a keyframe
//! (a WebRTC viewer asks for one after a loss, with a PLI) nor set the speed and rate-control knobs a
//! live, low-latency stream needs; the unsafe surface is kept to this file.

use image::RgbImage;
use std::mem::MaybeUninit;
use std::os::raw::{c_int, c_ulong};
use std::ptr;
use vpx_sys::{
    vp8e_enc_control_id, vpx_codec_control_, vpx_codec_ctx_t, vpx_codec_cx_pkt_kind, vpx_codec_destroy,
    vpx_codec_enc_cfg_t, vpx_codec_enc_config_default, vpx_codec_enc_init_ver, vpx_codec_encode, vpx_codec_err_t,
    vpx_codec_get_cx_data, vpx_codec_iter_t, vpx_codec_vp8_cx, vpx_image_t, vpx_img_fmt, vpx_img_wrap, vpx_kf_mode,
    vpx_rc_mode, VPX_DL_REALTIME, VPX_EFLAG_FORCE_KF, VPX_ENCODER_ABI_VERSION, VPX_FRAME_IS_KEY,
};

/// Why an encoder could not be made or a frame not encoded.
#[derive(Debug, thiserror::Error)]
pub enum Vp8Error {
    #[error("libvpx: {0} failed ({1:?})")]
    Call(&'static str, vpx_codec_err_t),
    #[error("a frame of {got} bytes is not a {width} x {height} I420 picture")]
    Size { got: usize, width: u32, height: u32 },
}

/// One encoded VP8 frame, as RTP packetisation wants it (one whole frame per write).
#[derive(Debug, Clone)]
pub struct EncodedFrame {
    pub data: Vec<u8>,
    pub key: bool,
}

/// A libvpx VP8 encoder set up for a live view: one pass, no lag, constant bit rate, fastest speed.
pub struct Vp8Encoder {
    ctx: vpx_codec_ctx_t,
    width: u32,
    height: u32,
    pts: i64,
}

// SAFETY: the context is owned by this value alone and libvpx keeps no thread-affine state in it;
// it is only ever used through `&mut self`.
unsafe impl Send for Vp8Encoder {}

fn check(what: &'static str, err: vpx_codec_err_t) -> Result<(), Vp8Error> {
    if err == vpx_codec_err_t::VPX_CODEC_OK {
        Ok(())
    } else {
        Err(Vp8Error::Call(what, err))
    }
}

impl Vp8Encoder {
    /// An encoder of `width` x `height` (both even) pictures at about `bitrate_kbps`.
    pub fn new(width: u32, height: u32, bitrate_kbps: u32) -> Result<Self, Vp8Error> {
        // SAFETY: plain C calls on zeroed structs that libvpx fills in (the documented usage); the
        // context is destroyed in Drop only after a successful init.
        unsafe {
            let iface = vpx_codec_vp8_cx();
            // Some fields are C enums without a zero value: the struct is only read once libvpx filled it.
            let mut cfg = MaybeUninit::<vpx_codec_enc_cfg_t>::zeroed();
            check("config_default", vpx_codec_enc_config_default(iface, cfg.as_mut_ptr(), 0))?;
            let mut cfg = cfg.assume_init();
            cfg.g_w = width;
            cfg.g_h = height;
            // Presentation times are in milliseconds.
            cfg.g_timebase.num = 1;
            cfg.g_timebase.den = 1000;
            cfg.rc_target_bitrate = bitrate_kbps;
            cfg.rc_end_usage = vpx_rc_mode::VPX_CBR;
            cfg.rc_min_quantizer = 4;
            cfg.rc_max_quantizer = 56;
            cfg.g_lag_in_frames = 0;
            cfg.g_threads = 1;
            cfg.g_error_resilient = 1;
            cfg.rc_dropframe_thresh = 0;
            // A keyframe at least every 10 s at the live view's top rate, so a player that missed one
            // recovers even without asking.
            cfg.kf_mode = vpx_kf_mode::VPX_KF_AUTO;
            cfg.kf_max_dist = 250;
            let mut ctx = MaybeUninit::<vpx_codec_ctx_t>::zeroed();
            check(
                "enc_init",
                vpx_codec_enc_init_ver(ctx.as_mut_ptr(), iface, &cfg, 0, VPX_ENCODER_ABI_VERSION as c_int),
            )?;
            let ctx = ctx.assume_init();
            let mut encoder = Vp8Encoder { ctx, width, height, pts: 0 };
            // Speed 10 of 16 for real time: mostly-still screen content does not need more effort.
            check(
                "set_cpuused",
                vpx_codec_control_(&mut encoder.ctx, vp8e_enc_control_id::VP8E_SET_CPUUSED as c_int, 10 as c_int),
            )?;
            Ok(encoder)
        }
    }

    /// Encodes one I420 picture taken at `at_ms` (milliseconds, increasing); `keyframe` forces an
    /// intra frame. Returns the frames libvpx produced (normally exactly one).
    pub fn encode(&mut self, i420: &[u8], at_ms: i64, keyframe: bool) -> Result<Vec<EncodedFrame>, Vp8Error> {
        let (w, h) = (self.width as usize, self.height as usize);
        if i420.len() != w * h * 3 / 2 {
            return Err(Vp8Error::Size { got: i420.len(), width: self.width, height: self.height });
        }
        self.pts = at_ms.max(self.pts + 1);
        let flags = if keyframe { VPX_EFLAG_FORCE_KF as _ } else { 0 };
        let mut out = Vec::new();
        // SAFETY: `image` only borrows `i420` (checked to be a whole picture) for the duration of the
        // encode call, which copies what it needs; packets are copied out before the next call.
        unsafe {
            let mut image = MaybeUninit::<vpx_image_t>::zeroed();
            let wrapped = vpx_img_wrap(
                image.as_mut_ptr(),
                vpx_img_fmt::VPX_IMG_FMT_I420,
                self.width,
                self.height,
                1,
                i420.as_ptr() as *mut u8,
            );
            if wrapped.is_null() {
                return Err(Vp8Error::Call("img_wrap", vpx_codec_err_t::VPX_CODEC_INVALID_PARAM));
            }
            check("encode", vpx_codec_encode(&mut self.ctx, wrapped, self.pts, 1, flags, VPX_DL_REALTIME as c_ulong))?;
            let mut iter: vpx_codec_iter_t = ptr::null();
            loop {
                let pkt = vpx_codec_get_cx_data(&mut self.ctx, &mut iter);
                if pkt.is_null() {
                    break;
                }
                if (*pkt).kind == vpx_codec_cx_pkt_kind::VPX_CODEC_CX_FRAME_PKT {
                    let f = (*pkt).data.frame;
                    let data = std::slice::from_raw_parts(f.buf as *const u8, f.sz as usize).to_vec();
                    out.push(EncodedFrame { data, key: f.flags & VPX_FRAME_IS_KEY != 0 });
                }
            }
        }
        Ok(out)
    }
}

impl Drop for Vp8Encoder {
    fn drop(&mut self) {
        // SAFETY: the context was initialised in `new` (a failed init never builds a Vp8Encoder).
        unsafe {
            vpx_codec_destroy(&mut self.ctx);
        }
    }
}

/// The picture as planar I420 (BT.601, studio range), the layout VP8 encodes; width and height even.
pub fn rgb_to_i420(rgb: &RgbImage) -> Vec<u8> {
    let (w, h) = (rgb.width() as usize, rgb.height() as usize);
    let mut out = vec![0u8; w * h * 3 / 2];
    let (y_plane, chroma) = out.split_at_mut(w * h);
    let (u_plane, v_plane) = chroma.split_at_mut(w * h / 4);
    let px = rgb.as_raw();
    // Done for every recorded and WebRTC frame: iterators over exact chunks, so no index is checked.
    for (y, p) in y_plane.iter_mut().zip(px.chunks_exact(3)) {
        let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
        *y = (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16) as u8;
    }
    if w < 2 {
        return out;
    }
    let rows = px.chunks_exact(w * 3);
    let pairs = rows.clone().step_by(2).zip(rows.skip(1).step_by(2));
    let chroma_rows = u_plane.chunks_exact_mut(w / 2).zip(v_plane.chunks_exact_mut(w / 2));
    for ((top, bottom), (u_row, v_row)) in pairs.zip(chroma_rows) {
        let blocks = top.chunks_exact(6).zip(bottom.chunks_exact(6));
        for ((t, b), (u, v)) in blocks.zip(u_row.iter_mut().zip(v_row.iter_mut())) {
            // The average of the 2 x 2 block.
            let r = (i32::from(t[0]) + i32::from(t[3]) + i32::from(b[0]) + i32::from(b[3])) / 4;
            let g = (i32::from(t[1]) + i32::from(t[4]) + i32::from(b[1]) + i32::from(b[4])) / 4;
            let bl = (i32::from(t[2]) + i32::from(t[5]) + i32::from(b[2]) + i32::from(b[5])) / 4;
            *u = (((-38 * r - 74 * g + 112 * bl + 128) >> 8) + 128).clamp(0, 255) as u8;
            *v = (((112 * r - 94 * g - 18 * bl + 128) >> 8) + 128).clamp(0, 255) as u8;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgb;

    /// The conversion written plainly, index by index: the fast one must give the same bytes.
    fn reference_i420(rgb: &RgbImage) -> Vec<u8> {
        let (w, h) = (rgb.width() as usize, rgb.height() as usize);
        let mut out = vec![0u8; w * h * 3 / 2];
        let (y_plane, chroma) = out.split_at_mut(w * h);
        let (u_plane, v_plane) = chroma.split_at_mut(w * h / 4);
        let px = rgb.as_raw();
        for row in 0..h {
            for col in 0..w {
                let i = (row * w + col) * 3;
                let (r, g, b) = (i32::from(px[i]), i32::from(px[i + 1]), i32::from(px[i + 2]));
                y_plane[row * w + col] = (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16) as u8;
            }
        }
        for row in (0..h).step_by(2) {
            for col in (0..w).step_by(2) {
                // The average of the 2 x 2 block.
                let (mut r, mut g, mut b) = (0i32, 0i32, 0i32);
                for (dr, dc) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let i = ((row + dr) * w + col + dc) * 3;
                    r += i32::from(px[i]);
                    g += i32::from(px[i + 1]);
                    b += i32::from(px[i + 2]);
                }
                let (r, g, b) = (r / 4, g / 4, b / 4);
                let c = (row / 2) * (w / 2) + col / 2;
                u_plane[c] = (((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128).clamp(0, 255) as u8;
                v_plane[c] = (((112 * r - 94 * g - 18 * b + 128) >> 8) + 128).clamp(0, 255) as u8;
            }
        }
        out
    }

    #[test]
    fn the_conversion_gives_the_plain_conversions_bytes() {
        let img = RgbImage::from_fn(64, 38, |x, y| Rgb([(x * 4) as u8, (y * 6) as u8, ((x * y) % 251) as u8]));
        assert_eq!(rgb_to_i420(&img), reference_i420(&img));
    }

    #[test]
    fn colours_convert_to_their_bt601_values() {
        let img = RgbImage::from_pixel(4, 2, Rgb([255, 0, 0]));
        let yuv = rgb_to_i420(&img);
        assert_eq!(yuv.len(), 12);
        // Pure red: Y 82, U 90, V 240 in studio range.
        assert!(yuv[..8].iter().all(|&y| y.abs_diff(82) <= 1), "{yuv:?}");
        assert!(yuv[8..10].iter().all(|&u| u.abs_diff(90) <= 1), "{yuv:?}");
        assert!(yuv[10..].iter().all(|&v| v.abs_diff(240) <= 1), "{yuv:?}");
    }

    #[test]
    fn the_first_frame_is_a_keyframe_and_one_can_be_forced() {
        let mut enc = Vp8Encoder::new(64, 48, 300).expect("encoder");
        let picture = rgb_to_i420(&RgbImage::from_pixel(64, 48, Rgb([10, 200, 30])));
        let first = enc.encode(&picture, 0, false).expect("encode");
        assert_eq!(first.len(), 1);
        assert!(first[0].key);
        // A VP8 keyframe starts with the 3-byte frame tag then the start code 9d 01 2a.
        assert_eq!(&first[0].data[3..6], &[0x9d, 0x01, 0x2a]);
        let second = enc.encode(&picture, 40, false).expect("encode");
        assert!(second.iter().all(|f| !f.key));
        let forced = enc.encode(&picture, 80, true).expect("encode");
        assert!(forced[0].key);
        assert!(matches!(enc.encode(&picture[1..], 120, false), Err(Vp8Error::Size { .. })));
    }

    #[test]
    fn a_repeated_still_picture_costs_a_few_bytes() {
        // What a WebRTC viewer of a still page gets once a second: the same composed picture again.
        let mut enc = Vp8Encoder::new(1024, 600, 1500).expect("encoder");
        let band = crate::compose::draw_band(&crate::compose::BandInfo::default());
        let picture = rgb_to_i420(&crate::compose::compose_rgb(&band, None).expect("compose"));
        let first = enc.encode(&picture, 0, false).expect("encode");
        let mut repeats = Vec::new();
        for i in 1..=12 {
            let again = enc.encode(&picture, i * 1000, false).expect("encode");
            assert!(again.iter().all(|f| !f.key));
            repeats.push(again.iter().map(|f| f.data.len()).sum::<usize>());
        }
        let key = first[0].data.len();
        // Once the rate control has settled (a few frames), a repeat is some hundred bytes: under 1 KB/s.
        assert!(repeats[5..].iter().all(|&n| n < 1024), "keyframe {key} bytes, repeats {repeats:?}");
    }
}
