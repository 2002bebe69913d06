//! Human checks (CAPTCHAs and challenge pages): the facts one in-page script gathers about a page (its
//! widgets, frames, scripts and response fields, through same-origin frames and open shadow roots), and
//! the pure decision of which check, if any, stands in the agent's way. No widget host needs to load:
//! the markup and the frames' addresses are enough.

use serde::{Deserialize, Serialize};
use url::Url;

/// What the page-side script reports (`browser/src/js/challenges.js`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageFacts {
    pub url: String,
    pub title: String,
    /// The document's HTTP status, when the browser says.
    pub status: Option<u16>,
    /// The start of the page's visible text.
    pub text: String,
    /// How long the page's visible text is in all.
    pub text_len: usize,
    /// The text of its h1–h3 headings.
    pub headings: String,
    /// Whether the markup carries Cloudflare's challenge markers (`cf-chl`, `_cf_chl_opt`).
    pub cf_chl: bool,
    /// Whether the document came with Cloudflare's `cf-mitigated: challenge` header (seen on navigation,
    /// not by the page's script).
    pub mitigated: bool,
    /// Elements with a widget's class (`g-recaptcha`, `h-captcha`, `cf-turnstile`, `grecaptcha-badge`).
    pub widgets: Vec<WidgetFact>,
    /// The addresses of the page's frames.
    pub frames: Vec<String>,
    /// The addresses of the page's scripts.
    pub scripts: Vec<String>,
    /// The response fields present (`g-recaptcha-response`, …) and whether they hold a token.
    pub responses: Vec<ResponseField>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WidgetFact {
    /// The element's class attribute.
    pub class: String,
    pub sitekey: Option<String>,
    pub action: Option<String>,
    pub size: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ResponseField {
    pub name: String,
    pub filled: bool,
}

/// The kinds of check told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChallengeKind {
    RecaptchaV2,
    RecaptchaV3,
    Hcaptcha,
    Turnstile,
    CloudflareInterstitial,
    Generic,
}

impl ChallengeKind {
    /// The name used in events and timelines.
    pub fn as_str(self) -> &'static str {
        match self {
            ChallengeKind::RecaptchaV2 => "recaptcha_v2",
            ChallengeKind::RecaptchaV3 => "recaptcha_v3",
            ChallengeKind::Hcaptcha => "hcaptcha",
            ChallengeKind::Turnstile => "turnstile",
            ChallengeKind::CloudflareInterstitial => "cloudflare_interstitial",
            ChallengeKind::Generic => "generic",
        }
    }

    /// How a person would name it.
    pub fn label(self) -> &'static str {
        match self {
            ChallengeKind::RecaptchaV2 => "reCAPTCHA v2",
            ChallengeKind::RecaptchaV3 => "reCAPTCHA v3",
            ChallengeKind::Hcaptcha => "hCaptcha",
            ChallengeKind::Turnstile => "Cloudflare Turnstile",
            ChallengeKind::CloudflareInterstitial => "Cloudflare \"Just a moment...\" interstitial",
            ChallengeKind::Generic => "\"verify you are human\"",
        }
    }

    /// The `type` a solver service is asked for; none for checks only a person can pass.
    pub fn solver_type(self) -> Option<&'static str> {
        match self {
            ChallengeKind::RecaptchaV2 => Some("recaptcha_v2"),
            ChallengeKind::RecaptchaV3 => Some("recaptcha_v3"),
            ChallengeKind::Hcaptcha => Some("hcaptcha"),
            ChallengeKind::Turnstile => Some("turnstile"),
            ChallengeKind::CloudflareInterstitial | ChallengeKind::Generic => None,
        }
    }

    /// The form field the widget puts its token in.
    pub fn response_field(self) -> Option<&'static str> {
        match self {
            ChallengeKind::RecaptchaV2 | ChallengeKind::RecaptchaV3 => Some("g-recaptcha-response"),
            ChallengeKind::Hcaptcha => Some("h-captcha-response"),
            ChallengeKind::Turnstile => Some("cf-turnstile-response"),
            ChallengeKind::CloudflareInterstitial | ChallengeKind::Generic => None,
        }
    }

    /// The widget's class, where the token's callback is registered (`data-callback`).
    pub fn widget_class(self) -> Option<&'static str> {
        match self {
            ChallengeKind::RecaptchaV2 | ChallengeKind::RecaptchaV3 => Some("g-recaptcha"),
            ChallengeKind::Hcaptcha => Some("h-captcha"),
            ChallengeKind::Turnstile => Some("cf-turnstile"),
            ChallengeKind::CloudflareInterstitial | ChallengeKind::Generic => None,
        }
    }
}

