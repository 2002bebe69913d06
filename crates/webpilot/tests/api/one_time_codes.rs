//! `totp` secrets: the fixture's two-step sign-in (RFC 6238, one step either side) accepts the code typed
//! for `<secret:code>` by the planner, the model agent and a replay; neither the seed nor a code appears
//! in an answer, an event, a model request or the recording's timeline; a bad seed is refused.

use crate::agent::{collect_events, with_model};
use crate::helpers::{holds, stored_bytes, TestApp};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use webpilot_core::totp::{Algorithm, Totp};
use webpilot_testkit::model::last_observation;
use webpilot_testkit::site::identity::TOTP_SEED;
use webpilot_testkit::Reply;

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The codes of every step from `from` to now, one step either side: whatever could have been typed.
fn codes_since(from: u64) -> Vec<String> {
    let totp = Totp::new(TOTP_SEED, 6, 30, Algorithm::Sha1).expect("seed");
    (from.saturating_sub(30)..=now() + 30).step_by(10).map(|t| totp.code_at(t)).collect()
}

fn assert_hidden(what: &str, text: &str, from: u64) {
    assert!(
        !text.contains(TOTP_SEED) && !text.to_lowercase().contains(&TOTP_SEED.to_lowercase()),
        "the seed is in {what}"
    );
    for code in codes_since(from) {
        assert!(!text.contains(&code), "a one-time code ({code}) is in {what}: {text}");
    }
}

fn secrets() -> Value {
    json!({ "code": { "totp": TOTP_SEED, "digits": 6, "period": 30, "algorithm": "SHA1", "domains": ["127.0.0.1"] } })
}

