//! The DevTools relay's limits: a client that floods the relay and never reads is closed with 1008 before
//! the service's memory grows by more than its per-connection budget, and another tenant's round trips go
//! on meanwhile, as they do while one client sends eight 50 MB commands; a session never loses its last
//! page to the relay (`Page.close`, two `Target.closeTarget`s at once); and a burst of
//! `Target.createTarget` stops at the tab cap, also when two connections of one session burst at once; and a
//! large command awaiting what a later small one does is answered.

use crate::cdp_client::Cdp;
use crate::helpers::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;

fn url_of(body: &Value) -> String {
    body["cdpURL"].as_str().expect("cdpURL").to_owned()
}

/// This process's resident memory: the service runs in it.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of kB");
    kib * 1024
}

#[tokio::test]
async fn a_client_that_never_reads_is_closed_with_1008_within_its_memory_budget_and_others_go_on() {
    let app = TestApp::spawn().await;
    let (ka, kb) = (app.key().await, app.key().await);
    let (_, body_a) = app.session_on(&ka, "/").await;
    let (_, body_b) = app.session_on(&kb, "/").await;
    let mut a = Cdp::connect(&url_of(&body_a)).await;
    let (_, page_a) = a.attach_page().await;
    // A second connection of A's to the same page: its evaluate is answered once A's are done.
    let mut a2 = Cdp::connect(&url_of(&body_a)).await;
    let (_, page_a2) = a2.attach_page().await;
    // It waits for all of A's evaluates to run first.
    a2.limit = Duration::from_secs(180);
    let mut b = Cdp::connect(&url_of(&body_b)).await;
    let (_, page_b) = b.attach_page().await;
    let big = json!({ "expression": "'x'.repeat(1000000)", "returnByValue": true });
    assert_eq!(
        a.call_in(&page_a, "Runtime.evaluate", big.clone()).await.expect("one")["result"]["value"]
            .as_str()
            .map(str::len),
        Some(1_000_000)
    );
    assert_eq!(b.eval(&page_b, "6 * 7").await, 42);

    let start = rss();
    let peak = Arc::new(AtomicU64::new(start));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn({
        let (peak, stop) = (peak.clone(), stop.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let done = AtomicBool::new(false);
    let began = Instant::now();
    let flood = async {
        // 400 answers of 1 MB each, none of them read.
        for id in 1_000..1_400 {
            let msg = json!({ "id": id, "method": "Runtime.evaluate", "params": big, "sessionId": page_a });
            match tokio::time::timeout(Duration::from_secs(10), a.try_send_text(msg.to_string())).await {
                Ok(true) => {}
                // Closed, or the relay stopped reading: either way the flood is over.
                _ => break,
            }
        }
        // The page has run A's evaluates once it answers this one.
        assert_eq!(a2.eval(&page_a2, "1 + 1").await, 2);
        eprintln!("A's evaluates ran in {:?}", began.elapsed());
        done.store(true, Ordering::Relaxed);
    };
    let probe = async {
        let mut trips = Vec::new();
        while !done.load(Ordering::Relaxed) || trips.len() < 5 {
            let t = Instant::now();
            assert_eq!(b.eval(&page_b, "6 * 7").await, 42, "B's round trip completes");
            trips.push(t.elapsed());
        }
        trips
    };
    let ((), mut trips) = tokio::join!(flood, probe);
    stop.store(true, Ordering::Relaxed);
    sampler.await.expect("sampler");
    let peak = peak.load(Ordering::Relaxed);
    trips.sort();
    let p95 = trips[trips.len() * 95 / 100 - usize::from(trips.len() * 95 % 100 == 0)];
    let worst = trips[trips.len() - 1];
    eprintln!(
        "RSS before {} MiB, peak {} MiB; B's round trips: {} of them, p95 {p95:?}, worst {worst:?}",
        start / MIB,
        peak / MIB,
        trips.len()
    );
    assert!(peak < start + 100 * MIB, "RSS grew from {} MiB to {} MiB", start / MIB, peak / MIB);
    // Generous: timing on a loaded test machine (the service shares the test's one thread); without the
    // limits a round trip took over 20 s.
    assert!(worst < Duration::from_secs(5), "B waited {worst:?} behind A's flood");

    let frame = a.close_discarding(Duration::from_secs(30)).await.expect("a close frame");
    assert_eq!(u16::from(frame.code), 1008, "{frame:?}");
    // The session and its other connection go on.
    assert_eq!(a2.eval(&page_a2, "2 + 2").await, 4);
    eprintln!("RSS after A was closed: {} MiB", rss() / MIB);
    app.stop().await;
}

/// Waits (polling, at most 20 s) until the client lists `n` pages; the list.
async fn pages_become(cdp: &mut Cdp, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pages = cdp.targets("page").await;
        if pages.len() == n || Instant::now() > deadline {
            return pages;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn neither_page_close_nor_two_close_targets_at_once_leave_the_session_without_a_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/").await;
    let mut a = Cdp::connect(&url_of(&body)).await;
    let (first, session) = a.attach_page().await;

    // Page.close on the session's only page, directly and nested.
    let refused = a.call_in(&session, "Page.close", json!({})).await.expect_err("Page.close is refused");
    assert!(refused.contains("last tab"), "{refused}");
    let nested = json!({ "sessionId": session, "message": json!({ "id": 1, "method": "Page.close" }).to_string() });
    assert!(a.call("Target.sendMessageToTarget", nested).await.is_err(), "nested Page.close is refused");
    assert_eq!(a.targets("page").await.len(), 1);

    // Two pages, both closed at once: one of the two is refused.
    let made = a.call("Target.createTarget", json!({ "url": "about:blank" })).await.expect("createTarget");
    let second = made["targetId"].as_str().expect("targetId").to_owned();
    assert_eq!(pages_become(&mut a, 2).await.len(), 2);
    let one = a.send_command(None, "Target.closeTarget", json!({ "targetId": first })).await;
    let two = a.send_command(None, "Target.closeTarget", json!({ "targetId": second })).await;
    let answers = [a.answer(one, "closeTarget").await, a.answer(two, "closeTarget").await];
    assert_eq!(answers.iter().filter(|r| r.is_ok()).count(), 1, "{answers:?}");
    let left = pages_become(&mut a, 1).await;
    assert_eq!(left.len(), 1, "{left:?}");

    // And Page.close in the last page's session, once the other one is gone.
    let (_, last) = a.attach_page().await;
    assert!(a.call_in(&last, "Page.close", json!({})).await.is_err(), "Page.close of the last page");
    let done = app.run_in(&key, &sid, &format!("open {} then report the title", app.site.url("/pricing"))).await;
    assert_eq!(done["data"]["message"], "Pricing", "{done}");
    app.stop().await;
}

/// `each` `Target.createTarget`s sent through each of `conns` in turn, all before any answer is read; the
/// ids of the pages made (the others were refused).
async fn burst_of_create_targets(conns: &mut [&mut Cdp], each: usize) -> Vec<String> {
    let mut sent = Vec::new();
    for _ in 0..each {
        for (which, cdp) in conns.iter_mut().enumerate() {
            sent.push((which, cdp.send_command(None, "Target.createTarget", json!({ "url": "about:blank" })).await));
        }
    }
    let mut made = Vec::new();
    for (which, id) in sent {
        if let Ok(answer) = conns[which].answer(id, "createTarget").await {
            made.push(answer["targetId"].as_str().expect("targetId").to_owned());
        }
    }
    made
}

#[tokio::test]
async fn a_burst_of_create_targets_stops_at_the_tab_cap() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let mut a = Cdp::connect(&url_of(&body)).await;
    let made = burst_of_create_targets(&mut [&mut a], 30).await.len();
    // The session's own page and at most 7 more: the default cap of 8. (A page counts from the moment it is
    // asked for until Chromium answers, and from its discovery on: in a burst it may count twice for a
    // moment, so a few fewer than 7 may be made, never more.)
    assert!((1..=7).contains(&made), "{made} pages made against a cap of 8 with one open");
    let pages = a.targets("page").await;
    assert_eq!(pages.len(), made + 1, "{pages:?}");
    app.stop().await;
}

#[tokio::test]
async fn another_tenants_round_trips_go_on_while_one_sends_eight_50_mb_commands() {
    let app = TestApp::spawn().await;
    let (ka, kb) = (app.key().await, app.key().await);
    let (_, body_a) = app.session_on(&ka, "/").await;
    let (_, body_b) = app.session_on(&kb, "/").await;
    let mut b = Cdp::connect(&url_of(&body_b)).await;
    let (_, page_b) = b.attach_page().await;
    // A is a client of its own (a thread and runtime of its own): building and masking 50 MB frames
    // does not hold up the service, which runs on this test's thread.
    let done = Arc::new(AtomicBool::new(false));
    let url_a = url_of(&body_a);
    let a = std::thread::spawn({
        let done = done.clone();
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let mut a = Cdp::connect(&url_a).await;
                let (_, page_a) = a.attach_page().await;
                a.limit = Duration::from_secs(180);
                let expression = format!("'{}'.length", "x".repeat(50_000_000));
                let began = Instant::now();
                let mut ids = Vec::new();
                for _ in 0..8 {
                    let params = json!({ "expression": expression, "returnByValue": true });
                    ids.push(a.send_command(Some(&page_a), "Runtime.evaluate", params).await);
                }
                for id in ids {
                    let r = a.answer(id, "Runtime.evaluate").await.expect("evaluated");
                    assert_eq!(r["result"]["value"], 50_000_000);
                }
                eprintln!("A's eight 50 MB commands were answered in {:?}", began.elapsed());
            });
            done.store(true, Ordering::Relaxed);
        }
    });
    let mut trips = Vec::new();
    while !done.load(Ordering::Relaxed) || trips.len() < 5 {
        assert!(!a.is_finished() || done.load(Ordering::Relaxed), "A's client failed");
        let t = Instant::now();
        assert_eq!(b.eval(&page_b, "6 * 7").await, 42, "B's round trip completes");
        trips.push(t.elapsed());
    }
    a.join().expect("A's client");
    trips.sort();
    let worst = trips[trips.len() - 1];
    eprintln!("B's round trips: {} of them, p95 {:?}, worst {worst:?}", trips.len(), trips[trips.len() * 95 / 100]);
    // Generous (a debug build, Chromium parsing 50 MB): before the relay held back a client's large
    // commands while 16 MiB of them were unanswered, a round trip took over 20 s; the p95 stays in
    // milliseconds.
    assert!(worst < Duration::from_secs(10), "B waited {worst:?} behind A's large commands");
    app.stop().await;
}

