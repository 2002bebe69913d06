//! Session file names and kinds: what a name in a session's file area may be, how a page's suggested
//! download name is made into one, and the MIME type guessed from a name.

/// Longest file name, in characters.
pub const MAX_FILE_NAME: usize = 200;

/// Where a session file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSource {
    Download,
    Upload,
}

impl FileSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FileSource::Download => "download",
            FileSource::Upload => "upload",
        }
    }
}

/// Why a name a client gave is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileNameError {
    #[error("a file name must not be empty")]
    Empty,
    #[error("a file name is at most {MAX_FILE_NAME} characters")]
    TooLong,
    #[error("a file name must not contain '/', '\\', '..' or control characters")]
    Forbidden,
}

/// Checks a name a client gives (upload, fetch, delete): a plain name inside the session's area.
pub fn check_name(name: &str) -> Result<(), FileNameError> {
    if name.is_empty() {
        return Err(FileNameError::Empty);
    }
    if name.chars().count() > MAX_FILE_NAME {
        return Err(FileNameError::TooLong);
    }
    if name.contains(['/', '\\']) || name.contains("..") || name.chars().any(char::is_control) {
        return Err(FileNameError::Forbidden);
    }
    Ok(())
}

/// Makes a page's suggested download name a valid one: separators and control characters become `_`,
/// `..` becomes `.`, leading dots and spaces go, and an empty result is `download`.
pub fn sanitize(suggested: &str) -> String {
    let mut name: String =
        suggested.chars().map(|c| if c == '/' || c == '\\' || c.is_control() { '_' } else { c }).collect();
    while name.contains("..") {
        name = name.replace("..", ".");
    }
    let name = name.trim_start_matches(['.', ' ']).trim_end();
    let name: String = match name.chars().count() > MAX_FILE_NAME {
        // Keep the extension when cutting.
        true => match name.rsplit_once('.') {
            Some((stem, ext)) if ext.chars().count() < 16 => {
                let keep = MAX_FILE_NAME - ext.chars().count() - 1;
                format!("{}.{ext}", stem.chars().take(keep).collect::<String>())
            }
            _ => name.chars().take(MAX_FILE_NAME).collect(),
        },
        false => name.to_owned(),
    };
    if name.is_empty() {
        "download".to_owned()
    } else {
        name
    }
}

/// The `n`th alternative of `name` when it is taken: `invoice.pdf` → `invoice (n).pdf`.
pub fn numbered(name: &str, n: u32) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem} ({n}).{ext}"),
        _ => format!("{name} ({n})"),
    }
}

/// The MIME type a file name's extension suggests (`application/octet-stream` when unknown).
pub fn mime_for(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "csv" => "text/csv",
        "txt" | "log" => "text/plain",
        "json" => "application/json",
        "xml" => "application/xml",
        "html" | "htm" => "text/html",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_inside_the_area() {
        assert_eq!(check_name("invoice.pdf"), Ok(()));
        for bad in ["", "../x", "a/b", "a\\b", "..", "x\n"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(sanitize("../../etc/passwd"), "_._etc_passwd");
        assert_eq!(sanitize("..."), "download");
        assert_eq!(sanitize(" report.csv"), "report.csv");
        assert!(check_name(&sanitize("a/../..\\b\u{7}")).is_ok());
        assert_eq!(numbered("invoice.pdf", 2), "invoice (2).pdf");
        assert_eq!(numbered("README", 1), "README (1)");
        assert_eq!(mime_for("a.CSV"), "text/csv");
    }
}
