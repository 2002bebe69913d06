//! HTML helpers for the fixture site: the page skeleton, escaping and script literals.

use axum::response::Html;

/// Wraps `body` in a minimal, valid HTML5 document titled `title` (the title is escaped).
///
/// The empty data-URL icon stops browsers from requesting `/favicon.ico`, which keeps the
/// request log limited to what the pages themselves load.
pub(crate) fn page(title: &str, body: &str) -> Html<String> {
    Html(page_string(title, body))
}

/// Same as [`page`] but returns the plain string.
pub(crate) fn page_string(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>{}</title>\n</head>\n<body>\n{body}\n</body>\n</html>\n",
        escape(title)
    )
}

/// Escapes `& < > " '` for use in HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A JavaScript string literal for `text` that is safe inside an inline `<script>`.
pub(crate) fn js_string(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_else(|_| "\"\"".to_owned())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::{escape, js_string};

    #[test]
    fn escapes_html() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn js_strings_cannot_close_the_script() {
        assert_eq!(js_string("</script>\"x"), r#""\u003c/script\u003e\"x""#);
    }
}
