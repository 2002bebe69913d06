//! When the model sees the page: the task parameter `vision` (`off`, `auto`, `on`) and the pure rule that
//! decides, turn by turn, whether a screenshot goes beside the text observation (docs/agent.md, "Vision").

use crate::error::ApiError;
use crate::fields::invalid_params;

/// The task and session parameter `vision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VisionMode {
    /// No request holds an image.
    Off,
    /// A screenshot only when it helps (see [`wants_image`]).
    #[default]
    Auto,
    /// Every turn carries a screenshot.
    On,
}

impl VisionMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            VisionMode::Off => "off",
            VisionMode::Auto => "auto",
            VisionMode::On => "on",
        }
    }

    /// A `vision` value: one of the three names, else 400 `INVALID_PARAMS`.
    pub fn parse(v: &serde_json::Value) -> Result<VisionMode, ApiError> {
        use crate::params::decl::Named;
        v.as_str()
            .and_then(Self::named)
            .ok_or_else(|| invalid_params(format!("vision must be one of {}; got {v}", Self::quoted_names())))
    }
}

/// Share of the viewport that pictures (canvas, img, video, svg) must cover for `auto` to send one.
pub const PICTURE_SHARE: f64 = 0.3;
/// At most this many elements in the visible part of the text observation is "few elements".
pub const FEW_ELEMENTS: usize = 3;

/// What `auto` weighs on one turn; all of it is known before the screenshot is taken.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cues {
    /// Share of the viewport covered by pictures (0 to 1).
    pub picture_share: f64,
    /// Elements the text observation names in the visible area.
    pub elements: usize,
    /// The page shows nothing at all (a blank tab): a picture of it says nothing either.
    pub blank: bool,
    /// The last step acted, and the text observation is the same as before it.
    pub unchanged: bool,
    /// The model asked for a screenshot (the `screenshot` tool) on the last step.
    pub asked: bool,
}

/// Whether this turn carries a screenshot. `takes_images` is the operator's `--llm-vision`: a model that
/// takes no images never gets one, whatever the task asks.
pub fn wants_image(mode: VisionMode, takes_images: bool, cues: &Cues) -> bool {
    if !takes_images {
        return false;
    }
    match mode {
        VisionMode::Off => false,
        VisionMode::On => true,
        VisionMode::Auto => {
            cues.asked
                || (!cues.blank
                    && (cues.picture_share >= PICTURE_SHARE || cues.elements <= FEW_ELEMENTS || cues.unchanged))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use VisionMode::*;

    #[test]
    fn the_field_takes_three_names_and_nothing_else() {
        use crate::params::decl::BodyField;
        let read = |v: serde_json::Value| VisionMode::read(&crate::fields::Fields::of(&v, "body").unwrap(), "vision");
        assert_eq!(read(json!({})).unwrap(), None);
        assert_eq!(read(json!({"vision": null})).unwrap(), None);
        assert_eq!(read(json!({"vision": "off"})).unwrap(), Some(Off));
        assert_eq!(read(json!({"vision": "auto"})).unwrap(), Some(Auto));
        assert_eq!(read(json!({"vision": "on"})).unwrap(), Some(On));
        for bad in [json!("ON"), json!("yes"), json!(true), json!(1), json!(""), json!(["on"])] {
            let e = read(json!({ "vision": bad })).expect_err("rejected");
            assert_eq!(e.code, crate::ErrorCode::InvalidParams, "{bad}");
        }
        assert_eq!(VisionMode::default(), Auto);
    }

    #[test]
    fn the_rule_as_a_table() {
        let busy = Cues { picture_share: 0.1, elements: 30, ..Cues::default() };
        let rows: &[(VisionMode, bool, Cues, bool, &str)] = &[
            (On, true, busy, true, "on: every turn"),
            (On, true, Cues { blank: true, ..busy }, true, "on: even a blank page"),
            (Off, true, Cues { picture_share: 1.0, asked: true, ..busy }, false, "off: never"),
            (On, false, busy, false, "a model without images: never"),
            (Auto, false, Cues { asked: true, ..busy }, false, "a model without images: not even asked"),
            (Auto, true, busy, false, "auto: a busy text page needs no picture"),
            (Auto, true, Cues { picture_share: 0.3, ..busy }, true, "auto: pictures cover 30%"),
            (Auto, true, Cues { picture_share: 0.29, ..busy }, false, "auto: pictures under 30%"),
            (Auto, true, Cues { elements: 3, ..busy }, true, "auto: three elements are few"),
            (Auto, true, Cues { elements: 4, ..busy }, false, "auto: four are not"),
            (Auto, true, Cues { unchanged: true, ..busy }, true, "auto: the last action changed nothing"),
            (Auto, true, Cues { asked: true, ..busy }, true, "auto: the model asked"),
            (Auto, true, Cues { blank: true, elements: 0, ..busy }, false, "auto: a blank tab shows nothing"),
            (Auto, true, Cues { blank: true, asked: true, ..busy }, true, "auto: asked, even on a blank tab"),
        ];
        for (mode, takes, cues, want, why) in rows {
            assert_eq!(wants_image(*mode, *takes, cues), *want, "{why}");
        }
    }
}