#[tokio::test]
async fn bursts_from_two_connections_of_one_session_share_the_tab_cap_and_the_last_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (sid, body) = app.session_on(&key, "/").await;
    let (mut a, mut b) = (Cdp::connect(&url_of(&body)).await, Cdp::connect(&url_of(&body)).await);
    // Both connections know the session's page before the bursts.
    assert_eq!((a.targets("page").await.len(), b.targets("page").await.len()), (1, 1));
    let made = burst_of_create_targets(&mut [&mut a, &mut b], 15).await;
    // The session's own page and at most 7 more, however many connections ask at once.
    assert!((1..=7).contains(&made.len()), "{} pages made against a cap of 8 with one open", made.len());
    let pages = pages_become(&mut a, made.len() + 1).await;
    assert_eq!(pages.len(), made.len() + 1, "{pages:?}");

    // Every page closed at once, half through each connection: one is always left.
    let all: Vec<String> = pages.iter().filter_map(|p| p["targetId"].as_str().map(str::to_owned)).collect();
    let mut sent = Vec::new();
    for (i, target) in all.iter().enumerate() {
        let cdp = if i % 2 == 0 { &mut a } else { &mut b };
        sent.push((i % 2, cdp.send_command(None, "Target.closeTarget", json!({ "targetId": target })).await));
    }
    let mut closed = 0;
    for (which, id) in sent {
        let cdp = if which == 0 { &mut a } else { &mut b };
        if cdp.answer(id, "closeTarget").await.is_ok() {
            closed += 1;
        }
    }
    assert_eq!(closed, all.len() - 1, "{closed} of {} pages closed", all.len());
    assert_eq!(pages_become(&mut b, 1).await.len(), 1);
    let done = app.run_in(&key, &sid, &format!("open {} then report the title", app.site.url("/pricing"))).await;
    assert_eq!(done["data"]["message"], "Pricing", "{done}");
    app.stop().await;
}

