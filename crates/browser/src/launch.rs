//! Chromium's command line and its start with DevTools on a pipe (fds 3 and 4, bridged by `pipe.rs`)
//! instead of a TCP port any local user could connect to.

use crate::pipe::Bridge;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use tokio::process::{Child, Command};
use webpilot_core::geometry::{FRAME_WIDTH, PAGE_HEIGHT};

/// The flags chromiumoxide passed by default (puppeteer's) when it launched Chromium itself.
const DEFAULT_ARGS: &[&str] = &[
    "disable-background-networking",
    "enable-features=NetworkService,NetworkServiceInProcess",
    "disable-background-timer-throttling",
    "disable-backgrounding-occluded-windows",
    "disable-breakpad",
    "disable-client-side-phishing-detection",
    "disable-component-extensions-with-background-pages",
    "disable-default-apps",
    "disable-dev-shm-usage",
    "disable-features=TranslateUI",
    "disable-hang-monitor",
    "disable-ipc-flooding-protection",
    "disable-popup-blocking",
    "disable-prompt-on-repost",
    "disable-renderer-backgrounding",
    "disable-sync",
    "force-color-profile=srgb",
    "metrics-recording-only",
    "no-first-run",
    "enable-automation",
    "password-store=basic",
    "use-mock-keychain",
    "enable-blink-features=IdleDetection",
    "lang=en_US",
];

/// A command line whose flags are `--key` or `--key=v1,v2`; the values of a key given twice are merged
/// (`disable-features` from several places), in the order first seen.
#[derive(Default)]
struct CommandLine(Vec<(String, Vec<String>)>);

impl CommandLine {
    fn push(&mut self, flag: &str) {
        let flag = flag.trim_start_matches('-');
        let (key, values) = match flag.split_once('=') {
            Some((k, v)) => (k, v.split(',').filter(|v| !v.is_empty()).map(str::to_owned).collect()),
            None => (flag, Vec::new()),
        };
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, known)) => {
                for v in values {
                    if !known.contains(&v) {
                        known.push(v);
                    }
                }
            }
            None => self.0.push((key.to_owned(), values)),
        }
    }

    fn into_args(self) -> Vec<String> {
        let arg = |(k, v): (String, Vec<String>)| {
            if v.is_empty() {
                format!("--{k}")
            } else {
                format!("--{k}={}", v.join(","))
            }
        };
        self.0.into_iter().map(arg).collect()
    }
}

/// Chromium's arguments: the defaults, `flags`, DevTools on the pipe, the profile, headless and the window.
pub(crate) fn arguments<'a>(flags: impl IntoIterator<Item = &'a str>, profile: &Path, no_sandbox: bool) -> Vec<String> {
    let mut line = CommandLine::default();
    for flag in DEFAULT_ARGS.iter().copied().chain(flags) {
        line.push(flag);
    }
    for flag in ["remote-debugging-pipe", "disable-extensions", "headless=new", "hide-scrollbars", "mute-audio"] {
        line.push(flag);
    }
    line.push(&format!("window-size={FRAME_WIDTH},{PAGE_HEIGHT}"));
    if no_sandbox {
        line.push("no-sandbox");
        line.push("disable-setuid-sandbox");
    }
    let mut args = line.into_args();
    // A path may hold a comma: it is never merged or split.
    args.push(format!("--user-data-dir={}", profile.display()));
    args
}

/// Starts `executable` with `args` and `env` in the directory `cwd` (its profile: never the service's
/// own working directory, where a relative data directory lives), its DevTools pipes on fds 3 (it reads)
/// and 4 (it writes), and a bridge over them. The child is killed when dropped.
#[allow(unsafe_code)]
pub(crate) async fn spawn(
    executable: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> std::io::Result<(Child, Bridge)> {
    let (child_reads, to_browser) = std::io::pipe()?;
    let (from_browser, child_writes) = std::io::pipe()?;
    let (child_reads, child_writes) = (OwnedFd::from(child_reads), OwnedFd::from(child_writes));
    let (read_fd, write_fd) = (child_reads.as_raw_fd(), child_writes.as_raw_fd());
    let mut cmd = Command::new(executable);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v))).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::null());
    cmd.stderr(Stdio::null()).kill_on_drop(true);
    // SAFETY: between fork and exec only async-signal-safe calls are made (fcntl, dup2, close), on fds
    // this process owns until the child is spawned.
    unsafe {
        cmd.pre_exec(move || {
            // Copies above 4 first, so moving one onto 3 cannot overwrite the other; dup2 clears
            // close-on-exec on 3 and 4 alone.
            let high_read = cvt(libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 10))?;
            let high_write = cvt(libc::fcntl(write_fd, libc::F_DUPFD_CLOEXEC, 10))?;
            cvt(libc::dup2(high_read, 3))?;
            cvt(libc::dup2(high_write, 4))?;
            libc::close(high_read);
            libc::close(high_write);
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // The child has its copies; the parent's ends of the child's side are closed, so Chromium's exit is
    // seen as the end of its pipe.
    drop((child_reads, child_writes));
    let bridge = crate::pipe::start(OwnedFd::from(to_browser), OwnedFd::from(from_browser)).await?;
    Ok((child, bridge))
}

fn cvt(ret: libc::c_int) -> std::io::Result<libc::c_int> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::arguments;
    use std::path::Path;

    #[test]
    fn flags_of_one_key_are_merged_and_devtools_is_on_the_pipe() {
        let args = arguments(["--disable-features=A,B", "disable-gpu"], Path::new("/tmp/p,x"), false);
        assert!(args.contains(&"--disable-features=TranslateUI,A,B".to_owned()), "{args:?}");
        assert!(args.contains(&"--remote-debugging-pipe".to_owned()));
        assert!(args.contains(&"--disable-gpu".to_owned()));
        assert!(!args.iter().any(|a| a.starts_with("--remote-debugging-port")));
        assert!(!args.iter().any(|a| a.contains("no-sandbox")));
        assert_eq!(args.last().map(String::as_str), Some("--user-data-dir=/tmp/p,x"));
    }
}
