//! The agent's actions as data: the tool specs the model sees, and a typed `Action` parsed from each
//! tool call (serialisable, so runs can be recorded and replayed later).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use webpilot_llm::{ToolCall, ToolSpec};

/// Longest wait the model may ask for.
pub const MAX_WAIT_SECONDS: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum Action {
    Navigate {
        url: String,
    },
    GoBack,
    Click {
        index: Option<u32>,
        x: Option<f64>,
        y: Option<f64>,
        /// A double-click at (x, y); left out of the record when false, so older records read the same.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        double: bool,
    },
    Type {
        index: u32,
        text: String,
        press_enter: bool,
    },
    /// Types at a viewport point (clicked first), for a field that has no element: a canvas editor.
    TypeAt {
        x: f64,
        y: f64,
        text: String,
        press_enter: bool,
    },
    /// Drags with the left button from viewport point (x, y) to (to_x, to_y).
    Drag {
        x: f64,
        y: f64,
        to_x: f64,
        to_y: f64,
    },
    SelectOption {
        index: u32,
        option: String,
    },
    /// Sets a file of the session's own area (by name) on a file input.
    UploadFile {
        index: u32,
        /// The tool's argument `name` (the serialised tag is `name` already).
        file: String,
    },
    PressKey {
        key: String,
    },
    Scroll {
        down: bool,
        pixels: i64,
        /// With a point, the wheel turns there (an inner list, a map); left out of the record without one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<(f64, f64)>,
    },
    SwitchTab {
        index: usize,
    },
    OpenTab {
        url: String,
    },
    CloseTab {
        index: usize,
    },
    Wait {
        seconds: f64,
    },
    Extract,
    /// The model asks to see the viewport: the next observation carries a screenshot.
    Screenshot,
    Find {
        query: String,
    },
    AskHuman {
        question: String,
    },
    /// `output`: the structured answer, for a task with an outputSchema.
    Done {
        message: String,
        success: bool,
        output: Option<Value>,
    },
}

