//! Parses explicit step-by-step English instructions into steps the offline planner can execute.
//! Steps are separated by new lines, `;`, `. `, `then`, and by `and` or a comma when a step's verb
//! follows; quoted text ("..." or '...') is kept whole. A URL ends at whitespace or trailing punctuation.

/// One executable step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Navigate(String),
    Back,
    Click(String),
    Type {
        text: String,
        field: String,
    },
    /// Sets the session's file `name` on the file input `field`.
    Upload {
        name: String,
        field: String,
    },
    Press(String),
    Scroll(i64),
    Wait(u64),
    WaitForText(String),
    ReportTitle,
    ReportUrl,
    ReportText(String),
    AskHuman(String),
}

/// The longest wait a step may ask for.
pub const MAX_WAIT_MS: u64 = 60_000;

/// A step the planner does not understand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub index: usize,
    pub step: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the offline planner does not understand step {} ({:?}); it follows explicit steps such as: \
             open <url>; click \"<text>\"; type \"<text>\" into \"<field>\"; \
             upload \"<file name>\" into \"<field>\"; press Enter; scroll down; \
             wait 2 seconds; wait for \"<text>\"; go back; report the title; report the url; \
             report the text of \"<selector or text>\"; ask the human \"<question>\"",
            self.index, self.step
        )
    }
}

/// Splits the instructions into steps and parses each.
pub fn parse(instructions: &str) -> Result<Vec<Step>, ParseError> {
    let parse_all = |parts: Vec<String>| -> Result<Vec<Step>, ParseError> {
        if parts.is_empty() {
            return Err(ParseError { index: 1, step: instructions.trim().to_owned() });
        }
        parts
            .iter()
            .enumerate()
            .map(|(i, s)| parse_step(s).ok_or_else(|| ParseError { index: i + 1, step: s.clone() }))
            .collect()
    };
    // "and" and commas before a verb usually start a step, but not always ("click Read and Accept"):
    // when the finer split leaves a step that cannot be read, the split without them is tried too.
    match parse_all(split_steps(instructions, true)) {
        Ok(steps) => Ok(steps),
        Err(first) => parse_all(split_steps(instructions, false)).map_err(|_| first),
    }
}

/// Splits on separators outside quotes, dropping list markers and filler words.
fn split_steps(text: &str, at_verbs: bool) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) if c == q => {
                quote = None;
                cur.push(c);
            }
            Some(_) => cur.push(c),
            None if c == '"' || (c == '\'' && starts_quote(&chars, i)) => {
                quote = Some(c);
                cur.push(c);
            }
            None if c == '\n' || c == ';' => parts.push(std::mem::take(&mut cur)),
            // A '.' ends a sentence unless it ends a list marker such as "2.".
            None if c == '.'
                && chars.get(i + 1).is_none_or(|n| n.is_whitespace())
                && !cur.trim().chars().all(|d| d.is_ascii_digit()) =>
            {
                parts.push(std::mem::take(&mut cur))
            }
            None if c == ',' && (next_word_is(&chars, i + 1, "then") || at_verbs && next_is_step(&chars, i + 1)) => {
                parts.push(std::mem::take(&mut cur))
            }
            None if c.is_whitespace() && next_word_is(&chars, i + 1, "then") && !cur.trim().is_empty() => {
                parts.push(std::mem::take(&mut cur))
            }
            // "open x and report y": "and" starts a new step only when a step's verb follows it, so
            // "click Terms and Conditions" stays one step.
            None if at_verbs
                && c.is_whitespace()
                && next_word_is(&chars, i + 1, "and")
                && next_is_step(&chars, i + 1 + skip_word(&chars, i + 1))
                && !cur.trim().is_empty() =>
            {
                parts.push(std::mem::take(&mut cur))
            }
            None => cur.push(c),
        }
        i += 1;
    }
    parts.push(cur);
    parts.into_iter().map(|p| clean(&p)).filter(|p| !p.is_empty()).collect()
}

