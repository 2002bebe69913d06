//! Test harness: the real service on a random port with a fresh data dir, the local fixture website,
//! and a small HTTP client speaking the service's JSON.

use clap::Parser;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot::RunningApp;
use webpilot_core::usage::usd_to_micros;
use webpilot_core::UserId;
use webpilot_store::testdb::TestDatabase;
use webpilot_testkit::FixtureSite;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

/// Service settings a test may change before start.
pub struct Settings {
    pub args: Vec<String>,
    /// A database shared with other nodes (the cluster tests); otherwise a fresh one per app.
    pub database_url: Option<String>,
}

impl Settings {
    /// Uses the database at `url` (shared with another node) instead of a fresh one.
    pub fn database(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_owned());
        self
    }

    /// Sets `--name value`, replacing an earlier value of the same flag.
    pub fn arg(mut self, name: &str, value: impl ToString) -> Self {
        let flag = format!("--{name}");
        match self.args.iter().position(|a| *a == flag) {
            Some(i) => self.args[i + 1] = value.to_string(),
            None => {
                self.args.push(flag);
                self.args.push(value.to_string());
            }
        }
        self
    }
}

pub struct TestApp {
    app: Option<RunningApp>,
    pub base: String,
    pub client: reqwest::Client,
    pub site: FixtureSite,
    pub data: tempfile::TempDir,
    /// The PostgreSQL schema when the suite runs on PostgreSQL.
    pub db: Option<TestDatabase>,
    /// The database the app runs on when it is not SQLite in `data`.
    database_url: Option<String>,
    settings_args: Vec<String>,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Asserts an error reply: status, `success: false`, the code, and a message.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "status of {}", self.body);
        assert_eq!(self.body["success"], false, "{}", self.body);
        assert_eq!(self.body["code"], code, "{}", self.body);
        assert!(self.body["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", self.body);
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }
}

