//! The task parameter `vision` against the scripted model: `on` puts a 1024 × 445 JPEG of the viewport
//! beside every observation, `off` sends none, bad values are refused, image tokens are billed, and no
//! screenshot reaches the events.

use crate::agent::{collect_events, with_model};
use crate::helpers::TestApp;
use base64::Engine;
use serde_json::{json, Value};
use webpilot_testkit::model::IMAGE_TOKENS;
use webpilot_testkit::{Reply, ScriptedModel};

/// The pictures of a request's last user message, decoded: OpenAI `image_url` parts or Anthropic `image`
/// blocks.
fn pictures(request: &Value) -> Vec<image::DynamicImage> {
    let Some(last_user) = request["messages"].as_array().into_iter().flatten().rev().find(|m| m["role"] == "user")
    else {
        return Vec::new();
    };
    let parts = last_user["content"].as_array().into_iter().flatten();
    parts
        .filter_map(|p| match p["type"].as_str() {
            Some("image_url") => p["image_url"]["url"].as_str()?.strip_prefix("data:image/jpeg;base64,"),
            Some("image") => {
                assert_eq!(p["source"]["media_type"], "image/jpeg", "{p}");
                p["source"]["data"].as_str()
            }
            _ => None,
        })
        .map(|data| {
            let bytes = base64::engine::general_purpose::STANDARD.decode(data).expect("base64");
            image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).expect("a JPEG")
        })
        .collect()
}

/// Whether any message of any request holds an image part.
fn any_image(requests: &[Value]) -> bool {
    requests.iter().flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default()).any(|m| {
        m["content"].as_array().is_some_and(|parts| parts.iter().any(|p| p["type"] != "text"))
            || m.to_string().contains("base64,")
    })
}

/// A run on a solid green page: navigate, then done.
fn green_run(app: &TestApp, model: &ScriptedModel) {
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/paint?bg=00b000") })),
        Reply::done("It is green."),
    ]);
}

#[tokio::test]
async fn vision_on_sends_the_viewport_as_a_jpeg_every_turn_and_never_in_events() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    green_run(&app, &model);
    let key = app.key().await;
    let sid = app.start_session(&key, json!({ "vision": "on" })).await;
    let events = collect_events(&app, &sid);
    let done = app.run_in(&key, &sid, "what colour is the page?").await;
    assert_eq!(done["data"]["message"], "It is green.", "{done}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for (i, request) in requests.iter().enumerate() {
        let shots = pictures(request);
        assert_eq!(shots.len(), 1, "turn {i} carries one screenshot");
        assert_eq!((shots[0].width(), shots[0].height()), (1024, 445), "turn {i}");
    }
    // The second turn shows the green page.
    let px = pictures(&requests[1])[0].to_rgb8().get_pixel(512, 220).0;
    assert!(px[1] > 140 && px[0] < 60 && px[2] < 60, "green in the middle: {px:?}");
    let events = events.await.expect("events");
    let wire = serde_json::to_string(&events).expect("events as JSON");
    assert!(!wire.contains("base64") && !wire.contains("/9j/"), "no screenshot in events: {wire}");
    app.stop().await;
}

#[tokio::test]
async fn vision_off_sends_no_image_even_to_a_model_that_takes_them() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    green_run(&app, &model);
    let key = app.key().await;
    let body = json!({ "taskDetails": "what colour is the page?", "vision": "off" });
    let r = app.post("/start/run-task", &key, body).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(!any_image(&requests), "no request holds an image");
    app.stop().await;
}

#[tokio::test]
async fn vision_takes_off_auto_or_on_and_refuses_anything_else() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    for bad in [json!("ON"), json!("always"), json!(true), json!(1)] {
        let r = app.post("/start/run-task", &key, json!({ "taskDetails": "x", "vision": bad })).await;
        r.assert_error(400, "INVALID_PARAMS");
        let r = app.post("/start/start-session", &key, json!({ "vision": bad })).await;
        r.assert_error(400, "INVALID_PARAMS");
    }
    let sid = app.start_session(&key, json!({ "vision": "auto" })).await;
    let message = json!({ "actionType": "newTask", "newState": "start", "taskDetails": "x", "vision": "sometimes" });
    app.send(&key, &sid, message).await.assert_error(400, "INVALID_PARAMS");
    app.stop().await;
}

