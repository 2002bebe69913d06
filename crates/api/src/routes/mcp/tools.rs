//! MCP's tools: `run_task`, `start_session`, `send_message` and `get_task`. Each takes the fields of a
//! request type and is read by that type's validator (`RequestBody`), and its input schema is that type's
//! OpenAPI schema made plain JSON Schema ([`input_schema`]): the components it refers to inlined, `allOf`
//! parts merged, and OpenAPI's own words (`discriminator`, `example`, the `int64`-like formats) left out
//! or said in JSON Schema's.

use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;
use webpilot_core::params::{id_text, Fields, RequestBody, RunTaskRequest, SendMessage, StartSessionRequest};
use webpilot_core::ApiError;

/// The arguments of `get_task`: the ids in `GET /task/{sessionId}/{taskId}`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    pub session_id: String,
    pub task_id: String,
}

impl RequestBody for GetTaskRequest {
    fn from_json(args: &Value) -> Result<Self, ApiError> {
        let f = Fields::of(args, "arguments")?;
        let id = |name| f.req_str(name).map(|v| id_text(v).to_owned());
        Ok(GetTaskRequest { session_id: id("sessionId")?, task_id: id("taskId")? })
    }
}

/// The tools, built once.
pub fn tools() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        vec![
            Tool::new(
                "run_task",
                "Runs one task in a new session that ends with it. Waits up to the inline wait (50 s); returns \
                 the result, or status pending with sessionId, taskId and pollUrl (then use get_task).",
                input_schema::<RunTaskRequest>(),
            ),
            Tool::new(
                "start_session",
                "Opens a persistent browser session (optionally with a first task); returns its sessionId.",
                input_schema::<StartSessionRequest>(),
            ),
            Tool::new(
                "send_message",
                "Sends a message to a session: newTask (waits like run_task), state (pause, resume, stop, \
                 terminate), interaction, or a guardrail answer. Same message object as POST /start/send-message.",
                input_schema::<SendMessage>(),
            ),
            Tool::new(
                "get_task",
                "The state or result of a task (same body as GET /task/:sessionId/:taskId).",
                input_schema::<GetTaskRequest>(),
            ),
        ]
    });
    &TOOLS
}

/// `T`'s schema as a self-contained JSON Schema object.
pub fn input_schema<T: ToSchema>() -> Arc<JsonObject> {
    let mut parts: Vec<(String, RefOr<Schema>)> = Vec::new();
    T::schemas(&mut parts);
    let components: BTreeMap<String, Value> =
        parts.into_iter().filter_map(|(name, s)| serde_json::to_value(s).ok().map(|v| (name, v))).collect();
    let root = serde_json::to_value(T::schema()).unwrap_or_default();
    let mut object = match plain(root, &components, 0) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    object.insert("type".to_owned(), Value::from("object"));
    Arc::new(object)
}

/// How deep components may nest: past it a reference is left open (none of the bodies comes near).
const MAX_DEPTH: usize = 16;

/// Formats OpenAPI defines and JSON Schema does not.
const OPENAPI_FORMATS: &[&str] = &["int32", "int64", "float", "double", "password", "binary"];

/// `schema` with its references inlined, `allOf` merged, and OpenAPI's own keywords dropped or restated.
fn plain(schema: Value, components: &BTreeMap<String, Value>, depth: usize) -> Value {
    let Value::Object(mut map) = schema else {
        return match schema {
            Value::Array(items) => Value::Array(items.into_iter().map(|s| plain(s, components, depth)).collect()),
            other => other,
        };
    };
    map.remove("discriminator");
    if map.get("format").and_then(Value::as_str).is_some_and(|f| OPENAPI_FORMATS.contains(&f)) {
        map.remove("format");
    }
    if let Some(example) = map.remove("example") {
        map.insert("examples".to_owned(), Value::Array(vec![example]));
    }
    let target = map.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/"));
    if let Some(found) = target.and_then(|name| components.get(name)).filter(|_| depth < MAX_DEPTH) {
        map.remove("$ref");
        let Value::Object(mut inlined) = plain(found.clone(), components, depth + 1) else { return Value::Object(map) };
        // Keys beside the reference (a property's own description) win over the component's.
        inlined.extend(map);
        return Value::Object(inlined);
    }
    let mut map: Map<String, Value> = map
        .into_iter()
        .map(|(k, v)| match (k.as_str(), v) {
            // A map of property names to schemas, not a schema: its keys are names, never keywords.
            ("properties", Value::Object(props)) => {
                let props = props.into_iter().map(|(name, s)| (name, plain(s, components, depth))).collect();
                (k, Value::Object(props))
            }
            (_, v) => (k, plain(v, components, depth)),
        })
        .collect();
    if let Some(Value::Array(parts)) = map.remove("allOf") {
        merge_all_of(&mut map, parts);
    }
    Value::Object(map)
}