/// A check found on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub kind: ChallengeKind,
    pub sitekey: Option<String>,
    pub action: Option<String>,
}

impl Challenge {
    fn new(kind: ChallengeKind) -> Self {
        Challenge { kind, sitekey: None, action: None }
    }
}

/// Titles of Cloudflare's interstitial.
const INTERSTITIAL_TITLES: &[&str] = &["just a moment", "attention required", "checking your browser"];
/// Phrases of a generic "are you human" page.
const GENERIC_PHRASES: &[&str] = &[
    "verify you are human",
    "verify that you are human",
    "verify you're human",
    "confirm you are human",
    "confirm that you are human",
    "prove you are human",
    "are you a robot",
    "confirm you are not a robot",
    "i am not a robot",
    "complete the security check",
    "press and hold",
    "human verification",
];
/// Longest page text in which a phrase near the top makes the page a generic check (a long article that
/// mentions CAPTCHAs is not one).
const GENERIC_MAX_TEXT: usize = 4000;

/// The unsolved check on the page, if any (the interstitial first: it embeds a Turnstile frame).
pub fn detect(f: &PageFacts) -> Option<Challenge> {
    interstitial(f).or_else(|| widget(f)).or_else(|| generic(f))
}

fn interstitial(f: &PageFacts) -> Option<Challenge> {
    let title = f.title.to_lowercase();
    let titled = INTERSTITIAL_TITLES.iter().any(|t| title.contains(t));
    let refused = matches!(f.status, Some(403 | 429 | 503));
    let challenged = ((f.mitigated || titled || f.cf_chl) && refused) || (titled && f.cf_chl);
    challenged.then(|| Challenge::new(ChallengeKind::CloudflareInterstitial))
}

/// Whether the kind's response field holds a token (a solved widget, or one that was given a token).
fn solved(f: &PageFacts, kind: ChallengeKind) -> bool {
    let Some(field) = kind.response_field() else { return false };
    f.responses.iter().any(|r| r.name == field && r.filled)
}

fn has_class(class: &str, want: &str) -> bool {
    class.split_whitespace().any(|c| c == want)
}

fn widget(f: &PageFacts) -> Option<Challenge> {
    let v3_key = f.scripts.iter().find_map(|s| recaptcha_render_key(s));
    let mut found: Vec<Challenge> = Vec::new();
    for w in &f.widgets {
        let kind = if has_class(&w.class, "g-recaptcha") {
            ChallengeKind::RecaptchaV2
        } else if has_class(&w.class, "h-captcha") {
            ChallengeKind::Hcaptcha
        } else if has_class(&w.class, "cf-turnstile") {
            ChallengeKind::Turnstile
        } else {
            continue;
        };
        found.push(Challenge { kind, sitekey: w.sitekey.clone(), action: w.action.clone() });
    }
    for src in &f.frames {
        if let Some(c) = frame_challenge(src, v3_key.as_deref()) {
            found.push(c);
        }
    }
    if let Some(key) = &v3_key {
        // A page that loads reCAPTCHA v3 (`api.js?render=KEY`); its action is on a `.g-recaptcha` or the badge.
        let action = f.widgets.iter().find_map(|w| w.action.clone());
        found.push(Challenge { kind: ChallengeKind::RecaptchaV3, sitekey: Some(key.clone()), action });
    }
    // A v2 widget whose key is the v3 render key is the v3 one.
    for c in &mut found {
        if c.kind == ChallengeKind::RecaptchaV2 && v3_key.is_some() && c.sitekey == v3_key {
            c.kind = ChallengeKind::RecaptchaV3;
        }
    }
    let mut unsolved = found.into_iter().filter(|c| !solved(f, c.kind));
    let first = unsolved.next()?;
    // The same kind found twice (its element and its frame): the one that names a sitekey.
    let better = unsolved.find(|c| c.kind == first.kind && first.sitekey.is_none() && c.sitekey.is_some());
    Some(better.unwrap_or(first))
}