/// The store of a test app: SQLite in `dir`, or the test's PostgreSQL schema when the suite runs with
/// `WEBPILOT_TEST_DATABASE=postgres`.
fn store_config(dir: &std::path::Path, database_url: Option<&String>) -> StoreConfig {
    StoreConfig { data_dir: dir.to_path_buf(), database_url: database_url.cloned() }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|s| s).await
    }

    /// Starts with defaults fit for tests (short inline wait, generous rate limit, the browser allowed to
    /// reach the fixture site and nothing else on loopback), changed by `f`.
    pub async fn spawn_with(f: impl FnOnce(Settings) -> Settings) -> TestApp {
        let site = FixtureSite::start().await;
        let defaults = Settings { args: Vec::new(), database_url: None }
            .arg("egress-allow", format!("127.0.0.1:{}", site.port()))
            .arg("listen", "127.0.0.1:0")
            .arg("task-wait-ms", 20_000)
            .arg("rate-limit", 1000)
            .arg("max-sessions", 3)
            .arg("max-sessions-per-user", 10)
            .arg("navigation-timeout-ms", 10_000)
            // Session time is free here, so the tests of task costs compare exact balances; billing.rs prices it.
            .arg("price-session-per-second", 0);
        let settings = f(defaults);
        let data = tempfile::tempdir().expect("tempdir");
        let mut app = TestApp {
            app: None,
            base: String::new(),
            client: reqwest::Client::new(),
            site,
            data,
            db: None,
            database_url: settings.database_url,
            settings_args: settings.args,
        };
        if app.database_url.is_none() {
            app.db = TestDatabase::from_env().await.expect("the test PostgreSQL");
            app.database_url = app.db.as_ref().map(|d| d.url.clone());
        }
        app.boot().await;
        app
    }

    /// Starts the service with `args` on a fresh data dir and returns why it would not start.
    pub async fn start_error(args: &[&str]) -> String {
        let db = TestDatabase::from_env().await.expect("the test PostgreSQL");
        Self::start_error_on(db.as_ref().map(|d| d.url.as_str()), args).await
    }

    /// Starts the service with `args` on a fresh data dir and the database at `url` (a fresh one when
    /// `None`) and returns why it would not start.
    pub async fn start_error_on(url: Option<&str>, args: &[&str]) -> String {
        let mut argv = vec!["webpilot", "--listen", "127.0.0.1:0"];
        argv.extend_from_slice(args);
        let flags = Flags::try_parse_from(argv).expect("test flags");
        let data = tempfile::tempdir().expect("tempdir");
        let url = url.map(str::to_owned);
        match webpilot::start(&flags.serve, &store_config(data.path(), url.as_ref())).await {
            Ok(app) => {
                app.shutdown().await;
                panic!("the service started with {args:?}");
            }
            Err(e) => e.to_string(),
        }
    }

    async fn boot(&mut self) {
        let mut argv = vec!["webpilot".to_owned()];
        argv.extend(self.settings_args.iter().cloned());
        let flags = Flags::try_parse_from(argv).expect("test flags");
        let app = webpilot::start(&flags.serve, &store_config(self.data.path(), self.database_url.as_ref()))
            .await
            .expect("start");
        self.base = format!("http://{}", app.addr);
        self.app = Some(app);
    }

    /// The URL of the database the service runs on (its SQLite file, or the test's PostgreSQL schema).
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data.path().join("webpilot.db").display()),
        }
    }

    /// The service's data directory (its SQLite database).
    pub fn data_dir(&self) -> &std::path::Path {
        self.data.path()
    }

    pub fn app(&self) -> &RunningApp {
        self.app.as_ref().expect("running")
    }

    /// Graceful stop and a fresh start on the same data dir (a new port).
    pub async fn restart(&mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
        self.boot().await;
    }

    /// A restart with `extra` flags added to the service's (e.g. a node that gains `--object-store`).
    pub async fn restart_with(&mut self, extra: &[String]) {
        self.settings_args.extend(extra.iter().cloned());
        self.restart().await;
    }

    pub async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
    }

    /// A new user with `balance_usd` and one API key.
    pub async fn user(&self, balance_usd: f64) -> (UserId, String) {
        let store = &self.app().store;
        let u = store.create_user("test user", usd_to_micros(balance_usd)).await.expect("user");
        let (_, key) = store.create_api_key(&u.id, "test", None).await.expect("key");
        (u.id, key)
    }

    pub async fn key(&self) -> String {
        self.user(100.0).await.1
    }

    async fn reply(resp: reqwest::Response) -> Reply {
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
        Reply { status, headers, body }
    }

    pub async fn post_raw(&self, path: &str, key: Option<&str>, body: impl Into<reqwest::Body>) -> Reply {
        let mut req =
            self.client.post(format!("{}{path}", self.base)).header("content-type", "application/json").body(body);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        Self::reply(req.send().await.expect("request")).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Reply {
        self.post_raw(path, Some(key), body.to_string()).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        Self::reply(self.client.get(format!("{}{path}", self.base)).send().await.expect("request")).await
    }

    pub async fn start_session(&self, key: &str, body: Value) -> String {
        let r = self.post("/start/start-session", key, body).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["sessionId"].as_str().expect("sessionId").to_owned()
    }

    /// Starts a session on the fixture page `page` and returns its id and start-session body.
    pub async fn session_on(&self, key: &str, page: &str) -> (String, Value) {
        let r = self.post("/start/start-session", key, json!({ "startingUrl": self.site.url(page) })).await;
        assert_eq!(r.status, 200, "{}", r.body);
        (r.body["sessionId"].as_str().expect("sessionId").to_owned(), r.body)
    }

    /// Starts a session and returns its id and its `socketURL` (which carries the socket capability).
    pub async fn open_session(&self, key: &str, body: Value) -> (String, String) {
        let r = self.post("/start/start-session", key, body).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let sid = r.body["sessionId"].as_str().expect("sessionId").to_owned();
        (sid, r.body["socketURL"].as_str().expect("socketURL").to_owned())
    }

    pub async fn send(&self, key: &str, session: &str, message: Value) -> Reply {
        self.post("/start/send-message", key, json!({ "sessionId": session, "message": message })).await
    }

    pub async fn new_task(&self, key: &str, session: &str, details: &str) -> Reply {
        self.send(key, session, json!({ "actionType": "newTask", "newState": "start", "taskDetails": details })).await
    }

    pub async fn state(&self, key: &str, session: &str, new_state: &str) -> Reply {
        self.send(key, session, json!({ "actionType": "state", "newState": new_state })).await
    }

    pub async fn poll(&self, session: &str, task: &str) -> Reply {
        self.get(&format!("/task/{session}/{task}")).await
    }

    /// Polls until the task is final (completed or failed), at most `limit`.
    pub async fn poll_final(&self, session: &str, task: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let r = self.poll(session, task).await;
            assert_eq!(r.status, 200, "{}", r.body);
            if r.body["type"] == "task_completed" || r.body["status"] == "failed" {
                return r.body;
            }
            assert!(Instant::now() < deadline, "task {task} still not final: {}", r.body);
            tokio::time::sleep(crate::helpers::POLL).await;
        }
    }

    /// Polls until `pred` holds for the poll body, at most `limit`.
    pub async fn poll_until(&self, session: &str, task: &str, limit: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let r = self.poll(session, task).await;
            if pred(&r.body) {
                return r.body;
            }
            assert!(Instant::now() < deadline, "condition not reached: {}", r.body);
            tokio::time::sleep(POLL).await;
        }
    }

    /// Runs a task in a session to the end (inline or by polling) and returns the final poll body.
    pub async fn run_in(&self, key: &str, session: &str, details: &str) -> Value {
        let r = self.new_task(key, session, details).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let task = r.body["taskId"].as_str().expect("taskId").to_owned();
        self.poll_final(session, &task, Duration::from_secs(30)).await
    }

    /// How a session ended, as stored.
    pub async fn end_reason(&self, session: &str) -> Option<String> {
        let id = webpilot_core::SessionId::from_string(session);
        self.app().store.get_session(&id).await.expect("store").expect("session row").end_reason
    }

    /// Waits until the session's end is stored and returns its reason, at most `limit`. It reads the store, so
    /// it sends the session nothing (a message would be activity, keeping an idle session open).
    pub async fn wait_end_reason(&self, session: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(reason) = self.end_reason(session).await {
                return reason;
            }
            assert!(Instant::now() < deadline, "session {session} did not end within {limit:?}");
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until the session is gone (a message to it answers 404), at most `limit`.
    pub async fn wait_session_gone(&self, key: &str, session: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let r = self.state(key, session, "stop").await;
            if r.status == 404 {
                r.assert_error(404, "SESSION_NOT_FOUND");
                return;
            }
            assert!(Instant::now() < deadline, "session {session} still alive: {}", r.body);
            tokio::time::sleep(crate::helpers::POLL).await;
        }
    }
}

