//! Unit tests of the request-body parsing in `params`.

use super::*;
use serde_json::json;

fn code<T: std::fmt::Debug>(r: Result<T, ApiError>) -> ErrorCode {
    r.expect_err("expected an error").code
}

#[test]
fn session_defaults_follow_the_spec() {
    let p = SessionParams::parse(&json!({}), SessionOrigin::StartSession).unwrap();
    assert_eq!(p.task_details, None);
    assert_eq!(p.limits, TaskLimits::default());
    assert!(!p.terminate_on_completion);
    let p = SessionParams::parse(&json!({"taskDetails": "x"}), SessionOrigin::RunTask).unwrap();
    assert!(p.terminate_on_completion);
    assert_eq!(p.recording, None, "left to --record-sessions");
}

#[test]
fn recording_is_a_boolean() {
    let parse = |v| SessionParams::parse(&v, SessionOrigin::StartSession);
    assert_eq!(parse(json!({"recording": true})).unwrap().recording, Some(true));
    assert_eq!(parse(json!({"recording": false})).unwrap().recording, Some(false));
    assert_eq!(code(parse(json!({"recording": "yes"}))), ErrorCode::InvalidParams);
}

#[test]
fn profiles_are_named_and_persisted_on_request() {
    let parse = |v| SessionParams::parse(&v, SessionOrigin::StartSession);
    let p = parse(json!({"profile": "shop", "persistProfile": true})).unwrap();
    assert_eq!((p.profile.as_deref(), p.persist_profile), (Some("shop"), true));
    assert!(!parse(json!({"profile": "shop"})).unwrap().persist_profile);
    assert_eq!(code(parse(json!({"profile": "a b"}))), ErrorCode::InvalidParams);
    assert_eq!(code(parse(json!({"profile": 5}))), ErrorCode::InvalidParams);
    assert_eq!(code(parse(json!({"persistProfile": "yes", "profile": "a"}))), ErrorCode::InvalidParams);
    assert_eq!(code(parse(json!({"persistProfile": true}))), ErrorCode::MissingRequiredField);
}

#[test]
fn bounds_use_the_stricter_ranges() {
    let parse = |v| SessionParams::parse(&v, SessionOrigin::StartSession);
    assert_eq!(code(parse(json!({"maxDuration": 999}))), ErrorCode::InvalidParameter);
    assert_eq!(code(parse(json!({"maxDuration": 300001}))), ErrorCode::InvalidParameter);
    assert_eq!(code(parse(json!({"maxInputTokens": 999}))), ErrorCode::InvalidParameter);
    assert_eq!(code(parse(json!({"maxOutputTokens": 50001}))), ErrorCode::InvalidParameter);
    assert_eq!(code(parse(json!({"maxOutputTokens": "100"}))), ErrorCode::InvalidParams);
    assert_eq!(code(parse(json!({"mode": "fast"}))), ErrorCode::InvalidParameter);
    assert_eq!(code(parse(json!({"startingUrl": "ftp://x"}))), ErrorCode::InvalidParameter);
    assert_eq!(code(parse(json!({"avoidDomains": "x.com"}))), ErrorCode::InvalidParams);
    assert_eq!(code(parse(json!([1]))), ErrorCode::InvalidParams);
    let ok = parse(json!({"maxDuration": 1000, "maxOutputTokens": 100, "avoidDomains": ["A.com", "a.com"]})).unwrap();
    assert_eq!(ok.limits.avoid_domains, vec!["a.com".to_owned()]);
}

#[test]
fn run_task_requires_task_details() {
    assert_eq!(code(SessionParams::parse(&json!({}), SessionOrigin::RunTask)), ErrorCode::MissingRequiredField);
    assert_eq!(
        code(SessionParams::parse(&json!({"taskDetails": "  "}), SessionOrigin::RunTask)),
        ErrorCode::InvalidTaskDetails
    );
}

