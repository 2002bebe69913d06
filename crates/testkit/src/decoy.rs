//! A decoy server for egress tests: it counts every TCP connection it accepts and answers each with
//! `HTTP/1.1 200` and the text "decoy reached", so a test can prove that nothing reached it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub struct Decoy {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Decoy {
    /// Listens on `ip` (e.g. `127.0.0.2`, `::1`) on a free port until dropped.
    ///
    /// # Panics
    /// Panics if the address cannot be bound (a broken test environment).
    pub async fn on(ip: &str) -> Decoy {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind decoy");
        let addr = listener.local_addr().expect("decoy address");
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let task = webpilot_tasks::spawn_owned("decoy", async move {
            while let Ok((mut s, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                webpilot_tasks::spawn_owned("decoy connection", async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let body = "<title>decoy reached</title>decoy reached";
                    let head =
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                    let _ = s.write_all(format!("{head}{body}").as_bytes()).await;
                });
            }
        });
        Decoy { addr, hits, task }
    }

    /// `http://<addr>` (IPv6 in brackets).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Decoy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
