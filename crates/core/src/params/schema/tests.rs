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
    property_schemas(schema, components).into_iter().map(|(name, _)| name).collect()
}

/// The properties of `schema` with their schemas, through `allOf` and `$ref`.
fn property_schemas(schema: &Value, components: &Map<String, Value>) -> Vec<(String, Value)> {
    if let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        return property_schemas(&components[name], components);
    }
    let own = schema["properties"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone()));
    let parts = schema["allOf"].as_array().into_iter().flatten().flat_map(|s| property_schemas(s, components));
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

/// A value of a field, `n` long.
type MakeValue = fn(usize) -> Value;

/// `body` with `name` set to `value` is accepted (`ok`), or refused naming `name`.
fn check<T: RequestBody + ToSchema>(valid: &Value, name: &str, value: Value, ok: bool) {
    let mut body = valid.clone();
    body[name] = value.clone();
    match (T::from_json(&body), ok) {
        (Ok(_), true) => {}
        (Err(e), false) => assert!(e.message.contains(name), "{}: {name} = {value} refused as {e:?}", T::name()),
        (Ok(_), false) => panic!("{}: {name} = {value} is beyond its documented bound but accepted", T::name()),
        (Err(e), true) => panic!("{}: {name} = {value} is within its documented bound but refused: {e:?}", T::name()),
    }
}

