//! The console (`/console`) in a real headless Chromium: a person pastes a key, starts a session,
//! watches its live video, sends a task and sees its events, takes over with a click on the video
//! that lands on the page at the spec's coordinates, and answers the agent's question in place; and its
//! layout and states in Playwright at a laptop's, a desktop's and a phone's size; its session tools (the
//! list's titles, starting with options, the task history) and account page (balance, usage, files,
//! profiles, webhooks) and its light and dark schemes in Playwright too. With
//! `WEBPILOT_CONSOLE_SCREENSHOT=<path>` the layout test also saves a screenshot of the console watching a
//! session at 1280 × 800 (docs/console.png is made this way).

use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::viewer::{click, click_at, eval, eval_until, type_into};
use webpilot_testkit::Viewer;

/// The log lines of the console's event list, then its status line.
const LOG: &str = "Array.from(document.querySelectorAll('#log li')).map((li) => li.textContent)\
                   .concat(['status: ' + document.getElementById('status').textContent])";

fn log_has(lines: &Value, needle: &str) -> bool {
    lines.as_array().is_some_and(|l| l.iter().any(|line| line.as_str().is_some_and(|s| s.contains(needle))))
}

/// Whether a task completed after the first log line containing `marker`.
fn completed_after(lines: &Value, marker: &str) -> bool {
    let lines: Vec<&str> = lines.as_array().map(|l| l.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let at = lines.iter().position(|s| s.contains(marker));
    at.is_some_and(|i| lines[i..].iter().any(|s| s.contains("task_completed")))
}

#[tokio::test]
async fn a_person_watches_a_session_sends_a_task_and_takes_over_in_the_console() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let viewer = Viewer::launch().await;
    let console = viewer.open(&format!("{}/console", app.base)).await;

    // The key goes into the tab's session storage, never the URL.
    type_into(&console, "#key", &key).await;
    click(&console, "#use-key").await;
    eval_until(&console, "sessionStorage.getItem('webpilot.key')", Duration::from_secs(5), "the key kept", |v| {
        v == &json!(key)
    })
    .await;
    assert!(!eval(&console, "location.href").await.as_str().unwrap_or_default().contains(&key));
    assert_eq!(eval(&console, "document.getElementById('key').value").await, "", "the input is cleared");

    // Start a session on a red page; the console selects it and shows its video.
    type_into(&console, "#starting-url", &app.site.url("/paint?bg=ff0000")).await;
    click(&console, "#start").await;
    let video = "(() => { const v = document.getElementById('video'); const c = document.createElement('canvas'); \
                 c.width = 1024; c.height = 600; const x = c.getContext('2d'); \
                 if (!v.videoWidth) return { width: 0 }; x.drawImage(v, 0, 0, 1024, 600); \
                 return { width: v.videoWidth, height: v.videoHeight, page: Array.from(x.getImageData(500, 400, 1, 1).data.slice(0, 3)), \
                 mode: document.getElementById('video-mode').textContent }; })()";
    let shown = eval_until(&console, video, Duration::from_secs(30), "the red page in the video", |v| {
        v["page"].as_array().is_some_and(|p| p.len() == 3 && p[0].as_i64() > Some(200) && p[1].as_i64() < Some(60))
    })
    .await;
    assert_eq!((shown["width"].as_u64(), shown["height"].as_u64()), (Some(1024), Some(600)), "{shown}");
    assert_eq!(shown["mode"], "WebRTC", "{shown}");
    let listed = eval_until(
        &console,
        "document.querySelectorAll('#sessions li').length",
        Duration::from_secs(5),
        "the session listed",
        |v| v == &json!(1),
    )
    .await;
    assert_eq!(listed, 1);
    let sid =
        eval(&console, "document.getElementById('current').textContent").await.as_str().unwrap_or_default().to_owned();
    assert!(app.app().manager.is_live(&sid), "the console's session {sid} is live");

    // A task sent from the console runs, and its events appear in the log.
    type_into(&console, "#task", "report the title").await;
    click(&console, "#send-task").await;
    let lines = eval_until(&console, LOG, Duration::from_secs(30), "task_completed in the log", |l| {
        log_has(l, "task_completed")
    })
    .await;
    assert!(log_has(&lines, "Paint ff0000"), "the result is shown: {lines}");
    // Take over and click the video at frame (300, 255): the page gets a click at (300, 100).
    click(&console, "#takeover").await;
    eval_until(
        &console,
        "document.getElementById('takeover').getAttribute('aria-pressed')",
        Duration::from_secs(5),
        "take over on",
        |v| v == "true",
    )
    .await;
    // The video is scaled to the column: the click maps through the scale to the frame point.
    let rect = eval(&console, "(() => { const r = document.getElementById('screen').getBoundingClientRect(); return { left: r.left, top: r.top, width: r.width, height: r.height }; })()").await;
    let f = |k: &str| rect[k].as_f64().unwrap_or(0.0);
    assert!((f("width") / f("height") - 1024.0 / 600.0).abs() < 0.01, "keeps its aspect ratio: {rect}");
    let (sx, sy) = (f("width") / 1024.0, f("height") / 600.0);
    let (cx, cy) = ((f("left") + 300.0 * sx).round(), (f("top") + 255.0 * sy).round());
    let (fx, fy) = (((cx - f("left")) / sx).round(), ((cy - f("top")) / sy).round());
    click_at(&console, cx, cy).await;
    let sent = format!("click: {fx},{fy}");
    eval_until(&console, LOG, Duration::from_secs(10), "the click in the log", |l| log_has(l, &sent)).await;
    // Release control, then the page must have seen the click where the person clicked.
    click(&console, "#takeover").await;
    assert_eq!(poll_title(&app, &key, &sid).await, format!("clicked {fx},{}", fy - 155.0));

    // The agent asks; the question appears in place and the person's answer resumes the task.
    type_into(&console, "#task", "ask the human \"Which word?\"; report the url").await;
    click(&console, "#send-task").await;
    let question = "(() => { const g = document.getElementById('guardrail'); return g.hidden ? '' : document.getElementById('guardrail-question').textContent; })()";
    eval_until(&console, question, Duration::from_secs(20), "the guardrail question shown", |q| q == "Which word?")
        .await;
    type_into(&console, "#guardrail-answer", "blue").await;
    click(&console, "#guardrail button[type=submit]").await;
    eval_until(&console, LOG, Duration::from_secs(20), "the answered task completed", |l| {
        completed_after(l, "guardrail answer: blue")
    })
    .await;
    assert_eq!(eval(&console, "document.getElementById('guardrail').hidden").await, true);

    // A second task from the console, on the fixture's home page; the screenshot shows this moment.
    type_into(&console, "#task", &format!("open {}", app.site.url("/"))).await;
    click(&console, "#send-task").await;
    eval_until(&console, LOG, Duration::from_secs(30), "the second task completed", |l| {
        completed_after(l, "task: open")
    })
    .await;
    viewer.close().await;
    app.stop().await;
}