#[tokio::test]
async fn image_tokens_the_provider_reports_are_billed() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    let key = app.key().await;
    let mut runs = Vec::new();
    for vision in ["off", "on"] {
        green_run(&app, &model);
        // The same task twice: the second must reach the model, not the action cache.
        let body = json!({ "taskDetails": "what colour is the page?", "vision": vision, "cache": "off" });
        let r = app.post("/start/run-task", &key, body).await;
        assert_eq!(r.body["status"], "complete", "{}", r.body);
        runs.push(r.body["usage"].clone());
    }
    let tokens = |u: &Value| u["inputTokens"].as_u64().expect("inputTokens");
    let cost = |u: &Value| u["cost"].as_f64().expect("cost");
    // Two turns, one screenshot each: two images more, and about the same text (its ids and times differ by a
    // token or two from run to run, as the tokenizer splits them).
    let images = tokens(&runs[1]).abs_diff(tokens(&runs[0]) + 2 * IMAGE_TOKENS);
    assert!(images <= 8, "{images} tokens off two images of {IMAGE_TOKENS}: {runs:?}");
    assert!(cost(&runs[1]) > cost(&runs[0]), "{runs:?}");
    app.stop().await;
}

#[tokio::test]
async fn vision_auto_sends_a_screenshot_where_the_page_is_a_picture_and_none_on_a_busy_text_page() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/shop") })),
        Reply::call("navigate", json!({ "url": app.site.url("/canvas") })),
        Reply::done("A canvas."),
    ]);
    let key = app.key().await;
    // No `vision`: auto.
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "look at the shop, then the canvas" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let requests = model.requests();
    let shots: Vec<usize> = requests.iter().map(|r| pictures(r).len()).collect();
    assert_eq!(shots, [0, 0, 1], "blank tab: none; the shop's text says it all: none; the canvas: one");
    let canvas = &pictures(&requests[2])[0];
    assert_eq!((canvas.width(), canvas.height()), (1024, 445));
    let red = canvas.to_rgb8().get_pixel(730, 330).0;
    assert!(red[0] > 180 && red[1] < 80 && red[2] < 80, "the red target is in the picture: {red:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_typed_secret_is_painted_over_in_the_screenshot_and_the_rest_of_the_page_is_sent() {
    use webpilot_testkit::site::echo::{BLUE, ECHO, FIELD};
    const SECRET: &str = "hunter2-SuperSecret";
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    model.push(vec![
        Reply::call("type", json!({ "index": "@Code", "text": "<secret:pw>", "press_enter": false })),
        Reply::done("Typed."),
    ]);
    let key = app.key().await;
    let body = json!({ "taskDetails": "type the code", "vision": "on", "startingUrl": app.site.url("/echo"),
                       "secrets": { "pw": SECRET } });
    let r = app.post("/start/run-task", &key, body).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // The turn after typing: the page shows the secret in the field and in large type below it. The picture is
    // sent, with both painted over.
    let shots = pictures(&requests[1]);
    assert_eq!(shots.len(), 1, "the picture of the page showing the secret is sent, not dropped");
    let shot = shots[0].to_rgb8();
    assert_eq!(shot.dimensions(), (1024, 445));
    let text = serde_json::to_string(&requests[1]).expect("json");
    assert!(!text.contains(SECRET) && text.contains("<secret:pw>"), "the text names the secret, never its value");
    let dark = |x: u32, y: u32| shot.get_pixel(x, y).0.iter().all(|c| *c < 60);
    // Every pixel of a box, one in three each way (glyphs would leave light pixels between them).
    let painted = |(left, top, width, height): (u32, u32, u32, u32)| {
        (top..top + height).step_by(3).all(|y| (left..left + width).step_by(3).all(|x| dark(x, y)))
    };
    assert!(painted(FIELD), "the field holding the secret is painted over");
    assert!(painted(ECHO), "the text showing the secret is painted over");
    let (bl, bt, bw, bh) = BLUE;
    let blue = shot.get_pixel(bl + bw / 2, bt + bh / 2).0;
    assert!(blue[2] > 200 && blue[0] < 50 && blue[1] < 50, "the rest of the page is in the picture: {blue:?}");
    let white = shot.get_pixel(500, 400).0;
    assert!(white.iter().all(|c| *c > 220), "only the secret's boxes are painted: {white:?}");
    // The turn before typing showed no secret: its picture is the page as it is (the field empty, light).
    let before = pictures(&requests[0]);
    assert_eq!(before.len(), 1);
    let field_before = before[0].to_rgb8().get_pixel(FIELD.0 + FIELD.2 / 2, FIELD.1 + FIELD.3 / 2).0;
    assert!(field_before.iter().all(|c| *c > 200), "the empty field is not painted: {field_before:?}");
    app.stop().await;
}