#[test]
fn messages_parse_and_reject() {
    let m = Message::parse(&json!({"actionType": "newTask", "newState": "start", "taskDetails": "go"})).unwrap();
    assert!(matches!(m, Message::NewTask(_)));
    assert_eq!(code(Message::parse(&json!({"actionType": "dance"}))), ErrorCode::InvalidParams);
    assert_eq!(code(Message::parse(&json!({}))), ErrorCode::MissingRequiredField);
    assert_eq!(
        code(Message::parse(&json!({"actionType": "newTask", "newState": "start"}))),
        ErrorCode::MissingRequiredField
    );
    assert_eq!(code(Message::parse(&json!({"actionType": "state", "newState": "start"}))), ErrorCode::InvalidParams);
    let click = |x: f64, y: f64| json!({"actionType": "interaction", "action": {"type": "CLICK", "x": x, "y": y}});
    assert_eq!(code(Message::parse(&click(10.0, 100.0))), ErrorCode::InvalidParameter);
    assert_eq!(code(Message::parse(&click(1025.0, 300.0))), ErrorCode::InvalidParameter);
    assert!(Message::parse(&click(1024.0, 600.0)).is_ok());
    let message = |r: Result<Message, ApiError>| r.expect_err("expected an error").message;
    assert_eq!(message(Message::parse(&click(1025.0, 300.0))), "action.x must be between 0 and 1024");
    assert_eq!(
        message(Message::parse(&click(10.0, 100.0))),
        "action.y must be between 155 and 600 (the top 155 pixels are browser chrome)"
    );
    let key = json!({"actionType": "interaction", "action": {"type": "KEY_PRESS", "key": "F13"}});
    assert_eq!(code(Message::parse(&key)), ErrorCode::InvalidParameter);
}

#[test]
fn send_message_needs_both_fields() {
    assert_eq!(code(SendMessage::parse(&json!({"sessionId": "s"}))), ErrorCode::MissingRequiredField);
    assert_eq!(code(SendMessage::parse(&json!({"sessionId": 5, "message": {}}))), ErrorCode::InvalidParams);
    assert_eq!(code(SendMessage::parse(&json!({"sessionId": "s", "message": "x"}))), ErrorCode::InvalidParams);
    let blank = json!({"sessionId": " \t", "message": {}});
    assert_eq!(code(SendMessage::parse(&blank)), ErrorCode::MissingRequiredField);
}

#[test]
fn a_session_id_is_read_without_surrounding_whitespace() {
    let parsed = SendMessage::parse(&json!({"sessionId": " ses_a\n", "message": {}})).unwrap();
    assert_eq!(parsed.session_id, "ses_a");
}

#[test]
fn vision_is_read_for_sessions_and_inherited_by_tasks() {
    use crate::vision::VisionMode;
    let parse = |v| SessionParams::parse(&v, SessionOrigin::StartSession);
    assert_eq!(parse(json!({})).unwrap().limits.vision, VisionMode::Auto);
    let session = parse(json!({"vision": "on"})).unwrap().limits;
    assert_eq!(session.vision, VisionMode::On);
    assert_eq!(code(parse(json!({"vision": "sometimes"}))), ErrorCode::InvalidParams);
    let task = |v| Message::parse(&v);
    let limits = |t: NewTaskMessage| t.with_defaults(&session).limits;
    let base = json!({"actionType": "newTask", "newState": "start", "taskDetails": "x"});
    let Ok(Message::NewTask(t)) = task(base.clone()) else { panic!("a task") };
    assert_eq!(limits(t).vision, VisionMode::On, "inherited from the session");
    let mut own = base.clone();
    own["vision"] = json!("off");
    let Ok(Message::NewTask(t)) = task(own) else { panic!("a task") };
    assert_eq!(limits(t).vision, VisionMode::Off);
    let mut bad = base;
    bad["vision"] = json!(false);
    assert_eq!(code(task(bad)), ErrorCode::InvalidParams);
}

