//! The page part of an observation: the snapshot tree rendered in document order, text and elements
//! interleaved so each element carries its context (`Product 7 $16.99 [41 Add to cart] [42 Details]`).
//! A block short enough is one line; a run of lines with the same elements names them only in its first
//! line (`[43] [44]` after that); markers show where the visible area begins and ends; and when a cap
//! cuts the page, the cut says how much was left out, for `find` or scrolling to bring back.

use std::fmt::Write;
use webpilot_browser::{Control, Mark, Node, PageSnapshot};

/// Blocks up to this many characters are rendered on one line.
const ONE_LINE: usize = 160;
/// Lines in a row with the same elements before the later ones are shortened.
const MIN_RUN: usize = 3;

enum Part {
    Text(String),
    Control(Control),
}

struct Line {
    parts: Vec<Part>,
    y: f64,
    /// Elements named only by index (same as in the line above).
    short: bool,
}

impl Line {
    fn new(y: f64) -> Line {
        Line { parts: Vec::new(), y, short: false }
    }

    /// What identifies the elements of the line: their kinds and labels, in order.
    fn signature(&self) -> Vec<(&str, &str)> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Control(c) => Some((c.kind.as_str(), c.label.as_str())),
                Part::Text(_) => None,
            })
            .collect()
    }

    fn render(&self) -> String {
        let mut s = String::new();
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            match part {
                Part::Text(t) => s.push_str(t),
                Part::Control(c) if self.short => {
                    let _ = write!(s, "[{}]", c.index);
                }
                Part::Control(c) => s.push_str(&control(c)),
            }
        }
        s
    }
}

/// One element: `[41 Add to cart]`, `[11 input: Search products]`, `[13 checkbox ✓: In stock]`,
/// `[16 select: Sort by = Featured; options: Featured | Newest]`.
pub fn control(c: &Control) -> String {
    let mut s = format!("[{}", c.index);
    let plain = matches!(c.kind.as_str(), "link" | "button" | "clickable");
    if plain {
        let _ = write!(s, " {}", if c.label.is_empty() { "(no text)" } else { &c.label });
    } else {
        let _ = write!(s, " {}", c.kind);
        if c.checked == Some(true) {
            s.push_str(" ✓");
        }
        if !c.label.is_empty() {
            let _ = write!(s, ": {}", c.label);
        }
        if let Some(p) = &c.placeholder {
            let _ = write!(s, " ({p})");
        }
        if let Some(v) = &c.value {
            let _ = write!(s, " = {v:?}");
        }
        if !c.options.is_empty() {
            let _ = write!(s, "; options: {}", c.options.join(" | "));
        }
    }
    if c.disabled {
        s.push_str(" (disabled)");
    }
    s.push(']');
    s
}

/// Lines of a list of nodes (the children of one block).
fn lines_of(nodes: &[Node], y: f64) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut current = Line::new(y);
    let flush = |current: &mut Line, lines: &mut Vec<Line>, y: f64| {
        if !current.parts.is_empty() {
            lines.push(std::mem::replace(current, Line::new(y)));
        }
    };
    for node in nodes {
        match node {
            Node::Text(t) => current.parts.push(Part::Text(t.clone())),
            Node::Control(c) => {
                // A label right before its own field says nothing new.
                if let Some(Part::Text(t)) = current.parts.last() {
                    if t.trim_end_matches(':') == c.label {
                        current.parts.pop();
                    }
                }
                if current.parts.is_empty() {
                    current.y = c.y;
                }
                current.parts.push(Part::Control(c.clone()));
            }
            Node::Block { children, y: by } => {
                flush(&mut current, &mut lines, *by);
                lines.extend(block(children, *by));
            }
            Node::Frame { title, y: fy, .. } => {
                flush(&mut current, &mut lines, *fy);
                let mut l = Line::new(*fy);
                l.parts.push(Part::Text(format!("(a frame{} that could not be read)", quoted(title))));
                lines.push(l);
            }
        }
    }
    flush(&mut current, &mut lines, y);
    lines
}

fn quoted(title: &str) -> String {
    if title.is_empty() {
        String::new()
    } else {
        format!(" {title:?}")
    }
}

