//! Human checks (issue 34, item 3): each of the five kinds of check on the fixture's pages (the widgets'
//! markup only) pauses the task with a `human_verification_needed` guardrail, the agent never clicks the
//! check, and a person who takes over, passes it and answers lets the task finish from the same page;
//! with a solver service the token reaches the form and no guardrail is asked; a failing solver falls
//! back to the guardrail. Every check is an `action` event `human_verification`, also in the timeline.

use crate::agent::with_model;
use crate::helpers::{wait_until, Settings, TestApp};
use crate::recordings::json_of;
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_testkit::model::content_text;
use webpilot_testkit::site::challenges::PERSON_BUTTON;
use webpilot_testkit::{FakeSolver, Reply};

/// The fixture's pages and the kind each shows.
const KINDS: [(&str, &str); 5] = [
    ("recaptcha", "recaptcha_v2"),
    ("hcaptcha", "hcaptcha"),
    ("turnstile", "turnstile"),
    ("interstitial", "cloudflare_interstitial"),
    ("generic", "generic"),
];

const LIMIT: Duration = Duration::from_secs(30);

/// A planner task that signs up on a challenge page and reports the form's verdict.
fn sign_up(url: &str) -> String {
    format!("open {url}\ntype \"Ada\" into \"Name\"\nclick \"Submit\"\nreport the text of \"#result\"")
}

/// The session's events from now on (their wire form). Read with `drain` after a poll saw what follows
/// them: an event is published before the state a poll reads, so nothing races.
struct Events {
    rx: tokio::sync::broadcast::Receiver<webpilot_core::events::SessionEvent>,
    seen: Vec<Value>,
}

impl Events {
    fn of(app: &TestApp, sid: &str) -> Events {
        Events { rx: app.app().manager.subscribe(sid).expect("live session"), seen: Vec::new() }
    }

    fn drain(&mut self) -> &[Value] {
        while let Ok(ev) = self.rx.try_recv() {
            self.seen.push(ev.wire().1);
        }
        &self.seen
    }
}

/// The `human_verification` actions among `events`, as (kind, outcome).
fn verifications(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "action" && e["data"]["name"] == "human_verification")
        .map(|e| (e["data"]["kind"].as_str().unwrap_or("").into(), e["data"]["outcome"].as_str().unwrap_or("").into()))
        .collect()
}