/// The session's page title, read by a task once the console's manual click has landed.
async fn poll_title(app: &TestApp, key: &str, sid: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let done = app.run_in(key, sid, "report the title").await;
        let title = done["data"]["message"].as_str().unwrap_or_default().to_owned();
        if title.starts_with("clicked") || std::time::Instant::now() > deadline {
            return title;
        }
        tokio::time::sleep(crate::helpers::POLL).await;
    }
}

#[tokio::test]
async fn the_session_list_shows_only_the_callers_live_sessions_and_the_console_files_are_served() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let (_, other) = app.user(5.0).await;
    let mine = app.start_session(&key, json!({})).await;
    let theirs = app.start_session(&other, json!({})).await;
    let list = app.client.get(format!("{}/start/sessions", app.base)).bearer_auth(&key).send().await.expect("GET");
    assert_eq!(list.status(), 200);
    let body: Value = list.json().await.expect("JSON");
    let ids: Vec<&str> =
        body["sessions"].as_array().expect("sessions").iter().filter_map(|s| s["sessionId"].as_str()).collect();
    assert_eq!(ids, vec![mine.as_str()], "{body}");
    assert!(!body.to_string().contains(&theirs));
    let first = &body["sessions"][0];
    assert!(first["socketURL"].as_str().unwrap_or_default().contains("token="), "{first}");
    assert!(first["streaming"]["webRTCURL"].as_str().unwrap_or_default().contains("/whep?token="), "{first}");
    app.get("/start/sessions").await.assert_error(401, "UNAUTHORIZED");

    let page = app.client.get(format!("{}/console", app.base)).send().await.expect("GET");
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-security-policy"].to_str().unwrap_or_default().contains("script-src 'self'"));
    assert!(page.text().await.unwrap_or_default().contains("/console/console.js"));
    for (file, kind) in [("console.css", "text/css"), ("socket.io.min.js", "text/javascript")] {
        let r = app.client.get(format!("{}/console/{file}", app.base)).send().await.expect("GET");
        assert_eq!(r.status(), 200, "{file}");
        assert!(r.headers()["content-type"].to_str().unwrap_or_default().starts_with(kind), "{file}");
    }
    // The entry module and every module it imports, followed through their `from './x.js'` lines.
    let (mut todo, mut seen) = (vec!["console.js".to_owned()], Vec::<String>::new());
    while let Some(file) = todo.pop() {
        if seen.contains(&file) {
            continue;
        }
        let r = app.client.get(format!("{}/console/{file}", app.base)).send().await.expect("GET");
        assert_eq!(r.status(), 200, "{file}");
        assert!(r.headers()["content-type"].to_str().unwrap_or_default().starts_with("text/javascript"), "{file}");
        let body = r.text().await.unwrap_or_default();
        todo.extend(body.split("from './").skip(1).filter_map(|rest| rest.split('\'').next()).map(str::to_owned));
        seen.push(file);
    }
    assert!(seen.len() > 5, "the console's modules: {seen:?}");
    // The OpenAPI document names exactly the files served: every module reached above, the style and the client.
    let doc: Value =
        app.client.get(format!("{}/openapi.json", app.base)).send().await.expect("GET").json().await.expect("JSON");
    let listed = &doc["paths"]["/console/{asset}"]["get"]["parameters"][0]["schema"]["enum"];
    let mut listed: Vec<String> =
        listed.as_array().expect("enum").iter().filter_map(|v| v.as_str()).map(str::to_owned).collect();
    let mut served: Vec<String> =
        seen.iter().cloned().chain(["console.css".into(), "socket.io.min.js".into()]).collect();
    listed.sort();
    served.sort();
    assert_eq!(listed, served);
    app.get("/console/nothing.js").await.assert_error(404, "NOT_FOUND");
    app.stop().await;
}

