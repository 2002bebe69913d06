//! Logging set-up: `RUST_LOG`-style filtering, quiet defaults for chatty dependencies.

use tracing_subscriber::EnvFilter;

pub fn init() {
    // chromiumoxide warns on every DevTools event its pinned protocol cannot parse (see crate-notes);
    // keep those out unless asked for.
    let default = "info,chromiumoxide=off,tower_http=warn,sqlx=warn";
    let filter = EnvFilter::try_from_env("WEBPILOT_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).try_init();
}
