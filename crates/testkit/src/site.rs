//! The fixture website server: binding, routing, request recording and shutdown.

pub mod account;
pub mod canvas;
pub mod challenges;
mod dynamic;
pub mod echo;
pub mod files;
mod html;
pub mod identity;
mod login;
pub mod marks;
mod newsletter;
mod pages;
mod paint;
mod probes;
mod search;
mod shop;
mod whep_player;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Request, State};
use axum::http::header::{COOKIE, HOST};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One HTTP request received by the fixture site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// Host name from the `Host` header, without the port (empty if the header was missing).
    pub host: String,
    /// Request path, without the query string.
    pub path: String,
    /// Raw query string (without the `?`), if any.
    pub query: Option<String>,
    /// Raw `Cookie` header (several headers joined with `"; "`), if any.
    pub cookie: Option<String>,
    /// The `User-Agent` header, if any.
    pub user_agent: Option<String>,
    /// The `Accept-Language` header, if any.
    pub accept_language: Option<String>,
}

/// Shared state of the running site, available to handlers.
#[derive(Clone)]
pub(crate) struct SiteState {
    /// The port the site listens on.
    pub(crate) port: u16,
    /// Every request received so far, in order.
    log: Arc<Mutex<Vec<RequestRecord>>>,
    /// `/newsletter` shows its redesign (see `newsletter.rs`).
    pub(crate) newsletter_redesign: Arc<std::sync::atomic::AtomicBool>,
}

impl SiteState {
    fn log(&self) -> MutexGuard<'_, Vec<RequestRecord>> {
        // A poisoned lock only means another handler panicked; the log itself is still usable.
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running fixture website on `127.0.0.1:{port}`; it stops when dropped.
pub struct FixtureSite {
    state: SiteState,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl FixtureSite {
    /// Binds `127.0.0.1:0` and serves the site on a spawned tokio task that stops when the
    /// returned value is dropped.
    ///
    /// # Panics
    /// Panics if the loopback listener cannot be bound (a broken test environment).
    pub async fn start() -> FixtureSite {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .expect("bind fixture site on 127.0.0.1:0");
        let port = listener.local_addr().expect("local address of fixture site listener").port();
        let state = SiteState { port, log: Arc::new(Mutex::new(Vec::new())), newsletter_redesign: Default::default() };
        let app = router(state.clone());
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let task = webpilot_tasks::spawn_owned("fixture site", async move {
            let shutdown = async {
                // Either an explicit signal or the sender being dropped means "stop".
                let _ = shutdown_rx.await;
            };
            if let Err(err) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
                eprintln!("webpilot-testkit: fixture site stopped with error: {err}");
            }
        });
        FixtureSite { state, shutdown: Some(shutdown_tx), task }
    }

    /// The port the site listens on.
    pub fn port(&self) -> u16 {
        self.state.port
    }

    /// `"http://127.0.0.1:{port}"` followed by `path` (which should start with `/`).
    pub fn url(&self, path: &str) -> String {
        self.url_on("127.0.0.1", path)
    }

    /// Like [`FixtureSite::url`] but with another host name that resolves to loopback, e.g.
    /// `url_on("tracker.localhost", "/pixel.png")` is `"http://tracker.localhost:{port}/pixel.png"`.
    pub fn url_on(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.state.port)
    }

    /// Switches `/newsletter` to its redesign (the button renamed and moved) or back.
    pub fn set_newsletter_redesign(&self, on: bool) {
        self.state.newsletter_redesign.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state.log().clone()
    }

    /// True if any request had this `path` (the query is ignored; a `?...` suffix in `path`
    /// is stripped) and, when `host` is given, that host (compared case-insensitively).
    pub fn was_requested(&self, host: Option<&str>, path: &str) -> bool {
        let path = path.split_once('?').map_or(path, |(p, _)| p);
        self.state
            .log()
            .iter()
            .any(|r| r.path == path && host.is_none_or(|h| strip_port(h).eq_ignore_ascii_case(&r.host)))
    }
}

impl Drop for FixtureSite {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            // Tells open connections to finish gracefully (that runs on its own task).
            let _ = tx.send(());
        }
        // Stops accepting immediately and drops the listener.
        self.task.abort();
    }
}

