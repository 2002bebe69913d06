//! `GET /openapi.json`: served without a key, an OpenAPI 3.1 document that holds every path of the spec's
//! Endpoints part with its operation, security and rate-limit headers, and that openapi-spec-validator
//! (PyPI) accepts.

use crate::clients::{run_node, run_python};
use crate::helpers::TestApp;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// The Endpoints part of the service interface (shared/spec/service-interface.md, "## Endpoints"), in
/// OpenAPI's path syntax: copied here so the suite does not need the spec's repository.
const SPEC_ENDPOINTS: &[(&str, &str)] = &[
    ("post", "/start/start-session"),
    ("post", "/start/send-message"),
    ("post", "/start/run-task"),
    ("get", "/task/{sessionId}/{taskId}"),
    ("post", "/v1/chat/completions"),
    ("get", "/v1/models"),
    ("get", "/start/health"),
    ("get", "/start/active-sockets"),
];

/// The spec's authenticated endpoints (its Authentication part) and rate-limited ones (its Limits part).
const AUTHENTICATED: &[&str] =
    &["/start/start-session", "/start/send-message", "/start/run-task", "/v1/chat/completions", "/v1/models"];
const RATE_LIMITED: &[&str] =
    &["/start/start-session", "/start/send-message", "/start/run-task", "/v1/chat/completions"];

async fn document(app: &TestApp) -> Value {
    let r = app.get("/openapi.json").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("content-type").is_some_and(|c| c.starts_with("application/json")));
    r.body
}

#[tokio::test]
async fn openapi_document_holds_every_spec_endpoint() {
    let app = TestApp::spawn().await;
    let doc = document(&app).await;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", doc["openapi"]);
    assert_eq!(doc["components"]["securitySchemes"]["apiKey"]["scheme"], "bearer");
    for (method, path) in SPEC_ENDPOINTS {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not in the document");
        let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{method} {path}: no responses"));
        assert!(responses.contains_key("200"), "{method} {path}: no 200");
        let secured = op["security"].as_array().is_some_and(|s| s.iter().any(|r| r.get("apiKey").is_some()));
        assert_eq!(secured, AUTHENTICATED.contains(path), "{method} {path}: security {}", op["security"]);
        if AUTHENTICATED.contains(path) {
            assert!(responses.contains_key("401"), "{method} {path}: no 401");
            let e401 = &responses["401"]["content"]["application/json"]["schema"];
            assert!(e401.is_object(), "{method} {path}: the 401 has no schema");
        }
        for (status, response) in responses {
            let headers = &response["headers"];
            let limited = headers.get("x-ratelimit-limit").is_some() && headers.get("x-ratelimit-reset").is_some();
            assert_eq!(limited, RATE_LIMITED.contains(path), "{method} {path} {status}: rate-limit headers");
        }
        if RATE_LIMITED.contains(path) {
            assert!(responses["429"]["headers"].get("retry-after").is_some(), "{method} {path}: 429 retry-after");
        }
    }
    for schema in ["ErrorBody", "SocketMessage", "EndSessionEvent", "WebhookMessage"] {
        assert!(doc["components"]["schemas"][schema].is_object(), "no {schema} schema");
    }
    assert_eq!(doc["servers"][0]["url"], app.base.as_str(), "servers: {}", doc["servers"]);
    // Links: each names an operation of the document, and only parameters that operation has.
    let mut operations: HashMap<&str, &Value> = HashMap::new();
    for item in doc["paths"].as_object().expect("paths").values() {
        for op in item.as_object().expect("a path item").values() {
            if let Some(id) = op["operationId"].as_str() {
                operations.insert(id, op);
            }
        }
    }
    let mut links = 0;
    for op in operations.values() {
        for link in op["responses"]["200"]["links"].as_object().into_iter().flat_map(|l| l.values()) {
            let id = link["operationId"].as_str().expect("a link names its operation");
            let target = operations.get(id).unwrap_or_else(|| panic!("a link to {id}, which is not in the document"));
            let names: Vec<&str> =
                target["parameters"].as_array().into_iter().flatten().filter_map(|p| p["name"].as_str()).collect();
            for name in link["parameters"].as_object().expect("parameters").keys() {
                assert!(names.contains(&name.as_str()), "a link gives {id} a parameter {name} it lacks: {names:?}");
            }
            links += 1;
        }
    }
    assert!(links >= 15, "{links} links");
    // Every union is a oneOf of named components with a discriminator that maps each tag.
    for (schema, tag, members) in [
        ("Message", "actionType", 4),
        ("Interaction", "type", 6),
        ("SocketMessage", "type", 6),
        ("WebhookMessage", "type", 6),
    ] {
        let union = &doc["components"]["schemas"][schema];
        assert_eq!(union["discriminator"]["propertyName"], tag, "{schema}: {union}");
        let mapping = union["discriminator"]["mapping"].as_object().expect("a mapping");
        let one_of = union["oneOf"].as_array().expect("oneOf");
        assert_eq!((mapping.len(), one_of.len()), (members, members), "{schema}: {union}");
        for member in one_of {
            let reference = member["$ref"].as_str().unwrap_or_else(|| panic!("{schema}: an inline member {member}"));
            let name = reference.trim_start_matches("#/components/schemas/");
            assert!(requires(&doc, name, tag), "{name} does not require {tag}");
        }
    }
    for path in ["/recordings/{sessionId}/video.webm", "/sessions/{sessionId}/files/{name}"] {
        let content = &doc["paths"][path]["get"]["responses"]["200"]["content"];
        let schema = content.as_object().and_then(|c| c.values().next()).map(|m| &m["schema"]).expect("a body");
        let name = schema["$ref"].as_str().unwrap_or_default().trim_start_matches("#/components/schemas/");
        assert_eq!(doc["components"]["schemas"][name]["format"], "binary", "{path}: {schema}");
    }
    for method in ["get", "post", "delete"] {
        assert!(doc["paths"]["/mcp"][method].is_object(), "/mcp has no {method}");
    }
    app.stop().await;
}