#[tokio::test]
async fn a_person_plays_a_recording_and_seeks_it_from_its_timeline_in_the_console() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let body = json!({ "startingUrl": app.site.url("/paint?bg=ff0000"), "recording": true });
    let r = app.post("/start/start-session", &key, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let green = app.site.url("/paint?bg=00ff00");
    let done = app.run_in(&key, &sid, &format!("wait 2 seconds; open {green}; wait 2 seconds")).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    assert_eq!(app.state(&key, &sid, "terminate").await.status, 200);
    crate::recordings::ready(&app, &key, &sid).await;

    let viewer = Viewer::launch().await;
    let console = viewer.open(&format!("{}/console", app.base)).await;
    type_into(&console, "#key", &key).await;
    click(&console, "#use-key").await;
    eval_until(
        &console,
        "document.querySelectorAll('#recordings li button:not([disabled])').length",
        Duration::from_secs(10),
        "the recording listed",
        |v| v == &json!(1),
    )
    .await;
    click(&console, "#recordings li button").await;
    // The video plays: it has a duration, and its playhead moves.
    let playing = "(() => { const v = document.getElementById('recording'); return { duration: v.duration || 0, at: v.currentTime, width: v.videoWidth, \
                   status: document.getElementById('status').textContent, src: v.src }; })()";
    let shown = eval_until(&console, playing, Duration::from_secs(20), "the video playing", |v| {
        v["duration"].as_f64().is_some_and(|d| d > 3.0) && v["at"].as_f64().is_some_and(|t| t > 0.3)
    })
    .await;
    assert_eq!(shown["width"], 1024, "{shown}");
    // The player opened in view: the page scrolled until the whole video is inside the window.
    let seen = "(() => { const r = document.getElementById('recording').getBoundingClientRect(); \
                return [r.top, r.bottom, innerHeight]; })()";
    let at = eval(&console, seen).await;
    let n = |i: usize| at[i].as_f64().unwrap_or(f64::NAN);
    assert!(n(0) >= -1.0 && n(1) <= n(2) + 1.0, "the recording at {at}, not in view");
    // Clicking the navigation to the green page seeks the video there, and highlights that event.
    let entries = eval_until(
        &console,
        "Array.from(document.querySelectorAll('#timeline li')).map((li) => [li.dataset.t, li.textContent])",
        Duration::from_secs(10),
        "the timeline",
        |v| v.as_array().is_some_and(|l| l.iter().any(|e| e[1].as_str().is_some_and(|t| t.contains("00ff00")))),
    )
    .await;
    let list = entries.as_array().expect("entries");
    let at =
        list.iter().position(|e| e[1].as_str().is_some_and(|t| t.contains("action: navigate") && t.contains("00ff00")));
    let at = at.unwrap_or_else(|| panic!("no navigation to green in {entries}"));
    let t: f64 = list[at][0].as_str().and_then(|t| t.parse().ok()).expect("t");
    eval(&console, "document.getElementById('recording').pause()").await;
    click(&console, &format!("#timeline li:nth-child({})", at + 1)).await;
    let seek = "(() => { const v = document.getElementById('recording'); const cur = document.querySelector('#timeline li.current'); \
          return { at: v.currentTime, current: cur ? cur.textContent : '' }; })()";
    let sought = eval_until(&console, seek, Duration::from_secs(10), "the video at the green navigation", |v| {
        v["at"].as_f64().is_some_and(|a| (a - t / 1000.0).abs() < 0.5)
            && v["current"].as_str().is_some_and(|c| c.contains("00ff00"))
    })
    .await;
    assert!(sought["current"].as_str().is_some_and(|c| c.contains("navigate")), "{sought}");
    // Share link and download: both are the read-only link, and it serves the video.
    click(&console, "#share").await;
    let links = "(() => { const a = document.getElementById('download'); \
                 return { share: document.getElementById('share-url').value, download: a.href, name: a.download }; })()";
    let links = eval_until(&console, links, Duration::from_secs(5), "the share link shown", |v| {
        v["share"].as_str().is_some_and(|s| s.contains("/recordings/"))
    })
    .await;
    assert_eq!(links["share"], links["download"], "{links}");
    assert_eq!(links["name"], format!("{sid}.webm"), "{links}");
    let video = app.client.get(links["share"].as_str().unwrap_or_default()).send().await.expect("GET the link");
    assert_eq!(video.status(), 200);
    assert_eq!(video.headers()["content-type"], "video/webm");
    viewer.close().await;
    app.stop().await;
}