/// Each bound a body documents is the one its validator checks: an integer's `minimum` and `maximum` are
/// accepted and one beyond either refused, and so are a text's `minLength` and `maxLength` and a list's
/// `minItems` and `maxItems` (for the fields a value of any length can be made for; timezone's is the IANA
/// table's longest name, no check). Answers how many bounds it checked.
fn documented_bounds_are_checked<T: RequestBody + ToSchema>(valid: Value) -> usize {
    let (schema, components) = documented::<T>();
    let lengths: [(&str, MakeValue); 7] = [
        ("taskDetails", |n| json!("a".repeat(n))),
        ("startingUrl", |n| json!(format!("https://e.com/{}", "a".repeat(n - 14)))),
        ("profile", |n| json!("p".repeat(n))),
        ("userAgent", |n| json!("u".repeat(n))),
        ("avoidDomains", |n| json!((0..n).map(|i| format!("d{i}.example")).collect::<Vec<_>>())),
        ("proxies", |n| json!(vec![json!({"server": "http://proxy.example:8080"}); n])),
        ("messages", |n| json!(vec![json!({"role": "user", "content": "a task"}); n])),
    ];
    let mut checked = 0;
    for (name, property) in property_schemas(&schema, &components) {
        let int = |bound: &str| property[bound].as_i64().filter(|_| property["format"] == "int64");
        for (bound, beyond) in [(int("minimum"), -1), (int("maximum"), 1)] {
            if let Some(bound) = bound {
                check::<T>(&valid, &name, json!(bound), true);
                check::<T>(&valid, &name, json!(bound + beyond), false);
                checked += 1;
            }
        }
        let Some((_, make)) = lengths.iter().find(|(n, _)| *n == name) else { continue };
        let size = |bound: &str| property[bound].as_u64().and_then(|b| usize::try_from(b).ok());
        let min = size("minLength").or(size("minItems"));
        let max = size("maxLength").or(size("maxItems"));
        for (bound, beyond) in [(min, min.and_then(|m| m.checked_sub(1))), (max, max.map(|m| m + 1))] {
            if let (Some(bound), Some(beyond)) = (bound, beyond) {
                check::<T>(&valid, &name, make(bound), true);
                check::<T>(&valid, &name, make(beyond), false);
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn every_documented_bound_is_the_validators() {
    // maxDuration, maxInputTokens and maxOutputTokens: 6; taskDetails, startingUrl, profile (2), userAgent (2),
    // avoidDomains and proxies: 8; run-task's taskDetails minLength: 1.
    assert_eq!(documented_bounds_are_checked::<StartSessionRequest>(json!({})), 14);
    assert_eq!(documented_bounds_are_checked::<RunTaskRequest>(json!({"taskDetails": "a task"})), 15);
    // max_tokens' minimum, messages' minItems and maxItems.
    let chat = json!({"model": crate::chat::CHAT_MODEL, "messages": [{"role": "user", "content": "a task"}]});
    assert_eq!(documented_bounds_are_checked::<ChatRequest>(chat), 3);
}

/// What a body reads but the document leaves out: `recording` (both), and run-task's
/// `terminateOnCompletion` (checked to be a boolean, then forced to true). Any other field read must be
/// documented.
#[test]
fn every_field_read_is_documented_but_the_hidden_ones() {
    use crate::params::{SessionOrigin, SessionParams};
    fn undocumented<T: ToSchema>(origin: SessionOrigin, task: Option<&str>) -> Vec<String> {
        let (schema, components) = documented::<T>();
        let names = properties(&schema, &components);
        let mut body: Map<String, Value> = ["recording", "terminateOnCompletion", "mode"]
            .into_iter()
            .chain(names.iter().map(String::as_str))
            .map(|n| (n.to_owned(), json!([[]])))
            .collect();
        if let Some(task) = task {
            body.insert("taskDetails".into(), json!(task));
        }
        let order =
            crate::params::tests::check_order(body.into(), &[], |b| SessionParams::parse(b, origin).map(|_| ()));
        order.into_iter().filter(|n| !names.contains(n)).collect()
    }
    assert_eq!(undocumented::<StartSessionRequest>(SessionOrigin::StartSession, None), ["recording"]);
    let run = undocumented::<RunTaskRequest>(SessionOrigin::RunTask, Some("a task"));
    assert_eq!(run, ["terminateOnCompletion", "recording"]);
}

/// A start-session body with `property` of one entry of a field set to a value.
type Wrap = fn(&str, Value) -> Value;

/// The components inside a field (a position, a proxy entry, a secret entry) are documented beside readers
/// written by hand: their bounds are held to those readers here, at each edge, through a start-session body.
#[test]
fn the_bounds_inside_a_field_are_its_readers() {
    use crate::params::{SessionOrigin, SessionParams};
    let geolocation: Wrap = |p, v| {
        let mut g = json!({"latitude": 0, "longitude": 0});
        g[p] = v;
        json!({ "geolocation": g })
    };
    let proxy: Wrap = |p, v| {
        let mut e = json!({"server": "http://proxy.example:8080", "username": "u"});
        e[p] = v;
        json!({ "proxies": [e] })
    };
    let fixed: Wrap = |p, v| {
        let mut e = json!({"value": "v"});
        e[p] = v;
        json!({"secrets": {"s": e}})
    };
    let totp: Wrap = |p, v| {
        let mut e = json!({"totp": "JBSWY3DPEHPK3PXP"});
        e[p] = v;
        json!({"secrets": {"s": e}})
    };
    let text: MakeValue = |n| json!("t".repeat(n));
    let domains: MakeValue = |n| json!((0..n).map(|i| format!("d{i}.example")).collect::<Vec<_>>());
    let rows: [(&str, &str, Wrap, Option<MakeValue>); 9] = [
        ("GeolocationOption", "latitude", geolocation, None),
        ("GeolocationOption", "longitude", geolocation, None),
        ("GeolocationOption", "accuracy", geolocation, None),
        ("ProxyEntry", "username", proxy, Some(text)),
        ("ProxyEntry", "password", proxy, Some(text)),
        ("ProxyEntry", "domains", proxy, Some(domains)),
        ("FixedSecret", "value", fixed, Some(text)),
        ("TotpSecret", "digits", totp, None),
        ("TotpSecret", "period", totp, None),
    ];
    let (_, components) = documented::<StartSessionRequest>();
    let mut checked = 0;
    for (component, property, wrap, make) in rows {
        let schema = &components[component]["properties"][property];
        let accepted = |v: Value| SessionParams::parse(&wrap(property, v.clone()), SessionOrigin::StartSession).is_ok();
        let edges = |min: &str, max: &str, to: &dyn Fn(f64) -> Option<Value>| -> usize {
            let mut n = 0;
            for (bound, beyond) in [(min, -1.0), (max, 1.0)] {
                let Some(edge) = schema[bound].as_f64() else { continue };
                let (Some(at), Some(past)) = (to(edge), to(edge + beyond)) else { continue };
                assert!(accepted(at.clone()), "{component}.{property} = {at} is within its documented {bound}");
                assert!(!accepted(past.clone()), "{component}.{property} = {past} is beyond its documented {bound}");
                n += 1;
            }
            n
        };
        checked += match make {
            None => edges("minimum", "maximum", &|x| Some(if x.fract() == 0.0 { json!(x as i64) } else { json!(x) })),
            Some(make) => {
                let sized = |x: f64| (x >= 0.0).then(|| make(x as usize));
                edges("minLength", "maxLength", &sized) + edges("minItems", "maxItems", &sized)
            }
        };
    }
    assert_eq!(checked, 16, "every bound of the rows above is documented");
}

/// A guardrail message checks `newState` before `taskDetails` but documents `required` in the order the
/// document has always listed it.
#[test]
fn a_guardrail_messages_required_list_keeps_its_documented_order() {
    let (schema, _) = documented::<super::GuardrailMessage>();
    assert_eq!(schema["required"], json!(["actionType", "taskDetails", "newState"]));
    assert_eq!(
        schema["properties"]["taskDetails"],
        json!({"type": "string", "description": "The human-provided information."})
    );
}

/// Each bound an interaction documents (a point's `x` and `y`, TYPE's `text`) is the one its reader checks:
/// the edge accepted and one past it refused; and a point's two fields are type-checked before either bound.
#[test]
fn each_interactions_documented_bounds_are_checked_and_a_point_is_typed_first() {
    use crate::params::Message;
    let (_, components) = documented::<super::Interaction>();
    let read = |action: &Value| Message::parse(&json!({"actionType": "interaction", "action": action}));
    let mut checked = 0;
    for (component, valid) in [
        ("Click", json!({"type": "CLICK", "x": 1, "y": 200})),
        ("DoubleClick", json!({"type": "DOUBLE_CLICK", "x": 1, "y": 200})),
        ("TypeText", json!({"type": "TYPE", "text": "t"})),
    ] {
        for (name, property) in components[component]["properties"].as_object().into_iter().flatten() {
            let edges = [("minimum", -1.0), ("maximum", 1.0), ("maxLength", 1.0)];
            for (bound, beyond) in edges.into_iter().filter_map(|(b, d)| Some((property[b].as_f64()?, d))) {
                let value =
                    |n: f64| if property["type"] == "string" { json!("é".repeat(n as usize)) } else { json!(n) };
                let with = |n: f64| {
                    let mut action = valid.clone();
                    action[name] = value(n);
                    read(&action)
                };
                assert!(with(bound).is_ok(), "{component}.{name} at its bound {bound}");
                let past = with(bound + beyond).expect_err("one past the bound");
                assert!(past.message.starts_with(&format!("action.{name} must be")), "{component}.{name}: {past:?}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 9, "x and y of two interactions, text's maxLength");
    let both_bad = json!({"type": "CLICK", "x": 2000, "y": "top"});
    assert_eq!(read(&both_bad).expect_err("refused").message, "action.y must be a number");
}
