//! The model-driven agent against a scripted OpenAI-compatible model server: multi-step tasks, pause
//! and resume, stop, guardrails, token limits, blocked domains, vanishing elements and model failures.

use crate::helpers::{cmdline, process_tree, wait_until, Settings, TestApp};
use serde_json::{json, Value};
use std::time::Duration;
use webpilot_core::events::SessionEvent;
use webpilot_testkit::model::{content_text, element_index, last_observation};
use webpilot_testkit::{Reply, ScriptedModel};

pub(crate) async fn with_model(extra: impl FnOnce(Settings) -> Settings) -> (TestApp, ScriptedModel) {
    let model = ScriptedModel::start(Vec::new()).await;
    let base = model.base_url();
    let app = TestApp::spawn_with(|s| {
        extra(
            s.arg("llm-provider", "openai")
                .arg("llm-model", "scripted-model")
                .arg("llm-base-url", base)
                .arg("llm-api-key", "sk-test")
                .arg("llm-backoff-ms", 20)
                .arg("llm-max-retries", 2),
        )
    })
    .await;
    (app, model)
}

/// Collects a session's events until its task ends.
pub(crate) fn collect_events(app: &TestApp, sid: &str) -> tokio::task::JoinHandle<Vec<Value>> {
    let mut rx = app.app().manager.subscribe(sid).expect("live session");
    tokio::spawn(async move {
        let mut out = Vec::new();
        while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
            let done = matches!(&ev, SessionEvent::Task { event, .. } if matches!(event,
                webpilot_core::events::TaskEvent::Completed { .. } | webpilot_core::events::TaskEvent::Error { .. }));
            out.push(ev.wire().1);
            if done {
                break;
            }
        }
        out
    })
}

pub(crate) fn tool_results(request: &Value) -> Vec<String> {
    request["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "tool").map(content_text).collect()
}

#[tokio::test]
async fn a_multi_step_task_crosses_two_pages_with_events_and_real_token_counts() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::think("I will open the site.", "navigate", json!({ "url": app.site.url("/") })),
        Reply::think("Pricing is linked from home.", "click", json!({ "index": "@Pricing" })),
        Reply::call("find", json!({})),
        Reply::done("The cheapest plan is Basic $9."),
    ]);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let events = collect_events(&app, &sid);
    let done = app.run_in(&key, &sid, "Find the cheapest plan on the pricing page and tell me its price").await;
    assert_eq!(done["data"]["message"], "The cheapest plan is Basic $9.", "{done}");

    let reqs = model.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[0]["model"], "scripted-model");
    assert!(reqs[0]["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "ask_human"));
    assert!(content_text(&reqs[0]["messages"][1]).contains("Find the cheapest plan"));
    assert!(last_observation(&reqs[1]).contains("Title: Fixture Home"));
    assert!(element_index(&last_observation(&reqs[1]), "Pricing").is_some(), "{}", last_observation(&reqs[1]));
    assert!(last_observation(&reqs[2]).contains("Title: Pricing"));
    assert!(tool_results(&reqs[3]).iter().any(|t| t.contains("Basic $9")));
    // Only the newest observation is sent in full.
    assert_eq!(
        reqs[3]["messages"].as_array().unwrap().iter().filter(|m| content_text(m).contains("\nPage:\n")).count(),
        1
    );

    // Token counts are the model's own (the scripted server counts 4 characters a token).
    let expected_prompt: u64 = reqs.iter().map(|r| r["messages"].to_string().len() as u64 / 4).sum();
    assert_eq!(done["data"]["prompt_tokens"], expected_prompt);
    assert!(done["data"]["completion_tokens"].as_u64().unwrap() > 0);
    assert_eq!(done["usage"]["inputTokens"], expected_prompt);

    let events = events.await.unwrap();
    let names: Vec<&str> =
        events.iter().filter(|e| e["type"] == "action").filter_map(|e| e["data"]["name"].as_str()).collect();
    assert_eq!(names, ["navigate", "click", "extract", "done"]);
    assert!(events.iter().any(|e| e["type"] == "agent" && e["content"] == "Pricing is linked from home."));
    assert!(events.iter().any(|e| e["type"] == "response_update"));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "task_completed");
    assert_eq!(last["data"]["message"], "The cheapest plan is Basic $9.");
    app.stop().await;
}

