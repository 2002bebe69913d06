//! A service secret kept in a file of the data directory: read as it is, or made on first start (readable
//! by the owner only, mode 0600, written once and synced). The live-view token key and the profile key are
//! both kept this way.

use std::io::{self, Write};
use std::path::Path;

/// The text of the secret file at `path`; when there is none, `fresh` is written there (hex) first.
pub fn read_or_create(path: &Path, fresh: [u8; 32]) -> io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let text = hex::encode(fresh);
            let mut file = {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?
            };
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            Ok(text)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::read_or_create;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_secret_is_made_once_owner_only_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.key");
        let made = read_or_create(&path, [7; 32]).expect("made");
        assert_eq!(made, "07".repeat(32));
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read_or_create(&path, [9; 32]).expect("read"), made, "an existing secret is kept");
    }
}
