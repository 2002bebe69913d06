//! Set-of-marks: with `vision: "on"` the screenshot a model gets carries the text observation's element
//! indices as labels at the elements' boxes, and the scripted model clicks by the number it reads in the
//! picture; `auto` draws none; the page never sees them.

use crate::agent::with_model;
use base64::Engine;
use serde_json::{json, Value};
use webpilot_testkit::model::marks::MARK_FILL;
use webpilot_testkit::model::{element_index, last_observation};
use webpilot_testkit::site::marks::{BUTTONS, EDGE_BUTTONS};
use webpilot_testkit::Reply;

/// A label's height and width for `digits` digits, as `docs/agent.md` ("Vision") describes them.
const LABEL_HEIGHT: u32 = 14;
fn label_width(digits: u32) -> u32 {
    8 * digits + 2
}

/// The one picture of a request's last user message, decoded.
fn picture(request: &Value) -> image::RgbImage {
    let last_user = request["messages"].as_array().into_iter().flatten().rev().find(|m| m["role"] == "user");
    let parts = last_user.and_then(|m| m["content"].as_array()).cloned().unwrap_or_default();
    let data: Vec<&str> =
        parts.iter().filter_map(|p| p["image_url"]["url"].as_str()?.strip_prefix("data:image/jpeg;base64,")).collect();
    assert_eq!(data.len(), 1, "one picture in the turn");
    let bytes = base64::engine::general_purpose::STANDARD.decode(data[0]).expect("base64");
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).expect("a JPEG").to_rgb8()
}

/// The pixels of the labels' orange (JPEG shifts colours a little).
fn label_pixels(shot: &image::RgbImage) -> Vec<(u32, u32)> {
    let want = u32::from_str_radix(MARK_FILL, 16).expect("hex");
    let want = [(want >> 16) & 0xff, (want >> 8) & 0xff, want & 0xff];
    shot.enumerate_pixels()
        .filter(|(_, _, p)| p.0.iter().zip(want).all(|(&c, w)| (i64::from(c) - i64::from(w)).abs() <= 60))
        .map(|(x, y, _)| (x, y))
        .collect()
}

/// A task on fixture page `path` with `vision`, the model answering `replies`.
async fn run(vision: &str, path: &str, replies: Vec<Reply>) -> (Vec<Value>, Value) {
    let (app, model) = with_model(|s| s.arg("llm-vision", true)).await;
    model.push(replies);
    let key = app.key().await;
    let body = json!({ "taskDetails": "click the buttons", "vision": vision, "cache": "off",
                       "startingUrl": app.site.url(path) });
    let r = app.post("/start/run-task", &key, body).await;
    app.stop().await;
    (model.requests(), r.body)
}

/// Checks that `request`'s picture carries each of `/marks`'s buttons' index (from its text) as a label at
/// the button's top-left, and the labels' colour nowhere else.
fn assert_labelled(request: &Value) {
    assert_labelled_at(request, BUTTONS.map(|(name, _, (left, top, _, _))| (name, left, top)));
}

/// Checks that `request`'s picture carries each button's index (from its text) as a label with its top-left
/// at the given point, and the labels' colour nowhere else.
fn assert_labelled_at(request: &Value, buttons: [(&str, u32, u32); 3]) {
    let observation = last_observation(request);
    let shot = picture(request);
    assert_eq!(shot.dimensions(), (1024, 445));
    let labels = label_pixels(&shot);
    let mut areas = Vec::new();
    for (name, left, top) in buttons {
        let index = element_index(&observation, name).unwrap_or_else(|| panic!("{name} in {observation}"));
        let width = label_width(index.to_string().len() as u32);
        let inside = |&&(x, y): &&(u32, u32)| x >= left && x < left + width && y >= top && y < top + LABEL_HEIGHT;
        let n = labels.iter().filter(inside).count();
        assert!(n >= 10, "{name} [{index}]: {n} label pixels at its box's top-left");
        areas.push((left, top, width, LABEL_HEIGHT));
    }
    let stray: Vec<_> = labels
        .iter()
        .filter(|(x, y)| !areas.iter().any(|(l, t, w, h)| *x + 1 >= *l && *x <= l + w && *y + 1 >= *t && *y <= t + h))
        .collect();
    assert!(stray.is_empty(), "label colour only on the labels: {:?}", &stray[..stray.len().min(10)]);
    assert!(request.to_string().contains("The picture labels each element with its index"), "the model is told");
}