#[tokio::test]
async fn pause_holds_the_agent_after_its_current_action_and_resume_continues_with_the_same_history() {
    let (app, model) = with_model(|s| s.arg("task-wait-ms", 100)).await;
    model.push(vec![
        Reply::delayed(800, Reply::call("navigate", json!({ "url": app.site.url("/") }))),
        Reply::call("click", json!({ "index": "@Pricing" })),
        Reply::done("done"),
    ]);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app.new_task(&key, &sid, "go to pricing").await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    // Paused while the first turn is in flight (the model answers after 800 ms). Before its first turn the
    // agent looks up the action cache, so a pause sent at once could land before that turn.
    wait_until(Duration::from_secs(20), "the first model request", || model.requests().len() == 1).await;
    assert_eq!(app.state(&key, &sid, "pause").await.status, 200);
    // The in-flight turn finishes (the navigation happens), then the agent waits. Kept fixed: what is checked
    // is that no model turn happens for a while, an absence no event can announce.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(app.site.was_requested(None, "/"), "the current action completes");
    assert_eq!(model.requests().len(), 1, "no new model turn while paused");
    assert_eq!(app.poll(&sid, &tid).await.body["status"], "active");
    assert_eq!(app.state(&key, &sid, "resume").await.status, 200);
    let done = app.poll_final(&sid, &tid, Duration::from_secs(20)).await;
    assert_eq!(done["type"], "task_completed", "{done}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    assert!(tool_results(&reqs[1]).iter().any(|t| t.starts_with("Opened")), "history kept across the pause");
    app.stop().await;
}

#[tokio::test]
async fn stop_cancels_the_model_call_in_flight() {
    let (app, model) = with_model(|s| s.arg("task-wait-ms", 100)).await;
    model.push(vec![Reply::delayed(30_000, Reply::done("too late"))]);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app.new_task(&key, &sid, "think for a long time").await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    wait_until(Duration::from_secs(10), "the model call is in flight", || model.requests().len() == 1).await;
    assert_eq!(app.state(&key, &sid, "stop").await.status, 200);
    let done = app.poll_final(&sid, &tid, Duration::from_secs(5)).await;
    assert_eq!(done["code"], "TASK_STOPPED");
    app.stop().await;
}

#[tokio::test]
async fn a_guardrail_answered_over_rest_reaches_the_model() {
    let (app, model) = with_model(|s| s.arg("task-wait-ms", 100)).await;
    model.push(vec![
        Reply::call("ask_human", json!({ "question": "Which plan do you want?" })),
        Reply::done("Chose the plan."),
    ]);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let r = app.new_task(&key, &sid, "buy a plan").await;
    let tid = r.body["taskId"].as_str().unwrap().to_owned();
    let g = app.poll_until(&sid, &tid, Duration::from_secs(10), |b| b["type"] == "guardrail_trigger").await;
    assert_eq!(g["data"], json!({ "type": "human_input_needed", "value": "Which plan do you want?" }));
    let a = app
        .send(&key, &sid, json!({ "actionType": "guardrail", "newState": "resume", "taskDetails": "Pro, please" }))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let done = app.poll_final(&sid, &tid, Duration::from_secs(10)).await;
    assert_eq!(done["data"]["message"], "Chose the plan.");
    assert!(tool_results(&model.requests()[1]).contains(&"The human answered: Pro, please".to_owned()));
    app.stop().await;
}

#[tokio::test]
async fn exceeding_the_input_token_budget_fails_the_task() {
    let (app, model) = with_model(|s| s).await;
    let extracts = (0..6).map(|_| Reply::call("find", json!({}))).collect::<Vec<_>>();
    model.push(
        [vec![Reply::call("navigate", json!({ "url": app.site.url("/pricing") }))], extracts, vec![Reply::done("x")]]
            .concat(),
    );
    let key = app.key().await;
    let r =
        app.post("/start/run-task", &key, json!({ "taskDetails": "read everything", "maxInputTokens": 1000 })).await;
    assert_eq!(r.body["status"], "failed", "{}", r.body);
    assert_eq!(r.body["code"], "TOKEN_LIMIT_EXCEEDED");
    assert!(r.body["usage"]["inputTokens"].as_u64().unwrap() > 1000);
    assert!(r.body["usage"]["cost"].as_f64().unwrap() > 0.0, "used tokens are billed");
    app.stop().await;
}

#[tokio::test]
async fn a_blocked_domain_is_told_to_the_model_and_never_reached() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url_on("tracker.localhost", "/") })),
        Reply::call("navigate", json!({ "url": app.site.url("/tracker") })),
        Reply::done("Loaded the tracker page without the tracker."),
    ]);
    let key = app.key().await;
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": "visit the tracker", "avoidDomains": ["tracker.localhost"] }),
        )
        .await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    assert!(content_text(&reqs[0]["messages"][0]).contains("tracker.localhost"), "the system prompt names the domain");
    let told = tool_results(&reqs[1]);
    assert!(told.iter().any(|t| t.starts_with("ERROR NAVIGATION_TIMEOUT") && t.contains("avoidDomains")), "{told:?}");
    assert!(!app.site.requests().iter().any(|r| r.host == "tracker.localhost"));
    assert!(app.site.was_requested(Some("127.0.0.1"), "/ok.png"));
    app.stop().await;
}

