//! Byte-bounded queues between a DevTools client's socket and its relay. A count of messages bounds
//! nothing when one message may be 64 MiB, so each queued message holds permits for its bytes until it
//! is dropped (written to the socket, or handed on by the relay): a sender either waits for room (the
//! socket is not read meanwhile: the client is slowed, no one else) or is told the queue is full (the
//! relay then closes a client that does not read its answers, rather than buffer them without end).

use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// Bytes one DevTools connection may have waiting in the service, in each direction.
pub const CONNECTION_BUDGET: usize = 64 * 1024 * 1024;

/// The receiving side is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// Why a message was not queued at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds its budget's worth of bytes already.
    Full,
    Closed,
}

/// A queued message; its bytes count against the queue's budget until it is dropped.
pub struct Queued {
    pub text: String,
    _room: OwnedSemaphorePermit,
}

impl Queued {
    /// The text, and what gives its bytes back to the queue when dropped (once the text is written out).
    pub fn into_parts(self) -> (String, Charge) {
        (self.text, Charge { _room: self._room })
    }
}

/// A message's bytes, counted against its queue's budget until this is dropped.
pub struct Charge {
    _room: OwnedSemaphorePermit,
}

#[derive(Clone)]
pub struct QueueSender {
    tx: mpsc::UnboundedSender<Queued>,
    room: Arc<Semaphore>,
    budget: usize,
}

pub struct QueueReceiver {
    rx: mpsc::UnboundedReceiver<Queued>,
}

/// Room reserved for one message.
pub struct Reserved {
    tx: mpsc::UnboundedSender<Queued>,
    room: OwnedSemaphorePermit,
}

/// A queue holding at most `budget` bytes of messages (one larger message passes when the queue is empty).
pub fn queue(budget: usize) -> (QueueSender, QueueReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let budget = budget.clamp(1, u32::MAX as usize);
    (QueueSender { tx, room: Arc::new(Semaphore::new(budget)), budget }, QueueReceiver { rx })
}

impl QueueSender {
    fn cost(&self, bytes: usize) -> u32 {
        // `budget` fits in u32 (see `queue`).
        bytes.clamp(1, self.budget) as u32
    }

    /// Waits for room for `bytes` (cancel-safe: nothing is lost when the wait is dropped).
    pub async fn reserve(&self, bytes: usize) -> Result<Reserved, Closed> {
        if self.tx.is_closed() {
            return Err(Closed);
        }
        let room = self.room.clone().acquire_many_owned(self.cost(bytes)).await.map_err(|_| Closed)?;
        Ok(Reserved { tx: self.tx.clone(), room })
    }

    /// Queues `text` if there is room for it now.
    pub fn try_send(&self, text: String) -> Result<(), Refused> {
        let room = match self.room.clone().try_acquire_many_owned(self.cost(text.len())) {
            Ok(room) => room,
            Err(TryAcquireError::NoPermits) => return Err(Refused::Full),
            Err(TryAcquireError::Closed) => return Err(Refused::Closed),
        };
        self.tx.send(Queued { text, _room: room }).map_err(|_| Refused::Closed)
    }
}

impl Reserved {
    /// Queues `text` in the room reserved for it.
    pub fn send(self, text: String) -> Result<(), Closed> {
        self.tx.send(Queued { text, _room: self.room }).map_err(|_| Closed)
    }
}

impl QueueReceiver {
    pub async fn recv(&mut self) -> Option<Queued> {
        self.rx.recv().await
    }

    pub fn try_recv(&mut self) -> Option<Queued> {
        self.rx.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::{queue, Refused};

    #[tokio::test]
    async fn bytes_not_messages_are_bounded_and_given_back_once_written() {
        let (tx, mut rx) = queue(10);
        tx.try_send("12345".into()).expect("room");
        tx.try_send("1234".into()).expect("room");
        assert_eq!(tx.try_send("12".into()), Err(Refused::Full));
        let first = rx.recv().await.expect("queued");
        assert_eq!(tx.try_send("12".into()), Err(Refused::Full), "not given back while being written");
        drop(first.into_parts());
        tx.try_send("12".into()).expect("room once written");
        // A message bigger than the budget passes alone.
        while rx.try_recv().is_some() {}
        tx.try_send("x".repeat(50)).expect("alone");
        assert_eq!(tx.try_send("y".into()), Err(Refused::Full));
        drop(rx);
        assert!(tx.reserve(1).await.is_err(), "closed");
    }
}