/// Processes whose parent is `parent` (read from /proc).
pub fn child_pids(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // Fields after the command name (which is in parentheses): state, ppid, ...
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// `root` and every process below it.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        out.extend(child_pids(out[i]));
        i += 1;
    }
    out
}

/// A process's command line, arguments joined by spaces.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// How often a test re-checks a condition it waits on (a poll, never a fixed wait).
pub const POLL: Duration = Duration::from_millis(50);

/// Waits until `cond` holds (checked every [`POLL`]), failing after `limit`.
pub async fn wait_until(limit: std::time::Duration, what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "not reached in {limit:?}: {what}");
        tokio::time::sleep(POLL).await;
    }
}

pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// Runs an admin command of the real binary on the data dir `data` and returns what it printed.
pub fn admin(data: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_webpilot"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .expect("run webpilot");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output").trim().to_owned()
}

/// The real binary, run as a child process.
pub struct Server {
    child: std::process::Child,
    pub base: String,
}

impl Server {
    pub async fn start(data: &std::path::Path) -> Server {
        Self::start_with(data, &[]).await
    }

    /// Starts `webpilot serve` on `data` with `extra` flags.
    pub async fn start_with(data: &std::path::Path, extra: &[&str]) -> Server {
        Self::start_with_env(data, extra, &[]).await
    }

    /// Like [`Self::start_with`], with `env` added to the process's environment.
    pub async fn start_with_env(data: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_webpilot"))
            .envs(env.iter().copied())
            .arg("--data-dir")
            .arg(data)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--task-wait-ms", "200"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn webpilot serve");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while reqwest::get(format!("{base}/start/health")).await.is_err() {
            assert!(Instant::now() < deadline, "server did not come up");
            tokio::time::sleep(crate::helpers::POLL).await;
        }
        Server { child, base }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL to the server and the Chromium processes it started: no graceful anything.
    pub fn crash(self) {
        drop(self);
    }
}

/// A server is crashed when dropped, also when its test fails halfway: no process outlives the test.
impl Drop for Server {
    fn drop(&mut self) {
        let children = child_pids(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in children {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }
}

/// Every byte the service stored: the files under its data directory (the SQLite database and its
/// journal) and, on PostgreSQL, every row of its schema as text.
pub async fn stored_bytes(app: &TestApp) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(app.data_dir()).expect("data dir").flatten() {
        if entry.path().is_file() {
            out.extend(std::fs::read(entry.path()).unwrap_or_default());
        }
    }
    if let Some(db) = &app.db {
        out.extend(db.dump().await.expect("dump the test schema").into_bytes());
    }
    out
}

pub fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}