/// Does the component `name` require `property`, itself or through one of its `allOf` parts?
fn requires(doc: &Value, name: &str, property: &str) -> bool {
    let schema = &doc["components"]["schemas"][name];
    let parts = schema["allOf"].as_array().cloned().unwrap_or_default();
    std::iter::once(schema)
        .chain(parts.iter())
        .any(|s| s["required"].as_array().is_some_and(|r| r.contains(&json!(property))))
}

/// The generators people use for SDKs (openapi-python-client; openapi-typescript with openapi-fetch;
/// @hey-api/openapi-ts) generate every operation from the document without a warning, and send-message,
/// whose body is a union, goes through each one's typed client (the TypeScript program compiles under
/// `tsc --strict`).
#[tokio::test]
async fn every_generator_makes_every_operation_and_sends_a_message_through_it() {
    let app = TestApp::spawn().await;
    let key = app.key().await;
    let sid = app.start_session(&key, json!({})).await;
    let env =
        [("WEBPILOT_BASE", app.base.as_str()), ("WEBPILOT_KEY", key.as_str()), ("WEBPILOT_SESSION", sid.as_str())];
    let python = run_python("openapi_python_client.py", &[], &env, Duration::from_secs(180)).await;
    assert!(python["operations"].as_u64().is_some_and(|n| n >= 40), "{python}");
    assert_eq!(python["generated"], python["operations"], "{python}");
    let sent = &python["sendMessage"];
    assert_eq!((sent["status"].as_u64(), &sent["body"]["success"]), (Some(200), &json!(true)), "{python}");
    assert_eq!(sent["parsedAs"], "MessageAck", "{python}");

    let typescript =
        run_node("openapi_typescript_clients.mjs", &[&app.base, &key, &sid], Duration::from_secs(180)).await;
    assert_eq!(typescript["operations"], python["operations"], "{typescript}");
    for client in ["openapiFetch", "heyApi"] {
        let sent = &typescript[client];
        assert_eq!(
            (sent["status"].as_u64(), &sent["body"]["success"]),
            (Some(200), &json!(true)),
            "{client}: {typescript}"
        );
    }
    // Each typed union reached the session as what it said: take control, release it, take it again.
    let said = |v: &Value| v["body"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(said(sent).contains("manual control enabled"), "{python}");
    assert!(said(&typescript["openapiFetch"]).contains("control returned"), "{typescript}");
    assert!(said(&typescript["heyApi"]).contains("manual control enabled"), "{typescript}");
    app.stop().await;
}

#[tokio::test]
async fn openapi_document_passes_openapi_spec_validator() {
    let app = TestApp::spawn().await;
    let out = run_python("openapi_check.py", &[], &[("WEBPILOT_BASE", &app.base)], Duration::from_secs(60)).await;
    assert_eq!(out["valid"], true, "{out}");
    assert!(out["version"].as_str().is_some_and(|v| v.starts_with("3.1")), "{out}");
    app.stop().await;
}

/// Operations schemathesis leaves out: chat completions streams Server-Sent Events (and runs a whole task
/// per request).
/// Streaming endpoints, and those that speak a protocol of their own (not JSON request and response).
const NOT_FUZZED: &[&str] = &[
    "/v1/chat/completions",
    "/stream/{sessionId}/view",
    "/stream/{sessionId}/whep",
    "/stream/{sessionId}/whep/{resource}",
    "/mcp",
    "/metrics",
    "/console",
    "/console/{asset}",
    "/cdp/{sessionId}",
];

#[tokio::test]
async fn schemathesis_finds_no_server_error_and_no_schema_mismatch() {
    // A short inline wait, so run-task and newTask answer `pending` instead of holding a worker; and a
    // per-user session cap below the pool's size, so the fuzzer meets 429 SESSION_LIMIT_REACHED, never
    // the pool's 503 NO_INSTANCES_AVAILABLE (documented, but a 5xx to not_a_server_error).
    let app = TestApp::spawn_with(|s| s.arg("task-wait-ms", 1000).arg("max-sessions-per-user", 2)).await;
    let (_, key) = app.user(100.0).await;
    let mut args = vec!["8", "32"];
    args.extend_from_slice(NOT_FUZZED);
    let (_, stateful_key) = app.user(100.0).await;
    let env = [
        ("WEBPILOT_BASE", app.base.as_str()),
        ("WEBPILOT_KEY", key.as_str()),
        ("WEBPILOT_STATEFUL_KEY", stateful_key.as_str()),
    ];
    let out = run_python("schemathesis_run.py", &args, &env, Duration::from_secs(120)).await;
    assert_eq!(out["passed"], true, "{out}");
    // The stateful phase ran chains of calls, on the document's links (openapi/links.rs) and the ones it infers.
    // How many links a chain reaches in its few seconds varies with the machine's speed, so it is not asserted.
    assert!(out["scenarios"].as_u64().is_some_and(|n| n > 0), "no stateful scenario ran: {out}");
    assert!(out["linksSelected"].as_u64().is_some_and(|n| n >= 15), "the document's links were not seen: {out}");
    app.stop().await;
}