#[tokio::test]
async fn a_large_command_awaiting_what_a_later_small_one_does_is_not_stuck_behind_the_budget() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, body) = app.session_on(&key, "/").await;
    let mut a = Cdp::connect(&url_of(&body)).await;
    let (_, page) = a.attach_page().await;
    // 20 MB of padding in a comment: past the relay's 16 MiB of large commands in flight on its own.
    let padding = "x".repeat(20 * 1024 * 1024);
    let expression =
        format!("/*{padding}*/ new Promise((done) => {{ window.__go = done; }}).then((v) => 'released ' + v)");
    let params = json!({ "expression": expression, "awaitPromise": true, "returnByValue": true });
    let big = a.send_command(Some(&page), "Runtime.evaluate", params).await;
    // A small command sent after it settles its promise; the large one's answer waits for it.
    let release = "new Promise((done) => { const go = () => window.__go ? (window.__go('now'), done(true)) : \
                   setTimeout(go, 10); go(); })";
    let params = json!({ "expression": release, "awaitPromise": true, "returnByValue": true });
    let small = a.send_command(Some(&page), "Runtime.evaluate", params).await;
    assert_eq!(a.answer(small, "the small evaluate").await.expect("answered")["result"]["value"], true);
    let answered = a.answer(big, "the large evaluate").await.expect("answered");
    assert_eq!(answered["result"]["value"], "released now");
    app.stop().await;
}