/// The names of the tools a request offers.
fn tool_names(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()).map(str::to_owned)).collect()
}

#[tokio::test]
async fn vision_auto_sends_a_screenshot_on_the_turn_after_the_model_asks_for_one() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    let key = app.key().await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/shop") })),
        Reply::call("screenshot", json!({})),
        Reply::done("Seen."),
    ]);
    let body = json!({ "taskDetails": "look at the shop", "vision": "auto", "cache": "off" });
    let r = app.post("/start/run-task", &key, body).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let requests = model.requests();
    let shots: Vec<usize> = requests.iter().map(|r| pictures(r).len()).collect();
    assert_eq!(shots, [0, 0, 1], "blank tab: none; the shop's text says it all: none; asked for: one");
    assert_eq!((pictures(&requests[2])[0].width(), pictures(&requests[2])[0].height()), (1024, 445));
    assert!(tool_names(&requests[0]).iter().any(|t| t == "screenshot"), "{:?}", tool_names(&requests[0]));
    // Issue 35's budget holds for a model that sees the page too: the system prompt plus the tools (the
    // point parameters and `screenshot` included), as sent, at most 1,000 o200k tokens.
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
    let system = webpilot_testkit::model::content_text(&requests[2]["messages"][0]);
    let fixed = bpe.encode_with_special_tokens(&system).len()
        + bpe.encode_with_special_tokens(&requests[2]["tools"].to_string()).len();
    assert!(fixed <= 1_000, "a seeing turn's system prompt and tools are {fixed} tokens");
    // With `on` every turn has a picture, and with `off` none may: the tool is not offered.
    for vision in ["on", "off"] {
        model.push(vec![Reply::done("Done.")]);
        let body = json!({ "taskDetails": "nothing", "vision": vision, "cache": "off" });
        let r = app.post("/start/run-task", &key, body).await;
        assert_eq!(r.body["status"], "complete", "{}", r.body);
        let last = model.requests().pop().expect("a request");
        let names = tool_names(&last);
        assert!(names.iter().any(|t| t == "click") && !names.iter().any(|t| t == "screenshot"), "{vision}: {names:?}");
    }
    app.stop().await;
}

