//! The service's log lines in a test: every line written by this test process (all levels down to debug),
//! kept in memory, so a test can show what never reaches a log.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Every log line the service writes, kept in memory.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures the logs of this test process (nextest runs each test in its own process).
    pub fn capture() -> Logs {
        let logs = Logs::default();
        let writer = logs.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .init();
        logs
    }

    /// Waits until a line containing `needle` has been written (the service logs after it answers).
    pub async fn wait_for(&self, needle: &str) {
        let what = format!("a log line with {needle:?}");
        crate::helpers::wait_until(std::time::Duration::from_secs(10), &what, || self.text().contains(needle)).await;
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}