/// Verbs that begin a step (see `parse_step`).
const STEP_VERBS: &[&str] = &[
    "navigate", "go", "open", "visit", "load", "browse", "back", "click", "press", "tap", "type", "enter", "write",
    "fill", "hit", "scroll", "wait", "sleep", "ask", "report", "return", "tell", "get", "read", "extract", "show",
];

/// Whether the next word from `from` is a step's verb (optionally after "then" or "and").
fn next_is_step(chars: &[char], from: usize) -> bool {
    let mut at = from;
    for filler in ["then", "and"] {
        if next_word_is(chars, at, filler) {
            at += skip_word(chars, at);
        }
    }
    STEP_VERBS.iter().any(|v| next_word_is(chars, at, v))
}

/// How many characters from `from` to the end of the next word (its leading whitespace included).
fn skip_word(chars: &[char], from: usize) -> usize {
    let rest = &chars[from.min(chars.len())..];
    let lead = rest.iter().take_while(|c| c.is_whitespace()).count();
    lead + rest[lead..].iter().take_while(|c| !c.is_whitespace() && **c != ',').count()
}

/// A `'` opens a quote only at the start of a word (so "don't" is not a quote).
fn starts_quote(chars: &[char], i: usize) -> bool {
    i == 0 || chars[i - 1].is_whitespace()
}

fn next_word_is(chars: &[char], from: usize, word: &str) -> bool {
    let rest: String = chars[from..].iter().collect();
    let rest = rest.trim_start();
    // `get` rather than slicing: `word.len()` bytes in may fall inside a multi-byte character.
    rest.get(..word.len()).is_some_and(|head| head.eq_ignore_ascii_case(word))
        && rest.get(word.len()..).is_some_and(|tail| tail.chars().next().is_none_or(|c| c.is_whitespace() || c == ','))
}

fn clean(part: &str) -> String {
    let mut s = part.trim().trim_end_matches(['.', ',']).trim().to_owned();
    // list markers: "1.", "2)", "-", "*"
    let marker_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ')' || c == '-' || c == '*'));
    if let Some(end) = marker_end {
        if end > 0 && s[end..].starts_with(' ') {
            s = s[end..].trim().to_owned();
        }
    }
    loop {
        let lower = s.to_ascii_lowercase();
        let filler = ["then ", "and ", "first ", "finally ", "next ", "please ", "after that "]
            .iter()
            .find(|w| lower.starts_with(**w));
        match filler {
            Some(w) => s = s[w.len()..].trim_start_matches(',').trim().to_owned(),
            None => break,
        }
    }
    // A part that is only a joining word ("and" before "then ...") is no step.
    if ["then", "and"].iter().any(|w| s.eq_ignore_ascii_case(w)) {
        s.clear();
    }
    s
}

/// Strips one pair of surrounding quotes.
fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_owned();
        }
    }
    s.to_owned()
}

/// Case-insensitive prefix strip returning the rest.
fn after<'a>(s: &'a str, prefixes: &[&str]) -> Option<&'a str> {
    let lower = s.to_ascii_lowercase();
    prefixes.iter().find(|p| lower.starts_with(**p)).map(|p| s[p.len()..].trim())
}

fn strip_suffixes(s: &str, suffixes: &[&str]) -> String {
    let mut s = s.trim().to_owned();
    for suf in suffixes {
        if s.to_ascii_lowercase().ends_with(suf) && !s.ends_with('"') {
            s.truncate(s.len() - suf.len());
            s = s.trim().to_owned();
        }
    }
    s
}

fn parse_url(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let quoted = raw.len() >= 2 && (raw.starts_with('"') || raw.starts_with('\''));
    let raw = if quoted {
        unquote(raw)
    } else {
        // A URL ends at whitespace; words after it are not part of this step.
        let mut words = raw.split_whitespace();
        let first = words.next()?;
        if words.next().is_some() {
            return None;
        }
        first.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'']).to_owned()
    };
    let candidate = if raw.contains("://") { raw } else { format!("http://{raw}") };
    let u = url::Url::parse(&candidate).ok()?;
    (matches!(u.scheme(), "http" | "https")
        && u.host_str().is_some_and(|h| h.contains('.') || h == "localhost" || h.starts_with('[')))
    .then(|| u.to_string())
}