#[tokio::test]
async fn the_console_fits_a_laptop_a_desktop_and_a_phone_and_shows_its_states() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let site = app.site.url("/");
    let shot = std::env::var("WEBPILOT_CONSOLE_SCREENSHOT").unwrap_or_default();
    let mut args = vec![app.base.as_str(), key.as_str(), site.as_str()];
    if !shot.is_empty() {
        args.push(&shot);
    }
    let seen = crate::clients::run_python("console_layout.py", &args, &[], Duration::from_secs(120)).await;
    println!("{seen}");
    let viewports = seen["viewports"].as_array().expect("viewports");
    let names: Vec<&str> = viewports.iter().filter_map(|v| v["viewport"].as_str()).collect();
    assert_eq!(names, ["1280x800", "1920x1080", "390x844"], "{seen}");
    for v in viewports {
        assert!(v["wrong_key"].as_str().is_some_and(|w| w.contains("wrong key")), "{v}");
        assert!(v["ended_hint"].as_str().is_some_and(|h| h.contains("ended (terminated)")), "{v}");
    }
    assert_eq!(viewports[0]["link_opened"], true, "{seen}");
    assert_eq!(viewports[0]["list_follows_popup"], true, "{seen}");
    assert_eq!(viewports[1]["markup_as_text"], true, "{seen}");
    assert_eq!(
        (&viewports[2]["guardrail_answered"], &viewports[2]["reconnected"]),
        (&json!(true), &json!(true)),
        "{seen}"
    );
    // The laptop's video fills its column (not its native 1024 px), the phone's the phone's width.
    let width = |i: usize| viewports[i]["screen"][0].as_f64().unwrap_or(0.0);
    assert!(width(0) < 1024.0 && width(1) > 1024.0 && width(2) < 390.0, "{seen}");
    app.stop().await;
}

