//! What the benchmarks share: walking a process tree in /proc and reading its memory and CPU time.

#![allow(dead_code)]

pub mod devtools;
pub mod load;

/// `root` and all its descendants.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut pids = vec![root];
    let mut i = 0;
    while i < pids.len() {
        let parent = pids[i];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
            if ppid == Some(parent) {
                pids.push(pid);
            }
        }
        i += 1;
    }
    pids
}

/// Proportional set size (KiB) of `root` and all its descendants: shared pages are counted once.
pub fn pss_tree_kib(root: u32) -> u64 {
    process_tree(root)
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).ok())
        .filter_map(|s| s.lines().find(|l| l.starts_with("Pss:"))?.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// CPU time (user + system, in seconds) used so far by the processes `pids` (those still alive).
/// Clock ticks are 100 per second on Linux x86-64 (`getconf CLK_TCK`).
pub fn cpu_seconds(pids: &[u32]) -> f64 {
    let ticks: u64 = pids
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|s| {
            let rest = s.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
            // After the command: state is field 3, utime 14 and stime 15 (1-based) of the whole line.
            Some(rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?)
        })
        .sum();
    ticks as f64 / 100.0
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The `p`-th percentile (0–100, nearest rank) of `sorted` (ascending); 0 when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
