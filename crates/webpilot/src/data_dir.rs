//! The data directory is the service's alone: made 0700, and at every start every directory in it is
//! tightened to 0700 and every file to 0600 (a data directory from an older version, or copied in, was
//! 0755 / 0644). Chromium runs as another user and must open nothing here (docs/security.md).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Mode of the data directory and every directory in it (the recordings' and files' folders are made so too).
pub(crate) const DIR_MODE: u32 = webpilot_blobs::DIR_MODE;
/// Mode of every file in the data directory.
pub(crate) const FILE_MODE: u32 = webpilot_blobs::FILE_MODE;

/// Makes `dir` (and missing parents, 0700) and tightens everything in it; symbolic links are left alone
/// (never followed).
pub(crate) fn secure(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)?;
    tighten(dir)
}

fn tighten(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    let mode = if meta.is_dir() {
        DIR_MODE
    } else if meta.is_file() {
        FILE_MODE
    } else {
        return Ok(());
    };
    if meta.permissions().mode() & 0o777 != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            tighten(&entry?.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).expect("meta").permissions().mode() & 0o777
    }

    #[test]
    fn an_open_data_directory_is_tightened_and_links_are_not_followed() {
        let root = tempfile::tempdir().expect("tempdir");
        let outside = root.path().join("outside.txt");
        std::fs::write(&outside, "x").expect("write");
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let data = root.path().join("a/data");
        std::fs::create_dir_all(data.join("recordings/ses_1")).expect("dirs");
        for (p, m) in [(&data, 0o755), (&data.join("recordings"), 0o755), (&data.join("recordings/ses_1"), 0o777)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
        }
        let files = [data.join("webpilot.db"), data.join("webpilot.db-wal"), data.join("recordings/ses_1/video.webm")];
        for f in &files {
            std::fs::write(f, "x").expect("write");
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        }
        std::os::unix::fs::symlink(&outside, data.join("link")).expect("symlink");
        secure(&data).expect("secure");
        for d in [&data, &data.join("recordings"), &data.join("recordings/ses_1")] {
            assert_eq!(mode(d), 0o700, "{}", d.display());
        }
        for f in &files {
            assert_eq!(mode(f), 0o600, "{}", f.display());
        }
        assert_eq!(mode(&outside), 0o644, "a link's target outside is left alone");
        let fresh = root.path().join("b/c");
        secure(&fresh).expect("made");
        assert_eq!(mode(&fresh), 0o700);
    }
}
