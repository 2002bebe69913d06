//! What the browser sends one in-process DevTools client (the relay, a frame client), with the bytes the
//! client has not read yet counted. The shared pipe never waits on a client, so a client that falls
//! [`MAX_UNREAD`] behind is dropped instead (`pipe.rs`): its backlog cannot grow the service's memory, and the
//! other clients of the pipe go on.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The most a client may leave unread: twice a DevTools connection's own budget towards its client
/// (`relay/queue.rs`), which the relay drains into as fast as the browser writes.
pub(crate) const MAX_UNREAD: usize = 128 * 1024 * 1024;

/// What both sides see: the bytes queued and not read yet, and whether a message was refused for them.
#[derive(Debug, Default)]
struct Backlog {
    unread: AtomicUsize,
    refused: AtomicBool,
}

/// The browser's side of an inbox.
#[derive(Debug)]
pub(crate) struct InboxSender {
    tx: mpsc::UnboundedSender<String>,
    backlog: Arc<Backlog>,
}

/// The client's side: what the browser sent it, in order.
#[derive(Debug)]
pub(crate) struct Inbox {
    rx: mpsc::UnboundedReceiver<String>,
    backlog: Arc<Backlog>,
}

/// A new inbox.
pub(crate) fn inbox() -> (InboxSender, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog::default());
    (InboxSender { tx, backlog: backlog.clone() }, Inbox { rx, backlog })
}

impl InboxSender {
    /// Hands `text` on. False when the client is gone, or would be more than [`MAX_UNREAD`] behind with it:
    /// the message is not queued, and the caller drops this sender, which ends the inbox once the client has
    /// read what it holds.
    pub fn send(&self, text: String) -> bool {
        let len = text.len();
        let unread = &self.backlog.unread;
        if unread.load(Ordering::Acquire).saturating_add(len) > MAX_UNREAD {
            self.backlog.refused.store(true, Ordering::Release);
            return false;
        }
        // Counted before it is queued: the reader never takes away more than was added.
        unread.fetch_add(len, Ordering::AcqRel);
        if self.tx.send(text).is_err() {
            unread.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Whether the client dropped its inbox.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl Inbox {
    /// The next message; `None` once the sender is gone and everything was read.
    pub async fn recv(&mut self) -> Option<String> {
        let text = self.rx.recv().await?;
        self.backlog.unread.fetch_sub(text.len(), Ordering::AcqRel);
        Some(text)
    }

    /// The next message if one is queued (tests).
    #[cfg(test)]
    pub fn try_recv(&mut self) -> Result<String, mpsc::error::TryRecvError> {
        let text = self.rx.try_recv()?;
        self.backlog.unread.fetch_sub(text.len(), Ordering::AcqRel);
        Ok(text)
    }

    /// Whether the inbox ended because the client fell [`MAX_UNREAD`] behind (rather than because the
    /// browser's connection ended).
    pub fn fell_behind(&self) -> bool {
        self.backlog.refused.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_client_past_its_unread_bytes_is_refused_and_reads_what_it_was_given() {
        let (tx, mut rx) = inbox();
        let big = "x".repeat(MAX_UNREAD / 2);
        assert!(tx.send(big.clone()) && tx.send(big.clone()), "exactly the budget fits");
        assert!(!tx.send("one more".into()), "a byte past the budget is refused");
        drop(tx);
        assert_eq!(rx.recv().await.map(|t| t.len()), Some(big.len()));
        assert_eq!(rx.recv().await.map(|t| t.len()), Some(big.len()));
        assert_eq!(rx.recv().await, None);
        assert!(rx.fell_behind(), "ended for falling behind");

        let (tx, mut rx) = inbox();
        assert!(tx.send(big.clone()));
        assert_eq!(rx.recv().await.map(|t| t.len()), Some(big.len()));
        assert!(tx.send(big.clone()) && tx.send(big), "read bytes are free again");
        drop(tx);
        while rx.recv().await.is_some() {}
        assert!(!rx.fell_behind(), "a sender that went is not a client that fell behind");
    }
}