#[test]
fn cache_is_auto_or_off_and_a_session_value_is_its_tasks_default() {
    let parse = |v| SessionParams::parse(&v, SessionOrigin::StartSession);
    assert_eq!(parse(json!({})).unwrap().limits.cache, CacheMode::Auto);
    assert_eq!(parse(json!({"cache": "auto"})).unwrap().limits.cache, CacheMode::Auto);
    let off = parse(json!({"cache": "off"})).unwrap();
    assert_eq!(off.limits.cache, CacheMode::Off);
    for bad in [json!("on"), json!("OFF"), json!(""), json!(false), json!(1)] {
        assert_eq!(code(parse(json!({ "cache": bad }))), ErrorCode::InvalidParams, "{bad}");
    }
    let task = |v: serde_json::Value, base: &TaskLimits| match Message::parse(&v).unwrap() {
        Message::NewTask(t) => t.with_defaults(base).limits.cache,
        other => panic!("{other:?}"),
    };
    let new = |extra: serde_json::Value| {
        let mut m = json!({"actionType": "newTask", "newState": "start", "taskDetails": "x"});
        m.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        m
    };
    assert_eq!(task(new(json!({})), &off.limits), CacheMode::Off, "inherited from the session");
    assert_eq!(task(new(json!({"cache": "auto"})), &off.limits), CacheMode::Auto);
}

#[test]
fn send_message_keeps_a_bad_message_to_answer_once_the_session_is_known() {
    let parsed = SendMessage::parse(&json!({"sessionId": "s", "message": {"actionType": "dance"}})).unwrap();
    assert_eq!(parsed.session_id, "s");
    assert_eq!(parsed.message.map_err(|e| e.code), Err(ErrorCode::InvalidParams));
    let good = json!({"sessionId": "s", "message": {"actionType": "state", "newState": "pause"}});
    assert_eq!(SendMessage::parse(&good).unwrap().message, Ok(Message::State(StateCommand::Pause)));
}

#[test]
fn a_new_tasks_limits_are_laid_over_the_sessions() {
    let session = SessionParams::parse(
        &json!({"maxDuration": 60000, "secrets": {"pw": "a"}, "startingUrl": "http://a.test/", "cache": "off"}),
        SessionOrigin::StartSession,
    )
    .unwrap()
    .limits;
    let message = json!({"actionType": "newTask", "newState": "start", "taskDetails": "x",
        "secrets": {"otp": "b"}, "maxInputTokens": 5000, "startingUrl": " "});
    let Ok(Message::NewTask(task)) = Message::parse(&message) else { panic!("a task") };
    let limits = task.with_defaults(&session).limits;
    assert_eq!((limits.max_duration_ms, limits.max_input_tokens), (60000, 5000));
    assert_eq!(limits.starting_url, None, "a blank startingUrl clears the session's");
    assert_eq!(limits.cache, CacheMode::Off);
    let mut names: Vec<_> = limits.secrets.names().map(|(name, _)| name.to_owned()).collect();
    names.sort();
    assert_eq!(names, ["otp", "pw"], "the task's secrets are added to the session's");
}

/// The fields of `body` in the order they are checked: each answer names the first bad field left, which is
/// then left out (or, when `fixes` gives it a good value, set to that).
pub(super) fn check_order(
    mut body: Value,
    fixes: &[(&str, Value)],
    read: impl Fn(&Value) -> Result<(), ApiError>,
) -> Vec<String> {
    let mut order = Vec::new();
    while let Err(e) = read(&body) {
        let field = e.message.split([' ', ':', '[', '.']).next().unwrap_or_default().to_owned();
        let fields = body.as_object_mut().expect("an object");
        match fixes.iter().find(|(name, _)| *name == field) {
            Some((_, good)) if fields.get(&field) != Some(good) => drop(fields.insert(field.clone(), good.clone())),
            _ => assert!(fields.remove(&field).is_some(), "{e:?} names no field left"),
        }
        order.push(field);
    }
    order
}