#[tokio::test]
async fn the_console_lists_sessions_starts_with_options_shows_task_history_and_runs_the_account_page() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    // A live session on a blue page, with a file in its area, for the list and the files page.
    let live = app.start_session(&key, json!({ "startingUrl": app.site.url("/paint?bg=0000ff") })).await;
    let upload = app
        .client
        .post(format!("{}/sessions/{live}/files?name=notes.txt", app.base))
        .bearer_auth(&key)
        .body("hello from webpilot")
        .send()
        .await
        .expect("upload");
    assert_eq!(upload.status(), 200);
    let site = app.site.url("/");
    let args = [app.base.as_str(), key.as_str(), site.as_str(), live.as_str()];
    let seen = crate::clients::run_python("console_pages.py", &args, &[], Duration::from_secs(120)).await;
    println!("{seen}");
    assert!(seen["listed"][1].as_str().is_some_and(|t| t.contains("/paint?bg=ff0000")), "{seen}");
    // After a reload: the page's title, age and state from the service, and the history from its task list.
    assert_eq!(seen["reloaded"][0], "Paint ff0000", "{seen}");
    assert!(seen["reloaded"][1].as_str().is_some_and(|m| m.ends_with(" ago · idle")), "{seen}");
    assert_eq!(seen["history"], json!(["report the title", "Paint ff0000"]), "{seen}");
    // The live video, cut by the service, was negotiated again over WebRTC and plays.
    assert_eq!(seen["rewatched"][0], "WebRTC", "{seen}");
    assert!(seen["rewatched"][2].as_u64() > seen["rewatched"][1].as_u64(), "{seen}");
    assert_eq!((&seen["task"][0], &seen["task"][2]), (&json!("report the title"), &json!("Paint ff0000")), "{seen}");
    assert_eq!(seen["boxes"].as_array().map(Vec::len), Some(1), "the video box moved: {seen}");
    assert_eq!(seen["file"], json!(["notes.txt", "hello from webpilot"]), "{seen}");
    assert_eq!(seen["profile"], "exported and deleted", "{seen}");
    assert!(seen["webhook"][0].as_str().is_some_and(|m| m.contains("<img src=x")), "{seen}");
    for scheme in ["light", "dark"] {
        assert!(seen[scheme][0].as_f64().is_some_and(|r| r >= 7.0), "{scheme}: {seen}");
    }
    // The session started from the console was recorded.
    let started = seen["started"].as_str().expect("the started session");
    let r = app.client.get(format!("{}/recordings/{started}", app.base)).bearer_auth(&key).send().await.expect("GET");
    assert_eq!(r.status(), 200);
    app.stop().await;
}
