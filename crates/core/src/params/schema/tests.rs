//! The schemas and the validators agree: every property a request type's schema names is a field its
//! validator reads (given a value of no JSON type the schema allows, it is refused by name).

use crate::chat::ChatRequest;
use crate::fields::RequestBody;
use crate::params::{RunTaskRequest, SendMessage, StartSessionRequest};
use serde_json::{json, Map, Value};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

/// The schema of `T` and of every component it refers to, as JSON.
fn documented<T: ToSchema>() -> (Value, Map<String, Value>) {
    let mut parts: Vec<(String, RefOr<Schema>)> = Vec::new();
    T::schemas(&mut parts);
    let components = parts
        .into_iter()
        .map(|(name, schema)| (name, serde_json::to_value(schema).expect("a schema is JSON")))
        .collect();
    (serde_json::to_value(T::schema()).expect("a schema is JSON"), components)
}

/// The property names of `schema`, through `allOf` and `$ref`.
fn properties(schema: &Value, components: &Map<String, Value>) -> Vec<String> {
    if let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        return properties(&components[name], components);
    }
    let own = schema["properties"].as_object().into_iter().flat_map(|p| p.keys().cloned());
    let parts = schema["allOf"].as_array().into_iter().flatten().flat_map(|s| properties(s, components));
    own.chain(parts).collect()
}

fn each_property_is_read<T: RequestBody + ToSchema>(valid: Value) {
    assert!(T::from_json(&valid).is_ok(), "{} refuses {valid}", T::name());
    let (schema, components) = documented::<T>();
    let names = properties(&schema, &components);
    assert!(names.len() >= 2, "{}: {names:?}", T::name());
    for name in names {
        let mut body = valid.clone();
        body[&name] = json!([[]]);
        match T::from_json(&body) {
            Ok(_) => panic!("{}: {name} is documented but not read", T::name()),
            Err(e) => assert!(e.message.contains(&name), "{}: {name} refused as {:?}", T::name(), e.message),
        }
    }
}

#[test]
fn every_documented_property_is_read_by_the_validator() {
    each_property_is_read::<StartSessionRequest>(json!({}));
    each_property_is_read::<RunTaskRequest>(json!({"taskDetails": "a task"}));
    each_property_is_read::<SendMessage>(json!({"sessionId": "s", "message": {"actionType": "state"}}));
    let chat = json!({"model": crate::chat::CHAT_MODEL, "messages": [{"role": "user", "content": "a task"}]});
    each_property_is_read::<ChatRequest>(chat);
}
