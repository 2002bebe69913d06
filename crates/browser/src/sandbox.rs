//! Who Chromium runs as. Never as root: when the service is root, Chromium is started as an unprivileged
//! user with its sandbox on, through a one-line wrapper that drops to that user with `setpriv`. Running
//! without the sandbox takes an explicit `--browser-no-sandbox`.

use crate::error::BrowserError;
use nix::unistd::{Gid, Uid, User};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// An unprivileged user to run Chromium as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// How Chromium is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrowserIdentity {
    /// `Some` when the service is root: Chromium drops to this user.
    pub run_as: Option<RunAs>,
    /// Chromium's sandbox off (only when asked for).
    pub no_sandbox: bool,
}

/// Why Chromium cannot be started safely.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(String);

/// Decides who Chromium runs as: the current user when the service is not root; `user` (which must exist
/// and not be root) when it is; root without the sandbox only with `allow_no_sandbox`.
pub fn identity(user: &str, allow_no_sandbox: bool) -> Result<BrowserIdentity, SandboxError> {
    if !Uid::effective().is_root() || allow_no_sandbox {
        if allow_no_sandbox {
            tracing::warn!("Chromium runs without its sandbox (--browser-no-sandbox)");
        }
        return Ok(BrowserIdentity { run_as: None, no_sandbox: allow_no_sandbox });
    }
    let found = User::from_name(user).map_err(|e| SandboxError(format!("looking up user {user:?}: {e}")))?;
    let Some(u) = found else {
        return Err(SandboxError(format!(
            "the service runs as root, and Chromium must not: create the unprivileged user with \
             `useradd --system --no-create-home --shell /usr/sbin/nologin {user}` (scripts/run.sh does), name \
             another with --browser-user, or pass --browser-no-sandbox to run Chromium as root without its sandbox"
        )));
    };
    if u.uid.is_root() {
        return Err(SandboxError(format!("--browser-user {user:?} is root; name an unprivileged user")));
    }
    Ok(BrowserIdentity { run_as: Some(RunAs { uid: u.uid.as_raw(), gid: u.gid.as_raw() }), no_sandbox: false })
}

/// Gives `dir` and everything in it to `who`.
pub(crate) fn give(dir: &Path, who: RunAs) -> Result<(), BrowserError> {
    let fail = |e: std::io::Error| BrowserError::Launch(format!("preparing the profile for the browser user: {e}"));
    let chown = |p: &Path| {
        nix::unistd::chown(p, Some(Uid::from_raw(who.uid)), Some(Gid::from_raw(who.gid)))
            .map_err(|e| fail(std::io::Error::from(e)))
    };
    chown(dir)?;
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let path = entry.map_err(fail)?.path();
        if path.is_dir() {
            give(&path, who)?;
        } else {
            chown(&path)?;
        }
    }
    Ok(())
}

/// Writes, in a fresh root-only directory, a script that starts `executable` as `who` (exec'ing, so the
/// pid the pool sees is Chromium's; killed with the service thread that started it, so no orphan stays).
pub(crate) fn wrapper(executable: &Path, who: RunAs) -> Result<tempfile::TempDir, BrowserError> {
    let fail = |e: std::io::Error| BrowserError::Launch(format!("writing the browser launcher: {e}"));
    let dir = tempfile::Builder::new().prefix("webpilot-launch-").tempdir().map_err(fail)?;
    let exe = executable.to_string_lossy().replace('\'', r"'\''");
    let script = format!(
        "#!/bin/sh\nexec setpriv --reuid={} --regid={} --clear-groups --pdeathsig=KILL -- '{exe}' \"$@\"\n",
        who.uid, who.gid
    );
    let path = dir.path().join("chromium");
    let mut f = std::fs::File::create(&path).map_err(fail)?;
    f.write_all(script.as_bytes()).map_err(fail)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    Ok(dir)
}