/// Lays the (plain) `allOf` parts into `into`: one object with every part's properties and requirements.
fn merge_all_of(into: &mut Map<String, Value>, parts: Vec<Value>) {
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for part in parts {
        let Value::Object(mut part) = part else { continue };
        if let Some(Value::Object(p)) = part.remove("properties") {
            properties.extend(p);
        }
        if let Some(Value::Array(r)) = part.remove("required") {
            required.extend(r.into_iter().filter(|n| !required.contains(n)).collect::<Vec<_>>());
        }
    }
    into.insert("type".to_owned(), Value::from("object"));
    if let Some(Value::Object(own)) = into.remove("properties") {
        properties.extend(own);
    }
    into.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        into.insert("required".to_owned(), Value::Array(required));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refs(v: &Value) -> usize {
        match v {
            Value::Object(m) => m.iter().map(|(k, v)| usize::from(k == "$ref" || k == "allOf") + refs(v)).sum(),
            Value::Array(items) => items.iter().map(refs).sum(),
            _ => 0,
        }
    }

    #[test]
    fn each_tool_schema_is_a_plain_object_schema() {
        for tool in tools() {
            let schema = Value::Object((*tool.input_schema).clone());
            assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
            assert_eq!(refs(&schema), 0, "{}: {schema}", tool.name);
            assert!(!schema.to_string().contains("discriminator"), "{}: {schema}", tool.name);
        }
    }

    #[test]
    fn the_schemas_carry_the_request_types_fields_and_bounds() {
        let run = Value::Object((*input_schema::<RunTaskRequest>()).clone());
        assert_eq!(run["required"], json!(["taskDetails"]), "{run}");
        assert_eq!(run["properties"]["maxDuration"]["maximum"], 300_000, "{run}");
        let geolocation = &run["properties"]["geolocation"]["oneOf"][0];
        assert_eq!(geolocation["properties"]["latitude"]["minimum"], -90, "{run}");
        assert_eq!(run["properties"]["locale"]["examples"], json!(["de-DE"]), "{run}");
        assert!(run["properties"]["maxDuration"].get("format").is_none(), "{run}");
        assert!(run["properties"]["proxies"]["items"]["properties"]["server"].is_object(), "{run}");
        let start = Value::Object((*input_schema::<StartSessionRequest>()).clone());
        assert!(start["properties"]["terminateOnCompletion"].is_object(), "{start}");
        assert!(start.get("required").is_none(), "{start}");
        let send = Value::Object((*input_schema::<SendMessage>()).clone());
        assert_eq!(send["required"], json!(["sessionId", "message"]), "{send}");
        let kinds = send["properties"]["message"]["oneOf"].as_array().map(Vec::len);
        assert_eq!(kinds, Some(4), "{send}");
        let get = Value::Object((*input_schema::<GetTaskRequest>()).clone());
        assert_eq!(get["required"], json!(["sessionId", "taskId"]), "{get}");
    }

    #[test]
    fn get_task_reads_both_ids_trimmed() {
        let ids =
            GetTaskRequest::from_json(&json!({"sessionId": " s ", "taskId": "t"})).map(|r| (r.session_id, r.task_id));
        assert_eq!(ids, Ok(("s".to_owned(), "t".to_owned())));
        let missing = GetTaskRequest::from_json(&json!({"sessionId": "s"})).map(|r| r.task_id).map_err(|e| e.message);
        assert_eq!(missing, Err("taskId is required".to_owned()));
    }
}