/// Builds the router with every fixture page plus the recording middleware.
fn router(state: SiteState) -> Router {
    Router::new()
        .route("/", get(pages::home))
        .route("/pricing", get(pages::pricing))
        .route("/pricing/details", get(pages::pricing_details))
        .route("/form", get(pages::form))
        .route("/login", get(login::login))
        .route("/login/framed", get(login::framed))
        .route("/account", get(account::account))
        .route("/account/login", get(account::login))
        .route("/account/signin", get(account::signin))
        .route("/shop", get(shop::shop))
        .route("/shop/cards", get(shop::shop_cards))
        .route("/shop/xo", get(shop::shop_cross_origin))
        .route("/login/welcome", get(login::welcome))
        .route("/form/submitted", get(dynamic::form_submitted))
        .route("/set-cookie", get(dynamic::set_cookie))
        .route("/show-cookie", get(dynamic::show_cookie))
        .route("/tracker", get(dynamic::tracker))
        .route("/pixel.png", get(dynamic::png))
        .route("/ok.png", get(dynamic::png))
        .route("/counter", get(pages::counter))
        .route("/hog", get(pages::hog))
        .route("/vanish", get(pages::vanish))
        .route("/choose", get(pages::choose))
        .route("/popup", get(dynamic::popup))
        .route("/slow", get(dynamic::slow))
        .route("/later", get(dynamic::later))
        .route("/echo-headers", get(dynamic::echo_headers))
        .route("/probe", get(probes::probe))
        .route("/probe/worker.js", get(probes::worker))
        .route("/probe/sw.js", get(probes::service_worker))
        .route("/redirect", get(probes::redirect))
        .route("/download", get(probes::download))
        .route("/files", get(files::files))
        .route("/files/report.csv", get(files::report))
        .route("/files/big", get(files::big))
        .route("/files/upload", get(files::upload_form))
        .route("/files/echo", post(files::echo))
        .route("/popups", get(probes::popups))
        .route("/dialogs", get(probes::dialogs))
        .route("/paint", get(paint::paint))
        .route("/canvas", get(canvas::canvas))
        .route("/board", get(canvas::board))
        .route("/echo", get(echo::echo))
        .route("/marks", get(marks::marks))
        .route("/marks/one", get(marks::one))
        .route("/search", get(search::search))
        .route("/newsletter", get(newsletter::newsletter))
        .route("/whep-player", get(whep_player::whep_player))
        .route("/identity", get(identity::identity).post(identity::identity))
        .route("/identity/worker.js", get(identity::worker))
        .route("/totp", get(identity::totp))
        .route("/totp/check", get(identity::totp_check))
        .merge(challenges::routes())
        .fallback(dynamic::not_found)
        // `Router::layer` also wraps the fallback, so unknown paths are recorded too.
        .layer(middleware::from_fn_with_state(state.clone(), record))
        .with_state(state)
}

/// Middleware: appends a [`RequestRecord`] to the log before the request is answered.
async fn record(State(state): State<SiteState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    let entry = RequestRecord {
        host: strip_port(&host).to_ascii_lowercase(),
        path: request.uri().path().to_owned(),
        query: request.uri().query().map(str::to_owned),
        cookie: cookie_header(headers),
        user_agent: header_text(headers, axum::http::header::USER_AGENT),
        accept_language: header_text(headers, axum::http::header::ACCEPT_LANGUAGE),
    };
    state.log().push(entry);
    next.run(request).await
}

/// Header `name` as text, if present.
fn header_text(headers: &HeaderMap, name: axum::http::header::HeaderName) -> Option<String> {
    headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// All `Cookie` headers joined with `"; "`, or `None` if there is none.
pub(crate) fn cookie_header(headers: &HeaderMap) -> Option<String> {
    let parts: Vec<String> =
        headers.get_all(COOKIE).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `"example.localhost:8080"` -> `"example.localhost"`, `"[::1]:80"` -> `"[::1]"`.
fn strip_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']')) =>
        {
            name
        }
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::strip_port;

    #[test]
    fn strips_ports() {
        assert_eq!(strip_port("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(strip_port("tracker.localhost:1"), "tracker.localhost");
        assert_eq!(strip_port("tracker.localhost"), "tracker.localhost");
        assert_eq!(strip_port("[::1]:80"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
    }
}
