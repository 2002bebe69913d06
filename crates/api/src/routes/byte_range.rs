//! The `Range` header of a recording's video, read as RFC 9110 §14 says: one byte range is served (206),
//! a suffix longer than the video selects all of it, whitespace around the parts is allowed, a
//! last-byte-pos past the end (even past 2^64) is clamped to it; several ranges, an unknown unit or
//! unreadable syntax are ignored (200 with the whole video: a server may ignore `Range`); a first-byte-pos
//! at or past the end is unsatisfiable (416).

/// What to serve of a representation of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected {
    /// All of it, with 200.
    Whole,
    /// Bytes `start..end` (end exclusive, never past the size), with 206.
    Part { start: u64, end: u64 },
    /// 416, with `Content-Range: bytes */size`.
    Unsatisfiable,
}

/// One `range-spec`, before the size is known.
enum Spec {
    /// `first-last` or `first-` (`last` clamped to `u64::MAX`).
    Span { first: u64, last: u64 },
    /// `-suffix`.
    Suffix(u64),
}

/// Selects what `header` (the `Range` value, if any) asks of a representation of `size` bytes.
pub fn select(header: Option<&str>, size: u64) -> Selected {
    let Some(specs) = header.and_then(parse) else { return Selected::Whole };
    // Several ranges (a multipart answer) are served whole, as is anything of an empty video.
    let [spec] = specs.as_slice() else { return Selected::Whole };
    if size == 0 {
        return Selected::Whole;
    }
    match *spec {
        Spec::Suffix(0) => Selected::Unsatisfiable,
        Spec::Suffix(n) => Selected::Part { start: size.saturating_sub(n), end: size },
        Spec::Span { first, .. } if first >= size => Selected::Unsatisfiable,
        Spec::Span { first, last } => Selected::Part { start: first, end: last.min(size - 1) + 1 },
    }
}

/// `bytes=<range-spec>, ...`; None when the header is not a readable byte-ranges specifier.
fn parse(header: &str) -> Option<Vec<Spec>> {
    let (unit, set) = header.trim().split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    // Empty list elements (`a, , b`) are allowed by the list syntax (RFC 9110 §5.6.1).
    let specs: Option<Vec<Spec>> = set.split(',').map(str::trim).filter(|s| !s.is_empty()).map(parse_spec).collect();
    specs.filter(|s| !s.is_empty())
}

fn parse_spec(spec: &str) -> Option<Spec> {
    let (first, last) = spec.split_once('-')?;
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        return Some(Spec::Suffix(number(last)?));
    }
    let first = number(first)?;
    let last = if last.is_empty() { u64::MAX } else { number(last)? };
    (last >= first).then_some(Spec::Span { first, last })
}

/// `1*DIGIT`, saturating at `u64::MAX` (a position past 2^64 is past any end).
fn number(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.bytes().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Selected::*;

    #[test]
    fn one_range_is_served_and_clamped_to_the_end() {
        assert_eq!(select(Some("bytes=0-99"), 1000), Part { start: 0, end: 100 });
        assert_eq!(select(Some("bytes=900-"), 1000), Part { start: 900, end: 1000 });
        assert_eq!(select(Some("bytes=990-5000"), 1000), Part { start: 990, end: 1000 });
        assert_eq!(select(Some("bytes=0-99999999999999999999999"), 1000), Part { start: 0, end: 1000 });
        assert_eq!(select(Some("bytes=999-999"), 1000), Part { start: 999, end: 1000 });
    }

    #[test]
    fn whitespace_and_case_are_allowed() {
        assert_eq!(select(Some("bytes= 0-10"), 1000), Part { start: 0, end: 11 });
        assert_eq!(select(Some(" Bytes = 0 - 10 "), 1000), Part { start: 0, end: 11 });
        assert_eq!(select(Some("bytes=0-10, "), 1000), Part { start: 0, end: 11 });
    }

    #[test]
    fn a_suffix_counts_from_the_end_and_a_longer_one_selects_everything() {
        assert_eq!(select(Some("bytes=-100"), 1000), Part { start: 900, end: 1000 });
        assert_eq!(select(Some("bytes=-5000"), 1000), Part { start: 0, end: 1000 });
        assert_eq!(select(Some("bytes=-99999999999999999999999"), 1000), Part { start: 0, end: 1000 });
        assert_eq!(select(Some("bytes=-0"), 1000), Unsatisfiable);
    }

    #[test]
    fn a_start_past_the_end_is_unsatisfiable() {
        assert_eq!(select(Some("bytes=1000-"), 1000), Unsatisfiable);
        assert_eq!(select(Some("bytes=5000-6000"), 1000), Unsatisfiable);
        assert_eq!(select(Some("bytes=99999999999999999999999-"), 1000), Unsatisfiable);
    }

    #[test]
    fn several_ranges_unknown_units_and_bad_syntax_get_the_whole_video() {
        for h in [
            "bytes=0-1,5-6",
            "bytes=0-1, 2000-3000",
            "items=0-1",
            "bytes=abc",
            "bytes=5-1",
            "bytes=+1-2",
            "bytes=",
            "bytes",
            "bytes=1-2-3",
        ] {
            assert_eq!(select(Some(h), 1000), Whole, "{h}");
        }
        assert_eq!(select(None, 1000), Whole);
        assert_eq!(select(Some("bytes=0-10"), 0), Whole, "an empty video is served whole");
    }
}