impl Action {
    /// The wire name (the `data.name` of its `action` event).
    pub fn name(&self) -> &'static str {
        match self {
            Action::Navigate { .. } => "navigate",
            Action::GoBack => "go_back",
            Action::Click { .. } => "click",
            Action::Type { .. } | Action::TypeAt { .. } => "type",
            Action::Drag { .. } => "drag",
            Action::SelectOption { .. } => "select_option",
            Action::UploadFile { .. } => "upload_file",
            Action::PressKey { .. } => "press_key",
            Action::Scroll { .. } => "scroll",
            Action::SwitchTab { .. } => "switch_tab",
            Action::OpenTab { .. } => "open_tab",
            Action::CloseTab { .. } => "close_tab",
            Action::Wait { .. } => "wait",
            Action::Extract => "extract",
            Action::Screenshot => "screenshot",
            Action::Find { .. } => "find",
            Action::AskHuman { .. } => "ask_human",
            Action::Done { .. } => "done",
        }
    }

    /// The element index the action is aimed at, if any.
    pub fn index(&self) -> Option<u32> {
        match self {
            Action::Click { index, .. } => *index,
            Action::Type { index, .. } | Action::SelectOption { index, .. } | Action::UploadFile { index, .. } => {
                Some(*index)
            }
            _ => None,
        }
    }

    /// The same action aimed at element `index` instead.
    pub fn with_index(&self, new: u32) -> Action {
        let mut a = self.clone();
        match &mut a {
            Action::Click { index, .. } => *index = Some(new),
            Action::Type { index, .. } | Action::SelectOption { index, .. } | Action::UploadFile { index, .. } => {
                *index = new
            }
            _ => {}
        }
        a
    }

    /// Parses a tool call; the error is told to the model.
    pub fn from_call(call: &ToolCall) -> Result<Action, String> {
        let a = &call.arguments;
        let s = |k: &str| a.get(k).and_then(Value::as_str).map(str::to_owned);
        // NaN ("NaN" parses) would pass every clamp and panic a Duration; it counts as absent.
        let n = |k: &str| {
            a.get(k).and_then(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok())).filter(|v: &f64| !v.is_nan())
        };
        let need_s = |k: &str| s(k).ok_or_else(|| format!("{} needs a string argument {k:?}", call.name));
        let need_n = |k: &str| n(k).ok_or_else(|| format!("{} needs a number argument {k:?}", call.name));
        let need_i = |k: &str| {
            n(k).filter(|v| *v >= 0.0)
                .map(|v| v as u32)
                .ok_or_else(|| format!("{} needs a number argument {k:?}", call.name))
        };
        let absent = |k: &str| a.get(k).is_none_or(Value::is_null);
        Ok(match call.name.as_str() {
            "navigate" => match need_s("url")? {
                url if url.trim().eq_ignore_ascii_case("back") => Action::GoBack,
                url => Action::Navigate { url },
            },
            "click" if !absent("to_x") || !absent("to_y") => {
                Action::Drag { x: need_n("x")?, y: need_n("y")?, to_x: need_n("to_x")?, to_y: need_n("to_y")? }
            }
            "click" => {
                let (index, x, y) = (n("index").map(|v| v as u32), n("x"), n("y"));
                let double = a.get("double").and_then(Value::as_bool).unwrap_or(false);
                if index.is_none() && (x.is_none() || y.is_none()) {
                    return Err("click needs an element index, or x and y".into());
                }
                if double && (index.is_some() || x.is_none() || y.is_none()) {
                    return Err("a double click needs x and y, not an index".into());
                }
                Action::Click { index, x, y, double }
            }
            "type" => {
                let press_enter = a.get("press_enter").and_then(Value::as_bool).unwrap_or(false);
                match (n("index"), n("x"), n("y")) {
                    (None, Some(x), Some(y)) => Action::TypeAt { x, y, text: need_s("text")?, press_enter },
                    _ => Action::Type { index: need_i("index")?, text: need_s("text")?, press_enter },
                }
            }
            "select_option" => Action::SelectOption { index: need_i("index")?, option: need_s("option")? },
            "upload_file" => Action::UploadFile { index: need_i("index")?, file: need_s("name")? },
            "press_key" => Action::PressKey { key: need_s("key")? },
            "scroll" => Action::Scroll {
                down: s("direction").is_none_or(|d| !d.eq_ignore_ascii_case("up")),
                pixels: n("pixels").map(|p| p.clamp(1.0, 5000.0) as i64).unwrap_or(400),
                at: n("x").zip(n("y")),
            },
            "tab" => match (s("url"), a.get("close").and_then(Value::as_bool).unwrap_or(false)) {
                (Some(url), false) if !url.trim().is_empty() => Action::OpenTab { url },
                (_, true) => Action::CloseTab { index: need_i("index")? as usize },
                _ => Action::SwitchTab {
                    index: need_i("index").map_err(|_| "tab needs a url or an index".to_owned())? as usize,
                },
            },
            "wait" => Action::Wait { seconds: n("seconds").unwrap_or(1.0).clamp(0.0, MAX_WAIT_SECONDS) },
            "screenshot" => Action::Screenshot,
            "find" => match s("query").filter(|q| !q.trim().is_empty()) {
                Some(query) => Action::Find { query },
                None => Action::Extract,
            },
            "ask_human" => Action::AskHuman { question: need_s("question")? },
            "done" => Action::Done {
                message: s("message").unwrap_or_default(),
                success: a.get("success").and_then(Value::as_bool).unwrap_or(true),
                output: a.get("output").filter(|v| !v.is_null()).cloned(),
            },
            other => return Err(format!("there is no tool {other:?}")),
        })
    }
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> ToolSpec {
    // An empty `required` is left out: it is optional in JSON Schema, and every turn pays for it.
    let mut parameters = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        parameters["required"] = json!(required);
    }
    ToolSpec { name: name.into(), description: description.into(), parameters }
}

/// Which tools beyond the common ones a task's model is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Offer {
    /// The tool that asks for a picture of the viewport (`vision: "auto"` and a model that takes images).
    pub screenshot: bool,
    /// Actions at viewport points (click, double-click, drag, scroll and type there): only for a model that
    /// may see the page's picture, as a point means nothing without it.
    pub points: bool,
}