#[tokio::test]
async fn an_element_that_disappears_is_reported_to_the_model_which_recovers() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/vanish") })),
        Reply::delayed(700, Reply::call("click", json!({ "index": "@Disappear" }))),
        Reply::call("click", json!({ "index": "@Stay" })),
        Reply::done("Clicked Stay."),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "click the buttons" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let told = tool_results(&model.requests()[2]);
    assert!(told.iter().any(|t| t.starts_with("ERROR ELEMENT_NOT_FOUND")), "{told:?}");

    // When the model gives up, the last browser error becomes the task's error.
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/vanish") })),
        Reply::call("click", json!({ "index": 9999 })),
        Reply::call("done", json!({ "message": "The button is gone.", "success": false })),
    ]);
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "click the vanished button" })).await;
    assert_eq!(r.body["status"], "failed", "{}", r.body);
    assert_eq!(r.body["code"], "ELEMENT_NOT_FOUND");
    assert!(r.body["error"].as_str().unwrap().contains("The button is gone."));
    app.stop().await;
}

#[tokio::test]
async fn the_model_server_failing_then_recovering_is_retried() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::Status(500),
        Reply::call("navigate", json!({ "url": app.site.url("/") })),
        Reply::Status(503),
        Reply::Status(429),
        Reply::done("Recovered."),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "open the site" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    assert_eq!(r.body["result"]["data"]["message"], "Recovered.");
    assert_eq!(model.requests().len(), 5);
    app.stop().await;
}

#[tokio::test]
async fn an_unreachable_model_fails_the_task_with_a_code() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let app = TestApp::spawn_with(|s| {
        s.arg("llm-provider", "openai")
            .arg("llm-model", "m")
            .arg("llm-base-url", format!("http://127.0.0.1:{closed}/v1"))
            .arg("llm-max-retries", 1)
            .arg("llm-backoff-ms", 10)
    })
    .await;
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "anything" })).await;
    assert_eq!(r.body["status"], "failed", "{}", r.body);
    assert_eq!(r.body["code"], "MODEL_UNAVAILABLE");
    assert!(r.body["error"].as_str().unwrap().contains("could not be reached"));
    app.stop().await;
}

#[tokio::test]
async fn tabs_open_switch_and_close() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/") })),
        Reply::call("tab", json!({ "url": app.site.url("/pricing") })),
        Reply::call("tab", json!({ "index": 0 })),
        Reply::call("tab", json!({ "index": 1, "close": true })),
        Reply::done("Tabs handled."),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "juggle tabs" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let tabs_line = last_observation(&reqs[2]);
    assert!(
        tabs_line.contains("Tabs (* = current): [0] \"Fixture Home\"") && tabs_line.contains("[1]* \"Pricing\""),
        "{tabs_line}"
    );
    assert!(last_observation(&reqs[3]).contains("Title: Fixture Home"));
    assert!(!last_observation(&reqs[4]).contains("Tabs"), "one tab left");
    app.stop().await;
}

#[tokio::test]
async fn a_crashed_page_is_reported_to_the_model_which_carries_on_in_a_new_tab() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/") })),
        Reply::call("wait", json!({ "seconds": 3 })),
        Reply::call("find", json!({})),
        Reply::call("tab", json!({ "url": app.site.url("/pricing") })),
        Reply::done("Recovered in a new tab."),
    ]);
    let key = app.key().await;
    // While the agent waits, the page's renderer process dies (chrome://crash is refused to the model).
    let crash = async {
        while model.requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The second request carries the loaded page's observation: the page is up. Whenever the renderer dies
        // from here on (while the model answers or during the 3-second wait), the next look at the page meets
        // the crash.
        let browsers = app.app().manager.pool().pids().await;
        let renderers: Vec<u32> =
            browsers.into_iter().flat_map(process_tree).filter(|p| cmdline(*p).contains("--type=renderer")).collect();
        assert!(!renderers.is_empty(), "the page has a renderer process");
        for pid in renderers {
            let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    };
    let (r, ()) = tokio::join!(app.post("/start/run-task", &key, json!({ "taskDetails": "survive a crash" })), crash);
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let told: Vec<String> = reqs.iter().flat_map(tool_results).collect();
    assert!(told.iter().any(|t| t.starts_with("ERROR PAGE_CRASH")), "{told:?}");
    assert!(last_observation(&reqs[4]).contains("Title: Pricing"));
    app.stop().await;
}

