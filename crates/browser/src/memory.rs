//! The per-session memory cap: a watchdog over one Chromium process's renderers that kills any renderer
//! whose private memory (`RssAnon` + `VmSwap`) passes the cap. Chromium never shares a renderer between two
//! browser contexts, so only the session whose pages it hosts is hit: its page reports PAGE_CRASH
//! (`Inspector.targetCrashed`) and the other sessions go on. Written here because no crate watches a process
//! tree this way; it reads /proc, so it is Linux only, like the service.

use std::time::Duration;
use tokio::task::JoinHandle;

/// How often the renderers are looked at.
const EVERY: Duration = Duration::from_secs(1);

/// Watches the renderers below `browser_pid` until aborted.
pub(crate) fn watch(browser_pid: u32, cap_kib: u64) -> JoinHandle<()> {
    webpilot_tasks::spawn_owned("renderer memory watch", async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let over =
                tokio::task::spawn_blocking(move || renderers_over(browser_pid, cap_kib)).await.unwrap_or_default();
            for (pid, kib) in over {
                let killed = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::SIGKILL);
                tracing::warn!(
                    pid,
                    mib = kib / 1024,
                    cap_mib = cap_kib / 1024,
                    ok = killed.is_ok(),
                    "a renderer passed the per-session memory cap and was killed"
                );
                metrics::counter!("webpilot_renderers_killed_total").increment(1);
            }
        }
    })
}

/// Renderer processes below `root` whose private memory passes `cap_kib`, with that memory.
fn renderers_over(root: u32, cap_kib: u64) -> Vec<(u32, u64)> {
    descendants(root)
        .into_iter()
        .filter(|pid| is_renderer(*pid))
        .filter_map(|pid| Some((pid, private_kib(pid)?)))
        .filter(|(_, kib)| *kib > cap_kib)
        .collect()
}

/// Every process below `root` (not `root` itself).
pub(crate) fn descendants(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // After the command name (in parentheses): state, then the parent's pid.
        if let Some(ppid) = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok()) {
            parents.push((pid, ppid));
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    out.remove(0);
    out
}

fn is_renderer(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.windows(15).any(|w| w == b"--type=renderer"))
}

/// Private memory of `pid` in KiB: anonymous resident pages plus swapped-out ones.
fn private_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field =
        |name: &str| status.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(1)?.parse::<u64>().ok();
    Some(field("RssAnon:")? + field("VmSwap:").unwrap_or(0))
}
