//! `GET /openapi.json`: served without a key, an OpenAPI 3.1 document that holds every path of the spec's
//! Endpoints part with its operation, security and rate-limit headers, and that openapi-spec-validator
//! (PyPI) accepts.

use crate::clients::run_python;
use crate::helpers::TestApp;
use serde_json::Value;
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