/// A block's lines: runs of alike lines shortened, then all on one line when that is short.
fn block(children: &[Node], y: f64) -> Vec<Line> {
    let mut lines = lines_of(children, y);
    shorten_runs(&mut lines);
    if lines.len() > 1 && lines.iter().all(|l| !l.short) {
        let total: usize = lines.iter().map(|l| l.render().len() + 1).sum();
        if total <= ONE_LINE {
            let y = lines.iter().map(|l| l.y).fold(f64::INFINITY, f64::min);
            let parts = lines.into_iter().flat_map(|l| l.parts).collect();
            return vec![Line { parts, y, short: false }];
        }
    }
    lines
}

/// In a run of at least `MIN_RUN` lines with the same elements, all but the first name them by index.
fn shorten_runs(lines: &mut [Line]) {
    let mut start = 0;
    while start < lines.len() {
        let sig = lines[start].signature();
        let mut end = start + 1;
        while !sig.is_empty() && end < lines.len() && lines[end].signature() == sig {
            end += 1;
        }
        if end - start >= MIN_RUN {
            lines[start + 1..end].iter_mut().for_each(|l| l.short = true);
        }
        start = end;
    }
}

/// Every line of the page, in order, with the element count of each.
fn all_lines(snap: &PageSnapshot) -> Vec<Line> {
    let mut lines = block(&snap.tree, 0.0);
    if lines.iter().all(|l| l.parts.is_empty()) {
        lines.clear();
    }
    lines
}

/// The page part of an observation, at most about `max_chars` characters.
#[cfg(test)]
pub fn render(snap: &PageSnapshot, max_chars: usize) -> String {
    render_listing(snap, max_chars).0
}

/// The page part of an observation, and the elements it lists with their boxes in the viewport (a cut page
/// lists only those before the cut): the marks a screenshot beside it may carry.
pub fn render_listing(snap: &PageSnapshot, max_chars: usize) -> (String, Vec<Mark>) {
    let lines = all_lines(snap);
    let (text, shown) = render_lines(snap, &lines, max_chars);
    let mut marks = Vec::new();
    for line in &lines[..shown] {
        for part in &line.parts {
            if let Part::Control(Control { index, rect: Some(rect), .. }) = part {
                marks.push(Mark { index: *index, rect: *rect });
            }
        }
    }
    (text, marks)
}

/// `lines` as text, at most about `max_chars` characters, and how many of them it shows in full.
fn render_lines(snap: &PageSnapshot, lines: &[Line], max_chars: usize) -> (String, usize) {
    if lines.is_empty() {
        return ("(the page shows nothing)\n".into(), 0);
    }
    let (top, bottom) = (snap.scroll_y, snap.scroll_y + snap.viewport_height);
    let mut out = String::new();
    let mut seen_visible = top <= 0.0;
    let mut seen_below = false;
    for (i, line) in lines.iter().enumerate() {
        if !seen_visible && line.y >= top - 1.0 {
            out.push_str("--- visible area ---\n");
            seen_visible = true;
        }
        if !seen_below && line.y >= bottom {
            out.push_str("--- below the visible area ---\n");
            seen_below = true;
        }
        let text = line.render();
        if out.len() + text.len() > max_chars {
            let rest = &lines[i..];
            let elements: usize = rest.iter().map(|l| l.signature().len()).sum();
            let chars: usize = rest.iter().map(|l| l.render().len() + 1).sum();
            let _ = writeln!(
                out,
                "--- cut here: {elements} more elements and {chars} characters further down; use find to search them, or scroll ---"
            );
            return (out, i);
        }
        out.push_str(&text);
        out.push('\n');
    }
    (out, lines.len())
}

/// The lines of the whole page that contain `query` (case-insensitively), each in full.
pub fn find(snap: &PageSnapshot, query: &str, max_lines: usize) -> Vec<String> {
    let want = query.to_lowercase();
    all_lines(snap)
        .into_iter()
        .map(|mut l| {
            l.short = false;
            l.render()
        })
        .filter(|t| t.to_lowercase().contains(&want))
        .take(max_lines)
        .collect()
}