#[test]
fn session_fields_are_checked_in_their_order() {
    let names = [
        "taskDetails",
        "mode",
        "terminateOnCompletion",
        "recording",
        "startingUrl",
        "avoidDomains",
        "secrets",
        "outputSchema",
        "replayOf",
        "cache",
        "maxDuration",
        "maxInputTokens",
        "maxOutputTokens",
        "vision",
        "profile",
        "persistProfile",
        "proxies",
        "locale",
        "timezone",
        "userAgent",
        "geolocation",
    ];
    let all_bad: Value = names.iter().map(|n| (n.to_string(), json!([[]]))).collect::<serde_json::Map<_, _>>().into();
    for origin in [SessionOrigin::StartSession, SessionOrigin::RunTask] {
        let mut body = all_bad.clone();
        if origin == SessionOrigin::RunTask {
            body["taskDetails"] = json!("a task");
        }
        let order = check_order(body, &[], |b| SessionParams::parse(b, origin).map(|_| ()));
        let expected = names.iter().filter(|n| origin == SessionOrigin::StartSession || **n != "taskDetails");
        assert_eq!(order, expected.copied().collect::<Vec<_>>(), "{origin:?}");
    }
}

#[test]
fn new_task_fields_are_checked_in_their_order() {
    let names = [
        "newState",
        "taskDetails",
        "startingUrl",
        "avoidDomains",
        "secrets",
        "outputSchema",
        "replayOf",
        "cache",
        "maxDuration",
        "maxInputTokens",
        "maxOutputTokens",
        "vision",
        "terminateOnCompletion",
    ];
    let mut body: serde_json::Map<String, Value> = names.iter().map(|n| (n.to_string(), json!([[]]))).collect();
    body.insert("actionType".into(), json!("newTask"));
    body.insert("mode".into(), json!([[]]));
    let fixes = [("newState", json!("start")), ("taskDetails", json!("a task"))];
    let order = check_order(body.into(), &fixes, |m| Message::parse(m).map(|_| ()));
    assert_eq!(order, names, "and mode is not read");
}

#[test]
fn chat_fields_are_checked_in_their_order() {
    let names = ["model", "stream", "max_tokens", "temperature", "messages", "response_format", "metadata"];
    let body: serde_json::Map<String, Value> = names.iter().map(|n| (n.to_string(), json!([[]]))).collect();
    let fixes = [("model", json!(crate::chat::CHAT_MODEL)), ("messages", json!([{"role": "user", "content": "t"}]))];
    let order = check_order(body.into(), &fixes, |b| crate::chat::ChatRequest::parse(b).map(|_| ()));
    assert_eq!(order, names);
}

#[test]
fn guardrail_fields_are_checked_in_their_order_and_the_answer_bounded() {
    let body = json!({"actionType": "guardrail", "newState": [[]], "taskDetails": [[]]});
    let fixes = [("newState", json!("resume")), ("taskDetails", json!("an answer"))];
    assert_eq!(check_order(body, &fixes, |m| Message::parse(m).map(|_| ())), ["newState", "taskDetails"]);
    let answer =
        |text: String| Message::parse(&json!({"actionType": "guardrail", "newState": "resume", "taskDetails": text}));
    let at = crate::params::MAX_TASK_DETAILS_CHARS;
    assert_eq!(answer("é".repeat(at)), Ok(Message::Guardrail { answer: "é".repeat(at) }));
    assert_eq!(answer(" ".into()), Ok(Message::Guardrail { answer: " ".into() }), "taken as given");
    let past = answer("a".repeat(at + 1)).expect_err("one past the bound");
    assert_eq!((past.code, past.message.as_str()), (ErrorCode::InvalidTaskDetails, "taskDetails is too long"));
    let missing = Message::parse(&json!({"actionType": "guardrail"})).expect_err("newState is required");
    assert_eq!(missing.message, "newState is required: \"resume\" for a guardrail message");
    let wrong = Message::parse(&json!({"actionType": "guardrail", "newState": "start"})).expect_err("only resume");
    assert_eq!(wrong.message, "newState must be \"resume\" for a guardrail message");
}