/// The canvas solved by clicks at points the scripted model finds in the screenshot it was sent: the centre
/// of the red square, then of the blue one (which appears only after the first click), through `provider`'s
/// wire format.
async fn solve_the_canvas_by_its_pixels(provider: &str) {
    let (app, model) = with_model(|s| s.arg("llm-vision", true).arg("llm-provider", provider)).await;
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/canvas") })),
        // The red square waits for a click, then the blue one for a double-click (a single click does nothing).
        Reply::call("click", json!({ "x": "@pixel:e00000:x", "y": "@pixel:e00000:y" })),
        Reply::call("click", json!({ "x": "@pixel:0000e0:x", "y": "@pixel:0000e0:y" })),
        Reply::call("click", json!({ "x": "@pixel:0000e0:x", "y": "@pixel:0000e0:y", "double": true })),
        Reply::done("Solved."),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "solve the canvas", "cache": "off" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    for request in &requests[1..] {
        let sent = pictures(request);
        assert_eq!(sent.len(), 1, "one picture per turn ({provider})");
        assert_eq!((sent[0].width(), sent[0].height()), (1024, 445));
    }
    // The points came from the pictures: the squares' centres (730, 330) and (180, 110), give or take a pixel.
    let said = |i: usize| requests[i].to_string();
    assert!(said(2).contains("Clicked at (729, 329)") || said(2).contains("Clicked at (730, 330)"), "{}", said(2));
    assert!(said(4).contains("Double-clicked at (179, 109)") || said(4).contains("Double-clicked at (180, 110)"));
    let solved = |i: usize| said(i).contains(webpilot_testkit::site::canvas::ANSWER);
    assert!(!solved(3), "a single click on the blue square solves nothing");
    assert!(solved(4), "the double-click solved it");
    app.stop().await;
}

#[tokio::test]
async fn the_model_clicks_and_double_clicks_at_points_of_a_canvas_it_finds_in_the_picture() {
    solve_the_canvas_by_its_pixels("openai").await;
}

#[tokio::test]
async fn over_anthropics_wire_the_picture_is_an_image_block_and_the_canvas_is_solved_the_same_way() {
    solve_the_canvas_by_its_pixels("anthropic").await;
}

/// With a model that sees the page, the point actions are offered and work where no element is: a drag on a
/// canvas, the wheel over a list that scrolls on its own, and keys typed into a box drawn on a canvas. The
/// points come from the screenshot. Without vision, `click` takes an index only (no point, no drag).
#[tokio::test]
async fn a_model_that_sees_the_page_drags_scrolls_and_types_at_points_it_finds_in_the_picture() {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    let at = |rgb: &str| (format!("@pixel:{rgb}:x"), format!("@pixel:{rgb}:y"));
    let ((rx, ry), (gx, gy), (bx, by), (yx, yy)) = (at("e00000"), at("00b000"), at("0000e0"), at("e0e000"));
    model.push(vec![
        Reply::call("navigate", json!({ "url": app.site.url("/board") })),
        Reply::call("click", json!({ "x": rx, "y": ry, "to_x": gx, "to_y": gy })),
        Reply::call("scroll", json!({ "direction": "down", "pixels": 400, "x": bx, "y": by })),
        Reply::call("type", json!({ "x": yx, "y": yy, "text": "4711" })),
        Reply::done("Done."),
    ]);
    let key = app.key().await;
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "work the board", "cache": "off" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let point_params = |request: &Value| {
        let click = request["tools"].as_array().into_iter().flatten().find(|t| t["function"]["name"] == "click");
        click.map(|c| c["function"]["parameters"]["properties"].clone()).unwrap_or_default()
    };
    assert_eq!(point_params(&requests[0])["to_x"]["type"], "number", "click drags: {}", point_params(&requests[0]));
    let said = |i: usize| requests[i].to_string();
    // The block's centre is (85, 85) and the zone's (445, 295); the list's (790, 140): found within a pixel.
    assert!(said(2).contains("Dragged from (8"), "{}", said(2));
    assert!(said(3).contains("Turned the wheel at (7"), "{}", said(3));
    assert!(!said(3).contains(webpilot_testkit::site::canvas::BOARD_DONE));
    assert!(said(4).contains(webpilot_testkit::site::canvas::BOARD_DONE), "{}", said(4));

    // Vision off: the point actions are not offered.
    model.push(vec![Reply::done("Nothing to see.")]);
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "look", "vision": "off", "cache": "off" })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let last = model.requests().pop().expect("a request");
    assert_eq!(point_params(&last), json!({ "index": { "type": "integer" } }));
    app.stop().await;
}
