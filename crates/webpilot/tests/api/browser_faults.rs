//! When Chromium fails: a renderer killed during a wait ends the task at once with PAGE_CRASH; a stopped
//! (SIGSTOP) browser is reported by health and refused to new sessions until it answers again; profile
//! directories left by a killed service are swept by the next start, and those of a live one are not.

use crate::helpers::{child_pids, cmdline, process_tree, wait_until, Server, TestApp};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Sends `signal` (`KILL`, `STOP`, `CONT`) to `pid`.
fn signal(pid: u32, signal: &str) {
    let _ = std::process::Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status();
}

#[tokio::test]
async fn a_renderer_killed_during_a_long_wait_fails_the_task_at_once() {
    let app = TestApp::spawn_with(|s| s.arg("warm-contexts", 0).arg("task-wait-ms", 100)).await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let details = format!("open {} then wait 25 seconds then report the title", app.site.url("/pricing"));
    let r = app.new_task(&key, &sid, &details).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let began = Instant::now();
    // Once the page is open, its renderer is killed.
    let site = &app.site;
    wait_until(Duration::from_secs(15), "the page was requested", || site.was_requested(None, "/pricing")).await;
    let browser = app.app().manager.pool().pids().await;
    let renderers = || -> Vec<u32> {
        browser.iter().flat_map(|b| process_tree(*b)).filter(|p| cmdline(*p).contains("--type=renderer")).collect()
    };
    wait_until(Duration::from_secs(10), "the page has a renderer", || !renderers().is_empty()).await;
    // The navigation has finished (the wait step runs) before the renderer dies.
    app.poll_until(&sid, &tid, Duration::from_secs(10), |b| b["usage"]["computeTime"].as_f64() >= Some(2.0)).await;
    for pid in renderers() {
        signal(pid, "KILL");
    }
    let killed_after = began.elapsed();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(20)).await;
    let noticed_after = began.elapsed();
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["code"], "PAGE_CRASH", "{done}");
    assert!(noticed_after < killed_after + Duration::from_secs(5), "{killed_after:?} -> {noticed_after:?}: {done}");
    let compute = done["usage"]["computeTime"].as_f64().expect("computeTime");
    assert!(compute < killed_after.as_secs_f64() + 5.0, "billed {compute} s for a crash at {killed_after:?}: {done}");
    app.stop().await;
}

#[tokio::test]
async fn a_stopped_browser_is_reported_unhealthy_and_refused_until_it_answers() {
    let app = TestApp::spawn_with(|s| s.arg("warm-contexts", 1)).await;
    let key = app.key().await;
    let first = app.start_session(&key, json!({})).await;
    let health = app.get("/start/health").await;
    assert_eq!(health.body["status"], "healthy", "{}", health.body);
    assert_eq!(health.body["browser"], "responsive", "{}", health.body);
    let pid = app.app().manager.pool().pids().await[0];
    signal(pid, "STOP");
    let deadline = Instant::now() + Duration::from_secs(15);
    let stopped = loop {
        let h = app.get("/start/health").await;
        if h.body["status"] != "healthy" {
            break h;
        }
        assert!(Instant::now() < deadline, "health still says healthy: {}", h.body);
        tokio::time::sleep(crate::helpers::POLL).await;
    };
    let resume = scopeguard(pid);
    assert_eq!(stopped.body["status"], "unhealthy", "{}", stopped.body);
    assert_eq!(stopped.body["browser"], "unresponsive", "{}", stopped.body);
    assert_eq!(stopped.body["instancesAvailable"], false, "{}", stopped.body);
    let refused = app.post("/start/start-session", &key, json!({})).await;
    refused.assert_error(503, "INSTANCE_UNAVAILABLE");
    drop(resume);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let h = app.get("/start/health").await;
        if h.body["status"] == "healthy" && h.body["browser"] == "responsive" {
            break;
        }
        assert!(Instant::now() < deadline, "health did not recover: {}", h.body);
        tokio::time::sleep(crate::helpers::POLL).await;
    }
    let done = app.run_in(&key, &first, &format!("open {}; report the title", app.site.url("/pricing"))).await;
    assert_eq!(done["data"]["message"], "Pricing", "{done}");
    assert_eq!(app.post("/start/start-session", &key, json!({})).await.status, 200);
    app.stop().await;
}

/// Sends SIGCONT to `pid` when dropped (also when the test fails halfway).
fn scopeguard(pid: u32) -> impl Drop {
    struct Resume(u32);
    impl Drop for Resume {
        fn drop(&mut self) {
            signal(self.0, "CONT");
        }
    }
    Resume(pid)
}

/// The profile directory of the Chromium a server started (from its `--user-data-dir`).
async fn profile_of(server: &Server) -> PathBuf {
    let found = || {
        child_pids(server.pid()).into_iter().find_map(|p| {
            let line = cmdline(p);
            let dir = line.split(' ').find_map(|a| a.strip_prefix("--user-data-dir="))?;
            Some(PathBuf::from(dir))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // Read once per turn: the launcher execs into Chromium, its command line briefly unreadable.
        if let Some(dir) = found() {
            return dir;
        }
        assert!(Instant::now() < deadline, "the server started no Chromium");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_restart_sweeps_the_profiles_a_killed_service_left_and_no_live_ones() {
    let (data, other_data) = (tempfile::tempdir().expect("data"), tempfile::tempdir().expect("data"));
    let other = Server::start(other_data.path()).await;
    let other_profile = profile_of(&other).await;
    let server = Server::start(data.path()).await;
    let orphan = profile_of(&server).await;
    assert_ne!(orphan, other_profile);
    server.crash();
    assert!(orphan.exists(), "a killed service leaves its profile behind");
    let server = Server::start(data.path()).await;
    let fresh = profile_of(&server).await;
    wait_until(Duration::from_secs(15), "the orphaned profile is swept", || !orphan.exists()).await;
    assert!(other_profile.exists(), "the profile of the other live service stays");
    assert!(fresh.exists(), "the new profile stays");
    server.crash();
    other.crash();
}