/// Splits "A into B" style phrases at the last unquoted keyword.
fn split_at_keyword<'a>(s: &'a str, keywords: &[&str]) -> Option<(&'a str, &'a str)> {
    let lower = s.to_ascii_lowercase();
    let mut in_quote: Option<char> = None;
    let mut best = None;
    for (i, c) in s.char_indices() {
        match in_quote {
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None if c == '"' || (c == '\'' && (i == 0 || s[..i].ends_with(' '))) => in_quote = Some(c),
            None => {
                for k in keywords {
                    if lower[i..].starts_with(k) {
                        best = Some((i, k.len()));
                    }
                }
            }
        }
    }
    best.map(|(i, len)| (s[..i].trim(), s[i + len..].trim()))
}

fn parse_step(step: &str) -> Option<Step> {
    let lower = step.to_ascii_lowercase();
    if let Some(rest) = after(step, &["navigate to ", "go to ", "open ", "visit ", "load ", "browse to "]) {
        let rest = after(rest, &["the page ", "the url ", "url ", "page "]).unwrap_or(rest);
        return parse_url(rest).map(Step::Navigate);
    }
    if matches!(lower.as_str(), "go back" | "back" | "navigate back") {
        return Some(Step::Back);
    }
    if let Some(rest) = after(step, &["click on ", "click ", "press the button ", "tap "]) {
        let rest = after(rest, &["the "]).unwrap_or(rest);
        let rest = after(rest, &["link ", "button "]).unwrap_or(rest);
        let target = unquote(&strip_suffixes(rest, &[" link", " button"]));
        return (!target.is_empty()).then_some(Step::Click(target));
    }
    if let Some(rest) = after(step, &["upload ", "attach "]) {
        let (name, field) = split_at_keyword(rest, &[" into ", " to ", " in "])?;
        let field = after(field, &["the "]).unwrap_or(field);
        let field = unquote(&strip_suffixes(field, &[" field", " input"]));
        return Some(Step::Upload { name: unquote(name), field });
    }
    if let Some(rest) = after(step, &["type ", "enter ", "write "]) {
        let (text, field) = split_at_keyword(rest, &[" into ", " in "])?;
        let field = after(field, &["the "]).unwrap_or(field);
        let field = unquote(&strip_suffixes(field, &[" field", " box", " input"]));
        return Some(Step::Type { text: unquote(text), field });
    }
    if let Some(rest) = after(step, &["fill in ", "fill "]) {
        let (field, text) = split_at_keyword(rest, &[" with "])?;
        let field = after(field, &["the "]).unwrap_or(field);
        let field = unquote(&strip_suffixes(field, &[" field", " box", " input"]));
        return Some(Step::Type { text: unquote(text), field });
    }
    if let Some(rest) = after(step, &["press ", "hit "]) {
        let rest = after(rest, &["the "]).unwrap_or(rest);
        let key = unquote(&strip_suffixes(rest, &[" key"]));
        return normalize_key(&key).map(Step::Press);
    }
    if let Some(rest) = after(step, &["scroll "]) {
        let (dir, amount) = match rest.split_once(" by ") {
            Some((d, a)) => {
                (d.trim().to_ascii_lowercase(), a.trim().trim_end_matches("pixels").trim().parse::<i64>().ok()?)
            }
            None => (rest.trim().to_ascii_lowercase(), 400),
        };
        return match dir.as_str() {
            "down" => Some(Step::Scroll(amount.min(10_000))),
            "up" => Some(Step::Scroll(-amount.min(10_000))),
            _ => None,
        };
    }
    if let Some(rest) = after(step, &["wait for text ", "wait for "]) {
        if let Some(ms) = parse_duration(rest) {
            return Some(Step::Wait(ms));
        }
        let text = unquote(rest);
        return (!text.is_empty()).then_some(Step::WaitForText(text));
    }
    if let Some(rest) = after(step, &["wait ", "sleep "]) {
        return parse_duration(rest).map(Step::Wait);
    }
    if let Some(rest) = after(step, &["ask the human ", "ask the user ", "ask human ", "ask user "]) {
        let rest = after(rest, &["for ", "to ", ":"]).unwrap_or(rest).trim_start_matches(':').trim();
        let q = unquote(rest);
        return (!q.is_empty()).then_some(Step::AskHuman(q));
    }
    if let Some(rest) = after(step, &["report ", "return ", "tell me ", "get ", "read ", "extract ", "show "]) {
        let rest = after(rest, &["the "]).unwrap_or(rest);
        let rl = rest.to_ascii_lowercase();
        if matches!(rl.as_str(), "title" | "page title" | "title of the page") {
            return Some(Step::ReportTitle);
        }
        if matches!(rl.as_str(), "url" | "page url" | "current url" | "address") {
            return Some(Step::ReportUrl);
        }
        let target = after(rest, &["text of ", "text in ", "text from ", "text at ", "content of "])?;
        let target = after(target, &["the "]).unwrap_or(target);
        let target = unquote(&strip_suffixes(target, &[" element"]));
        return (!target.is_empty()).then_some(Step::ReportText(target));
    }
    None
}

