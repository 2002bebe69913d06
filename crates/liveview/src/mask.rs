//! Keeping secret values out of the band. The band is text the service draws itself (tab titles, the
//! address bar), so every viewer of every scope would read a secret typed into a search field back in the
//! URL. Each text is masked with the secrets of the session and of every task it ran, in every form a
//! URL can carry a value: raw, percent-encoded (either hex case, any set of characters escaped), and
//! form-encoded with `+` for spaces, also when encoded twice (a URL inside a query parameter).

use crate::compose::BandInfo;
use percent_encoding::percent_decode_str;
use webpilot_core::secrets::Secrets;

/// How many levels of percent-encoding are looked through (a URL in a parameter of a URL in a parameter).
const MAX_DECODES: usize = 3;

/// `text` with every value of `secrets` replaced by its `<secret:NAME>`. When a value only shows once
/// the text is percent-decoded, the decoded text is what is drawn, masked; otherwise the text as it was.
pub fn mask_text(secrets: &[Secrets], text: &str) -> String {
    if secrets.iter().all(Secrets::is_empty) {
        return text.to_owned();
    }
    let mask = |t: &str| secrets.iter().fold(t.to_owned(), |acc, s| s.mask(&acc));
    let shown = |t: &str| secrets.iter().any(|s| s.shown_in(t));
    let mut out = mask(text);
    let mut probe = out.clone();
    for _ in 0..MAX_DECODES {
        let plain = percent_decode_str(&probe).decode_utf8_lossy().into_owned();
        let form = percent_decode_str(&probe.replace('+', " ")).decode_utf8_lossy().into_owned();
        if let Some(revealing) = [&plain, &form].into_iter().find(|t| shown(t)) {
            out = mask(revealing);
            probe = out.clone();
            continue;
        }
        if plain == probe {
            break;
        }
        probe = plain;
    }
    out
}

impl BandInfo {
    /// The band with every tab's URL and title masked.
    pub fn masked(mut self, secrets: &[Secrets]) -> BandInfo {
        if secrets.iter().all(Secrets::is_empty) {
            return self;
        }
        for tab in &mut self.tabs {
            tab.url = mask_text(secrets, &tab.url);
            tab.title = mask_text(secrets, &tab.title);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use webpilot_browser::TabInfo;

    fn secrets(raw: serde_json::Value) -> Secrets {
        Secrets::parse(&raw).expect("secrets")
    }

    #[test]
    fn a_value_is_masked_in_every_form_a_url_carries_it() {
        let s = [secrets(json!({ "pw": "hunter 2&Sécret/x" }))];
        for url in [
            "https://a.test/?q=hunter 2&Sécret/x",
            "https://a.test/?q=hunter+2%26S%C3%A9cret%2Fx",
            "https://a.test/?q=hunter%202%26S%C3%A9cret%2Fx",
            "https://a.test/?q=hunter%202%26S%c3%a9cret%2fx",
            "https://a.test/hunter%202&S%C3%A9cret/x",
            "https://a.test/?next=%2F%3Fq%3Dhunter%25202%2526S%25C3%25A9cret%252Fx",
        ] {
            let masked = mask_text(&s, url);
            assert!(masked.contains("<secret:pw>"), "{url} -> {masked}");
            let lower = masked.to_lowercase();
            assert!(
                !lower.contains("hunter") && !lower.contains("écret") && !lower.contains("a9cret"),
                "{url} -> {masked}"
            );
        }
        // A URL without the value is drawn as it is, encoding and all.
        let plain = "https://a.test/?q=caf%C3%A9+au+lait";
        assert_eq!(mask_text(&s, plain), plain);
        assert_eq!(mask_text(&[], plain), plain);
    }

    #[test]
    fn every_tab_url_and_title_of_the_band_is_masked_with_every_task_secrets() {
        let session = secrets(json!({ "pw": "hunter2-SuperSecret" }));
        let later_task = secrets(json!({ "pw": "another-0ne", "code": "4711-0815" }));
        let tab =
            |index, url: &str, title: &str| TabInfo { index, url: url.into(), title: title.into(), active: index == 1 };
        let info = BandInfo {
            tabs: vec![
                tab(0, "http://127.0.0.1:8/search?q=hunter2-SuperSecret", "Results for hunter2-SuperSecret"),
                tab(1, "http://127.0.0.1:8/search?q=another-0ne+4711-0815", ""),
            ],
        };
        let masked = info.clone().masked(&[session.clone(), later_task]);
        assert_eq!(masked.tabs[0].url, "http://127.0.0.1:8/search?q=<secret:pw>");
        assert_eq!(masked.tabs[0].title, "Results for <secret:pw>");
        assert_eq!(masked.tabs[1].url, "http://127.0.0.1:8/search?q=<secret:pw>+<secret:code>");
        let drawn = format!("{masked:?}");
        assert!(!drawn.contains("hunter2") && !drawn.contains("another-0ne") && !drawn.contains("4711"), "{drawn}");
        // Without secrets the band is unchanged.
        assert_eq!(info.clone().masked(&[Secrets::default()]), info);
    }
}