#[tokio::test]
async fn with_vision_on_each_element_is_labelled_with_its_index_and_the_model_clicks_the_number_it_reads() {
    // The model finds the green button in the picture and reads the number on the label at its corner.
    let replies = vec![Reply::call("click", json!({ "index": "@mark:00b000" })), Reply::done("Clicked.")];
    let (requests, done) = run("on", "/marks", replies).await;
    assert_eq!(done["status"], "complete", "{done}");
    assert_eq!(requests.len(), 2);
    assert_labelled(&requests[0]);
    // The number read was the green button's index, and the page saw no change to itself.
    let green = element_index(&last_observation(&requests[0]), "Green").expect("Green");
    assert!(requests[1].to_string().contains(&format!("[{green}")), "clicked [{green}]: {}", requests[1]);
    let after = last_observation(&requests[1]);
    assert!(after.contains("Title: Clicked Green; 0 changes; 12 of 12 elements"), "{after}");
    // The turn after the click carries labels too.
    assert_labelled(&requests[1]);
}

#[tokio::test]
async fn marks_sit_on_elements_inside_same_and_cross_origin_frames_where_the_picture_shows_them() {
    // Green is in a same-origin frame and Red in a cross-origin one, at the same places as on `/marks`.
    let replies = vec![
        Reply::call("click", json!({ "index": "@mark:00b000" })),
        Reply::call("click", json!({ "index": "@mark:e00000" })),
        Reply::done("Clicked."),
    ];
    let (requests, done) = run("on", "/marks?frames=1", replies).await;
    assert_eq!(done["status"], "complete", "{done}");
    assert_eq!(requests.len(), 3);
    assert_labelled(&requests[0]);
    assert!(last_observation(&requests[1]).contains("Title: Clicked Green"), "{}", last_observation(&requests[1]));
    assert!(last_observation(&requests[2]).contains("Title: Clicked Red"), "{}", last_observation(&requests[2]));
}

#[tokio::test]
async fn marks_sit_on_elements_partly_out_of_view_and_inside_a_shadow_root() {
    // Blue sticks out above the viewport: its label sits at the top edge, over the part that shows. Red
    // sticks out to the right: its label sits at its left edge. Green is inside an open shadow root.
    let replies = vec![
        Reply::call("click", json!({ "index": "@mark:00b000" })),
        Reply::call("click", json!({ "index": "@mark:e00000" })),
        Reply::done("Clicked."),
    ];
    let (requests, done) = run("on", "/marks?edges=1", replies).await;
    assert_eq!(done["status"], "complete", "{done}");
    assert_eq!(requests.len(), 3);
    let seen = EDGE_BUTTONS.map(|(name, _, (left, top, _, _))| (name, left.max(0) as u32, top.max(0) as u32));
    assert_labelled_at(&requests[0], seen);
    let green = element_index(&last_observation(&requests[0]), "Green").expect("Green");
    assert!(requests[1].to_string().contains(&format!("[{green}")), "clicked [{green}]: {}", requests[1]);
    assert!(last_observation(&requests[1]).contains("Title: Clicked Green"), "{}", last_observation(&requests[1]));
    // (Clicking Red scrolls the page sideways to bring it into view, so the labels move with it after.)
    assert!(last_observation(&requests[2]).contains("Title: Clicked Red"), "{}", last_observation(&requests[2]));
}

#[tokio::test]
async fn with_vision_auto_the_picture_carries_no_labels() {
    // Three elements: `auto` sends a picture, without marks; the model clicks by the text.
    let replies = vec![Reply::call("click", json!({ "index": "@Green" })), Reply::done("Clicked.")];
    let (requests, done) = run("auto", "/marks", replies).await;
    assert_eq!(done["status"], "complete", "{done}");
    assert_eq!(requests.len(), 2);
    let shot = picture(&requests[0]);
    assert_eq!(label_pixels(&shot), Vec::<(u32, u32)>::new(), "no label colour in the picture");
    let (_, _, (left, top, _, _)) = BUTTONS[1];
    let corner = shot.get_pixel(left + 4, top + 4).0;
    assert!(corner[1] > 140 && corner[0] < 60, "the green button's corner is green: {corner:?}");
    assert!(!requests[0].to_string().contains("The picture labels"), "nothing said of labels");
    let after = last_observation(&requests[1]);
    assert!(after.contains("Title: Clicked Green; 0 changes; 12 of 12 elements"), "{after}");
}
