//! Running the Python client scripts of `tests/clients/` (official SDKs) as bounded subprocesses.

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients").join(name)
}

/// Runs `python3 tests/clients/<name> <args>` with `env`, at most `limit`, and parses the JSON it prints.
pub async fn run_python(name: &str, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Value {
    let mut cmd = tokio::process::Command::new("python3");
    cmd.arg(script(name)).args(args).kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{name} {args:?} did not finish within {limit:?}"))
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} {args:?} failed: {}\nstdout: {stdout}\nstderr: {stderr}", out.status);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| panic!("{name} printed no JSON: {stdout}\nstderr: {stderr}"))
}

/// Runs `node tests/clients/<name> <args>` at most `limit`, and parses the JSON it printed last.
pub async fn run_node(name: &str, args: &[&str], limit: Duration) -> Value {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script(name)).args(args).kill_on_drop(true);
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{name} {args:?} did not finish within {limit:?}"))
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} {args:?} failed: {}\nstdout: {stdout}\nstderr: {stderr}", out.status);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| panic!("{name} printed no JSON: {stdout}\nstderr: {stderr}"))
}