#[tokio::test]
async fn the_planner_types_a_one_time_code_that_the_site_accepts_and_that_stays_hidden() {
    let began = now();
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for (entry, field) in [
        (json!({ "totp": "not base32!" }), "secrets.code.totp"),
        (json!({ "totp": "JBSWY3DP" }), "secrets.code.totp"),
        (json!({ "totp": TOTP_SEED, "digits": 7 }), "secrets.code.digits"),
        (json!({ "totp": TOTP_SEED, "algorithm": "MD5" }), "secrets.code.algorithm"),
    ] {
        let body = json!({ "taskDetails": "report the title", "secrets": { "code": entry } });
        let r = app.post("/start/run-task", &key, body).await;
        r.assert_error(400, "INVALID_PARAMETER");
        assert!(r.body["message"].as_str().is_some_and(|m| m.contains(field) && !m.contains(TOTP_SEED)), "{}", r.body);
    }
    let steps = format!(
        "open {}, type \"<secret:code>\" into \"Code\", click \"Verify\", report the text of \"#result\"",
        app.site.url("/totp")
    );
    let run = app
        .post("/start/run-task", &key, json!({ "taskDetails": steps, "secrets": secrets(), "recording": true }))
        .await;
    assert_eq!(run.body["status"], "complete", "{}", run.body);
    // The site got the right code, and echoed it: the answer names it.
    assert_eq!(run.body["result"]["data"]["message"], "Code <secret:code> accepted", "{}", run.body);
    let sid = run.body["sessionId"].as_str().expect("sessionId").to_owned();
    let tid = run.body["taskId"].as_str().expect("taskId").to_owned();
    let poll = app.poll(&sid, &tid).await;
    let timeline = app
        .client
        .get(format!("{}/recordings/{sid}/events", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .expect("timeline");
    assert_eq!(timeline.status().as_u16(), 200);
    let timeline = timeline.text().await.expect("timeline text");
    assert!(timeline.contains("<secret:code>"), "the typed code is named in the timeline: {timeline}");
    for (what, text) in
        [("the answer", run.body.to_string()), ("the poll", poll.body.to_string()), ("the timeline", timeline)]
    {
        assert_hidden(what, &text, began);
    }
    app.stop().await;
}

#[tokio::test]
async fn the_model_agent_and_a_replay_type_the_code_of_their_moment_and_never_show_it() {
    let began = now();
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("type", json!({ "index": "@Code", "text": "<secret:code>" })),
        Reply::call("click", json!({ "index": "@Verify" })),
        Reply::call("find", json!({})),
        Reply::done("Verified."),
    ]);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "secrets": secrets(), "startingUrl": app.site.url("/totp") })).await;
    let events = collect_events(&app, &sid);
    let task = app
        .send(
            &key,
            &sid,
            json!({ "actionType": "newTask", "newState": "start", "taskDetails": "Sign in with the code" }),
        )
        .await;
    assert_eq!(task.status, 200, "{}", task.body);
    let tid = task.body["taskId"].as_str().expect("taskId").to_owned();
    let done = app.poll_final(&sid, &tid, Duration::from_secs(60)).await;
    assert_eq!(done["data"]["message"], "Verified.", "{done}");
    let reqs = model.requests();
    // The page the model read after the click: the code it got is shown as its name, and it was accepted.
    let checked = last_observation(&reqs[2]);
    assert!(checked.contains("Code <secret:code> accepted"), "{checked}");
    let events = events.await.expect("events");
    assert!(events.iter().any(|e| e["type"] == "action" && e["data"]["name"] == "type"), "{events:?}");

    // A replay types the code of its own moment (computed again, not the one recorded).
    let replay = json!({ "taskDetails": "again", "startingUrl": app.site.url("/totp"), "replayOf": tid,
                         "secrets": secrets() });
    let again = app.post("/start/run-task", &key, replay).await;
    assert_eq!(again.body["status"], "complete", "{}", again.body);
    let check = app.site.requests().into_iter().filter(|r| r.path == "/totp/check").count();
    assert_eq!(check, 2, "the model's sign-in and the replay's each sent a code");
    let rsid = again.body["sessionId"].as_str().expect("sessionId").to_owned();
    let rtid = again.body["taskId"].as_str().expect("taskId").to_owned();
    let replay_poll = app.poll(&rsid, &rtid).await;
    let logged = app.site.requests().into_iter().filter(|r| r.path == "/totp/check").collect::<Vec<_>>();
    for (what, text) in [
        ("the model requests", serde_json::to_string(&reqs).expect("json")),
        ("the events", serde_json::to_string(&events).expect("json")),
        ("the answer", done.to_string()),
        ("the replay's answer", again.body.to_string()),
        ("the replay's poll", replay_poll.body.to_string()),
    ] {
        assert_hidden(what, &text, began);
    }
    // Stored: the action trace (which the replay read) names the secret; neither the seed nor a code as a JSON
    // string is anywhere in the database (bare digits could be part of any timestamp).
    let stored = stored_bytes(&app).await;
    assert!(holds(&stored, &tid) && holds(&stored, "<secret:code>"), "the database holds the task and its trace");
    assert!(!holds(&stored, TOTP_SEED), "the seed is in the database");
    for code in codes_since(began) {
        assert!(!holds(&stored, &format!("\"{code}\"")) && !holds(&stored, &format!("={code}")), "{code} is stored");
    }
    // The codes did reach the site (so the checks above look for what was really typed).
    let typed: Vec<String> = logged.iter().filter_map(|r| r.query.clone()).collect();
    assert!(typed.iter().all(|q| codes_since(began).iter().any(|c| q == &format!("code={c}"))), "{typed:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_cached_run_types_the_code_of_its_own_moment_and_keeps_only_the_secrets_name() {
    let began = now();
    let (app, model) = with_model(|s| s).await;
    let key = app.key().await;
    let script = || {
        vec![
            Reply::call("type", json!({ "index": "@Code", "text": "<secret:code>" })),
            Reply::call("click", json!({ "index": "@Verify" })),
            Reply::done("Verified."),
        ]
    };
    // Runs the sign-in in a new session; answers the final poll and the page's result line.
    let sign_in = || async {
        let body = json!({ "taskDetails": "Sign in with the code", "secrets": secrets(),
                           "startingUrl": app.site.url("/totp") });
        let r = app.post("/start/start-session", &key, body).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
        let tid = r.body["taskId"].as_str().expect("taskId").to_owned();
        let done = app.poll_final(&sid, &tid, Duration::from_secs(60)).await;
        let page = app.app().manager.pages(&sid).expect("live session").borrow().clone();
        let result = page.eval("document.getElementById('result').textContent").await.expect("eval");
        app.state(&key, &sid, "terminate").await;
        (done, result)
    };
    model.push(script());
    let (first, result) = sign_in().await;
    assert_eq!((first["data"]["cache"].as_str(), first["data"]["message"].as_str()), (Some("miss"), Some("Verified.")));
    assert!(result.as_str().is_some_and(|r| r.contains("accepted")), "the model's code was accepted: {result}");
    let asked = model.requests().len();

    let (hit, result) = sign_in().await;
    assert_eq!(hit["data"]["cache"], "hit", "{hit}");
    assert_eq!(model.requests().len(), asked, "a hit does not ask the model");
    assert!(result.as_str().is_some_and(|r| r.contains("accepted")), "the replayed code was accepted: {result}");
    // Each run sent a code of its own moment (never one the cache could have kept).
    let sent: Vec<String> =
        app.site.requests().into_iter().filter(|r| r.path == "/totp/check").filter_map(|r| r.query).collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent.iter().all(|q| codes_since(began).iter().any(|c| q == &format!("code={c}"))), "{sent:?}");
    for (what, text) in
        [("the hit's answer", hit.to_string()), ("the model requests", format!("{:?}", model.requests()))]
    {
        assert_hidden(what, &text, began);
    }
    // The cache entry holds the secret's name; neither the seed nor a code is stored anywhere.
    let stored = stored_bytes(&app).await;
    assert!(holds(&stored, "<secret:code>"), "the cached steps name the secret");
    assert!(!holds(&stored, TOTP_SEED), "the seed is in the database");
    for code in codes_since(began) {
        assert!(!holds(&stored, &format!("\"{code}\"")) && !holds(&stored, &format!("={code}")), "{code} is stored");
    }
    app.stop().await;
}