async fn interact(app: &TestApp, key: &str, sid: &str, action: Value) {
    let r = app.send(key, sid, json!({ "actionType": "interaction", "action": action })).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// How often the person's button of the page `kind` was clicked.
fn clicks(app: &TestApp, kind: &str) -> usize {
    let want = format!("kind={kind}");
    app.site.requests().iter().filter(|r| r.path == "/challenges/clicked" && r.query.as_deref() == Some(&want)).count()
}

/// A person takes over, passes the check on the page (its button), releases control and answers.
async fn person_passes(app: &TestApp, key: &str, sid: &str, kind: &str) {
    interact(app, key, sid, json!({ "type": "takeOverControl" })).await;
    let (x, y) = PERSON_BUTTON;
    interact(app, key, sid, json!({ "type": "CLICK", "x": x, "y": y + 155.0 })).await;
    wait_until(LIMIT, "the person's click", || clicks(app, kind) == 1).await;
    if matches!(kind, "interstitial" | "mitigated" | "generic") {
        // The page reloads past the check (its cookie set).
        let path = format!("/challenges/{kind}");
        wait_until(LIMIT, "the page past the check", || {
            app.site.requests().iter().any(|r| r.path == path && r.cookie.as_deref().is_some_and(|c| c.contains("=ok")))
        })
        .await;
    }
    interact(app, key, sid, json!({ "type": "releaseControl" })).await;
    let r = app
        .send(key, sid, json!({ "actionType": "guardrail", "taskDetails": "done, I passed it", "newState": "resume" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

fn also_allow(mut s: Settings, extra: &str) -> Settings {
    let i = s.args.iter().position(|a| a == "--egress-allow").expect("the harness allows its site");
    s.args[i + 1] = format!("{},{extra}", s.args[i + 1]);
    s
}

#[tokio::test]
async fn each_kind_of_human_check_pauses_the_task_until_a_person_passes_it() {
    let receiver = crate::webhooks::Receiver::start(0).await;
    let app = TestApp::spawn_with(|s| also_allow(s, &format!("127.0.0.1:{}", receiver.port))).await;
    let key = app.key().await;
    crate::webhooks::register(&app, &key, &receiver, Some(json!(["task.guardrail"]))).await;
    // Chat completions: the same guardrail is its guardrail error.
    let generic = app.site.url("/challenges/generic");
    let body = json!({ "model": "svc-browser-1", "messages": [{ "role": "user", "content": sign_up(&generic) }] });
    let r = app.post("/v1/chat/completions", &key, body).await;
    assert_eq!(r.body["error"]["code"], "guardrail_triggered", "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Guardrail triggered: A \"verify you are human\" check is on"), "{message}");

    let sid = app.start_session(&key, json!({})).await;
    let mut events = Events::of(&app, &sid);
    for (page, kind) in KINDS {
        let url = app.site.url(&format!("/challenges/{page}"));
        let r = app.new_task(&key, &sid, &sign_up(&url)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
        let g =
            app.poll_until(&sid, &tid, LIMIT, |b| b["type"] == "guardrail_trigger" || b["status"] == "failed").await;
        assert_eq!(g["data"]["type"], "human_verification_needed", "{page}: {g}");
        let value = g["data"]["value"].as_str().unwrap_or_default();
        assert!(value.contains(&url) && value.contains("takeOverControl"), "{page}: {value}");
        // Nobody touched the check: the agent waits.
        assert_eq!(clicks(&app, page), 0, "{page}: the agent clicked the check");
        person_passes(&app, &key, &sid, page).await;
        let done = app.poll_final(&sid, &tid, LIMIT).await;
        assert_eq!(done["type"], "task_completed", "{page}: {done}");
        let said = done["data"]["message"].as_str().unwrap_or_default();
        assert!(said.starts_with(&format!("accepted {page} for Ada")), "{page}: {said}");
        assert_eq!(clicks(&app, page), 1, "{page}: only the person clicked");
        let seen = verifications(events.drain());
        let mine: Vec<_> = seen.iter().filter(|(k, _)| k == kind).map(|(_, o)| o.as_str()).collect();
        assert_eq!(mine, ["detected", "solved_by_person"], "{page}: {seen:?}");
    }
    // The agent was told, and no check was asked about twice.
    let all = events.drain().to_vec();
    let told = all
        .iter()
        .filter(|e| e["type"] == "agent" && e["content"].as_str().is_some_and(|c| c.contains("A person passed")));
    assert_eq!(told.count(), KINDS.len());
    assert_eq!(all.iter().filter(|e| e["type"] == "guardrail_trigger").count(), KINDS.len());
    // Each was a signed `task.guardrail` webhook too, as a question of a person would be (and the chat's).
    let asked = |a: &[Value]| {
        a.iter()
            .filter(|x| x["verified"] == true && x["body"]["data"]["data"]["type"] == "human_verification_needed")
            .count()
    };
    let hooks = receiver.wait("the checks' webhooks", LIMIT, |a| asked(a) > KINDS.len()).await;
    assert!(hooks.iter().all(|h| h["type"] == "task.guardrail"), "{hooks:?}");
    let on_session = hooks.iter().filter(|h| h["body"]["data"]["sessionId"] == sid.as_str()).count();
    assert_eq!(on_session, KINDS.len(), "{hooks:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_solver_passes_widget_checks_and_a_failing_solver_falls_back_to_the_guardrail() {
    let solver = FakeSolver::start().await;
    // The solver's address is checked like a webhook's: loopback only when --egress-allow names it.
    let refused = TestApp::start_error(&["--captcha-solver-url", &solver.url()]).await;
    assert!(refused.contains("--captcha-solver-url") && refused.contains("127.0.0.1"), "{refused}");
    let refused = TestApp::start_error(&["--captcha-solver-url", "ftp://solver.example/"]).await;
    assert!(refused.contains("http or https"), "{refused}");
    let app = TestApp::spawn_with(|s| {
        also_allow(s, &format!("127.0.0.1:{}", solver.port()))
            .arg("captcha-solver-url", solver.url())
            .arg("captcha-solver-timeout", 20)
    })
    .await;
    let key = app.key().await;
    let r = app.post("/start/start-session", &key, json!({ "recording": true })).await;
    let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
    let mut events = Events::of(&app, &sid);
    let widgets = [
        ("recaptcha", "recaptcha_v2", "6Lc-fixture-recaptcha", None, "yes"),
        ("recaptcha-v3", "recaptcha_v3", "6Lc-fixture-v3", Some("signup"), "yes"),
        ("hcaptcha", "hcaptcha", "10000000-ffff-ffff-ffff-fixture00001", None, "no"),
        ("turnstile", "turnstile", "0x4AAAAAAAfixture", Some("signup"), "yes"),
    ];
    for (page, kind, sitekey, action, callback) in widgets {
        let url = app.site.url(&format!("/challenges/{page}"));
        let done = app.run_in(&key, &sid, &sign_up(&url)).await;
        assert_eq!(done["type"], "task_completed", "{page}: {done}");
        // The token reached the hidden field (and the widget's callback, where one is registered).
        let want = format!("accepted {page} for Ada; callback: {callback}");
        assert_eq!(done["data"]["message"], want.as_str(), "{page}: {done}");
        let mut asked = json!({ "type": kind, "sitekey": sitekey, "pageUrl": url });
        if let Some(a) = action {
            asked["action"] = json!(a);
        }
        assert_eq!(solver.requests().last(), Some(&asked), "{page}");
        assert_eq!(clicks(&app, page), 0, "{page}: the widget was clicked");
    }
    let seen = verifications(events.drain());
    assert_eq!(seen.iter().filter(|(_, o)| o == "solved_by_solver").count(), widgets.len(), "{seen:?}");
    assert!(!events.drain().iter().any(|e| e["type"] == "guardrail_trigger"), "no guardrail");

    // A solver that answers 500: the task falls back to the guardrail, which nobody answers in time.
    solver.set_failing(true);
    let url = app.site.url("/challenges/turnstile");
    let task =
        json!({ "actionType": "newTask", "newState": "start", "taskDetails": sign_up(&url), "maxDuration": 5000 });
    let r = app.send(&key, &sid, task).await;
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    let g = app.poll_until(&sid, &tid, LIMIT, |b| b["type"] == "guardrail_trigger" || b["status"] == "failed").await;
    assert_eq!(g["data"]["type"], "human_verification_needed", "{g}");
    let failed = events.drain().iter().any(|e| {
        e["data"]["name"] == "human_verification"
            && e["data"]["outcome"] == "solver_failed"
            && e["data"]["reason"].as_str().is_some_and(|r| r.contains("500"))
    });
    assert!(failed, "{:?}", verifications(events.drain()));
    let timed_out = app.poll_final(&sid, &tid, LIMIT).await;
    assert_eq!(timed_out["code"], "TASK_TIMEOUT", "{timed_out}");
    let seen = verifications(events.drain());
    assert_eq!(seen.last(), Some(&("turnstile".into(), "timed_out".into())), "{seen:?}");

    // The timeline has every check with its kind and outcome.
    let path = format!("{}/recordings/{sid}/events", app.base);
    let (status, timeline) = json_of(app.client.get(path).bearer_auth(&key).send().await.expect("timeline")).await;
    assert_eq!(status, 200, "{timeline}");
    let entries: Vec<Value> = timeline["events"].as_array().cloned().unwrap_or_default();
    let in_timeline = verifications(&entries.iter().map(|e| e["data"].clone()).collect::<Vec<_>>());
    assert!(in_timeline.contains(&("turnstile".into(), "solver_failed".into())), "{in_timeline:?}");
    assert!(in_timeline.contains(&("turnstile".into(), "timed_out".into())), "{in_timeline:?}");
    assert!(in_timeline.contains(&("recaptcha_v3".into(), "solved_by_solver".into())), "{in_timeline:?}");
    app.stop().await;
}

#[tokio::test]
async fn the_model_never_sees_an_unpassed_check_and_is_told_a_person_passed_it() {
    let (app, model) = with_model(|s| s).await;
    let url = app.site.url("/challenges/mitigated");
    model.push(vec![
        Reply::call("navigate", json!({ "url": url })),
        Reply::call("type", json!({ "index": "@Name", "text": "Ada" })),
        Reply::call("click", json!({ "index": "@Submit" })),
        Reply::done("signed up"),
    ]);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app.new_task(&key, &sid, "Sign up as Ada").await;
    let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
    // A 403 page known as a challenge by its `cf-mitigated: challenge` header alone: a check, not PAGE_HTTP_ERROR.
    let g = app.poll_until(&sid, &tid, LIMIT, |b| b["type"] == "guardrail_trigger" || b["status"] == "failed").await;
    assert_eq!(g["data"]["type"], "human_verification_needed", "{g}");
    assert_eq!(model.requests().len(), 1, "the model was not asked while the check waited");
    person_passes(&app, &key, &sid, "mitigated").await;
    let done = app.poll_final(&sid, &tid, LIMIT).await;
    assert_eq!(done["data"]["message"], "signed up", "{done}");
    let reqs = model.requests();
    let after = reqs[1]["messages"].as_array().and_then(|m| m.last()).map(content_text).unwrap_or_default();
    assert!(after.contains("A person passed the Cloudflare"), "{after}");
    assert!(app.site.was_requested(None, "/challenges/check"), "the form was sent");
    assert_eq!(clicks(&app, "mitigated"), 1);
    app.stop().await;
}