/// The tools offered to the model; with an output schema, `done` takes the answer as `output`. The
/// wording is terse on purpose: these definitions are sent (and billed) with every turn. `index` is an
/// element's N in the observation, which the system prompt explains once.
pub fn tool_specs(output_schema: Option<&Value>, offer: Offer) -> Vec<ToolSpec> {
    let done = match output_schema {
        None => tool(
            "done",
            "Finish with the final answer; success false if the task cannot be done.",
            json!({ "message": { "type": "string" }, "success": { "type": "boolean" } }),
            &["message"],
        ),
        Some(schema) => tool(
            "done",
            "Finish: output is the answer, matching its schema. If the task cannot be done: success false, why in message.",
            json!({ "output": schema, "message": { "type": "string" }, "success": { "type": "boolean" } }),
            &[],
        ),
    };
    let int = json!({ "type": "integer" });
    let string = json!({ "type": "string" });
    let num = json!({ "type": "number" });
    let boolean = json!({ "type": "boolean" });
    let click = match offer.points {
        false => tool("click", "Click element index.", json!({ "index": int }), &["index"]),
        true => tool(
            "click",
            "Click element index (preferred) or viewport point x,y (1024x445 px); double: double-click; \
             to_x,to_y: drag from x,y to there.",
            json!({ "index": int, "x": num, "y": num, "double": boolean, "to_x": num, "to_y": num }),
            &[],
        ),
    };
    let typing = match offer.points {
        false => tool(
            "type",
            "Type text into field index, replacing its content; press_enter presses Enter after.",
            json!({ "index": int, "text": string, "press_enter": boolean }),
            &["index", "text"],
        ),
        true => tool(
            "type",
            "Type text into field index (replacing its content) or at point x,y; press_enter: Enter after.",
            json!({ "index": int, "x": num, "y": num, "text": string, "press_enter": boolean }),
            &["text"],
        ),
    };
    let scroll = match offer.points {
        false => tool(
            "scroll",
            "Scroll the page.",
            json!({ "direction": { "type": "string", "enum": ["up", "down"] }, "pixels": int }),
            &["direction"],
        ),
        true => tool(
            "scroll",
            "Scroll the page, or what is under point x,y.",
            json!({ "direction": { "type": "string", "enum": ["up", "down"] }, "pixels": int, "x": num, "y": num }),
            &["direction"],
        ),
    };
    let mut tools = vec![
        tool("navigate", "Open url in the current tab; url \"back\" goes back.", json!({ "url": string }), &["url"]),
        click,
        typing,
        tool(
            "select_option",
            "Choose an option of select index by the option's text or value.",
            json!({ "index": int, "option": string }),
            &["index", "option"],
        ),
        tool(
            "upload_file",
            "Set a file of the session's file area, by name, on file input index.",
            json!({ "index": int, "name": string }),
            &["index", "name"],
        ),
        tool(
            "press_key",
            "Press a key: Enter, Escape, Tab, ArrowDown... or one character.",
            json!({ "key": string }),
            &["key"],
        ),
        scroll,
        tool(
            "tab",
            "url: open it in a new tab; index: switch to that tab, or close it with close.",
            json!({ "url": string, "index": int, "close": boolean }),
            &[],
        ),
        tool("wait", "Wait for the page, at most 10 seconds.", json!({ "seconds": num }), &[]),
        tool(
            "find",
            "Lines of the whole page (a cut part too) matching query; no query: all its visible text.",
            json!({ "query": string }),
            &[],
        ),
        tool(
            "ask_human",
            "Ask the user what only they know or decide; waits for the answer.",
            json!({ "question": string }),
            &["question"],
        ),
        done,
    ];
    if offer.screenshot {
        let see = "See the viewport (1024x445 px, top-left origin) as an image with the next observation.";
        tools.push(tool("screenshot", see, json!({}), &[]));
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: "c".into(), name: name.into(), arguments }
    }

    #[test]
    fn tool_calls_parse_into_actions() {
        assert_eq!(
            Action::from_call(&call("click", json!({"index": "4"}))).unwrap(),
            Action::Click { index: Some(4), x: None, y: None, double: false }
        );
        let double = Action::from_call(&call("click", json!({"x": 5, "y": 6, "double": true}))).unwrap();
        assert_eq!(double, Action::Click { index: None, x: Some(5.0), y: Some(6.0), double: true });
        assert!(Action::from_call(&call("click", json!({"index": 4, "double": true}))).is_err());
        // A single click's record is what it was before `double` existed (cached runs and recordings read it).
        let single = Action::Click { index: Some(4), x: None, y: None, double: false };
        assert_eq!(serde_json::to_value(&single).unwrap(), json!({"name": "click", "index": 4, "x": null, "y": null}));
        assert_eq!(
            Action::from_call(&call("scroll", json!({"direction": "UP"}))).unwrap(),
            Action::Scroll { down: false, pixels: 400, at: None }
        );
        let inner = Action::from_call(&call("scroll", json!({"direction": "down", "x": 5, "y": 6}))).unwrap();
        assert_eq!(inner, Action::Scroll { down: true, pixels: 400, at: Some((5.0, 6.0)) });
        // A scroll's record without a point is what it was before points existed.
        let plain = serde_json::to_value(Action::Scroll { down: true, pixels: 9, at: None }).unwrap();
        assert_eq!(plain, json!({"name": "scroll", "down": true, "pixels": 9}));
        assert_eq!(
            Action::from_call(&call("click", json!({"x": 1, "y": 2, "to_x": 3, "to_y": "4"}))).unwrap(),
            Action::Drag { x: 1.0, y: 2.0, to_x: 3.0, to_y: 4.0 }
        );
        assert!(Action::from_call(&call("click", json!({"x": 1, "y": 2, "to_x": 3}))).unwrap_err().contains("to_y"));
        assert!(Action::from_call(&call("click", json!({"to_x": 1, "to_y": 2}))).unwrap_err().contains("\"x\""));
        assert_eq!(
            Action::from_call(&call("type", json!({"x": 1, "y": 2, "text": "a"}))).unwrap(),
            Action::TypeAt { x: 1.0, y: 2.0, text: "a".into(), press_enter: false }
        );
        assert!(Action::from_call(&call("type", json!({"x": 1, "text": "a"}))).unwrap_err().contains("index"));
        assert_eq!(Action::from_call(&call("wait", json!({"seconds": 99}))).unwrap(), Action::Wait { seconds: 10.0 });
        assert!(Action::from_call(&call("click", json!({}))).is_err());
        assert!(Action::from_call(&call("type", json!({"index": 1}))).unwrap_err().contains("text"));
        assert!(Action::from_call(&call("fly", json!({}))).is_err());
        assert_eq!(
            Action::from_call(&call("upload_file", json!({"index": 3, "name": "cv.pdf"}))).unwrap(),
            Action::UploadFile { index: 3, file: "cv.pdf".into() }
        );
        assert!(Action::from_call(&call("upload_file", json!({"index": 3}))).unwrap_err().contains("name"));
        let plain = tool_specs(None, Offer::default());
        assert_eq!(plain.len(), 12);
        assert_eq!(
            plain[1].parameters["properties"].as_object().map(|p| p.len()),
            Some(1),
            "click takes an index only"
        );
        let with = tool_specs(None, Offer { screenshot: true, points: true });
        let names: Vec<&str> = with.iter().map(|t| t.name.as_str()).collect();
        assert_eq!((names.len(), names[12]), (13, "screenshot"));
        assert_eq!(with[1].parameters["properties"]["double"]["type"], "boolean");
        assert_eq!(with[1].parameters["properties"]["to_x"]["type"], "number");
        assert_eq!(Action::from_call(&call("screenshot", json!({}))), Ok(Action::Screenshot));
        let structured = tool_specs(Some(&json!({"type": "array"})), Offer::default());
        assert_eq!(structured[11].parameters["properties"]["output"], json!({"type": "array"}));
    }

    #[test]
    fn merged_tools_parse_into_the_actions_they_stand_for() {
        let parse = |name: &str, args: Value| Action::from_call(&call(name, args));
        assert_eq!(
            parse("navigate", json!({"url": "https://a.test/"})),
            Ok(Action::Navigate { url: "https://a.test/".into() })
        );
        assert_eq!(parse("navigate", json!({"url": " Back "})), Ok(Action::GoBack));
        assert_eq!(
            parse("tab", json!({"url": "https://a.test/"})),
            Ok(Action::OpenTab { url: "https://a.test/".into() })
        );
        assert_eq!(parse("tab", json!({"index": 1})), Ok(Action::SwitchTab { index: 1 }));
        assert_eq!(parse("tab", json!({"index": "2", "close": true})), Ok(Action::CloseTab { index: 2 }));
        assert!(parse("tab", json!({"close": true})).unwrap_err().contains("index"));
        assert!(parse("tab", json!({})).unwrap_err().contains("url or an index"));
        assert_eq!(parse("find", json!({"query": "price"})), Ok(Action::Find { query: "price".into() }));
        assert_eq!(parse("find", json!({})), Ok(Action::Extract));
        assert_eq!(parse("find", json!({"query": " "})), Ok(Action::Extract));
        // The merged-away names are not tools any more.
        for gone in ["go_back", "switch_tab", "open_tab", "close_tab", "extract", "drag"] {
            assert!(parse(gone, json!({})).unwrap_err().contains("no tool"), "{gone}");
        }
    }

    #[test]
    fn actions_are_data() {
        let a = Action::Type { index: 2, text: "hi".into(), press_enter: true };
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["name"], "type");
        assert_eq!(serde_json::from_value::<Action>(v).unwrap(), a);
    }
}
