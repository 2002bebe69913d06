//! Profile directories left behind: every profile holds an owner file naming the service process that made
//! it (pid and start time, so a reused pid does not count). At start the pool removes the profiles in the
//! temp directory whose owner is gone (a service killed with SIGKILL cannot remove its own), and leaves
//! those of a live service, this one included, alone.

use crate::sandbox::RunAs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Profile directory names start with this.
pub(crate) const PROFILE_PREFIX: &str = "webpilot-chromium-";
/// The owner file inside a profile.
const OWNER_FILE: &str = "webpilot-owner";

/// Writes the owner file (this process) into `profile`.
pub(crate) fn claim(profile: &Path) -> std::io::Result<()> {
    let me = std::process::id();
    let started = start_time(me).unwrap_or_default();
    std::fs::write(profile.join(OWNER_FILE), format!("{me} {started}\n"))
}

/// Removes the orphaned profiles in the temp directory (owned by this user or `run_as`); returns how many.
pub(crate) fn sweep(run_as: Option<RunAs>) -> usize {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return 0 };
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry.file_name().to_string_lossy().starts_with(PROFILE_PREFIX);
        // Not a symbolic link, and made by this service's user or its browser user.
        let ours = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_dir() && (m.uid() == me || run_as.is_some_and(|r| r.uid == m.uid())));
        if !named || !ours || !orphaned(&path) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "an orphaned browser profile could not be removed")
            }
        }
    }
    if removed > 0 {
        tracing::info!(removed, "removed browser profiles left by a service that is gone");
    }
    removed
}

/// Whether the profile's owner file names a process that is gone (or another process with its pid).
fn orphaned(profile: &Path) -> bool {
    let Ok(owner) = std::fs::read_to_string(profile.join(OWNER_FILE)) else { return false };
    let mut fields = owner.split_whitespace();
    let (Some(Ok(pid)), Some(Ok(started))) =
        (fields.next().map(str::parse::<u32>), fields.next().map(str::parse::<u64>))
    else {
        return false;
    };
    start_time(pid) != Some(started)
}

/// When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22); `None` when it is gone.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_of_a_live_process_is_kept_and_of_a_gone_one_is_orphaned() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(!orphaned(dir.path()), "no owner file: not ours to judge");
        claim(dir.path()).expect("claim");
        assert!(!orphaned(dir.path()), "this process is alive");
        let started = start_time(std::process::id()).expect("own start time");
        std::fs::write(dir.path().join(OWNER_FILE), format!("{} {}\n", std::process::id(), started + 1)).expect("w");
        assert!(orphaned(dir.path()), "a reused pid is another process");
        std::fs::write(dir.path().join(OWNER_FILE), format!("{} {started}\n", u32::MAX - 1)).expect("w");
        assert!(orphaned(dir.path()), "the owner is gone");
    }
}