/// Every element of the page with the other text of its line (what tells alike elements apart).
pub fn elements_in_context(snap: &PageSnapshot) -> Vec<(Control, String)> {
    let mut out = Vec::new();
    for line in all_lines(snap) {
        let context: Vec<&str> = line
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                Part::Control(_) => None,
            })
            .collect();
        let context = context.join(" ");
        for part in &line.parts {
            if let Part::Control(c) = part {
                out.push((c.clone(), context.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snap(tree: serde_json::Value, scroll_y: f64) -> PageSnapshot {
        serde_json::from_value(json!({"url": "u", "title": "t", "tree": tree, "scroll_y": scroll_y,
            "page_height": 2000, "viewport_height": 445}))
        .expect("snapshot")
    }

    fn card(n: u32, i: u32, y: u32) -> serde_json::Value {
        json!({"b": [{"b": [format!("Product {n}")], "y": y}, {"b": [format!("${}.99", n + 9)], "y": y + 20},
                     {"i": i, "k": "button", "t": "Add to cart", "y": y + 40}, {"i": i + 1, "k": "link", "t": "Details", "y": y + 40}], "y": y})
    }

    #[test]
    fn cards_are_one_line_each_and_repeats_name_their_elements_once() {
        let cards: Vec<_> = (1..=4).map(|n| card(n, 10 + 2 * n, 150 * n)).collect();
        let s = snap(json!([{"b": ["Shop"], "y": 0}, {"b": cards, "y": 100}]), 0.0);
        let text = render(&s, 10_000);
        assert_eq!(
            text,
            "Shop\nProduct 1 $10.99 [12 Add to cart] [13 Details]\nProduct 2 $11.99 [14] [15]\n\
             --- below the visible area ---\nProduct 3 $12.99 [16] [17]\nProduct 4 $13.99 [18] [19]\n"
        );
        assert_eq!(find(&s, "product 3", 5), ["Product 3 $12.99 [16 Add to cart] [17 Details]"]);
        let in_context = elements_in_context(&s);
        assert_eq!(in_context.len(), 8);
        assert_eq!((in_context[4].0.index, in_context[4].1.as_str()), (16, "Product 3 $12.99"));
    }

    #[test]
    fn fields_show_kind_label_value_and_state() {
        let s = snap(
            json!([{"b": ["Username", {"i": 1, "k": "input", "t": "Username", "y": 0},
                   {"i": 2, "k": "checkbox", "t": "In stock", "c": true, "y": 0},
                   {"i": 3, "k": "select", "t": "Sort by", "v": "Featured", "o": ["Featured", "Newest"], "y": 0},
                   {"i": 4, "k": "input:email", "t": "Email", "p": "you@example.com", "d": true, "y": 0}], "y": 0}]),
            0.0,
        );
        assert_eq!(
            render(&s, 10_000),
            "[1 input: Username] [2 checkbox ✓: In stock] [3 select: Sort by = \"Featured\"; options: Featured | Newest] \
             [4 input:email: Email (you@example.com) (disabled)]\n"
        );
    }

    #[test]
    fn a_cut_says_what_was_left_out_and_scrolled_pages_mark_the_visible_area() {
        let lines: Vec<_> = (0..50)
            .map(|n| json!({"b": [format!("Paragraph {n} with some words"), {"i": n + 1, "k": "link", "t": format!("More {n}"), "y": n * 40}], "y": n * 40}))
            .collect();
        let s = snap(json!(lines), 400.0);
        let text = render(&s, 600);
        assert!(text.contains("--- visible area ---\nParagraph 10 "), "{text}");
        assert!(text.contains("--- cut here: ") && text.contains("more elements"), "{text}");
        assert!(text.len() < 800);
        assert_eq!(find(&s, "more 42", 3).len(), 1);
        assert_eq!(render(&snap(json!([]), 0.0), 100), "(the page shows nothing)\n");
    }

    #[test]
    fn the_marks_are_the_elements_the_text_lists_with_their_boxes() {
        let lines: Vec<_> = (0..50)
            .map(|n| json!({"b": [format!("Paragraph {n} with some words"),
                                  {"i": n + 1, "k": "link", "t": format!("More {n}"), "y": n * 40, "r": [300, n * 40, 60, 18]}], "y": n * 40}))
            .collect();
        let (text, marks) = render_listing(&snap(json!(lines), 0.0), 600);
        let listed = text.matches("[").count();
        assert!(listed > 5 && listed < 50, "{text}");
        assert_eq!(marks.len(), listed, "only what the text lists, not what the cut left out");
        assert_eq!(marks[3], Mark { index: 4, rect: [300.0, 120.0, 60.0, 18.0] });
        let (_, all) = render_listing(&snap(json!(lines), 0.0), 100_000);
        assert_eq!(all.len(), 50);
    }
}