fn parse_duration(raw: &str) -> Option<u64> {
    let raw = raw.trim().to_ascii_lowercase();
    let (num, unit) = raw.split_at(raw.find(|c: char| !(c.is_ascii_digit() || c == '.'))?);
    let n: f64 = num.parse().ok()?;
    let ms = match unit.trim() {
        "ms" | "millisecond" | "milliseconds" => n,
        "s" | "sec" | "secs" | "second" | "seconds" => n * 1000.0,
        _ => return None,
    };
    Some((ms as u64).min(MAX_WAIT_MS))
}

/// Maps spoken key names to the names the browser layer knows.
fn normalize_key(raw: &str) -> Option<String> {
    let k = raw.trim();
    let named = [
        ("enter", "Enter"),
        ("return", "Enter"),
        ("escape", "Escape"),
        ("esc", "Escape"),
        ("tab", "Tab"),
        ("backspace", "Backspace"),
        ("delete", "Delete"),
        ("space", "Space"),
        ("arrowup", "ArrowUp"),
        ("up", "ArrowUp"),
        ("arrowdown", "ArrowDown"),
        ("down", "ArrowDown"),
        ("arrowleft", "ArrowLeft"),
        ("left", "ArrowLeft"),
        ("arrowright", "ArrowRight"),
        ("right", "ArrowRight"),
        ("home", "Home"),
        ("end", "End"),
        ("pageup", "PageUp"),
        ("pagedown", "PageDown"),
    ];
    let squashed = k.to_ascii_lowercase().replace([' ', '-', '_'], "");
    if let Some((_, name)) = named.iter().find(|(n, _)| *n == squashed) {
        return Some((*name).to_owned());
    }
    (k.chars().count() == 1).then(|| k.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_step_task_parses() {
        let steps = parse(
            "Open http://127.0.0.1:8000/ then click the \"Pricing\" link; report the text of \"#cheapest\".\n\
             2. type \"Ann; Lee\" into the \"Your name\" field\n- press enter\nscroll down by 200\nwait 1.5 seconds\n\
             go back, then report the title",
        )
        .unwrap();
        assert_eq!(
            steps,
            vec![
                Step::Navigate("http://127.0.0.1:8000/".into()),
                Step::Click("Pricing".into()),
                Step::ReportText("#cheapest".into()),
                Step::Type { text: "Ann; Lee".into(), field: "Your name".into() },
                Step::Press("Enter".into()),
                Step::Scroll(200),
                Step::Wait(1500),
                Step::Back,
                Step::ReportTitle,
            ]
        );
    }

    #[test]
    fn an_upload_step_parses() {
        assert_eq!(
            parse("upload \"cv.pdf\" into the \"Document\" field").unwrap(),
            vec![Step::Upload { name: "cv.pdf".into(), field: "Document".into() }]
        );
    }

    #[test]
    fn other_phrasings_parse() {
        assert_eq!(parse("go to example.com").unwrap(), vec![Step::Navigate("http://example.com/".into())]);
        assert_eq!(
            parse("fill in Email address with a@b.c").unwrap(),
            vec![Step::Type { text: "a@b.c".into(), field: "Email address".into() }]
        );
        assert_eq!(parse("ask the human \"What name?\"").unwrap(), vec![Step::AskHuman("What name?".into())]);
        assert_eq!(parse("wait for \"Thanks\"").unwrap(), vec![Step::WaitForText("Thanks".into())]);
        assert_eq!(parse("click Add one").unwrap(), vec![Step::Click("Add one".into())]);
        assert_eq!(parse("report the url").unwrap(), vec![Step::ReportUrl]);
    }

    #[test]
    fn unknown_steps_are_reported_with_their_index() {
        let err = parse("open http://a.test/\nfind the cheapest plan and buy it").unwrap_err();
        assert_eq!(err.index, 2);
        assert!(err.to_string().contains("does not understand step 2"));
        assert!(parse("   ").is_err());
        assert!(parse("press F13").is_err());
    }

    #[test]
    fn and_and_commas_separate_steps_when_a_step_follows() {
        // The phrasings of issue 13: the URL used to swallow the rest ("a.html%20and%20report...").
        assert_eq!(
            parse("Open http://host.test/a.html and report the page title").unwrap(),
            vec![Step::Navigate("http://host.test/a.html".into()), Step::ReportTitle]
        );
        assert_eq!(
            parse("go to http://host.test/start, click Next, report the url").unwrap(),
            vec![Step::Navigate("http://host.test/start".into()), Step::Click("Next".into()), Step::ReportUrl]
        );
        assert_eq!(
            parse("open example.com, and then click \"Sign in\" and type \"Ann\" into Name").unwrap(),
            vec![
                Step::Navigate("http://example.com/".into()),
                Step::Click("Sign in".into()),
                Step::Type { text: "Ann".into(), field: "Name".into() },
            ]
        );
        // A URL ends at trailing punctuation; "and" inside a name or quotes does not split.
        assert_eq!(
            parse("Visit https://example.com/docs.").unwrap(),
            vec![Step::Navigate("https://example.com/docs".into())]
        );
        assert_eq!(parse("click Terms and Conditions").unwrap(), vec![Step::Click("Terms and Conditions".into())]);
        assert_eq!(parse("click Read and Accept").unwrap(), vec![Step::Click("Read and Accept".into())]);
        assert_eq!(
            parse("type \"rock and report\" into Search").unwrap(),
            vec![Step::Type { text: "rock and report".into(), field: "Search".into() }]
        );
        // Words after a URL that are not a step are not taken as part of it.
        assert!(parse("open http://host.test/a.html now please").is_err());
    }

    #[test]
    fn non_ascii_words_are_read_not_sliced() {
        assert_eq!(parse("click Café").unwrap(), vec![Step::Click("Café".into())]);
        assert_eq!(parse("open 日本語.jp").unwrap(), vec![Step::Navigate("http://xn--wgv71a119e.jp/".into())]);
        assert!(parse("open ä then ö, then ü").is_err());
    }

    proptest::proptest! {
        #[test]
        fn the_planner_never_panics(text in "\\PC{0,80}", words in proptest::collection::vec("(then|open|click|type|into|\"|'|,|\\.|é|日本|ß|İ|\\s|[a-z]{1,4})", 0..20)) {
            let _ = parse(&text);
            let _ = parse(&words.concat());
            let _ = parse(&words.join(" "));
        }
    }
}