/// The key of `…/recaptcha/api.js?render=KEY` (reCAPTCHA v3), not `render=explicit`.
fn recaptcha_render_key(src: &str) -> Option<String> {
    let url = Url::parse(src).ok()?;
    if !is_recaptcha_host(url.host_str()?) || !url.path().contains("/recaptcha/") {
        return None;
    }
    let key = url.query_pairs().find(|(k, _)| k == "render")?.1.into_owned();
    (!key.is_empty() && key != "explicit" && key != "onload").then_some(key)
}

fn is_recaptcha_host(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    ["google.com", "recaptcha.net", "gstatic.com"].iter().any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

fn host_is(host: &str, domain: &str) -> bool {
    let host = host.to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// The check a frame's address shows.
fn frame_challenge(src: &str, v3_key: Option<&str>) -> Option<Challenge> {
    let url = Url::parse(src).ok()?;
    let host = url.host_str()?;
    let param = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let fragment_param = |name: &str| {
        let frag = url.fragment()?;
        url::form_urlencoded::parse(frag.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    };
    if (host_is(host, "google.com") || host_is(host, "recaptcha.net")) && url.path().starts_with("/recaptcha/") {
        let sitekey = param("k");
        let kind = match (v3_key, &sitekey) {
            (Some(v3), Some(k)) if v3 == k => ChallengeKind::RecaptchaV3,
            _ => ChallengeKind::RecaptchaV2,
        };
        return Some(Challenge { kind, sitekey, action: None });
    }
    if host_is(host, "hcaptcha.com") {
        let sitekey = fragment_param("sitekey").or_else(|| param("sitekey"));
        return Some(Challenge { kind: ChallengeKind::Hcaptcha, sitekey, action: None });
    }
    if host_is(host, "challenges.cloudflare.com") {
        // …/turnstile/if/ov2/av0/rcv0/0/<id>/<sitekey>/<theme>/<size>: the key is the segment that starts 0x.
        let sitekey = url.path_segments()?.find(|s| s.starts_with("0x")).map(str::to_owned);
        return Some(Challenge { kind: ChallengeKind::Turnstile, sitekey, action: None });
    }
    None
}

fn generic(f: &PageFacts) -> Option<Challenge> {
    let phrase = |text: &str| {
        let t = text.to_lowercase().replace('\u{2019}', "'");
        GENERIC_PHRASES.iter().any(|p| t.contains(p))
    };
    let short_page = f.text_len <= GENERIC_MAX_TEXT && phrase(&f.text);
    (phrase(&f.title) || phrase(&f.headings) || short_page).then(|| Challenge::new(ChallengeKind::Generic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChallengeKind::*;

    fn widget(class: &str, sitekey: &str) -> WidgetFact {
        WidgetFact { class: class.into(), sitekey: Some(sitekey.into()), ..Default::default() }
    }

    fn filled(name: &str) -> ResponseField {
        ResponseField { name: name.into(), filled: true }
    }

    fn empty(name: &str) -> ResponseField {
        ResponseField { name: name.into(), filled: false }
    }

    /// A case: what it is, the facts, and the kind and sitekey expected.
    type Case = (&'static str, PageFacts, Option<(ChallengeKind, Option<&'static str>)>);

    #[test]
    fn each_kind_is_told_apart_from_the_markup_alone() {
        let plain = PageFacts { title: "Shop".into(), text: "Buy things".into(), text_len: 10, ..Default::default() };
        let cases: Vec<Case> = vec![
            ("a plain page", plain.clone(), None),
            (
                "a .g-recaptcha element",
                PageFacts { widgets: vec![widget("g-recaptcha", "6Lc-key")], ..plain.clone() },
                Some((RecaptchaV2, Some("6Lc-key"))),
            ),
            (
                "only the reCAPTCHA frame",
                PageFacts {
                    frames: vec!["https://www.google.com/recaptcha/api2/anchor?ar=1&k=6Lc-frame&co=x&size=normal".into()],
                    ..plain.clone()
                },
                Some((RecaptchaV2, Some("6Lc-frame"))),
            ),
            (
                "a recaptcha.net frame",
                PageFacts {
                    frames: vec!["https://www.recaptcha.net/recaptcha/api2/anchor?k=6Lc-net".into()],
                    ..plain.clone()
                },
                Some((RecaptchaV2, Some("6Lc-net"))),
            ),
            (
                "reCAPTCHA v3 by its render key",
                PageFacts {
                    scripts: vec!["https://www.google.com/recaptcha/api.js?render=6Lc-v3".into()],
                    widgets: vec![WidgetFact {
                        class: "grecaptcha-badge".into(),
                        action: Some("login".into()),
                        ..Default::default()
                    }],
                    ..plain.clone()
                },
                Some((RecaptchaV3, Some("6Lc-v3"))),
            ),
            (
                "an explicit render is not v3",
                PageFacts {
                    scripts: vec!["https://www.google.com/recaptcha/api.js?render=explicit".into()],
                    ..plain.clone()
                },
                None,
            ),
            (
                "a .h-captcha element",
                PageFacts { widgets: vec![widget("h-captcha wide", "hc-key")], ..plain.clone() },
                Some((Hcaptcha, Some("hc-key"))),
            ),
            (
                "only the hCaptcha frame, key in its fragment",
                PageFacts {
                    frames: vec![
                        "https://newassets.hcaptcha.com/captcha/v1/abc/static/hcaptcha.html#frame=checkbox&sitekey=hc-frame"
                            .into(),
                    ],
                    ..plain.clone()
                },
                Some((Hcaptcha, Some("hc-frame"))),
            ),
            (
                "a .cf-turnstile element",
                PageFacts { widgets: vec![widget("cf-turnstile", "0x4AAA-key")], ..plain.clone() },
                Some((Turnstile, Some("0x4AAA-key"))),
            ),
            (
                "only the Turnstile frame",
                PageFacts {
                    frames: vec![
                        "https://challenges.cloudflare.com/cdn-cgi/challenge-platform/h/b/turnstile/if/ov2/av0/rcv0/0/xyz/0x4AAAframe/light/normal"
                            .into(),
                    ],
                    ..plain.clone()
                },
                Some((Turnstile, Some("0x4AAAframe"))),
            ),
            (
                "the interstitial by title and markers",
                PageFacts { title: "Just a moment...".into(), cf_chl: true, ..plain.clone() },
                Some((CloudflareInterstitial, None)),
            ),
            (
                "the interstitial served 403 with markers, a Turnstile frame inside",
                PageFacts {
                    status: Some(403),
                    cf_chl: true,
                    frames: vec!["https://challenges.cloudflare.com/cdn-cgi/challenge-platform/x/0x4k/a".into()],
                    ..plain.clone()
                },
                Some((CloudflareInterstitial, None)),
            ),
            (
                "a page served with cf-mitigated: challenge, whatever its markup",
                PageFacts { status: Some(403), mitigated: true, ..plain.clone() },
                Some((CloudflareInterstitial, None)),
            ),
            (
                "the same address reloaded with 200 once passed",
                PageFacts { status: Some(200), mitigated: true, ..plain.clone() },
                None,
            ),
            (
                "a \"Just a moment\" title alone on a 200 page is no interstitial",
                PageFacts { title: "Just a moment with our team".into(), status: Some(200), ..plain.clone() },
                None,
            ),
            (
                "a generic check by its heading",
                PageFacts {
                    headings: "Please verify you are human".into(),
                    text_len: 50_000,
                    ..plain.clone()
                },
                Some((Generic, None)),
            ),
            (
                "a short page that asks whether you are a robot",
                PageFacts { text: "Hold on. Are you a robot? Click below.".into(), text_len: 40, ..plain.clone() },
                Some((Generic, None)),
            ),
            (
                "a long article mentioning the phrase in its body is no check",
                PageFacts { text: "how sites verify you are human ...".into(), text_len: 20_000, ..plain.clone() },
                None,
            ),
            (
                "other frames are nothing",
                PageFacts {
                    frames: vec!["https://www.google.com/maps/embed?pb=1".into(), "about:blank".into()],
                    ..plain.clone()
                },
                None,
            ),
        ];
        for (what, facts, want) in cases {
            let got = detect(&facts).map(|c| (c.kind, c.sitekey));
            let want = want.map(|(k, s)| (k, s.map(str::to_owned)));
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_filled_response_field_means_solved_and_is_not_detected_again() {
        let page = PageFacts {
            widgets: vec![widget("g-recaptcha", "k")],
            responses: vec![empty("g-recaptcha-response")],
            ..Default::default()
        };
        assert_eq!(detect(&page).map(|c| c.kind), Some(RecaptchaV2));
        let solved = PageFacts { responses: vec![filled("g-recaptcha-response")], ..page.clone() };
        assert_eq!(detect(&solved), None);
        // Another kind's token does not solve this one.
        let other = PageFacts { responses: vec![filled("h-captcha-response")], ..page };
        assert_eq!(detect(&other).map(|c| c.kind), Some(RecaptchaV2));
        // Solved widgets give way to the next unsolved one.
        let two = PageFacts {
            widgets: vec![widget("g-recaptcha", "k"), widget("cf-turnstile", "0x1")],
            responses: vec![filled("g-recaptcha-response"), empty("cf-turnstile-response")],
            ..Default::default()
        };
        assert_eq!(detect(&two).map(|c| c.kind), Some(Turnstile));
    }

    #[test]
    fn a_widget_without_a_key_takes_it_from_its_frame_and_keeps_its_action() {
        let page = PageFacts {
            widgets: vec![WidgetFact {
                class: "cf-turnstile".into(),
                action: Some("signup".into()),
                ..Default::default()
            }],
            frames: vec!["https://challenges.cloudflare.com/turnstile/if/0/x/0x4KEY/light".into()],
            ..Default::default()
        };
        let c = detect(&page).expect("turnstile");
        assert_eq!((c.kind, c.sitekey.as_deref()), (Turnstile, Some("0x4KEY")));
    }

    #[test]
    fn the_kinds_name_their_solver_type_and_field() {
        assert_eq!(RecaptchaV3.solver_type(), Some("recaptcha_v3"));
        assert_eq!(Hcaptcha.response_field(), Some("h-captcha-response"));
        assert_eq!(Turnstile.response_field(), Some("cf-turnstile-response"));
        assert_eq!(CloudflareInterstitial.solver_type(), None);
        assert_eq!(Generic.response_field(), None);
        assert_eq!(
            serde_json::to_value(CloudflareInterstitial).ok(),
            Some(serde_json::json!("cloudflare_interstitial"))
        );
    }
}