#[tokio::test]
async fn the_model_selects_an_option_and_sees_a_screenshot_when_it_takes_images() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/choose") })),
        Reply::call("select_option", json!({ "index": "@Plan", "option": "Pro" })),
        Reply::call("find", json!({})),
        Reply::done("Pro selected."),
    ]);
    let key = app.key().await;
    let body = json!({ "taskDetails": "choose the pro plan", "vision": "on" });
    let r = app.post("/start/run-task", &key, body).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    assert!(last_observation(&reqs[1]).contains("options: Basic | Pro | Team"), "{}", last_observation(&reqs[1]));
    assert!(tool_results(&reqs[2]).iter().any(|t| t.contains("Selected \"Pro\"")), "{:?}", tool_results(&reqs[2]));
    assert!(tool_results(&reqs[3]).iter().any(|t| t.contains("pro")), "the page saw the change event");
    // Each observation carries a JPEG screenshot.
    let last_user = reqs[1]["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap();
    let image =
        last_user["content"].as_array().and_then(|parts| parts.iter().find(|p| p["type"] == "image_url")).cloned();
    let url = image.expect("an image part")["image_url"]["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("data:image/jpeg;base64,/9j/"), "{}", &url[..40]);
    app.stop().await;
}

#[tokio::test]
async fn pages_the_site_opens_become_tabs_and_blocked_ones_are_closed() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/popup") })),
        Reply::call("click", json!({ "index": "@Open pricing" })),
        Reply::call("tab", json!({ "index": 0 })),
        Reply::call("click", json!({ "index": "@Open tracker" })),
        Reply::done("ok"),
    ]);
    let key = app.key().await;
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": "open the links", "avoidDomains": ["tracker.localhost"] }),
        )
        .await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let after_click = last_observation(&reqs[2]);
    assert!(after_click.contains("[1]* \"Pricing\""), "the new page is the current tab: {after_click}");
    assert!(after_click.contains("Title: Pricing"), "{after_click}");
    let after_blocked = last_observation(&reqs[4]);
    let tabs = after_blocked.lines().find(|l| l.starts_with("Tabs")).unwrap_or_default();
    assert!(tabs.contains("[1] \"Pricing\"") && !tabs.contains("[2]"), "the blocked popup was closed: {tabs}");
    // The popup's requests go through the context's egress proxy from the first one on.
    let tracker: Vec<_> = app.site.requests().into_iter().filter(|r| r.host == "tracker.localhost").collect();
    assert!(tracker.is_empty(), "{tracker:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_session_holds_at_most_its_tab_cap() {
    let (app, model) = with_model(|s| s.arg("max-tabs-per-session", 3)).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/popups?n=10") })),
        Reply::call("wait", json!({ "seconds": 2 })),
        Reply::call("tab", json!({ "url": app.site.url("/pricing") })),
        Reply::done("ok"),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "open many tabs" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let observed = last_observation(&reqs[2]);
    let tabs = observed.lines().find(|l| l.starts_with("Tabs")).unwrap_or_default().to_owned();
    assert!(tabs.contains("[2]") && !tabs.contains("[3]"), "three tabs at most: {tabs}");
    let told = tool_results(&reqs[3]);
    assert!(told.iter().any(|t| t.starts_with("ERROR INVALID_PARAMETER") && t.contains("at most 3 tabs")), "{told:?}");
    app.stop().await;
}

#[tokio::test]
async fn an_agent_repeating_itself_on_an_unchanged_page_is_warned_then_failed_with_agent_loop() {
    let (app, model) = with_model(|s| s).await;
    // The same click, over and over; after the first one the page no longer changes.
    let click = || Reply::call("click", json!({ "x": 300, "y": 300 }));
    model.push(vec![click(), click(), click(), click(), click(), click(), Reply::done("never reached")]);
    let key = app.key().await;
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": "click the page", "startingUrl": app.site.url("/paint?bg=ffffff") }),
        )
        .await;
    assert_eq!(
        (r.body["status"].as_str(), r.body["code"].as_str()),
        (Some("failed"), Some("AGENT_LOOP")),
        "{}",
        r.body
    );
    let error = r.body["error"].as_str().unwrap_or_default();
    assert!(error.contains("click") && error.contains("5 times"), "says what repeated: {error}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 6, "the sixth repetition ended the task");
    // Warned once, in the observation after the third repetition on the same page.
    let warned: Vec<usize> = reqs
        .iter()
        .enumerate()
        .filter(|(_, q)| last_observation(q).contains("WARNING: You have repeated"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(warned, vec![4], "{warned:?}");
    assert_eq!(model.remaining(), 1);
    app.stop().await;
}
