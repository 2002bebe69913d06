//! The `webpilot` command: `serve` runs the service; `users`, `keys` and `balance` administer it.

use clap::{Parser, Subcommand};
use webpilot::admin::{self, BalanceCmd, KeysCmd, UsersCmd};
use webpilot::config::{ServeConfig, StoreConfig};
use webpilot_store::Store;

#[derive(Debug, Parser)]
#[command(name = "webpilot", version, about = "An AI agent in a real remote browser, as a service")]
struct Cli {
    #[command(flatten)]
    store: StoreConfig,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the HTTP service.
    Serve(Box<ServeConfig>),
    /// Manages users.
    #[command(subcommand)]
    Users(UsersCmd),
    /// Manages API keys.
    #[command(subcommand)]
    Keys(KeysCmd),
    /// Manages balances.
    #[command(subcommand)]
    Balance(BalanceCmd),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    webpilot::telemetry::init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command {
        Command::Serve(serve) => {
            let mut app = webpilot::start(&serve, &cli.store).await?;
            // Chromium and the warm contexts are made now, not at the first session start.
            let pool = app.manager.pool().clone();
            app.tasks().spawn("warm up", async move {
                if let Err(e) = pool.warm_up().await {
                    tracing::warn!(error = %e, "starting the browser ahead of the first session failed");
                }
            });
            let stop = app.stop_token();
            app.tasks().spawn("shutdown signal", async move {
                shutdown_signal().await;
                tracing::info!("stopping");
                stop.cancel();
            });
            app.wait().await;
            app.shutdown().await;
        }
        Command::Users(cmd) => admin::users(&open(&cli.store).await?, cmd).await?,
        Command::Keys(cmd) => admin::keys(&open(&cli.store).await?, cmd).await?,
        Command::Balance(cmd) => admin::balance(&open(&cli.store).await?, cmd).await?,
    }
    Ok(())
}

async fn open(cfg: &StoreConfig) -> Result<Store, webpilot_store::StoreError> {
    cfg.open().await
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
